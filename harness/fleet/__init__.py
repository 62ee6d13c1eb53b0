"""Evaluation at scale: ``harness eval`` over seeded episode suites, on this machine's
worker processes or on Ray actors.

- :mod:`~harness.fleet.suite`: the suite file and its episodes;
- :mod:`~harness.fleet.episode`: one episode (its own Harness, run store and memory), its
  record, and the success check;
- :mod:`~harness.fleet.dispatch`: the queue the backends share, and retries of episodes
  whose worker died;
- :mod:`~harness.fleet.local` and :mod:`~harness.fleet.ray_backend`: the backends;
- :mod:`~harness.fleet.journal`: the eval folder (manifest, ``episodes.jsonl``, summary);
- :mod:`~harness.fleet.stats`: Wilson intervals, summaries and comparisons;
- :mod:`~harness.fleet.runner`: planning and running an eval;
- :mod:`~harness.fleet.eval_page`: the HTML page of an eval.

Layer 5, beside :mod:`harness.cli`: it uses the runtime and the assembly; nothing but the
CLI imports it.
"""
