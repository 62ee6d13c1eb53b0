"""Configuration: defaults, YAML, overrides, and errors that name the key and value."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.config import (
    HarnessConfig,
    apply_overrides,
    chose,
    load_config,
    validate_config,
    with_overrides,
)
from harness.errors import ConfigError
from harness.providers import parse_model_spec


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_defaults_carry_the_specification_keys() -> None:
    c = HarnessConfig().context.compaction
    assert (c.enabled, c.reserve_tokens, c.keep_recent_turns, c.keep_recent_tokens) == (
        True,
        16384,
        4,
        20000,
    )
    assert (c.tool_result_max_chars, c.reasoning_max_chars) == (2000, 2000)
    assert (c.max_input_chars, c.max_summary_rounds) == (400000, 8)


def test_yaml_and_overrides_merge_recursively(tmp_path: Path) -> None:
    path = write(
        tmp_path, "context:\n  compaction:\n    keep_recent_turns: 6\nrun:\n  max_turns: 9\n"
    )
    config = load_config(
        path, overrides=["context.compaction.reserve_tokens=8192", "model.prices.input=2.5"]
    )
    assert config.context.compaction.keep_recent_turns == 6
    assert config.context.compaction.reserve_tokens == 8192
    assert config.run.max_turns == 9
    assert config.model.prices is not None and config.model.prices.input == 2.5
    assert config.base_dir == str(tmp_path.resolve())


def test_unknown_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "context:\n  compaction:\n    reserve_tokenz: 10\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "context.compaction.reserve_tokenz: unknown key" in str(info.value)
    assert info.value.key == "context.compaction.reserve_tokenz"
    assert str(path) in str(info.value)


def test_bad_value_names_key_value_and_expectation(tmp_path: Path) -> None:
    path = write(tmp_path, "context:\n  compaction:\n    reserve_tokens: lots\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = str(info.value)
    assert "context.compaction.reserve_tokens: got 'lots'" in text
    assert "integer" in text
    with pytest.raises(ConfigError, match=r"run\.max_turns: got 0"):
        load_config(overrides=["run.max_turns=0"])


def test_mcp_transport_fields_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"mcp\.servers\.0.*command"):
        load_config(overrides={"mcp": {"servers": [{"name": "ros", "transport": "stdio"}]}})


def test_unreadable_files_and_overrides_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "a: [unclosed\n"))
    with pytest.raises(ConfigError, match=r"KEY\.PATH=VALUE"):
        apply_overrides({}, ["no_equals_sign"])
    with pytest.raises(ConfigError, match="not a mapping"):
        apply_overrides({"run": 3}, ["run.max_turns=4"])


def test_model_spec_strings() -> None:
    spec = parse_model_spec("scripted:demo")
    assert (spec.provider, spec.name) == ("scripted", "demo")
    with pytest.raises(ConfigError, match="unknown provider"):
        parse_model_spec("nosuch:model")


@given(st.one_of(st.none(), st.integers(min_value=0, max_value=1_000_000)))
def test_a_choice_survives_a_round_trip_and_the_default_written_out_is_no_choice(
    reserve: int | None,
) -> None:
    """``chose``: what the config asked for is read the same after every dump and reload
    (overrides, the run store, an eval worker); writing the default is not a choice."""
    data = {} if reserve is None else {"context": {"compaction": {"reserve_tokens": reserve}}}
    config = validate_config(data)
    expected = reserve is not None and reserve != 16384
    copies = [
        config,
        with_overrides(config, ["run.max_turns=7"]),
        validate_config(config.model_dump(mode="json", exclude={"base_dir"})),
    ]
    for copy in copies:
        assert chose(copy.context.compaction, "reserve_tokens") is expected
