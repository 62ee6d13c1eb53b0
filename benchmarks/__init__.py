"""Measured comparisons: context efficiency against published policies, per-turn overhead
of the Harness, and more. ``python -m benchmarks`` lists them (``benchmarks/README.md``)."""

__all__: list[str] = []
