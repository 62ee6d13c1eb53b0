"""examples/real_provider.py: explains itself without a key, runs end to end with one."""

from __future__ import annotations

import pytest

from tests.example_loader import load_example
from tests.wire_server import WireServer, openai_stream


def test_without_a_key_it_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert load_example().main(["--model", "openai:gpt-4.1-mini"]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and "Nothing was sent" in err


def test_it_drives_the_toy_robot_through_a_local_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with WireServer() as server:
        server.reply(
            openai_stream(tool_calls=[("c1", "move_to", {"x": 0.22, "y": 0.71, "z": 0.02})]),
            openai_stream(tool_calls=[("c2", "grip", {"close": True})]),
            openai_stream(tool_calls=[("c3", "move_to", {"x": 0.22, "y": 0.71, "z": 0.9})]),
            openai_stream("The red cube is held at 0.5 m (the workspace limit)."),
        )
        code = load_example().main(["--model", f"openai:gpt-4o-mini@{server.openai_url}"])
    assert code == 0
    last = server.requests[-1].body["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert "gripper holding red_cube" in results[1]
    assert "[0.22, 0.71, 0.5]" in results[2]  # z clamped by the safety envelope
    out = capsys.readouterr().out
    assert "completed after 4 turns" in out and "report: The red cube is held" in out
    assert "safety clamp: z 0.9 -> 0.5" in out


def test_a_model_outside_the_catalog_needs_a_window_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with WireServer() as server:
        code = load_example().main(["--model", f"openai:my-finetune@{server.openai_url}"])
        assert server.requests == []
    assert code == 2
    err = capsys.readouterr().err
    assert "--context-window" in err and "Nothing was sent" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "bad", [["--context-window", "0"], ["--context-window", "lots"], ["--timeout-s", "-1"]]
)
def test_bad_options_are_usage_errors(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        load_example().main(["--model", "openai:m@http://127.0.0.1:9/v1", *bad])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {bad[0]}: expected a" in err and "Traceback" not in err


def test_a_small_window_gets_reserves_that_fit(capsys: pytest.CaptureFixture[str]) -> None:
    from harness import HarnessConfig

    config = HarnessConfig.model_validate({"embodiment": None, "driver": None})
    load_example().fit_to_window(config, 8192)
    assert config.model.context_window == 8192
    assert config.context.compaction.reserve_tokens == 2048
    assert config.model.max_output_tokens == 1024
    assert "window 8192" in capsys.readouterr().out
