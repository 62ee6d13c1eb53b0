"""Suites, the eval folder and the dispatch queue, without running a simulator."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import HarnessConfig
from harness.errors import ConfigError, UsageError
from harness.fleet.dispatch import Dispatch
from harness.fleet.episode import EpisodeRecord, EpisodeSpec
from harness.fleet.journal import EvalFolder, Manifest
from harness.fleet.runner import episode_specs, physical_identity
from harness.fleet.suite import EpisodePlan, load_suite
from tests.tiers import examples

ROOT = Path(__file__).resolve().parents[2]
TABLETOP = ROOT / "configs" / "suites" / "tabletop.yaml"


def _write_suite(folder: Path, data: dict[str, object]) -> Path:
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _task(name: str, **fields: object) -> dict[str, object]:
    return {"name": name, "instruction": "put the red cube in the tray", "seeds": [0], **fields}


# ---------------------------------------------------------------------- suites


def test_the_shipped_suite_covers_six_families_with_three_layouts_each() -> None:
    suite = load_suite(TABLETOP)
    families = suite.families
    assert len(families) >= 6
    assert {"pick_place", "stacking", "all_cubes", "clear_table", "recovery", "refusal"} <= set(
        families
    )
    plans = suite.plans()
    for task in suite.tasks:
        assert len(task.seed_list()) >= 3, task.name
        assert task.max_turns is not None
    refusal = next(t for t in suite.tasks if t.name == "refusal")
    assert refusal.success == "refused" and "pick" in refusal.forbidden_tools
    recovery = [p for p in plans if p.family == "recovery"]
    assert all(p.scene["faults"]["drop_on_lift"] for p in recovery)
    clear = [p for p in plans if p.family == "clear_table"]
    assert all(" then " in p.instruction for p in clear)
    assert len({p.key for p in plans}) == len(plans)
    # --episodes 24 takes every family's share (round-robin).
    first = plans[:24]
    assert {p.family for p in first} == set(families)
    counts = [sum(p.family == f for p in first) for f in families]
    assert max(counts) - min(counts) <= 1


def test_every_shipped_episode_config_validates_and_the_simulator_needs_no_lease() -> None:
    suite = load_suite(TABLETOP)
    config = HarnessConfig.model_validate({})
    specs = episode_specs(suite.plans(), config)
    for spec in specs:
        driver = spec.config["driver"]
        assert driver["seed"] == spec.plan.seed
        assert spec.config["evaluation"]["task_check"] == "programmatic"
    four = next(s for s in specs if s.plan.key == "all_cubes/four/s1")
    assert len(four.config["driver"]["objects"]) == 4
    assert four.config["driver"]["tray"]["size"] == [0.24, 0.2]
    pytest.importorskip("pybullet")
    assert physical_identity(specs[0]) is None


def test_round_robin_order_and_keys(tmp_path: Path) -> None:
    path = _write_suite(
        tmp_path,
        {
            "suite": "demo",
            "tasks": [
                _task(
                    "a",
                    instruction="put the {color} cube in the tray",
                    variants=[{"vars": {"color": "red"}}, {"vars": {"color": "blue"}}],
                    seeds={"start": 5, "count": 2},
                ),
                _task("b", family="shared", seeds=[1]),
            ],
        },
    )
    plans = load_suite(path).plans()
    assert [p.key for p in plans] == [
        "a/red/s5",
        "b/v1/s1",
        "a/blue/s5",
        "a/red/s6",
        "a/blue/s6",
    ]
    assert plans[2].instruction == "put the blue cube in the tray"
    assert plans[1].family == "shared"
    assert plans[0].slug == "a.red.s5"


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (_task("a", instruction="put the {color} cube in the tray"), "needs {color}"),
        (_task("a", seeds=[]), "seeds"),
        (_task("a", seeds=[1, 1]), "seeds repeat"),
        (_task("A b"), "tasks.0.name"),
        (_task("a", succes="refused"), "unknown key"),
        (_task("a", forbidden_tools=["pick"]), "forbidden_tools"),
        (_task("a", variants=[{"name": "x"}, {"name": "x"}]), "variant names repeat"),
        (_task("a", success="maybe"), "success"),
    ],
)
def test_bad_suites_name_the_problem(tmp_path: Path, task: dict[str, object], message: str) -> None:
    path = _write_suite(tmp_path, {"suite": "demo", "tasks": [task]})
    with pytest.raises(ConfigError, match=message):
        load_suite(path)


def test_a_missing_suite_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="suite file not found"):
        load_suite(tmp_path / "nope.yaml")


def test_episode_configs_merge_scene_seed_and_overrides_in_order(tmp_path: Path) -> None:
    path = _write_suite(
        tmp_path,
        {
            "suite": "demo",
            "set": ["run.max_turns=7", "scene.brief_max_tokens=900"],
            "tasks": [
                _task(
                    "a",
                    check="none",
                    set=["run.max_turns=8"],
                    variants=[
                        {
                            "scene": {"faults": {"drop_on_lift": {"red_cube_1": 2}}},
                            "set": ["run.failure_budget=3"],
                        }
                    ],
                    seeds=[4],
                )
            ],
        },
    )
    config = HarnessConfig.model_validate({"driver": {"name": "sim.tabletop", "gui": False}})
    (spec,) = episode_specs(load_suite(path).plans(), config)
    data = spec.config
    assert data["driver"]["seed"] == 4
    assert data["driver"]["gui"] is False  # the deployment's own options stay
    assert data["driver"]["faults"] == {"drop_on_lift": {"red_cube_1": 2}}
    assert data["run"]["max_turns"] == 8  # the task's override comes after the suite's
    assert data["run"]["failure_budget"] == 3
    assert data["scene"]["brief_max_tokens"] == 900
    assert data["evaluation"]["task_check"] == "none"


def test_a_bad_override_names_the_episode(tmp_path: Path) -> None:
    path = _write_suite(tmp_path, {"suite": "demo", "tasks": [_task("a", set=["run.max_turns=0"])]})
    with pytest.raises(ConfigError, match=r"(?s)episode a/v1/s0.*run.max_turns"):
        episode_specs(load_suite(path).plans(), HarnessConfig.model_validate({}))


def test_a_bad_driver_option_names_the_episode(tmp_path: Path) -> None:
    pytest.importorskip("pybullet")
    path = _write_suite(
        tmp_path,
        {"suite": "demo", "tasks": [_task("a", variants=[{"scene": {"colour": "red"}}])]},
    )
    (spec,) = episode_specs(load_suite(path).plans(), HarnessConfig.model_validate({}))
    with pytest.raises(ConfigError, match=r"episode a/v1/s0.*driver.colour"):
        physical_identity(spec)


# ---------------------------------------------------------------------- the eval folder


def _rec(key: str, **fields: object) -> EpisodeRecord:
    return EpisodeRecord.model_validate(
        {
            "key": key,
            "task": "t",
            "family": "t",
            "variant": "v1",
            "seed": 0,
            "instruction": "x",
            "status": "completed",
            **fields,
        }
    )


def _folder(tmp_path: Path) -> EvalFolder:
    folder = EvalFolder(tmp_path / "eval")
    folder.create(Manifest(suite="s", suite_path="/s.yaml", episodes=["t/v1/s0"]))
    return folder


def test_an_existing_eval_is_not_overwritten(tmp_path: Path) -> None:
    _folder(tmp_path)
    with pytest.raises(UsageError, match="--resume"):
        _folder(tmp_path)


CUT_TRIES = 0


@settings(max_examples=examples(200), deadline=None)
@given(count=st.integers(1, 6), cut=st.floats(0, 1), data=st.data())
def test_a_kill_mid_write_loses_only_the_unfinished_line(
    tmp_path_factory: pytest.TempPathFactory, count: int, cut: float, data: st.DataObject
) -> None:
    """Cut episodes.jsonl anywhere (a kill during a write): the complete lines survive,
    the cut one is dropped, and lines appended after repair() are read back."""
    global CUT_TRIES
    CUT_TRIES += 1
    folder = _folder(tmp_path_factory.mktemp("journal"))
    records = [_rec(f"t/v1/s{i}", report="é" * data.draw(st.integers(0, 30))) for i in range(count)]
    for record in records:
        folder.append(record)
    raw = folder.episodes_path.read_bytes()
    position = int(cut * len(raw))
    folder.episodes_path.write_bytes(raw[:position])
    whole = raw[:position].count(b"\n")
    survived = folder.records()
    assert [r.key for r in survived] == [r.key for r in records[:whole]]
    folder.repair()
    folder.append(_rec("t/v1/s99"))
    assert [r.key for r in folder.records()] == [
        *(r.key for r in records[:whole]),
        "t/v1/s99",
    ]


# ---------------------------------------------------------------------- dispatch


def _spec(index: int) -> EpisodeSpec:
    plan = EpisodePlan(
        key=f"t/v1/s{index}",
        task="t",
        family="t",
        variant="v1",
        seed=index,
        instruction="x",
        max_turns=None,
        success="achieved",
    )
    return EpisodeSpec(plan=plan, config={})


DISPATCH_TRIES = 0


@settings(max_examples=examples(300), deadline=None)
@given(
    episodes=st.integers(0, 12),
    workers=st.integers(1, 4),
    max_attempts=st.integers(1, 4),
    seed=st.integers(0, 10_000),
    death_rate=st.floats(0, 0.9),
)
def test_dispatch_finishes_every_episode_exactly_once(
    episodes: int, workers: int, max_attempts: int, seed: int, death_rate: float
) -> None:
    """A simulated backend whose workers die at random: every episode is recorded exactly
    once, finished ones are never handed out again, and no episode is started more than
    max_attempts times."""
    global DISPATCH_TRIES
    DISPATCH_TRIES += 1
    rng = random.Random(seed)
    finished: list[EpisodeRecord] = []
    starts: dict[str, int] = {}
    dispatch = Dispatch(
        [_spec(i) for i in range(episodes)], max_attempts=max_attempts, finish=finished.append
    )
    busy: list[EpisodeSpec | None] = [None] * workers
    for _ in range(10_000):
        if dispatch.done:
            break
        for index in range(workers):
            if busy[index] is None:
                busy[index] = dispatch.take()
                if busy[index] is not None:
                    key = busy[index].plan.key  # type: ignore[union-attr]
                    assert key not in {r.key for r in finished}
                    starts[key] = starts.get(key, 0) + 1
        index = rng.randrange(workers)
        spec = busy[index]
        if spec is None:
            continue
        busy[index] = None
        if rng.random() < death_rate:
            dispatch.lost(spec, "killed")
        else:
            dispatch.finished(_rec(spec.plan.key, attempt=spec.attempt))
    assert dispatch.done
    keys = [r.key for r in finished]
    assert sorted(keys) == sorted(f"t/v1/s{i}" for i in range(episodes))
    assert len(set(keys)) == len(keys)
    assert all(count <= max_attempts for count in starts.values())
    for record in finished:
        if record.status == "error":
            assert starts[record.key] == max_attempts
            assert "died" in record.error


def test_a_stopped_dispatch_hands_out_nothing_more() -> None:
    finished: list[EpisodeRecord] = []
    dispatch = Dispatch([_spec(0), _spec(1)], max_attempts=3, finish=finished.append)
    spec = dispatch.take()
    assert spec is not None
    dispatch.stop()
    assert dispatch.take() is None
    dispatch.lost(spec, "interrupted")
    assert dispatch.done
    assert finished[0].interrupted  # never written: --resume runs it again


def test_resume_refuses_a_suite_that_lost_episodes(tmp_path: Path) -> None:
    from harness.fleet.runner import plan_eval

    path = _write_suite(tmp_path, {"suite": "demo", "tasks": [_task("a", seeds=[0, 1])]})
    folder = EvalFolder(tmp_path / "eval")
    folder.create(Manifest(suite="demo", suite_path=str(path), episodes=["a/v1/s0", "b/v1/s0"]))
    with pytest.raises(UsageError, match=r"no longer has episode b/v1/s0; it changed"):
        plan_eval(load_suite(path), HarnessConfig.model_validate({}), folder=folder.folder,
                  manifest=None)  # fmt: skip


def test_the_forkserver_preload_starts_no_thread_and_prints_nothing() -> None:
    """Workers are forked from a process that imported ``WORKER_PRELOAD``: forking is safe
    only while none of those imports starts a thread, and whatever they print lands in the
    eval's own output (PyBullet's build banner must not)."""
    import importlib.util
    import json
    import subprocess
    import sys

    probe = (
        "import importlib, json, sys, threading\n"
        "from harness.fleet.local import WORKER_PRELOAD\n"
        "for module in WORKER_PRELOAD: importlib.import_module(module)\n"
        "sys.stdout.flush()\n"
        "loaded = [m for m in ('harness.runtime.harness', 'pybullet') if m in sys.modules]\n"
        "sys.stderr.write(json.dumps([threading.active_count(), loaded]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout == "", result.stdout
    threads, loaded = json.loads(result.stderr)
    expected = ["harness.runtime.harness"]
    if importlib.util.find_spec("pybullet") is not None:  # the sim extra
        expected.append("pybullet")
    assert threads == 1 and loaded == expected, result.stderr


def test_a_cluster_address_is_probed_before_ray_retries_it_for_minutes() -> None:
    import socket

    from harness.fleet.ray_backend import unreachable

    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: refused
        up, down = listening.getsockname()[1], closed.getsockname()[1]
        assert unreachable(f"127.0.0.1:{up}", 5.0) is None
        assert unreachable(f"ray://127.0.0.1:{up}", 5.0) is None
        for address in (f"127.0.0.1:{down}", f"ray://127.0.0.1:{down}"):
            assert "nothing answers there" in (unreachable(address, 5.0) or "")
    assert unreachable("auto", 5.0) is None  # Ray's own lookup
