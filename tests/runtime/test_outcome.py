"""A task says whether its goal was met: ``done.outcome``, its evidence, and exit codes.

The ground-truth check is tested against scenes built here and an oracle written from the
scene description (not from the checker's own resolution); the vision-model check with a
scripted judge; the combination with the acting model's own claim as a table; then the
examples of issue 15 end to end on the simulator and through the command line.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig
from harness.cli import main
from harness.events import DoneEvent, OutcomeEvidence, parse_event, task_succeeded
from harness.providers import ScriptedModel, call, reply
from harness.store import SQLiteRunStore
from harness.store.reader import RunLog
from harness.store.writer import STORE_FILENAME
from harness.world.model_task_check import ModelTaskCheck
from harness.world.task_check import (
    GroundTruthTaskCheck,
    TaskCheckResult,
    judge_task,
    report_claim,
    resolve_goal,
)
from scene.perception import Detection
from tests.conftest import fake_robot
from tests.fixtures.cli import scripted_config
from tests.tiers import examples

# ====================================================================== scenes


def thing(
    ref: str,
    label: str,
    *,
    category: str = "object",
    color: str | None = None,
    on: tuple[str, str] | None = None,
    truth: bool = True,
) -> Detection:
    return Detection(
        ref=ref,
        label=label,
        category=category,  # type: ignore[arg-type]
        color=color,
        position=(0.5, 0.0, 0.7),
        relations=[on] if on else [],
        provenance="ground_truth" if truth else "detector",
    )


def cube(color: str, index: int = 1, on: tuple[str, str] = ("on", "table_1")) -> Detection:
    return thing(f"{color}_cube_{index}", f"{color} cube", color=color, on=on)


def gripper(holding: str | None = None) -> Detection:
    return Detection(
        ref="gripper",
        label="gripper",
        category="robot_part",
        position=(0.3, 0.0, 0.9),
        provenance="ground_truth",
        attributes={"holding": holding},
    )


FIXED = [
    thing("table_1", "table", category="surface"),
    thing("tray_1", "tray", category="container"),
]


def check(detections: list[Detection], instruction: str, *revisions: str) -> TaskCheckResult:
    return GroundTruthTaskCheck(lambda: detections).check(instruction, revisions)


# ====================================================================== the goal


def test_revisions_replace_add_to_or_withdraw_the_goal() -> None:
    clauses, _ = resolve_goal(
        "put the red cube in the tray", ["also put the blue cube in the tray"]
    )
    assert [c.subject.color for c in clauses] == ["red", "blue"]
    clauses, _ = resolve_goal("put the red cube in the tray", ["put the blue cube in the tray"])
    assert [c.subject.color for c in clauses] == ["blue"]
    clauses, problem = resolve_goal("put the red cube in the tray", ["stop"])
    assert clauses == () and "withdrew" in problem
    clauses, problem = resolve_goal("put the red cube in the tray", ["make it pretty"])
    assert clauses == () and "cannot parse the revision" in problem
    clauses, _ = resolve_goal("dance the macarena", ["put the red cube in the tray"])
    assert [c.subject.color for c in clauses] == ["red"]


@pytest.mark.parametrize(
    ("report", "claim"),
    [
        ("did it\nOutcome: achieved", "achieved"),
        ("could not\nOutcome: not achieved", "not_achieved"),
        ("**Outcome:** not_achieved.", "not_achieved"),
        ("Outcome: achieved\nlater I noticed...\nOutcome: not achieved", "not_achieved"),
        ("the outcome: achieved, I think", None),
        ("done", None),
        ("", None),
    ],
)
def test_the_models_claim_is_its_outcome_line(report: str, claim: str | None) -> None:
    assert report_claim(report) == claim


# ====================================================================== ground truth


def test_every_named_object_where_it_was_asked_to_go_is_achieved() -> None:
    scene = [*FIXED, cube("red", on=("inside", "tray_1")), cube("blue"), gripper()]
    result = check(scene, "put the red cube in the tray")
    assert result.outcome == "achieved" and result.checked_by == "simulator"
    assert [(c.condition, c.held) for c in result.conditions] == [
        ("the red cube in the tray", True)
    ]


def test_an_object_left_elsewhere_or_held_is_not_achieved_with_evidence() -> None:
    scene = [*FIXED, cube("red", on=("inside", "tray_1")), cube("blue"), gripper()]
    result = check(scene, "put all the cubes in the tray")
    assert result.outcome == "not_achieved"
    failed = [c for c in result.conditions if not c.held]
    assert [c.condition for c in failed] == ["blue_cube_1 in tray_1"]
    assert "on table_1" in failed[0].evidence
    held = [*FIXED, thing("red_cube_1", "red cube", color="red"), gripper("red_cube_1")]
    result = check(held, "put the red cube in the tray")
    assert result.outcome == "not_achieved" and "gripper" in result.conditions[0].evidence


def test_a_goal_naming_what_the_scene_lacks_is_not_achieved() -> None:
    scene = [*FIXED, cube("red"), cube("blue"), gripper()]
    result = check(scene, "put the purple cube in the tray")
    assert result.outcome == "not_achieved"
    assert "there is no purple cube in the scene" in result.summary
    assert check(scene, "put the red cube in the bucket").outcome == "unverified"  # no grammar
    assert check(scene, "put red_cube_9 in tray_1").outcome == "not_achieved"


def test_an_instruction_the_checker_cannot_parse_is_unverified_never_achieved() -> None:
    scene = [*FIXED, cube("red", on=("inside", "tray_1")), gripper()]
    for instruction in ("dance the macarena", "make the table look nice", ""):
        result = check(scene, instruction)
        assert result.outcome == "unverified", instruction


def test_stacking_clearing_and_refs() -> None:
    scene = [
        *FIXED,
        cube("red", on=("on", "blue_cube_1")),
        cube("blue"),
        cube("green", on=("inside", "tray_1")),
        gripper(),
    ]
    assert check(scene, "stack the red cube on the blue cube").outcome == "achieved"
    assert check(scene, "put red_cube_1 on blue_cube_1").outcome == "achieved"
    assert check(scene, "put the green cube on the red cube").outcome == "not_achieved"
    cleared = check(scene, "clear the table")
    assert cleared.outcome == "not_achieved"
    assert [c.condition for c in cleared.conditions if not c.held] == ["blue_cube_1 in tray_1"]
    clear = [*FIXED, cube("red", on=("inside", "tray_1")), gripper()]
    assert check(clear, "clear the table").outcome == "achieved"


def test_detections_that_are_not_ground_truth_cannot_decide() -> None:
    scene = [*FIXED, thing("red_cube_1", "red cube", color="red", truth=False), gripper()]
    result = check(scene, "put the red cube in the tray")
    assert result.outcome == "unverified" and "not ground truth" in result.summary


COLORS = ("red", "green", "blue", "yellow")
PLACES = ("table_1", "tray_1", "held")


@settings(max_examples=examples(300), deadline=None)
@given(
    where=st.lists(st.sampled_from(PLACES), min_size=1, max_size=4),
    wanted=st.lists(st.sampled_from(COLORS), min_size=1, max_size=3, unique=True),
    everything=st.booleans(),
)
def test_the_check_agrees_with_an_oracle_over_random_scenes(
    where: list[str], wanted: list[str], everything: bool
) -> None:
    """Scenes of distinctly coloured cubes; instructions naming colours (some absent).

    Oracle, from the scene description alone: achieved iff every named colour exists and
    that cube rests inside the tray (not held, not on the table); for "all the cubes",
    iff every cube does.
    """
    held = [i for i, place in enumerate(where) if place == "held"][:1]
    scene: list[Detection] = list(FIXED)
    places: dict[str, str] = {}
    for index, place in enumerate(where):
        color = COLORS[index]
        if place == "held" and index not in held:
            place = "table_1"
        places[color] = place
        relation = (
            None
            if place == "held"
            else (("inside", "tray_1") if place == "tray_1" else ("on", "table_1"))
        )
        scene.append(thing(f"{color}_cube_1", f"{color} cube", color=color, on=relation))
    scene.append(gripper(f"{COLORS[held[0]]}_cube_1" if held else None))
    if everything:
        instruction = "put all the cubes in the tray"
        expected = all(place == "tray_1" for place in places.values())
    else:
        instruction = " then ".join(f"put the {color} cube in the tray" for color in wanted)
        expected = all(places.get(color) == "tray_1" for color in wanted)
    result = check(scene, instruction)
    assert result.outcome == ("achieved" if expected else "not_achieved"), (
        instruction,
        places,
        result,
    )


# ====================================================================== a vision model


def judge(*answers: str) -> ScriptedModel:
    return ScriptedModel([reply(answer) for answer in answers], name="judge")


ACHIEVED = json.dumps(
    {
        "outcome": "achieved",
        "conditions": [{"condition": "red cube in the tray", "held": True, "evidence": "seen"}],
        "evidence": "the red cube lies in the tray",
    }
)


def test_the_model_check_validates_the_verdict_and_repairs_once() -> None:
    driver = fake_robot()
    model = judge(ACHIEVED)
    result = ModelTaskCheck(model, driver.observe).check("put the red cube in the tray", [])
    assert result.outcome == "achieved" and result.checked_by == "model:judge"
    assert result.conditions[0].held
    request = model.requests[0]
    assert request.purpose == "evaluate" and request.refreshed and request.refreshed.images
    assert "put the red cube in the tray" in request.items[0].text  # type: ignore[union-attr]

    inconsistent = json.dumps(
        {
            "outcome": "achieved",
            "conditions": [{"condition": "x", "held": False}],
            "evidence": "hmm",
        }
    )
    repaired = ModelTaskCheck(judge(inconsistent, ACHIEVED), driver.observe).check("go", [])
    assert repaired.outcome == "achieved"
    twice = ModelTaskCheck(judge("no idea", "still no"), driver.observe).check("go", [])
    assert twice.outcome == "unverified" and "malformed twice" in twice.summary


def test_the_model_check_never_achieves_without_evidence() -> None:
    driver = fake_robot()
    cannot = json.dumps({"outcome": "cannot_tell", "evidence": "the view is blocked"})
    assert ModelTaskCheck(judge(cannot), driver.observe).check("go", []).outcome == "unverified"

    def blind_observe() -> Any:
        return driver.observe().model_copy(update={"images": {}})

    blind = ModelTaskCheck(judge(ACHIEVED), blind_observe).check("go", [])
    assert blind.outcome == "unverified" and "no camera image" in blind.summary
    failing = ScriptedModel([RuntimeError("judge offline")], name="judge")
    broken = ModelTaskCheck(failing, driver.observe).check("go", [])
    assert broken.outcome == "unverified" and "judge offline" in broken.summary


# ====================================================================== combining


class Fixed:
    kind = "programmatic"

    def __init__(self, outcome: str) -> None:
        self.outcome = outcome

    def check(self, instruction: str, revisions: Any, *, cancelled: Any = None) -> Any:
        return TaskCheckResult(self.outcome, "simulator", f"check says {self.outcome}")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "check_outcome", "claim", "outcome", "succeeds"),
    [
        ("completed", None, None, "unverified", True),
        ("completed", None, "achieved", "unverified", True),
        ("completed", None, "not_achieved", "not_achieved", False),
        ("completed", "achieved", None, "achieved", True),
        ("completed", "achieved", "not_achieved", "achieved", True),
        ("completed", "not_achieved", "achieved", "not_achieved", False),
        ("completed", "unverified", None, "unverified", False),
        ("completed", "unverified", "achieved", "unverified", False),
        ("completed", "unverified", "not_achieved", "not_achieved", False),
        ("max_turns", "achieved", "achieved", "unverified", False),
        ("cancelled", None, None, "unverified", False),
        ("failed", "achieved", None, "unverified", False),
    ],
)
def test_the_outcome_table(
    status: str, check_outcome: str | None, claim: str | None, outcome: str, succeeds: bool
) -> None:
    report = {"achieved": "Outcome: achieved", "not_achieved": "Outcome: not achieved"}.get(
        claim or "", "a report"
    )
    got, evidence = judge_task(
        Fixed(check_outcome) if check_outcome else None,  # type: ignore[arg-type]
        status=status,
        report=report,
        instruction="put the red cube in the tray",
        revisions=[],
    )
    assert got == outcome and evidence.claim == claim
    assert task_succeeded(status, got, evidence) is succeeds
    assert evidence.check == ("programmatic" if check_outcome else "none")


def test_a_broken_check_costs_the_verdict_not_the_ending() -> None:
    class Broken:
        kind = "programmatic"

        def check(self, *args: Any, **kwargs: Any) -> Any:
            raise KeyError("bug")

    outcome, evidence = judge_task(
        Broken(),
        status="completed",
        report="done",
        instruction="x",
        revisions=[],  # type: ignore[arg-type]
    )
    assert outcome == "unverified" and "KeyError" in evidence.summary


# ====================================================================== through the loop


@pytest.fixture
def config() -> HarnessConfig:
    return HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )


def test_run_result_and_done_carry_the_outcome(config: HarnessConfig) -> None:
    with Harness(config, model=ScriptedModel([reply("did it")])) as h:
        result = h.run("wave")
    assert result.outcome == "unverified" and result.evidence.check == "none" and result.ok
    with Harness(config, model=ScriptedModel([reply("no arm here\nOutcome: not achieved")])) as h:
        result = h.run("wave")
    assert result.status == "completed" and result.outcome == "not_achieved" and not result.ok


def test_the_task_check_runs_once_when_the_model_ends_the_task(config: HarnessConfig) -> None:
    calls: list[str] = []

    class Counting:
        kind = "programmatic"

        def check(self, instruction: str, revisions: Any, *, cancelled: Any = None) -> Any:
            calls.append(instruction)
            return TaskCheckResult("achieved", "simulator", "all good")

    model = ScriptedModel([call("update_task_notes", add_notes=["x"]), reply("done")])
    with Harness(config, model=model, task_check=Counting()) as h:  # type: ignore[arg-type]
        done = next(e for e in h.run_stream("wave") if isinstance(e, DoneEvent))
        stored = h.store.tasks[done.task_id]  # type: ignore[attr-defined]
    assert calls == ["wave"]
    assert done.outcome == "achieved" and done.evidence.checked_by == "simulator"
    assert stored["outcome"] == "achieved" and stored["evidence"]["summary"] == "all good"
    with Harness(config, model=ScriptedModel([]), task_check=Counting()) as h:  # type: ignore[arg-type]
        ended = next(e for e in h.run_stream("wave", max_turns=1) if isinstance(e, DoneEvent))
    assert ended.status == "failed" and ended.outcome == "unverified" and calls == ["wave"]


# ====================================================================== the simulator


def _demo(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, DoneEvent]:
    code = main(
        [
            "demo",
            *argv,
            "--json",
            "--set",
            f"run.store={tmp_path / 'store'}",
            "--set",
            f"memory.path={tmp_path / 'memory'}",
        ]
    )
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    done = parse_event(lines[-1])
    assert isinstance(done, DoneEvent)
    return code, done


@pytest.mark.sim
def test_issue_examples_on_the_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no configs/default.yaml: the built-in demo defaults

    code, done = _demo(tmp_path, capsys, "put the red cube in the tray")
    assert (code, done.status, done.outcome) == (0, "completed", "achieved")
    assert done.evidence.check == "programmatic" and done.evidence.conditions[0].held

    code, done = _demo(tmp_path, capsys, "dance the macarena")
    assert (code, done.status, done.outcome) == (1, "completed", "not_achieved")
    assert done.evidence.checked_by == "the model's report"
    assert "cannot parse the instruction" in done.evidence.summary

    code, done = _demo(tmp_path, capsys, "put the purple cube in the tray")
    assert (code, done.status, done.outcome) == (1, "completed", "not_achieved")
    assert done.evidence.checked_by == "simulator"
    assert "there is no purple cube in the scene" in done.evidence.conditions[0].evidence


@pytest.mark.sim
def test_a_profile_that_blocks_every_motion_is_not_achieved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    profile = yaml.safe_load(
        (
            Path(__file__).resolve().parents[2] / "embodiment/profiles/panda_tabletop.yaml"
        ).read_text()
    )
    profile["keep_out"].append(
        {"name": "everything", "frame": "world", "min": [0.1, -0.6, 0.6], "max": [0.9, 0.6, 1.3]}
    )
    path = tmp_path / "fenced.yaml"
    path.write_text(yaml.safe_dump(profile))
    code, done = _demo(
        tmp_path, capsys, "put the red cube in the tray", "--set", f"embodiment={path}"
    )
    # every move is blocked for a reason that still holds: the repeated refusal ends the task
    assert done.status == "failed" and done.outcome != "achieved" and code == 1, done
    assert done.termination_reason.startswith("stuck: "), done.termination_reason


@pytest.mark.sim
def test_an_instruction_folded_away_still_is_checked(tmp_path: Path) -> None:
    """The planner loses sight of the instruction (a checkpoint folded it) and answers
    "There is no instruction to act on." with the red cube still in the gripper: the task
    completes, and its outcome says the goal was not met."""
    from harness.context import ItemState
    from harness.events import CompactionEvent
    from harness.messages import CheckpointItem, CheckpointSource, InstructionItem

    class FoldAfterPick:
        def compact(self, context: Any, *, force: bool = False, reason: str = "") -> Any:
            items = context.accumulated
            picked = any(
                getattr(i, "name", "") == "pick" and i.kind == "tool_result" for i in items
            )
            if not picked or not any(isinstance(i, InstructionItem) for i in items):
                return
            checkpoint = CheckpointItem(
                task_id=items[0].task_id,
                turn=items[-1].turn,
                text="Checkpoint: earlier turns were folded.",
                source=CheckpointSource(
                    first_turn=items[0].turn,
                    last_turn=items[-1].turn,
                    task_ids=[items[0].task_id],
                    items_folded=len(items),
                    rounds=0,
                    model="test",
                    mode="deterministic",
                ),
            )
            states = {i.id: ItemState(status="summarized", reason="folded") for i in items}
            context.replace([checkpoint], states=states)
            yield CompactionEvent(status="completed", mode="deterministic")

    config = {
        "model": {"provider": "planner", "name": "tabletop-planner"},
        "embodiment": "panda_tabletop",
        "driver": {"name": "sim.tabletop", "seed": 0},
        "run": {"store": None, "max_turns": 20},
        "memory": {"enabled": False},
        "evaluation": {"required_tools": ["pick", "place"]},
    }
    with Harness.from_config(HarnessConfig.model_validate(config), compactor=FoldAfterPick()) as h:
        result = h.run("put the red cube in the tray")
        held = h.session.driver.held_ref()  # type: ignore[union-attr]
    assert "There is no instruction to act on." in result.report
    assert held == "red_cube_1"
    assert result.status == "completed" and result.outcome == "not_achieved" and not result.ok
    assert "still in the gripper" in result.evidence.conditions[0].evidence


# ====================================================================== the command line


def test_harness_run_exit_codes_follow_the_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    done_cfg = scripted_config(tmp_path / "ok.yaml", store, [{"text": "waved"}])
    assert main(["run", "--config", str(done_cfg), "wave"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "unverified" in out and "no task check is configured" in out
    assert "rests on the model's word alone" in out

    failed_cfg = scripted_config(
        tmp_path / "no.yaml", store, [{"text": "there is no arm\nOutcome: not achieved"}]
    )
    assert main(["run", "--config", str(failed_cfg), "--json", "wave"]) == 1
    done = parse_event(capsys.readouterr().out.splitlines()[-1])
    assert isinstance(done, DoneEvent) and done.outcome == "not_achieved"

    limit_cfg = scripted_config(
        tmp_path / "limit.yaml",
        store,
        [{"tool": {"name": "update_task_notes", "arguments": {"add_notes": ["a"]}}}] * 3,
    )
    assert main(["run", "--config", str(limit_cfg), "--max-turns", "1", "wave"]) == 1
    capsys.readouterr()

    assert main(["runs", "--store", str(store), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["outcome"] for r in rows] == ["unverified", "not_achieved", "unverified"]
    assert rows[1]["evidence"]["checked_by"] == "the model's report"
    assert main(["runs", "--store", str(store)]) == 0
    table = " ".join(capsys.readouterr().out.split())
    assert "not_achieved" in table and "unverified (no check)" in table

    assert main(["show", rows[1]["id"], "--store", str(store)]) == 1
    shown = " ".join(capsys.readouterr().out.split())
    assert "outcome" in shown and "not achieved" in shown
    assert main(["show", rows[2]["id"], "--store", str(store)]) == 0
    capsys.readouterr()

    assert main(["report", rows[1]["id"], "--store", str(store)]) == 0
    page = next((store / "reports").glob(f"{rows[1]['id']}.html")).read_text()
    assert "b-not_achieved" in page and "the model&#x27;s report" in page


def test_a_store_from_before_outcomes_reads_them_as_unverified(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path)
    store.open_session("sess_a", config={})
    store.start_task("sess_a", "task_a", "wave")
    old_done = DoneEvent(status="completed", termination_reason="ok", task_id="task_a")
    store.append_event(old_done.model_copy(update={"session_id": "sess_a", "seq": 1}))
    store.end_task("task_a", status="completed", reason="ok", report="", turns=1, usage={})
    store.close()
    conn = sqlite3.connect(tmp_path / STORE_FILENAME)
    conn.execute("UPDATE tasks SET outcome = 'achieved'")  # a column the migration fills
    conn.execute("PRAGMA user_version = 2")
    for statement in ("DROP INDEX world_states_by_task", "DROP TABLE world_states"):
        conn.execute(statement)
    conn.execute("ALTER TABLE tasks DROP COLUMN evidence")
    conn.execute("ALTER TABLE tasks DROP COLUMN outcome")
    conn.execute("UPDATE events SET data = json_remove(data, '$.outcome', '$.evidence')")
    conn.commit()
    conn.close()
    with RunLog(tmp_path) as log:
        task = log.task("task_a")
        assert task.outcome == "unverified" and task.evidence == OutcomeEvidence()
        assert log.world_state("sess_a") is None
