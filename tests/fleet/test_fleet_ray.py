"""``harness eval --ray`` on one local Ray for the module (started once: about 15 s on the
CI machine), started the way ``--ray`` alone starts one while ``RAY_ADDRESS`` points at a
port where nothing listens: a Ray that starts is its own, not the one named there.

- The same per-episode outcomes as local worker processes; an actor that dies mid-episode is
  replaced without losing or repeating an episode; every run store is collected to the
  driver (four short episodes on two actors).
- Secrets reach the actors without going through Ray (whose session logs print its
  ``runtime_env`` in plain text), and a secret written into ``fleet.runtime_env`` is
  refused. Ray is started *before* the secret is in the coordinator's environment: its
  workers cannot inherit it, so an actor that sees it was handed it. Then every file of
  Ray's session folder and of the eval folder is scanned for the planted secrets (whole,
  and every 10-character window).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.config import FleetConfig
from harness.fleet.journal import EvalFolder
from harness.fleet.ray_backend import RayBackend
from tests.fleet_helpers import fingerprint, write_deployment, write_suite
from tests.secret_scan import CUSTOM, CUSTOM_PATTERN, SHAPED, VALUE, VALUE_ENV, Scan

ray = pytest.importorskip("ray")
pytest.importorskip("pybullet")
pytestmark = [pytest.mark.long, pytest.mark.sim]

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class LocalRay:
    """The module's Ray, as ``--ray`` alone started it while ``RAY_ADDRESS`` pointed
    elsewhere."""

    folder: Path
    """``RAY_TMPDIR``: Ray's session folder is below it."""
    address: str
    """The GCS address of the Ray that was started."""
    elsewhere: str
    """What ``RAY_ADDRESS`` said: a port held bound and never listening."""
    workers: int | None
    """The backend's actor count for one episode."""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[LocalRay]:
    """A local Ray whose session folder the tests can read, started once for the module
    the way ``harness eval --ray`` starts one (:meth:`RayBackend.connect` with no address);
    stopped after.

    ``RAY_ADDRESS`` (or the last ``ray start`` on the machine) points at a port held bound
    and never listening while it starts: joining it would fail, so a Ray that starts is
    its own. Its workers import the deployment's tool from ``tests.fixtures``, so the
    checkout's root is on the PYTHONPATH they inherit (an installed package alone does not
    bring it)."""
    assert VALUE_ENV not in os.environ
    assert not ray.is_initialized(), "another test left a Ray connected in this process"
    folder = Path(tempfile.mkdtemp(prefix="hr", dir="/tmp"))  # short: Ray's socket paths
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "RAY_TMPDIR", "RAY_ADDRESS")}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), saved["PYTHONPATH"]) if p)
    os.environ["RAY_TMPDIR"] = str(folder)
    try:
        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            elsewhere = f"127.0.0.1:{held.getsockname()[1]}"
            os.environ["RAY_ADDRESS"] = elsewhere
            backend = RayBackend(address=None, workers=1, runs=folder / "runs", fleet=FleetConfig())
            backend.connect(1)
        if saved["RAY_ADDRESS"] is None:  # the eval tests' own Ray is this one
            os.environ.pop("RAY_ADDRESS")
        else:
            os.environ["RAY_ADDRESS"] = saved["RAY_ADDRESS"]
        address = ray.get_runtime_context().gcs_address
        yield LocalRay(folder, address, elsewhere, backend.actual_workers)
    finally:
        ray.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


def test_a_local_ray_is_its_own_whatever_ray_address_says(local_ray: LocalRay) -> None:
    """``--ray`` alone starts a Ray of its own: RAY_ADDRESS pointing elsewhere is not
    joined (the module's Ray was started that way; joining would have failed)."""
    assert local_ray.address != local_ray.elsewhere and local_ray.workers == 1


def test_ray_gives_the_local_outcomes_and_survives_a_dead_actor(
    local_ray: LocalRay, tmp_path: Path
) -> None:
    crash = tmp_path / "crash"
    crash.mkdir()
    # The actors' processes get the crash-once marker folder through Ray's runtime_env
    # (given per actor, so it reaches them on a Ray this process had already started).
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


def _deployment(folder: Path, **fleet: object) -> Path:
    data = {
        "model": {
            "provider": "scripted",
            "name": "probe",
            "api_key_env": VALUE_ENV,
            "context_window": 100_000,
            "options": {
                "responses": [
                    {"text": "Checking the key.", "tool": {"name": "env_probe"}},
                    {"text": f"Done; the deployment secret is {CUSTOM}."},
                ]
            },
        },
        "memory": {"enabled": False},
        "tools": ["tests.fixtures.config_tools:env_probe"],
        "run": {"max_turns": 4, "store": ".harness", "secret_patterns": [CUSTOM_PATTERN]},
        "fleet": {"num_cpus": 1, **fleet},
    }
    (folder / "deployment.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    suite = folder / "suite.yaml"
    task = {"name": "probe", "instruction": f"check the key {SHAPED}", "seeds": [0]}
    suite.write_text(
        yaml.safe_dump({"suite": "probe", "config": "deployment.yaml", "tasks": [task]}),
        encoding="utf-8",
    )
    return suite


def test_a_forwarded_key_reaches_the_actor_and_no_byte_of_it_reaches_ray(
    local_ray: LocalRay,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(VALUE_ENV, VALUE)  # after Ray started: its workers do not have it
    suite = _deployment(tmp_path)
    out = tmp_path / "eval"
    assert main(["eval", str(suite), "--ray", "--workers", "1", "--out", str(out)]) in (0, 1)
    printed = capsys.readouterr()
    digest = hashlib.sha256(VALUE.encode()).hexdigest()[:16].encode()
    stores = b"".join(p.read_bytes() for p in (out / "runs").rglob("*.db*"))
    records = (out / "episodes.jsonl").read_text(encoding="utf-8")
    assert digest in stores, f"the actor never saw the forwarded key: {records[:1500]}"

    scan = Scan()
    scan.add_tree(local_ray.folder, "ray/")
    scan.add_tree(out, "eval/")
    scan.add("eval output", (printed.out + printed.err).encode())
    logs = [p for p in local_ray.folder.rglob("*.log")]
    assert any(p.name.startswith("runtime_env") for p in logs) or logs, "Ray wrote no logs"
    assert scan.whole == 0 and scan.fragments == 0, "\n".join(scan.where[:20])


@pytest.mark.parametrize(
    "env_vars",
    [{"OPENAI_API_KEY": "anything-at-all"}, {"CONTROLLER": SHAPED}],
    ids=["secret-looking name", "secret-shaped value"],
)
def test_a_secret_in_runtime_env_is_a_config_error_that_does_not_print_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], env_vars: dict[str, str]
) -> None:
    suite = _deployment(tmp_path, runtime_env={"env_vars": env_vars})
    out = tmp_path / "eval"
    assert main(["eval", str(suite), "--ray", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "fleet.runtime_env" in err and "fleet.forward_env" in err
    assert "Traceback" not in err and SHAPED not in err and "anything-at-all" not in err
    assert not out.exists()
