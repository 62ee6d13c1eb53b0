"""What a summarizer sees (sanitised, bounded, redacted) and how its answer is judged."""

from __future__ import annotations

import base64

from harness.context.compaction.summarizer import SUMMARY_SECTIONS, validate_summary
from harness.context.compaction.summary_input import (
    InputLimits,
    SummaryInput,
    pack_rounds,
    strip_media,
)
from harness.context.compaction.turns import group_turns
from harness.messages import (
    AssistantItem,
    ImageRef,
    InstructionItem,
    ModelResponse,
    ReasoningBlock,
    ToolCall,
    ToolResultItem,
)
from harness.redact import Redactor
from harness.store import MemoryRunStore
from harness.tokens import TokenEstimator
from tests.histories import VALID_NOTE, recall_references


def renderer(store: MemoryRunStore | None = None, **limits: int) -> SummaryInput:
    bounds = {"tool_result_max_chars": 500, "reasoning_max_chars": 300, "max_input_chars": 4000}
    bounds.update(limits)
    return SummaryInput(InputLimits(**bounds), redactor=Redactor(["ROBOT-[0-9]{6}"]), store=store)


def test_media_become_bounded_placeholders() -> None:
    payload = base64.b64encode(bytes(range(256)) * 40).decode()
    item = ToolResultItem(
        call_id="c1",
        name="snapshot",
        text=f"frame: data:image/jpeg;base64,{payload} raw: {payload} done",
        images=[ImageRef(sha256="ab" * 32, width=640, height=480, label="wrist")],
        task_id="t",
    )
    text = renderer(tool_result_max_chars=100_000).render_item(item)
    assert payload not in text and "base64," not in text
    assert text.count("characters omitted]") == 2
    assert "[image wrist 640x480 image://abababababababab]" in text
    assert strip_media("pose x=0.412 id=red_cube_1") == "pose x=0.412 id=red_cube_1"


def test_long_results_and_reasoning_keep_head_and_tail_with_an_archive_address() -> None:
    store = MemoryRunStore()
    output = "BEGIN " + "x" * 5000 + " END"
    store.archive_put("archive://t/c1", output, task_id="t", call_id="c1", tool="scan")
    result = ToolResultItem(call_id="c1", name="scan", text=output, archive="archive://t/c1")
    thought = "start of thought " + "y" * 3000 + " final thought"
    assistant = AssistantItem(
        reasoning=[ReasoningBlock(text=thought)],
        tool_calls=[ToolCall(id="c1", name="scan", arguments={"area": "tray_a"})],
        task_id="t",
        turn=3,
    )
    render = renderer(store)
    text = render.render_item(result)
    assert text.count("BEGIN") == 1 and text.endswith("END")
    assert "characters cut" in text and f"of {len(output)} characters" in text
    assert recall_references(text) == ["archive://t/c1"]
    rendered = render.render_item(assistant)
    assert "start of thought" in rendered and rendered.count("final thought") == 1
    [address] = recall_references(rendered)
    assert address == f"archive://t/{assistant.id}/reasoning0"
    assert store.archive_get(address) == thought  # archived exactly before it was cut
    assert 'CALL scan (call c1) {"area": "tray_a"}' in rendered


def test_encrypted_reasoning_is_omitted_and_secrets_are_redacted() -> None:
    assistant = AssistantItem(
        text="using key sk-proj-abcdefghijklmnopqrstuvwxyz012345 on ROBOT-123456",
        reasoning=[ReasoningBlock(redacted="opaque-encrypted-blob", provider="anthropic")],
    )
    text = renderer().render_item(assistant)
    assert "opaque-encrypted-blob" not in text and "[encrypted reasoning omitted]" in text
    assert "sk-proj" not in text and "ROBOT-123456" not in text
    assert text.count("[REDACTED]") == 2


def test_rounds_are_whole_turns_in_order_within_the_limit() -> None:
    items = []
    for turn in range(1, 21):
        call = ToolCall(id=f"c{turn}", name="scan")
        items.append(AssistantItem(tool_calls=[call], task_id="t", turn=turn))
        items.append(
            ToolResultItem(call_id=f"c{turn}", name="scan", text="z" * 300, task_id="t", turn=turn)
        )
    groups = group_turns(items)
    rounds = pack_rounds(groups, renderer(), skip=frozenset(), chunk_chars=1200)
    assert len(rounds) > 1
    assert all(len(r.text) <= 1200 for r in rounds)
    assert [g for r in rounds for g in r.groups] == groups
    assert [r.first_turn for r in rounds] == sorted(r.first_turn for r in rounds)


def test_input_instruction_images_render_as_placeholders() -> None:
    item = InstructionItem(
        text="put it there",
        images=[ImageRef(sha256="cd" * 32, width=320, height=240, label="user")],
    )
    assert "[image user 320x240 image://cdcdcdcdcdcdcdcd]" in renderer().render_item(item)


# --------------------------------------------------------------------------- validation


def problems(text: str, **kw: object) -> list[str]:
    response = ModelResponse(text=text, **kw)  # type: ignore[arg-type]
    return validate_summary(
        response, estimator=TokenEstimator(), max_tokens=400, replaced_tokens=1000
    )


def test_a_complete_note_is_valid_even_inside_a_code_fence() -> None:
    assert problems(VALID_NOTE) == []
    assert problems(f"```markdown\n{VALID_NOTE}\n```") == []
    assert problems(VALID_NOTE.replace("## ", "### ").replace("Open work", "OPEN WORK:")) == []


def test_each_kind_of_malformed_note_is_named() -> None:
    assert problems("") == ["the note is empty"]
    missing = problems("## Objective\nx\n## Progress\nx")
    assert missing == ["missing sections: ## Evidence, ## Failures, ## Open work"]
    empty = problems(VALID_NOTE.replace("none", ""))
    assert empty == ["empty sections (write 'none' instead): Failures"]
    assert "too long" in problems(VALID_NOTE + "\n- more" * 400)[0]
    big = validate_summary(
        ModelResponse(text=VALID_NOTE),
        estimator=TokenEstimator(),
        max_tokens=400,
        replaced_tokens=10,
    )
    assert big and "not smaller than what it replaces" in big[0]
    cut = problems(VALID_NOTE, stop_reason="max_tokens")
    assert cut == ["it was cut off at the output limit; write a shorter note"]
    tool = problems(VALID_NOTE, tool_calls=[ToolCall(id="c", name="pick")])
    assert tool == ["it called a tool; answer with the note as plain text"]
    assert len(SUMMARY_SECTIONS) == 5
