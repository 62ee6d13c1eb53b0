"""benchmarks/providers.py runs and prints its tables (one repeat, as a smoke test)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "providers.py"


def test_provider_benchmark_prints_both_tables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("providers_benchmark", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "REPEATS", 1)
    module.main()
    out = capsys.readouterr().out
    assert "build the wire payload" in out and "401" in out
    assert out.count(" x") >= 2 and "anthropic" in out
