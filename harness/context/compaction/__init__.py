"""Compaction: folding a prefix of Accumulated context into the one rolling checkpoint.

- :mod:`~harness.context.compaction.compactor`: the pipeline (prune, checkpoint, shrink),
  and folding an ended task's traffic when the next one starts;
- :mod:`~harness.context.compaction.turns`: Accumulated as whole turns; planning a fold;
- :mod:`~harness.context.compaction.folds`, :mod:`~harness.context.compaction.checkpoint`,
  :mod:`~harness.context.compaction.index`: the checkpoint, with or without a model, and
  the address index of every folded exchange;
- :mod:`~harness.context.compaction.summarizer`,
  :mod:`~harness.context.compaction.summary_input`,
  :mod:`~harness.context.compaction.deterministic`: writing the checkpoint's note;
- :mod:`~harness.context.compaction.archive`: archive addresses for shortened text;
- :mod:`~harness.context.compaction.shrink`, :mod:`~harness.context.compaction.overflow`:
  the last steps before giving up, and the provider-overflow ladder;
- :mod:`~harness.context.compaction.disabled`: the compactor when compaction is off.
"""

__all__: list[str] = []
