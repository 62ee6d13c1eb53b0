"""What the benchmarks share and nobody runs by itself: traces and their generator, the
published policies and ours, the shared summarizer, metrics and metering, the safety oracle
and its kinematics, the safety fuzzers' arms, scenarios and campaign, the hardware of the
admission attacks and the driver that only reads, the turn-overhead modes with their
instruments and report, an in-process MCP server that records calls, and the tables and
plots every benchmark prints and writes (``python -m benchmarks`` lists what to run)."""

__all__: list[str] = []
