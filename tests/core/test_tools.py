"""Tools: schemas from type hints and docstrings, pass-through JSON Schema, validation."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from harness.tools import (
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    tool,
)


class Pose(BaseModel):
    x: float
    y: float
    z: float = 0.0


@tool
def place(ref: str, target: Pose, mode: Literal["on", "in"] = "on", speed: float = 0.1) -> str:
    """Place an object at a target pose.

    A longer explanation that stays in the description.

    Args:
        ref: The object to place, e.g. red_cube_1.
        target: Where to put it (metres,
            world frame).
        mode: Put it on or in the target.

    Returns:
        A confirmation.
    """
    return f"{ref} {mode} {target.x},{target.y}"


def test_schema_from_type_hints_and_docstring() -> None:
    schema = place.parameters
    assert schema["required"] == ["ref", "target"]
    props = schema["properties"]
    assert props["ref"]["description"] == "The object to place, e.g. red_cube_1."
    assert props["target"]["description"] == "Where to put it (metres, world frame)."
    assert props["mode"]["enum"] == ["on", "in"]
    assert "$defs" in schema and "Pose" in schema["$defs"]
    assert "speed" in props and "description" not in props["speed"]
    assert place.description.startswith("Place an object at a target pose.")
    assert "longer explanation" in place.description
    assert "Returns" not in place.description
    assert schema["additionalProperties"] is False


def test_validation_coerces_and_reports_readably() -> None:
    args = place.validate({"ref": "cube", "target": {"x": "0.1", "y": 0}})
    assert isinstance(args["target"], Pose) and args["target"].x == 0.1
    with pytest.raises(ToolArgumentError) as info:
        place.validate({"ref": "cube", "target": {"x": 1}, "colour": "red", "mode": "under"})
    message = str(info.value)
    assert "target.y: required argument is missing" in message
    assert "colour: unknown argument" in message
    assert "mode:" in message and "'under'" in message
    with pytest.raises(ToolArgumentError, match="JSON object"):
        place.validate(["not", "a", "dict"])  # type: ignore[arg-type]


def test_annotated_constraints_reach_the_schema() -> None:
    @tool
    def grip(force: Annotated[float, Field(ge=0, le=70)] = 20.0) -> str:
        """Close the gripper with a force (N)."""
        return f"{force}"

    assert grip.parameters["properties"]["force"]["maximum"] == 70
    with pytest.raises(ToolArgumentError):
        grip.validate({"force": 200})


def test_raw_json_schema_passes_through_unchanged() -> None:
    schema = {
        "type": "object",
        "$defs": {"frame": {"type": "string", "pattern": "^[a-z_]+$"}},
        "properties": {
            "frame": {"$ref": "#/$defs/frame"},
            "when": {"type": "string", "format": "date-time"},
        },
        "required": ["frame"],
        "additionalProperties": False,
    }
    t = Tool("set_frame", "Set the frame.", lambda **kw: kw, parameters=schema)
    assert t.spec().parameters == schema
    assert t.validate({"frame": "base_link"}) == {"frame": "base_link"}
    with pytest.raises(ToolArgumentError, match="does not match"):
        t.validate({"frame": "Base Link"})
    with pytest.raises(ToolArgumentError, match="required"):
        t.validate({})


def test_handler_results_are_normalised() -> None:
    ctx = ToolContext()
    assert Tool("a", "a", lambda: None).invoke({}, ctx).text == "ok"
    assert Tool("b", "b", lambda: {"k": 1}).invoke({}, ctx).render() == '{"k": 1}'
    assert Tool("c", "c", lambda: Pose(x=1, y=2)).invoke({}, ctx).data == {
        "x": 1.0,
        "y": 2.0,
        "z": 0.0,
    }
    out = Tool("d", "d", lambda: ToolOutput.error("nope", "custom")).invoke({}, ctx)
    assert out.is_error and out.error_kind == "custom"


def test_ctx_parameter_is_injected_not_described() -> None:
    @tool
    def watch(seconds: float, ctx: ToolContext) -> str:
        """Watch for a while."""
        return f"{ctx.call_id}:{seconds}"

    assert list(watch.parameters["properties"]) == ["seconds"]
    assert watch.invoke({"seconds": 1.0}, ToolContext(call_id="c1")).text == "c1:1.0"


def test_bad_tool_definitions_are_rejected() -> None:
    with pytest.raises(ValueError, match="tool name"):
        Tool("has space", "x", lambda: None)

    def varargs(*args: int) -> None:
        """Varargs."""

    with pytest.raises(TypeError, match="args"):
        tool(varargs)


def test_registry_keeps_order_and_refuses_duplicates() -> None:
    registry = ToolRegistry([place])
    registry.add(Tool("hidden_one", "x", lambda: None, hidden=True))
    assert registry.names() == ["place", "hidden_one"]
    assert registry.names(visible_only=True) == ["place"]
    with pytest.raises(ValueError, match="already registered"):
        registry.add(place)
    with pytest.raises(TypeError, match="Tool"):
        registry.add(lambda: None)  # type: ignore[arg-type]


def test_tools_of_one_model_class_get_its_schema_each_their_own() -> None:
    """The schema is generated once per class and copied: every tool of the class has
    exactly the schema a fresh generation gives, a change to one tool's copy reaches no
    other, and a class no tool holds any more is let go."""
    import gc
    import sys
    import weakref

    from pydantic import create_model

    schemas = sys.modules[Tool.__module__]._SCHEMAS

    class Move(BaseModel):
        """Arguments of a move."""

        x: float = Field(description="metres forward")
        speed: Literal["slow", "fast"] = "slow"
        via: list[Pose] = Field(default_factory=list)

    fresh = Move.model_json_schema()
    fresh.pop("title")
    first = Tool("move", "move", lambda **_: "ok", input_model=Move)
    first.parameters["properties"]["x"]["description"] = "changed"
    first.parameters["required"].append("speed")
    second = Tool("move_again", "move", lambda **_: "ok", input_model=Move)
    assert second.parameters == fresh and second.parameters is not first.parameters
    assert second.validate({"x": 1}) == {"x": 1.0, "speed": "slow", "via": []}

    model = create_model("Temporary", a=(int, 1))
    temporary = Tool("t", "t", lambda **_: "ok", input_model=model)
    gone = weakref.ref(model)
    assert model in schemas and temporary.parameters["properties"]["a"]["default"] == 1
    del temporary, model
    gc.collect()
    assert gone() is None
