"""Token accounting: per-item cached estimates, images by provider formula, calibration
from plausible usage reports, and one total that every budget decision reads."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import CompactionConfig, PruningConfig
from harness.context import Budget, Context
from harness.context.compaction.compactor import CheckpointCompactor
from harness.messages import ImagePart, ImageRef, ToolResultItem, ToolSpec
from harness.tokens import TokenEstimator, anthropic_image_tokens, openai_image_tokens
from tests.histories import build_history, long_task_spec
from tests.tiers import examples


def test_images_cost_their_provider_formula_never_their_encoded_size() -> None:
    assert openai_image_tokens(640, 480) == 85 + 170 * 2
    assert openai_image_tokens(640, 480, detail="low") == 85
    assert openai_image_tokens(4096, 2048) == 85 + 170 * 6  # fit 2048, shortest side 768
    assert anthropic_image_tokens(640, 480) == 410
    assert anthropic_image_tokens(3136, 1568) == anthropic_image_tokens(1568, 784)
    small = ImagePart(data=b"x" * 100, width=640, height=480)
    huge = ImagePart(data=b"x" * 2_000_000, width=640, height=480)
    costs = []
    for image in (small, huge):
        context = Context(TokenEstimator(image_cost="anthropic"), Budget(200_000, 16_384))
        context.set_refreshed(brief="", observation="", images=[image])
        costs.append(context.sections()["images"])
    assert costs == [410, 410]


def test_images_that_left_the_context_cost_only_their_placeholder() -> None:
    context = Context(TokenEstimator(), Budget(200_000, 16_384))
    ref = ImageRef(sha256="ab" * 32, width=4000, height=3000, label="wrist")
    item = context.append(ToolResultItem(call_id="c", name="snap", text="took it", images=[ref]))
    with_image = context.item_tokens(item)
    plain = Context(TokenEstimator(), Budget(200_000, 16_384))
    bare = plain.append(ToolResultItem(call_id="c", name="snap", text="took it"))
    without = plain.item_tokens(bare)
    assert with_image - without == context.estimator.text(ref.placeholder())


def test_tool_schemas_are_counted() -> None:
    context = Context(TokenEstimator(), Budget(200_000, 16_384))
    assert context.tools_tokens() == 0
    schema = {"type": "object", "properties": {f"p{i}": {"type": "number"} for i in range(50)}}
    context.set_tools([ToolSpec(name="move", description="Move the arm.", parameters=schema)])
    assert context.tools_tokens() > context.estimator.json(schema)


def test_calibration_learns_from_plausible_reports_and_ignores_noise() -> None:
    estimator = TokenEstimator()
    assert estimator.observe_usage(estimated_prompt=1000, reported_prompt=1300)
    assert estimator.calibration == 1.3
    assert not estimator.observe_usage(estimated_prompt=1000, reported_prompt=9000)
    assert estimator.ignored_reports == 1 and estimator.calibration == 1.3


def test_every_budget_decision_reads_one_total() -> None:
    """The prompt snapshot (sum of sections), the trigger and the error all agree, and a
    calibration change moves all of them together."""
    history = build_history([long_task_spec()])
    context = history.context
    assert context.total_tokens() == sum(context.sections().values())
    before = context.total_tokens()
    context.estimator.calibration = 1.5
    after = context.total_tokens()
    assert after == sum(context.sections().values()) > before
    # a threshold between the two totals: compaction fires only with the new calibration
    context.budget = Budget(context_window=(before + after) // 2 + 1000, reserve_tokens=1000)
    compactor = CheckpointCompactor(
        CompactionConfig(), PruningConfig(enabled=False), summarizer=None, store=history.store
    )
    events = list(compactor.compact(context))
    assert events and events[0].status == "started" and events[0].tokens_before == after
    context.estimator.calibration = 1.0
    assert list(compactor.compact(context)) == []


def test_a_far_too_low_estimate_is_recalibrated_at_once() -> None:
    """The issue's numbers: 3,647 estimated, 8,669 reported by a local chat format. A
    running median over earlier good reports would ignore it for eight more calls."""
    estimator = TokenEstimator()
    for _ in range(14):
        estimate = estimator.calibrated(1000)
        assert estimator.observe_usage(estimated_prompt=estimate, reported_prompt=1020)
    assert estimator.calibration == pytest.approx(1.02, abs=0.002)
    assert estimator.observe_usage(
        estimated_prompt=estimator.calibrated(3647), reported_prompt=8669
    )
    assert estimator.recalibrations == 1
    assert estimator.calibrated(3647) >= 8669 - 2
    # a far-too-high estimate only moves the median (over-estimating is safe)
    before = estimator.calibration
    estimator.observe_usage(estimated_prompt=estimator.calibrated(1000), reported_prompt=500)
    assert estimator.calibration == before and estimator.recalibrations == 1


@settings(max_examples=examples(300), deadline=None)
@given(
    reports=st.lists(
        st.tuples(st.integers(1, 200_000), st.floats(0.05, 20.0)), min_size=1, max_size=40
    )
)
def test_calibration_stays_bounded_and_ignores_noise(reports: list[tuple[int, float]]) -> None:
    estimator = TokenEstimator()
    for raw, ratio in reports:
        estimate = estimator.calibrated(raw)
        before = estimator.calibration
        reported = max(1, int(estimate * ratio))
        used = estimator.observe_usage(estimated_prompt=estimate, reported_prompt=reported)
        exact = reported / estimate
        if exact > estimator.noise_factor or exact < 1 / estimator.noise_factor:
            assert not used and estimator.calibration == before
        elif exact > estimator.far_factor:
            bounds = (1 / estimator.noise_factor, estimator.noise_factor)
            expected = min(bounds[1], max(bounds[0], before * exact))
            assert used and estimator.calibration == pytest.approx(expected)
        assert 1 / estimator.noise_factor <= estimator.calibration <= estimator.noise_factor
