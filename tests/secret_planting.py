"""Plant secrets everywhere a session can see them, run it, and collect every sink.

Used by tests/core/test_secrets.py. The oracle here knows nothing of the harness's redactor:
it counts whole keys and every 10-character window of each key in raw bytes (any
fragment of 10 or more characters contains such a window).

Two keys are planted: an OpenAI-shaped key (``sk-proj-...``, caught by its shape) and the
value of the configured ``model.api_key_env`` variable (no known shape: caught only
because the config names the variable). They are put in the environment, the
instruction, tool outputs, a tool's error, tool-call arguments, Task Notes, streamed model
text (split across deltas), lessons and ledger summaries a memory model writes, and an MCP
server's stderr (each key split across two writes).
"""

from __future__ import annotations

import json
import random
import string
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.cli import main
from harness.events import EventBase
from harness.messages import ModelRequest, ModelResponse, ToolCall, Usage, new_id
from harness.providers import call, reply
from harness.providers.base import Chunk, Delta, Final

_rng = random.Random(16)
_ALPHABET = string.ascii_letters + string.digits
OPENAI_KEY = "sk-proj-" + "".join(_rng.choice(_ALPHABET) for _ in range(48))
API_KEY_VALUE = "hpk_" + "".join(_rng.choice(_ALPHABET) for _ in range(32))
API_KEY_ENV = "HARNESS_PLANTED_PROVIDER_KEY"
OPENAI_ENV = "HARNESS_PLANTED_OPENAI_KEY"
PLANTED = {"OpenAI-shaped key": OPENAI_KEY, "api_key_env value": API_KEY_VALUE}
FRAGMENT_CHARS = 10

LEAKY_SERVER = str(Path(__file__).parent / "fixtures" / "mcp_leaky_server.py")

Splitter = Callable[[str], list[str]]


# ====================================================================== the oracle


@dataclass
class Leaks:
    whole: int = 0
    fragments: int = 0
    """Occurrences of 10-character windows of a key (a whole key counts len - 9)."""
    where: list[str] = field(default_factory=list)

    def __add__(self, other: Leaks) -> Leaks:
        return Leaks(
            self.whole + other.whole, self.fragments + other.fragments, self.where + other.where
        )


def leaks_in(data: bytes, label: str = "") -> Leaks:
    """Whole planted keys and 10+ character fragments of them in ``data``."""
    found = Leaks()
    for name, key in PLANTED.items():
        whole = data.count(key.encode())
        windows = [key[i : i + FRAGMENT_CHARS] for i in range(len(key) - FRAGMENT_CHARS + 1)]
        fragments = sum(data.count(window.encode()) for window in windows)
        found.whole += whole
        found.fragments += fragments
        if fragments:
            at = min(data.find(w.encode()) for w in windows if w.encode() in data)
            found.where.append(f"{label}: {name} {data[max(0, at - 30) : at + 60]!r}")
    return found


# ====================================================================== the model


def one_char(text: str) -> list[str]:
    """Every character its own delta: the key is split at every offset at once."""
    return list(text)


def halves_of_the_key(text: str) -> list[str]:
    """Two deltas, cut in the middle of the first key in the text."""
    for key in PLANTED.values():
        at = text.find(key)
        if at >= 0:
            cut = at + len(key) // 2
            return [text[:cut], text[cut:]]
    return [text]


def chunks_of(size: int) -> Splitter:
    def split(text: str) -> list[str]:
        return [text[i : i + size] for i in range(0, len(text), size)] or [text]

    return split


class SplitStreamModel:
    """Replays decisions, streaming their text and tool arguments in deltas cut by
    ``split``; answers memory's requests (lessons, ledger summaries) with planted keys,
    as a model that had seen them in its context would."""

    name = "planted"
    context_window = 200_000
    image_cost = "generic"

    def __init__(self, decisions: list[ModelResponse], *, split: Splitter) -> None:
        self.decisions = list(decisions)
        self.split = split
        self.purposes: list[str] = []

    def stream(
        self, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Chunk]:
        self.purposes.append(request.purpose)
        if request.purpose == "consolidate":
            yield Final(ModelResponse(text=json.dumps({"lessons": PLANTED_LESSONS})))
            return
        if request.purpose != "decide":
            yield Final(ModelResponse(text=f"- flaky_login: fails without {OPENAI_KEY}"))
            return
        response = self.decisions.pop(0)
        for piece in self.split(response.text) if response.text else []:
            yield Delta("text", piece)
        for tool_call in response.tool_calls:
            for piece in self.split(json.dumps(tool_call.arguments)):
                yield Delta("tool_arguments", piece, tool_call.id)
        yield Final(
            response.model_copy(
                update={
                    "model": self.name,
                    "usage": Usage(input_tokens=100, output_tokens=20, requests=1),
                    "stop_reason": "tool_use" if response.tool_calls else "end_turn",
                }
            )
        )


PLANTED_LESSONS = [
    {
        "text": f"The controller key is {OPENAI_KEY}; the provider key is {API_KEY_VALUE}.",
        "kind": "general",
        "confidence": 0.9,
    },
    {
        "text": f"When flaky_login fails, log in again with {OPENAI_KEY}.",
        "kind": "failure",
        "tool": "flaky_login",
        "confidence": 0.9,
    },
]


# ====================================================================== the tools


@tool
def leaky_status() -> str:
    """Report the controller status (it echoes its credentials)."""
    return f"arm ok; controller key {OPENAI_KEY}; provider key {API_KEY_VALUE}"


def flaky_login_tool() -> Callable[[str], str]:
    """A login that fails once with the credentials in its error, then works."""
    calls: list[str] = []

    def flaky_login(token: str) -> str:
        """Log in to the gripper controller.

        Args:
            token: The controller token.
        """
        calls.append(token)
        if len(calls) == 1:
            raise ConnectionError(f"auth failed for {token} (provider {API_KEY_VALUE})")
        return "logged in"

    return flaky_login


def decisions() -> list[ModelResponse]:
    """Task one (six decisions) and task two (one)."""
    return [
        ModelResponse(
            text=f"Checking the controller; it may print {OPENAI_KEY} or {API_KEY_VALUE}.",
            tool_calls=[ToolCall(id=new_id("call"), name="leaky_status", arguments={})],
        ),
        call("flaky_login", token=OPENAI_KEY),
        call("flaky_login", token=API_KEY_VALUE),
        call(
            "update_task_notes",
            phase=f"logged in with {OPENAI_KEY}",
            add_notes=[f"provider key {API_KEY_VALUE}", f"controller key {OPENAI_KEY}"],
        ),
        call("leak"),
        reply(f"Done. The keys were {OPENAI_KEY} and {API_KEY_VALUE}; all logged in."),
        reply(f"Hello again; still holding {OPENAI_KEY}."),
    ]


# ====================================================================== the run


@dataclass
class PlantedRun:
    sinks: dict[str, bytes]
    tasks: list[str]
    events: list[EventBase]
    purposes: list[str]


def planted_config(root: Path) -> dict[str, Any]:
    return {
        "model": {"provider": "scripted", "name": "planted", "api_key_env": API_KEY_ENV},
        "embodiment": None,
        "driver": None,
        "scene": {"enabled": False},
        "skills": {"builtin": False},
        "memory": {"enabled": True, "path": str(root / "memory")},
        "run": {"store": str(root / "store"), "store_sync": "normal"},
        "mcp": {
            "servers": [
                {
                    "name": "leaky",
                    "command": sys.executable,
                    "args": [LEAKY_SERVER],
                    "env": {"LEAKY_SECRETS": f"{OPENAI_ENV},{API_KEY_ENV}"},
                    "env_passthrough": [OPENAI_ENV, API_KEY_ENV],
                }
            ]
        },
    }


def plant_and_run(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], split: Splitter
) -> PlantedRun:
    """Run two tasks with every secret planted, then read every sink back."""
    monkeypatch.setenv(API_KEY_ENV, API_KEY_VALUE)
    monkeypatch.setenv(OPENAI_ENV, OPENAI_KEY)
    config = HarnessConfig.model_validate(planted_config(root))
    model = SplitStreamModel(decisions(), split=split)
    events: list[EventBase] = []
    tasks: list[str] = []
    sinks: dict[str, bytes] = {}
    with Harness.from_config(config, model=model, tools=[leaky_status, flaky_login_tool()]) as h:
        for instruction in (
            f"Log in to the gripper with {OPENAI_KEY} (provider {API_KEY_VALUE}).",
            f"Say hello; the key {OPENAI_KEY} still holds.",
        ):
            stream = h.run_stream(instruction)
            events.extend(stream)
            tasks.append(stream.task_id)
            # Task Notes are mirrored over each other: read them after every task.
            for path in sorted((root / "memory").rglob("*")):
                if path.is_file():
                    name = f"memory file {path.relative_to(root / 'memory')}"
                    sinks[f"{name} after task {len(tasks)}"] = path.read_bytes()
    capsys.readouterr()

    sinks["events handed to the caller"] = b"\n".join(e.model_dump_json().encode() for e in events)
    store = root / "store"
    out = root / "out"
    out.mkdir()

    def cli(*argv: str) -> bytes:
        code = main([*argv, "--store", str(store)])
        assert code in (0, 1), (argv, code)
        return capsys.readouterr().out.encode()

    for task in tasks:
        sinks[f"harness show {task}"] = cli("show", task)
        sinks[f"harness context {task}"] = cli("context", task)
        sinks[f"harness context --all {task}"] = cli("context", task, "--all")
        sinks[f"harness context --json {task}"] = cli("context", task, "--all", "--json")
        for what in ("events", "items", "archive"):
            target = out / f"{task}-{what}.jsonl"
            cli("export", task, "--what", what, "-o", str(target))
            sinks[f"export --what {what} {task}"] = target.read_bytes()
            sinks[f"export --what {what} {task} (stdout)"] = cli("export", task, "--what", what)
        page = out / f"{task}.html"
        cli("report", task, "-o", str(page))
        sinks[f"HTML report {task}"] = page.read_bytes()
    sinks["harness runs"] = cli("runs")
    sinks.update(cli_run_sinks(root, capsys))
    for path in sorted(store.rglob("*")):
        if path.is_file():
            sinks[f"store file {path.relative_to(store)}"] = path.read_bytes()
    for path in sorted((root / "memory").rglob("*")):
        if path.is_file():
            sinks[f"memory file {path.relative_to(root / 'memory')}"] = path.read_bytes()
    return PlantedRun(sinks=sinks, tasks=tasks, events=events, purposes=model.purposes)


def cli_run_sinks(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, bytes]:
    """``harness run`` from a config (scripted answers, a config tool that echoes the
    keys), with ``--json`` and as a timeline: both outputs, standard error included."""
    import yaml

    config = planted_config(root)
    config["model"]["options"] = {
        "responses": [
            {"text": f"Checking {OPENAI_KEY}.", "tool": {"name": "planted_status"}},
            {"text": f"Done: {OPENAI_KEY}, {API_KEY_VALUE}."},
        ]
    }
    config["model"]["context_window"] = 100_000
    config["tools"] = ["tests.fixtures.config_tools:planted_status"]
    config["run"] = {"store": str(root / "cli-store")}
    config["memory"] = {"enabled": False}
    config["mcp"] = {"servers": []}
    path = root / "cli.yaml"
    path.write_text(yaml.safe_dump(config))
    sinks = {}
    for mode in ("--json", None):
        argv = ["run", "--config", str(path), *([mode] if mode else []), f"use {OPENAI_KEY}"]
        assert main(argv) == 0
        captured = capsys.readouterr()
        sinks[f"harness run {mode or '(timeline)'}"] = (captured.out + captured.err).encode()
    return sinks
