"""The built-in demo with a real model instead of the offline planner, when a key is set.

    export OPENAI_API_KEY=...      # or ANTHROPIC_API_KEY=...
    python examples/real_provider_demo.py "put the red cube in the tray"

Uses ``openai:gpt-4.1-mini`` or ``anthropic:claude-sonnet-4-6`` (override with ``--model``,
e.g. ``--model openai:qwen2.5-vl@http://127.0.0.1:8000/v1`` for a local server). Without a
key it says so and runs nothing. Same simulator, scene graph, safety envelope and evaluator
as ``harness demo``; only the decision model changes.
"""

from __future__ import annotations

import argparse
import os
import sys

from harness.cli import main as harness_main


def pick_model() -> str | None:
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:gpt-4.1-mini"
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic:claude-sonnet-4-6"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instruction", nargs="?", default="put all the cubes in the tray")
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    model = args.model or pick_model()
    if model is None:
        print(
            "Set OPENAI_API_KEY or ANTHROPIC_API_KEY (or pass --model) to run with a real "
            "model; `harness demo` runs the same task offline."
        )
        return 2
    key_env = "ANTHROPIC_API_KEY" if model.startswith("anthropic:") else "OPENAI_API_KEY"
    return harness_main(
        ["demo", args.instruction, "--model", model, "--set", f"model.api_key_env={key_env}"]
    )


if __name__ == "__main__":
    sys.exit(main())
