"""Measured comparisons: context efficiency against published policies, and per-turn
overhead of the Harness. Run ``python -m benchmarks`` (see ``benchmarks/README.md``)."""

__all__: list[str] = []
