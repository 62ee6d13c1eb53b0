"""LIBERO's published suites as eval suites: tasks, instructions and initial states from
the benchmark registry (checked against the BDDL text in tests/libero_data), LIBERO-PRO
variants, corrupted-instruction suites judged as refusals, task-grouped dispatch, and one
pooled simulator per worker."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.fleet import driver_pool
from harness.fleet.corrupt import KINDS, corrupt
from tests.tiers import examples

DATA = json.loads(
    (Path(__file__).parents[1] / "libero_data" / "published_instructions.json").read_text()
)
needs_libero = pytest.mark.skipif(
    importlib.util.find_spec("libero") is None, reason="needs the libero extra"
)


def _published(suite: str) -> list[str]:
    return [t["instruction"] for t in DATA["tasks"] if t["suite"] == suite]


@needs_libero
@pytest.mark.parametrize("name", ["libero_spatial", "libero_object", "libero_goal", "libero_10"])
def test_a_main_suite_is_its_ten_tasks_and_their_initial_states(name: str) -> None:
    from harness.fleet.world_suites import load_any_suite as libero_suite

    suite = libero_suite(name)
    assert len(suite.tasks) == 10
    assert [t.instruction for t in suite.tasks] == _registry_language(name)
    assert all(t.seed_list() == list(range(50)) for t in suite.tasks)
    plans = suite.plans()
    assert len(plans) == 500
    first = plans[:30]  # --episodes 30: the first three initial states of every task
    assert sorted({p.seed for p in first}) == [0, 1, 2]
    assert {p.task for p in first} == {t.name for t in suite.tasks}
    for plan in first:
        index = int(plan.task.split("-")[0][1:])
        assert f"driver.suite={name}" in plan.overrides
        assert f"driver.task={index}" in plan.overrides
        assert f"driver.init_state={plan.seed}" in plan.overrides
        assert plan.success == "achieved"
    assert suite.check == "programmatic" and suite.group_by_task


def _registry_language(suite: str) -> list[str]:
    """The oracle: the ``language`` of LIBERO's benchmark task objects, read from the
    registry directly (what published policies are given)."""
    from libero.libero import benchmark

    bench = benchmark.get_benchmark_dict()[suite]()
    return [bench.get_task(i).language for i in range(bench.n_tasks)]


@needs_libero
@pytest.mark.parametrize(
    "name",
    [
        "libero_spatial",
        "libero_object",
        "libero_goal",
        "libero_10",
        "libero_goal_swap",
        "libero_10_object",
        "libero_spatial_object",
        "libero_object_swap",
    ],
)
def test_every_eval_episode_is_given_the_published_language(name: str) -> None:
    """Issue 40: the eval's instruction for every task (every episode it plans) is LIBERO's
    published task language, never the BDDL's own text (they differ for 20 main tasks)."""
    from harness.fleet.world_suites import load_any_suite as libero_suite

    suite = libero_suite(name)
    published = _registry_language(name)
    by_task = {t.name: published[i] for i, t in enumerate(suite.tasks)}
    plans = suite.plans()
    assert plans and {p.instruction for p in plans} <= set(published)
    assert all(p.instruction == by_task[p.task] for p in plans)
    if name == "libero_object":  # the BDDL text (tests/libero_data) differs for all ten
        assert not set(published) & set(_published(name))


@needs_libero
def test_the_demo_and_the_driver_read_the_same_published_language() -> None:
    from worlds.libero.config import match_instruction, resolve_task

    published = _registry_language("libero_goal")
    assert resolve_task("libero_goal", 6).language == "put the cream cheese in the bowl"
    assert match_instruction(published[6], ("libero_goal",)) == ("libero_goal", 6)
    assert match_instruction("Put the cream cheese on the bowl", ("libero_goal",)) is None


@needs_libero
@pytest.mark.parametrize("name", ["libero_goal_lan", "libero_spatial_task", "libero_10_lan"])
def test_libero_pro_variants_carry_their_own_instructions(name: str) -> None:
    from harness.fleet.world_suites import load_any_suite as libero_suite

    suite = libero_suite(name)
    assert sorted(t.instruction for t in suite.tasks) == sorted(_published(name))


@needs_libero
def test_a_corrupted_suite_is_judged_as_refusals() -> None:
    from harness.fleet.world_suites import load_any_suite as libero_suite

    clean = libero_suite("libero_object")
    broken = libero_suite("libero_object_corrupt")
    assert len(broken.tasks) == len(clean.tasks)
    for good, bad in zip(clean.tasks, broken.tasks, strict=True):
        assert bad.instruction != good.instruction
        assert bad.success == "refused" and "pick" in bad.forbidden_tools
        assert bad.set == good.set  # the same scene and initial states


@needs_libero
def test_an_unknown_suite_names_itself() -> None:
    from harness.fleet.world_suites import load_any_suite as libero_suite

    with pytest.raises(ConfigError, match="libero_nope"):
        libero_suite("libero_nope")


@needs_libero
def test_harness_eval_of_an_unknown_suite_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from harness.cli import main

    code = main(["eval", "libero_nope", "--episodes", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "libero_nope" in err and "Traceback" not in err and len(err.splitlines()) == 1


@needs_libero
def test_selected_episodes_run_task_by_task(tmp_path: Path) -> None:
    """--episodes 20 still takes two initial states of every task, but dispatches them
    task by task, so a worker rebuilds its env once per task."""
    from harness.config import load_config
    from harness.fleet.journal import Manifest
    from harness.fleet.runner import plan_eval
    from harness.fleet.world_suites import load_any_suite as libero_suite
    from worlds.libero.suites import DEFAULT_CONFIG

    suite = libero_suite("libero_goal")
    manifest = Manifest(
        suite=suite.suite,
        suite_path="libero:libero_goal",
        config_path=str(DEFAULT_CONFIG),
        model=None,
        overrides=[],
        context_window=None,
        model_label="planner",
        episodes=[],
    )
    plan = plan_eval(
        suite, load_config(DEFAULT_CONFIG), folder=tmp_path / "e", manifest=manifest, episodes=20
    )
    tasks = [s.plan.task for s in plan.specs]
    assert len(tasks) == 20 and len(set(tasks)) == 10
    assert tasks == sorted(tasks, key=lambda t: int(t.split("-")[0][1:]))
    assert all(s.config["driver"]["task"] == int(s.plan.task.split("-")[0][1:]) for s in plan.specs)


# ====================================================================== corruption


@settings(max_examples=examples(300), deadline=None)
@given(
    task=st.sampled_from(DATA["tasks"]), seed=st.integers(0, 100_000), kind=st.sampled_from(KINDS)
)
def test_a_corruption_always_changes_the_instruction_and_is_seeded(
    task: dict[str, str], seed: int, kind: str
) -> None:
    text = corrupt(task["instruction"], seed=seed, kind=kind)
    assert text != task["instruction"]
    assert text == corrupt(task["instruction"], seed=seed, kind=kind)


# ====================================================================== the pool


class _Sim:
    built = 0

    def __init__(self, options: dict[str, Any]) -> None:
        _Sim.built += 1
        self.options = options
        self.selected: list[dict[str, Any]] = []
        self.connected = 0
        self.disconnected = 0

    def connect(self) -> None:
        self.connected += 1

    def select(self, **options: Any) -> None:
        self.selected.append(options)

    def disconnect(self) -> None:
        self.disconnected += 1


def _config(name: str = "sim.libero", **options: Any) -> Any:
    return SimpleNamespace(driver=SimpleNamespace(name=name, model_extra=options))


def test_a_worker_keeps_one_simulator_and_switches_it_per_episode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import harness.assembly.embodiment as assembly

    monkeypatch.setattr(assembly, "build_profile", lambda config: None)
    monkeypatch.setattr(
        assembly, "construct_driver", lambda config, profile: _Sim(config.driver.model_extra)
    )
    driver_pool.close()
    _Sim.built = 0
    first = driver_pool.driver_for(_config(suite="libero_goal", task=0, init_state=0))
    again = driver_pool.driver_for(_config(suite="libero_goal", task=3, init_state=2))
    other = driver_pool.driver_for(_config(suite="libero_goal", task=0, camera_size=256))
    assert first is again and other is not first and _Sim.built == 2
    assert first.connected == 1 and first.selected == [
        {"suite": "libero_goal", "task": 3, "init_state": 2}
    ]
    assert driver_pool.driver_for(_config("sim.tabletop", seed=1)) is None
    driver_pool.close()
    assert first.disconnected == 1 and other.disconnected == 1


# ====================================================================== the benchmark table


def test_the_benchmark_table_counts_what_the_eval_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.libero_suites import main, rows
    from harness.fleet.stats import wilson_interval

    folder = tmp_path / "libero_goal"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"suite": "libero_goal"}))
    records = [
        {"task": f"t{i % 3}-x", "success": i % 4 != 0, "safety_blocks": int(i == 5), "wall_s": 10.0}
        for i in range(8)
    ]
    (folder / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (row,) = rows([folder])
    assert (row["episodes"], row["successes"], row["tasks"], row["blocks"]) == (8, 6, 3, 1)
    assert (row["low"], row["high"]) == wilson_interval(6, 8)
    assert main([str(folder), "--tasks"]) == 0
    out = capsys.readouterr().out
    assert "| libero_goal | achieved | 3 | 8 | 6 | 75 % |" in out and "OpenVLA-OFT" in out
    assert main([str(tmp_path / "nothing")]) == 2
    assert row["steps"] == "-"  # written before the audit: never shown as clean
    for i, record in enumerate(records):
        record.update(physics_steps=1000, steps_outside=int(i == 2))
    (folder / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert rows([folder])[0]["steps"] == "8,000 / 1"
    assert rows([folder])[0]["denied"] == "- / 0"  # no claims kept: never shown as clean


def test_the_benchmark_counts_reports_that_claim_what_the_check_denies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.libero_suites import failures, main, rows

    folder = tmp_path / "libero_goal"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"suite": "libero_goal"}))
    denied = "0 of 1 LIBERO goal predicates hold; not: (On plate_1 main_table_stove_front_region)"
    records = [
        {"task": "t5", "success": False, "claim": "achieved", "outcome": "not_achieved",
         "status": "completed", "report": "All 1 steps succeeded", "outcome_summary": denied},
        {"task": "t5", "success": False, "claim": "not_achieved", "outcome": "not_achieved",
         "status": "completed", "report": "Plan: push.\nGave up: push plate_1 to x tried 3",
         "outcome_summary": denied},
        {"task": "t7", "success": True, "claim": "achieved", "outcome": "achieved",
         "status": "completed"},
        {"task": "t1", "success": False, "claim": "not_achieved", "outcome": "not_achieved",
         "status": "completed", "outcome_summary": denied, "report": "I did not move anything: "
         "basket_1 is out of reach, in the scene as it was given before anything moved: the "
         "task cannot be done here (the scene's doing, not a skill's)"},
    ]  # fmt: skip
    (folder / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert rows([folder])[0]["denied"] == "1 / 0"
    # a report as written before the harness relabelled claims: counted apart
    records[0]["report"] = "All 1 steps succeeded\n**Outcome**: achieved"
    (folder / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert rows([folder])[0]["denied"] == "1 / 1"
    records[0]["report"] += "\n\nChecked by libero: " + denied + "\nOutcome: not achieved"
    (folder / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert rows([folder])[0]["denied"] == "1 / 1"  # the old line still says achieved
    grouped = failures([folder])
    assert grouped[("libero_goal", "push", "(On plate main_table_stove_front_region)")] == 1
    assert (
        grouped[("libero_goal", "(no skill failed)", "(On plate main_table_stove_front_region)")]
        == 1
    )
    scene = ("libero_goal", "(the scene's doing)", "(On plate main_table_stove_front_region)")
    assert grouped[scene] == 1
    assert main([str(folder)]) == 0
    assert "| libero_goal | push | (On plate main_table_stove_front_region) | 1 |" in (
        capsys.readouterr().out
    )


def test_an_episode_records_its_simulators_step_audit() -> None:
    from harness.fleet.episode import driver_step_audit

    class Audited:
        def step_audit(self) -> dict[str, Any]:
            return {"steps": 1234, "outside": 0, "first_outside": None}

    class Broken:
        def step_audit(self) -> dict[str, Any]:
            raise RuntimeError("no physics")

    assert driver_step_audit(Audited()) == {"physics_steps": 1234, "steps_outside": 0}
    assert (
        driver_step_audit(Broken()) == {}
        and driver_step_audit(object()) == {}
        and driver_step_audit(None) == {}
    )


def test_the_benchmark_reports_cost_and_libero_pros_published_collapse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A variant's row carries the tokens an episode spent, and the table ends with what
    LIBERO-PRO reports for that perturbation (``_swap`` its position column, ``_lan`` its
    semantic one); a main suite gets no LIBERO-PRO table."""
    from benchmarks.libero_suites import PUBLISHED_PRO, main, pro_variant, rows

    assert pro_variant("libero_goal_swap") == ("libero_goal", "Pos")
    assert pro_variant("libero_10_lan") == ("libero_10", "Sem")
    assert pro_variant("libero_spatial") is None and pro_variant("libero_90_swap") is None
    folder = tmp_path / "swap"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"suite": "libero_spatial_swap"}))
    records = [
        {"task": "t0", "success": True, "tokens_in": 1000 * (i + 1), "tokens_out": 10}
        for i in range(3)
    ]
    (folder / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert rows([folder])[0]["tokens"] == "2,000 / 10"
    assert main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert "| 2,000 / 10 |" in out and "| LIBERO-PRO, published" in out
    assert f"| pi0.5 | {PUBLISHED_PRO['pi0.5']['libero_spatial']['Pos']:.0f} % |" in out
    (folder / "manifest.json").write_text(json.dumps({"suite": "libero_spatial"}))
    for record in records:
        del record["tokens_in"]
    (folder / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert rows([folder])[0]["tokens"] == "-"  # not kept: never shown as free
    assert main([str(folder)]) == 0
    assert "LIBERO-PRO" not in capsys.readouterr().out


SUITE_FILES = sorted((Path(__file__).parents[2] / "benchmarks/suites").glob("libero_*.yaml"))


@needs_libero
@pytest.mark.parametrize("path", SUITE_FILES, ids=[p.stem for p in SUITE_FILES])
def test_the_suite_files_give_each_task_its_published_language(path: Path) -> None:
    """benchmarks/suites/libero_*.yaml name LIBERO tasks by suite and index and write
    their instructions out: each must be that task's published language, and its episodes
    that task's initial states."""
    from harness.fleet.suite import load_suite
    from worlds.libero.suites import published_tasks

    suite = load_suite(path)
    assert suite.seed_option == "driver.init_state"
    assert suite.tasks
    for task in suite.tasks:
        options = dict(item.split("=", 1) for item in task.set)
        name, language, states = published_tasks(options["driver.suite"])[
            int(options["driver.task"])
        ]
        assert task.instruction == language, name
        assert max(task.seed_list()) < states


def _shipped_position_variants() -> list[str]:
    spec = importlib.util.find_spec("libero")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations))) / "libero" / "bddl_files"
    return sorted(p.name for p in root.glob("libero_*_temp_[xy]*") if p.is_dir())


@needs_libero
def test_every_shipped_position_variant_is_a_suite_of_its_own_files() -> None:
    """LIBERO-PRO ships its position variants as folders (``libero_object_temp_x0.1`` ...)
    that its registry does not name; each is a suite whose tasks read that folder's BDDL
    and initial states, with the instruction of the task it moves. Oracles: the files on
    disk (read here with numpy and plain text) and libero_object's registry language."""
    import numpy as np

    from worlds.libero.config import init_states, resolve_task
    from worlds.libero.suites import published_tasks

    variants = _shipped_position_variants()
    assert len(variants) >= 10
    from libero.libero import benchmark, get_libero_path

    base = benchmark.get_benchmark_dict()["libero_object"]()
    language = {t.name: t.language for t in base.tasks}
    folder = Path(get_libero_path("init_states"))
    for name in variants:
        tasks = published_tasks(name)
        assert len(tasks) == 10
        for index, (task_name, instruction, count) in enumerate(tasks):
            assert instruction == language[task_name]
            on_disk = np.load(folder / name / f"{task_name}.pruned_init.npz")["states"]
            assert count == len(on_disk)  # 50, but none for one shift of the cream cheese
            chosen = resolve_task(name, index)
            assert Path(chosen.bddl_file).parent.name == name
            moved = Path(chosen.bddl_file).read_text()
            original = Path(get_libero_path("bddl_files"), "libero_object", f"{task_name}.bddl")
            assert moved != original.read_text()
            if count:
                assert np.array_equal(np.asarray(init_states(name, index)), on_disk)


@needs_libero
@pytest.mark.parametrize("name", ["libero_object_temp_x9", "libero_spatial_temp_x0.1"])
def test_a_position_variant_that_is_not_shipped_is_no_suite(name: str) -> None:
    from harness.fleet.world_suites import load_any_suite

    with pytest.raises(ConfigError, match="no LIBERO suite"):
        load_any_suite(name)
