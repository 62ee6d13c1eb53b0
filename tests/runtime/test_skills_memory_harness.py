"""Skills and memory through a real Harness run with a scripted model: the catalog and
memory in Resident, load_skill across tasks, capability admission, the model-backed
memory adapters and the memory_consolidation event."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import ConfigError, Harness, HarnessConfig, tool
from harness.assembly.build import build_parts
from harness.assembly.memory import (
    ConsolidationOutputError,
    ModelLedgerSummarizer,
    ModelLessonProposer,
    build_memory,
    parse_lessons_json,
)
from harness.events import DoneEvent, EventBase
from harness.messages import ModelRequest, ModelResponse, ToolResultItem, Verdict
from harness.protocols import MemoryProvider, SkillLibrary
from harness.providers import ScriptedModel, call, reply
from memory import MemoryStore, TaskRecord, ToolOutcome
from skills import SkillCatalog

# --------------------------------------------------------------------------- helpers


def results(model: ScriptedModel) -> list[ToolResultItem]:
    """Every tool result the model saw, in order (from its last request)."""
    return [i for i in model.requests[-1].items if isinstance(i, ToolResultItem)]


def resident(request: ModelRequest) -> dict[str, str]:
    return {block.name: block.text for block in request.system}


def done(events: list[EventBase]) -> DoneEvent:
    finals = [e for e in events if isinstance(e, DoneEvent)]
    assert len(finals) == 1 and events[-1] is finals[0]
    return finals[0]


def write_skill(root: Path, name: str, body: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n{body}\n")


def decisions(model: ScriptedModel) -> list[ModelRequest]:
    return [r for r in model.requests if r.purpose == "decide"]


# --------------------------------------------------------------------------- skills


def test_catalog_is_resident_and_bodies_last_for_one_task(config: HarnessConfig) -> None:
    catalog = SkillCatalog.from_paths()
    model = ScriptedModel(
        [
            call("load_skill", name="pick-and-place"),
            call("load_skill", name="pick-and-place"),
            call("load_skill", name="grasp-recovery"),
            reply("first done"),
            call("load_skill", name="grasp-recovery"),
            reply("second done"),
        ]
    )
    with Harness(config, model=model, skills=catalog) as h:
        first = list(h.run_stream("task one"))
        after_first = list(h.context.resident_blocks())
        second = list(h.run_stream("task two"))
    requests = model.requests
    assert resident(requests[0])["skills"] == catalog.catalog_text()
    assert "skill:pick-and-place" not in resident(requests[0])
    assert resident(requests[1])["skill:pick-and-place"].startswith("Skill pick-and-place\n")
    # read from the first task's last request: since issue 17 a later task no longer
    # carries an ended task's tool traffic (this read the second task's last request)
    first_results = [i for i in requests[3].items if isinstance(i, ToolResultItem)]
    loaded = [r.text for r in first_results[:3]]
    assert "loaded" in loaded[0] and "already loaded (no change)" in loaded[1]
    assert not [i for i in requests[4].items if isinstance(i, ToolResultItem)]
    # several skills at once, in load order, after the catalog and memory
    names = [block.name for block in requests[3].system]
    assert names[-2:] == ["skill:pick-and-place", "skill:grasp-recovery"]
    assert [e.name for e in first if e.type == "skill_loaded"] == [  # type: ignore[attr-defined]
        "pick-and-place",
        "grasp-recovery",
    ]
    # the bodies left with the task; the catalog stays; the next task can load again
    assert not [b for b in after_first if b.name.startswith("skill:")]
    assert [b for b in requests[4].system if b.name.startswith("skill:")] == []
    assert resident(requests[4])["skills"] == catalog.catalog_text()
    assert "skill:grasp-recovery" in resident(requests[5])
    assert [e.type for e in second].count("skill_loaded") == 1


def test_unknown_skill_and_path_like_names_give_close_matches(config: HarnessConfig) -> None:
    model = ScriptedModel(
        [
            call("load_skill", name="stacknig"),
            call("load_skill", name="../stacking"),
            call("load_skill_resource", name="stacking", resource="../pick-and-place/SKILL.md"),
            call("load_skill_resource", name="stacking", resource="stack-check.md"),
            call("load_skill_resource", name="stacking", resource="stack-checks.md"),
            reply("ok"),
        ]
    )
    with Harness(config, model=model, skills=SkillCatalog.from_paths()) as h:
        h.run("look things up")
    first, second, escape, typo, good = results(model)
    assert first.error_kind == "unknown_skill" and "did you mean stacking" in first.text
    assert second.error_kind == "unknown_skill"
    assert escape.error_kind == "invalid_resource" and "may not contain '..'" in escape.text
    assert typo.error_kind == "unknown_resource" and "did you mean stack-checks.md" in typo.text
    assert not good.is_error and good.text.startswith("# Diagnosing a failed stacking step")


def small_window(config: HarnessConfig, window: int) -> ScriptedModel:
    config.context.compaction.reserve_tokens = 500
    return ScriptedModel([], context_window=window)


def test_a_skill_that_does_not_fit_is_refused_never_truncated(
    config: HarnessConfig, tmp_path: Path
) -> None:
    write_skill(tmp_path, "huge", "Step. " * 1500)  # ~2,250 tokens
    write_skill(tmp_path, "small", "Look first, then act.")
    config.context.compaction.reserve_tokens = 500
    model = ScriptedModel(
        [call("load_skill", name="huge"), call("load_skill", name="small"), reply("ok")],
        context_window=5000,
    )
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    with Harness(config, model=model, skills=catalog) as h:
        events = list(h.run_stream("try both"))
    refused, loaded = results(model)
    assert refused.error_kind == "admission_refused"
    # the estimated size, what is in use and the ceiling (50% of 4500 less 512 = 1738)
    assert "skill 'huge' would add about 2" in refused.text
    assert "the ceiling is 1738 tokens (50% of the 4500-token input budget less a " in (
        refused.text
    )
    assert "nothing was truncated" in refused.text
    assert "skill:huge" not in resident(model.requests[-1])
    assert not loaded.is_error and "skill:small" in resident(model.requests[-1])
    assert [e.name for e in events if e.type == "skill_loaded"] == ["small"]  # type: ignore


def test_tool_definitions_that_do_not_fit_end_the_task_at_start(config: HarnessConfig) -> None:
    def described(index: int) -> Any:
        def handler(text: str) -> str:
            return text

        handler.__name__ = f"tool_{index}"
        handler.__doc__ = "A tool with a long description. " * 20 + "\n\nArgs:\n    text: x."
        return tool(handler)

    model = small_window(config, 2000)
    with Harness(config, model=model, tools=[described(i) for i in range(12)]) as h:
        events = list(h.run_stream("anything"))
    final = done(events)
    assert final.status == "failed"
    # the optional features went first (named in a warning), then the rest was refused
    left_out = [e.message for e in events if e.type == "notification" and "left out" in e.message]
    assert left_out and "archive search (search_archive)" in left_out[0]
    assert final.termination_reason.startswith(
        "capability admission: the tool definitions (15 tools) would add about "
    )
    assert "the ceiling is 238 tokens" in final.termination_reason
    # and it says what to do about it (a small local model's first run ends here)
    assert final.termination_reason.endswith("use a model with a larger context window.")
    assert "narrow an MCP server" in final.termination_reason
    assert model.requests == []  # the model was never called with a request that cannot fit


# --------------------------------------------------------------------------- memory through a run


@tool
def pick(ref: str) -> str:
    """Pick an object.

    Args:
        ref: The object's ref.
    """
    return f"picked {ref}"


@tool
def look() -> str:
    """Take a fresh image."""
    return "fresh image"


class FlakyGrasp:
    """The evaluator: the first pick fails, later ones succeed."""

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, **kw: Any) -> Verdict:
        self.calls += 1
        if self.calls == 1:
            return Verdict(status="failure", evidence="not held: fingers closed on nothing")
        return Verdict(status="success", evidence="held red_cube_1")


def memory_model(
    script: list[ModelResponse], *, lessons: Any, summary: str = "pick: recovers after look"
) -> ScriptedModel:
    """A model that follows ``script`` for decisions and answers memory requests."""
    steps = iter(script)

    def respond(request: ModelRequest) -> ModelResponse:
        if request.purpose == "consolidate":
            return reply(lessons if isinstance(lessons, str) else json.dumps(lessons))
        if request.purpose == "summarize":
            return reply(summary)
        return next(steps)

    return ScriptedModel(responder=respond)


GRASP_SCRIPT = [
    call("pick", ref="red_cube_1"),
    call("update_task_notes", phase="recovering", add_notes=["pick failed: not held"]),
    call("look"),
    call("pick", ref="red_cube_1"),
    reply("red cube picked"),
]


def test_memory_consolidation_event_from_a_real_run(config: HarnessConfig, tmp_path: Path) -> None:
    config.memory.enabled = True
    config.evaluation.required_tools = ["pick"]
    lessons = {
        "lessons": [
            {
                "text": "When pick reports not held, look again before retrying it.",
                "kind": "failure",
                "tool": "pick",
                "confidence": 0.9,
            },
            {"text": "Place gently into the tray.", "kind": "success", "tool": "place",
             "confidence": 0.9},
            {"text": "The tray is always on the left.", "kind": "general", "confidence": 0.5},
            {"text": "Pick from above works.", "kind": "success", "tool": "pick",
             "confidence": 0.8},
        ]
    }  # fmt: skip
    model = memory_model([*GRASP_SCRIPT, reply("second task done")], lessons=lessons)
    store = MemoryStore(
        tmp_path, proposer=ModelLessonProposer(model), summarizer=ModelLedgerSummarizer(model)
    )
    with Harness(
        config, model=model, tools=[pick, look], memory=store, evaluator=FlakyGrasp()
    ) as h:
        events = list(h.run_stream("pick up the red cube"))
        second = list(h.run_stream("report what you know"))

    final = done(events)
    assert final.status == "completed"
    event = events[-2]
    assert event.type == "memory_consolidation"
    assert event.status == "completed"  # type: ignore[attr-defined]
    assert len(event.kept) == 2  # type: ignore[attr-defined]
    assert event.kept[0].startswith("pick (failure): When pick reports not held")  # type: ignore
    rejected = {r["lesson"]: r["reason"] for r in event.rejected}  # type: ignore[attr-defined]
    assert rejected == {
        "Place gently into the tray.": "tool 'place' was not used in this task",
        "The tray is always on the left.": "confidence 0.50 is below the threshold 0.75",
    }
    assert "lessons from model 'scripted': 4 proposed, 2 kept, 2 rejected" in event.reason  # type: ignore

    consolidate = [r for r in model.requests if r.purpose == "consolidate"]
    assert len(consolidate) == 1  # the second task made no tool call: nothing to learn
    sent = consolidate[0].items[0].text  # type: ignore[union-attr]
    assert '"evaluator_verdict": "failure"' in sent and '"tool": "look"' in sent

    # ledgers for the world-facing tools only; the live Task Notes are mirrored
    assert sorted(p.name for p in store.ledger_folder.glob("*.md")) == ["look.md", "pick.md"]
    assert store.ledger("pick").counts["failure"] == 1
    assert store.ledger("pick").counts["success"] == 1
    assert "goal: report what you know" in store.task_notes_file.read_text()

    # the next task reads memory at its start: the summarizer's view of the changed ledgers
    memory_text = resident(decisions(model)[len(GRASP_SCRIPT)])["memory"]
    assert "- pick: recovers after look" in memory_text
    assert done(second).status == "completed"
    summarize = [r for r in model.requests if r.purpose == "summarize"]
    assert len(summarize) == 2  # pick and look, once each

    # memory's model calls are part of what each task cost: the lesson proposal at the end
    # of the first task, the two ledger summaries at the start of the second
    decided_first = len(GRASP_SCRIPT)
    assert final.usage.requests == decided_first + 1
    assert done(second).usage.requests == 1 + 2


def test_cancelled_task_skips_consolidation_with_the_reason(
    config: HarnessConfig, tmp_path: Path
) -> None:
    config.memory.enabled = True
    model = memory_model([call("look"), call("look")], lessons={"lessons": []})
    calls = iter([False, False, False, True])
    store = MemoryStore(tmp_path, proposer=ModelLessonProposer(model))
    with Harness(config, model=model, tools=[look], memory=store) as h:
        events = list(h.run_stream("look around", should_cancel=lambda: next(calls, True)))
    assert done(events).status == "cancelled"
    event = events[-2]
    assert event.type == "memory_consolidation" and event.status == "skipped"  # type: ignore
    assert "status 'cancelled'" in event.reason  # type: ignore[attr-defined]
    assert [r for r in model.requests if r.purpose == "consolidate"] == []


def test_memory_disabled_reads_and_writes_nothing(config: HarnessConfig, tmp_path: Path) -> None:
    model = ScriptedModel([call("look"), reply("ok")])
    store = MemoryStore(tmp_path)
    with Harness(config, model=model, tools=[look], memory=store) as h:
        events = list(h.run_stream("look"))
    assert not [e for e in events if e.type == "memory_consolidation"]
    assert list(store.ledger_folder.iterdir()) == []
    assert not store.task_notes_file.exists()


# --------------------------------------------------------------------------- adapters


def record(*outcomes: ToolOutcome) -> TaskRecord:
    return TaskRecord("t", "do it", "completed", "done", "notes", list(outcomes))


def proposer_with(*answers: str) -> tuple[ModelLessonProposer, ScriptedModel]:
    model = ScriptedModel([reply(answer) for answer in answers])
    return ModelLessonProposer(model), model


def test_lesson_json_may_come_fenced_or_wrapped_in_prose() -> None:
    body = '{"lessons": [{"text": "t", "confidence": 1}]}'
    assert parse_lessons_json(body) == [{"text": "t", "confidence": 1}]
    assert parse_lessons_json(f"```json\n{body}\n```") == [{"text": "t", "confidence": 1}]
    assert parse_lessons_json(f"Here you go:\n{body}\nThanks") == [{"text": "t", "confidence": 1}]
    for bad, reason in [
        ("no json here", "no JSON object"),
        ("{'lessons': []}", "not valid JSON"),
        ('{"items": []}', "lessons: Field required"),
        ('{"lessons": "all of them"}', "lessons: Input should be a valid list"),
    ]:
        with pytest.raises(ValueError, match=reason):
            parse_lessons_json(bad)


def test_malformed_proposal_gets_one_repair_round() -> None:
    outcome = ToolOutcome(1, "pick", True, "success", "held")
    proposer, model = proposer_with("sure! lessons: none", '{"lessons": []}')
    assert proposer.propose(record(outcome)) == []
    assert [r.purpose for r in model.requests] == ["consolidate", "consolidate"]
    repair = model.requests[1].items
    assert repair[1].text == "sure! lessons: none"  # type: ignore[union-attr]
    assert "no JSON object" in repair[2].text  # type: ignore[union-attr]

    proposer, model = proposer_with("nope", "still nope")
    with pytest.raises(ConsolidationOutputError, match="no JSON object"):
        proposer.propose(record(outcome))


def test_no_outcomes_means_no_model_call() -> None:
    proposer, model = proposer_with()
    assert proposer.propose(record()) == []
    assert model.requests == []


def test_summarizer_sends_the_ledger_with_purpose_summarize() -> None:
    model = ScriptedModel([reply("  pick is reliable  "), reply("")])
    summarizer = ModelLedgerSummarizer(model)
    assert summarizer.summarize("pick", "# Tool experience: pick", max_chars=300) == (
        "pick is reliable"
    )
    assert model.requests[0].purpose == "summarize"
    assert "# Tool experience: pick" in model.requests[0].items[0].text  # type: ignore
    with pytest.raises(ValueError, match="no text"):
        summarizer.summarize("pick", "ledger", max_chars=300)


# --------------------------------------------------------------------------- factory


class Planner(ScriptedModel):
    """An offline planner that cannot write prose."""

    supports_summaries = False


def configured(tmp_path: Path, **sections: Any) -> HarnessConfig:
    data = {"embodiment": None, "driver": None, "run": {"store": None}, **sections}
    config = HarnessConfig.model_validate(data)
    config.base_dir = str(tmp_path)
    return config


@pytest.mark.parametrize(
    ("model_factory", "uses_model"),
    [(lambda: ScriptedModel([]), True), (lambda: Planner([]), False)],
)
def test_memory_uses_the_model_only_when_it_can_write_prose(
    tmp_path: Path, model_factory: Callable[[], ScriptedModel], uses_model: bool
) -> None:
    store = build_memory(configured(tmp_path, memory={"path": "mem"}), model=model_factory())
    assert store is not None and store.folder == tmp_path / "mem"
    assert (store.proposer is not None) is uses_model
    assert (store.summarizer is not None) is uses_model


def test_from_config_builds_skills_and_memory(tmp_path: Path) -> None:
    write_skill(tmp_path / "my_skills", "wipe", "Wipe the table.")
    config = configured(
        tmp_path,
        skills={"paths": ["my_skills"]},
        memory={"path": "mem", "consolidation_min_confidence": 0.9},
    )
    model = ScriptedModel([reply("ok")])
    with Harness.from_config(config, model=model) as h:
        assert isinstance(h.skills, SkillCatalog) and isinstance(h.skills, SkillLibrary)
        assert isinstance(h.memory, MemoryProvider)
        assert "wipe" in h.skills.names() and "stacking" in h.skills.names()
        assert isinstance(h.memory, MemoryStore) and h.memory.min_confidence == 0.9
        h.run("hello")
    assert resident(model.requests[0])["skills"].count("\n- ") == 5


def test_invalid_skill_stops_the_start_naming_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "my_skills" / "broken"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("no front matter")
    config = configured(tmp_path, skills={"paths": ["my_skills"]}, memory={"enabled": False})
    with pytest.raises(ConfigError) as info:
        build_parts(config, given={"model": ScriptedModel([])})
    assert info.value.key == "skills.paths"
    assert f"{folder / 'SKILL.md'}: missing front matter" in str(info.value)


def test_no_skills_configured_means_no_library(tmp_path: Path) -> None:
    config = configured(tmp_path, skills={"builtin": False}, memory={"enabled": False})
    parts, _ = build_parts(config, given={"model": ScriptedModel([])})
    assert parts["skills"] is None and parts["memory"] is None
