"""``harness eval --ray`` on a local Ray started for the run: the same per-episode outcomes
as local worker processes, an actor that dies mid-episode replaced without losing or
repeating an episode, and every run store collected to the driver.

One Ray start (about 15 s on the CI machine) and four short episodes on two actors.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.fleet.journal import EvalFolder
from tests.fleet_helpers import ROOT, fingerprint, write_deployment, write_suite

pytest.importorskip("pybullet")
pytest.importorskip("ray")
pytestmark = pytest.mark.sim


def test_ray_gives_the_local_outcomes_and_survives_a_dead_actor(tmp_path: Path) -> None:
    crash = tmp_path / "crash"
    crash.mkdir()
    # The actors' processes get the environment through Ray's runtime_env: the tests
    # package on their path, and the crash-once marker folder.
    write_deployment(
        tmp_path,
        fleet={
            "num_cpus": 1,
            "runtime_env": {
                "env_vars": {"PYTHONPATH": str(ROOT), "HARNESS_TEST_CRASH_DIR": str(crash)}
            },
        },
    )
    suite = write_suite(tmp_path, crash_key=True)
    on_ray, local = tmp_path / "ray", tmp_path / "local"
    assert main(["eval", str(suite), "--ray", "--workers", "2", "--out", str(on_ray)]) == 0
    assert (crash / "crashed").is_file()  # one actor really died building an episode

    # The same suite on local processes (no crash this time: the marker exists).
    assert main(["eval", str(suite), "--workers", "2", "--out", str(local)]) == 0

    records_ray, records_local = EvalFolder(on_ray).records(), EvalFolder(local).records()
    assert len(records_ray) == 4
    assert fingerprint(records_ray) == fingerprint(records_local)
    by_key = {r.key: r for r in records_ray}
    assert by_key["pick_place/red/s0"].attempt == 2
    lines = (on_ray / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4  # nothing lost, nothing twice
    for record in records_ray:
        store = on_ray / record.store
        assert any(store.glob("*.db")), f"{record.key}: run store not collected"
    manifest = yaml.safe_load((on_ray / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["episodes"]) == set(by_key)


def test_an_unreachable_cluster_is_a_usage_error_and_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    write_deployment(tmp_path)
    suite = write_suite(tmp_path)
    out = tmp_path / "eval"
    assert main(["eval", str(suite), "--ray", "auto", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--ray: could not reach auto" in err and "Traceback" not in err
    assert not out.exists()  # nothing to --resume: the eval never began
