"""``harness export --format mcap|rrd`` of a real simulator run, read back with the official
readers: ``mcap``'s reader (every protobuf message decoded with the schema the file
carries, which must be foxglove-sdk's own; every JSON message validated against its JSON
Schema) and Rerun's ``rerun.chunk.RrdReader`` plus ``rerun rrd verify``.

The oracle is the run store read with SQL (:func:`tests.viz_helpers.stored_events`), not
the export code: frames, gripper poses, boxes and events must be there, in order, and no
byte of either file (compressed chunks decoded) may hold the planted secret, even when the
store itself holds it (:func:`tests.viz_helpers.leaky_copy`).
"""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

pytest.importorskip("pybullet", reason="the exported run is a PyBullet episode ([sim] extra)")
pytest.importorskip("mcap")
pytest.importorskip("foxglove")
rr = pytest.importorskip("rerun")
pytestmark = pytest.mark.sim  # every test reads the export of a real simulator run

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402
from mcap.reader import make_reader  # noqa: E402
from mcap.stream_reader import StreamReader  # noqa: E402

from harness.cli import main  # noqa: E402
from harness.export.files import export_task  # noqa: E402
from harness.redact import REDACTED  # noqa: E402
from harness.store.reader import RunLog  # noqa: E402
from tests.viz_helpers import (  # noqa: E402
    SimRun,
    leaky_copy,
    run_sim_task,
    secret_fragments,
    stored_events,
)

WELL_KNOWN = {
    "/camera/front/image": "foxglove.CompressedImage",
    "/tf": "foxglove.FrameTransform",
    "/gripper/pose": "foxglove.PoseInFrame",
    "/scene/objects": "foxglove.SceneUpdate",
    "/scene/zones": "foxglove.SceneUpdate",
    "/log": "foxglove.Log",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> SimRun:
    return run_sim_task(tmp_path_factory.mktemp("sim") / "store")


@pytest.fixture(scope="module")
def files(run: SimRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both formats exported through the CLI from a store the secret was written back into."""
    leaky = leaky_copy(run.store, tmp_path_factory.mktemp("leaky") / "store")
    out = tmp_path_factory.mktemp("out")
    paths = {"mcap": out / "run.mcap", "rrd": out / "run.rrd"}
    for fmt, path in paths.items():
        code = main(
            ["export", run.task_id, "--store", str(leaky), "--format", fmt, "-o", str(path)]
        )
        assert code == 0
    paths["leaky_store"] = leaky
    return paths


def _store_expectations(run: SimRun) -> dict[str, Any]:
    events = stored_events(run.store, run.task_id)
    observations = [e for e in events if e["type"] == "observation"]
    return {
        "events": events,
        "frames": sum(len(e["images"]) for e in observations),
        "poses": [tuple(e["state"]["ee_position"]) for e in observations],
        "tool_calls": [e["call_id"] for e in events if e["type"] == "tool_call"],
        "lines": [e["seq"] for e in events if e["type"] != "model_delta"],
        "totals": [e["total_tokens"] for e in events if e["type"] == "prompt_snapshot"],
        "final": _final_scene(events),
    }


def _final_scene(events: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each object's last position, replayed from the stored snapshots and diffs."""
    nodes: dict[str, list[float]] = {}
    for e in events:
        if e["type"] != "scene_update":
            continue
        if e.get("snapshot"):
            nodes = {
                n["ref"]: n["position"]
                for n in e["snapshot"]["nodes"]
                if n.get("size") and n["category"] != "robot"  # the robot is its frames
            }
            continue
        for change in (e.get("diff") or {}).get("changed", []):
            if change["ref"] in nodes and "position" in change["fields"]:
                nodes[change["ref"]] = change["fields"]["position"][1]
    return nodes


# ====================================================================== MCAP


def _message_class(schema: Any) -> Any:
    files = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(schema.name))


def _read_mcap(path: Path) -> dict[str, list[tuple[int, Any]]]:
    """topic -> [(log_time, decoded message)], every message checked against its schema."""
    import foxglove.messages as official

    decoded: dict[str, list[tuple[int, Any]]] = {}
    classes: dict[int, Any] = {}
    with open(path, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None
        for channel in summary.channels.values():
            schema = summary.schemas[channel.schema_id]
            if channel.topic in WELL_KNOWN:
                assert schema.name == WELL_KNOWN[channel.topic]
                assert (schema.encoding, channel.message_encoding) == ("protobuf", "protobuf")
                sdk = getattr(official, schema.name.split(".")[1]).get_schema()
                assert schema.data == bytes(sdk.data), f"{schema.name} is not the SDK's schema"
            else:
                assert channel.topic.startswith("/harness/"), channel.topic
                assert (schema.encoding, channel.message_encoding) == ("jsonschema", "json")
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if channel.message_encoding == "protobuf":
                if schema.id not in classes:
                    classes[schema.id] = _message_class(schema)
                value = classes[schema.id].FromString(message.data)
                assert value.SerializeToString() == message.data  # nothing it does not know
            else:
                value = json.loads(message.data)
                jsonschema.validate(value, json.loads(schema.data))
            decoded.setdefault(channel.topic, []).append((message.log_time, value))
        assert summary.statistics.message_count == sum(len(v) for v in decoded.values())
    return decoded


def test_mcap_reads_back_with_foxglove_schemas_in_order(
    run: SimRun, files: dict[str, Path]
) -> None:
    want = _store_expectations(run)
    topics = _read_mcap(files["mcap"])
    for topic, messages in topics.items():
        times = [t for t, _ in messages]
        assert times == sorted(times), f"{topic} runs backwards"
    images = topics["/camera/front/image"]
    assert len(images) == want["frames"] > 0
    assert all(m.format == "jpeg" and m.data[:2] == b"\xff\xd8" for _, m in images)
    tf = [m for _, m in topics["/tf"] if m.child_frame_id == "gripper"]
    got = [(m.translation.x, m.translation.y, m.translation.z) for m in tf]
    assert len(got) == len(want["poses"]) and all(
        math.isclose(a, b, abs_tol=1e-9)
        for g, w in zip(got, want["poses"], strict=True)
        for a, b in zip(g, w, strict=True)
    )
    poses = [m.pose.position.z for _, m in topics["/gripper/pose"]]
    assert poses == [p[2] for p in want["poses"]]
    zones = topics["/scene/zones"][0][1]
    assert {e.id for e in zones.entities} == {"workspace", "keep_out/robot_base"}
    last = {e.id: e for e in topics["/scene/objects"][-1][1].entities}
    for ref, position in want["final"].items():
        cube = last[ref].cubes[0].pose.position
        assert [round(v, 6) for v in (cube.x, cube.y, cube.z)] == [round(v, 6) for v in position]
    logs = topics["/log"]
    assert len(logs) == len(want["lines"])
    assert logs[0][1].name == "task_started" and logs[-1][1].name == "done"
    calls = [m["call_id"] for _, m in topics["/harness/tool_call"]]
    assert calls == want["tool_calls"]
    totals = [m["total_tokens"] for _, m in topics["/harness/prompt_snapshot"]]
    assert totals == want["totals"]
    for kind in ("safety_check", "evaluation", "episode", "done", "tool_result"):
        assert topics[f"/harness/{kind}"], kind


def _mcap_bytes(path: Path) -> bytes:
    """Every record of the file with its chunks decompressed, and the file itself."""
    parts = [path.read_bytes()]
    with open(path, "rb") as f:
        for record in StreamReader(f, skip_magic=False, emit_chunks=False).records:
            parts.append(repr(record).encode())
            for name in ("data", "metadata"):
                value = getattr(record, name, None)
                if isinstance(value, bytes | bytearray):
                    parts.append(bytes(value))
                elif isinstance(value, dict):
                    parts.append(json.dumps(value).encode())
    return b"\n".join(parts)


def _rrd_bytes(path: Path) -> bytes:
    from rerun.chunk import RrdReader

    parts = [path.read_bytes()]
    for chunk in RrdReader(path).stream():
        parts.append(chunk.to_record_batch().serialize().to_pybytes())  # Arrow IPC, uncompressed
    return b"\n".join(parts)


def test_no_secret_in_any_byte_of_either_file(files: dict[str, Path], run: SimRun) -> None:
    decoded = {"mcap": _mcap_bytes(files["mcap"]), "rrd": _rrd_bytes(files["rrd"])}
    for fmt, data in decoded.items():
        assert secret_fragments(data) == 0, fmt
        assert REDACTED.encode() in data, f"{fmt}: the planted secret never reached the file"
    # The scanner finds the secret when the export does not redact: it can fail.
    with RunLog(files["leaky_store"], redact=False) as log:
        task = log.task(run.task_id)
        for fmt, reader in (("mcap", _mcap_bytes), ("rrd", _rrd_bytes)):
            target = files["mcap"].parent / f"unredacted.{fmt}"
            export_task(log, task, format=fmt, output=target)  # type: ignore[arg-type]
            assert secret_fragments(reader(target)) > 0, fmt


# ====================================================================== Rerun


def _column(batch: Any, suffix: str) -> list[Any]:
    names = [n for n in batch.schema.names if n.endswith(suffix)]
    assert names, (suffix, batch.schema.names)
    return batch.column(names[0]).to_pylist()


def _entity_rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    import pyarrow as pa
    from rerun.chunk import RrdReader

    rows: dict[str, list[dict[str, Any]]] = {}
    for chunk in RrdReader(path).stream():
        batch = chunk.to_record_batch()
        columns = [c.cast(pa.int64()) if pa.types.is_temporal(c.type) else c for c in batch.columns]
        batch = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
        for row in batch.to_pylist():
            rows.setdefault(chunk.entity_path, []).append(row)
    for values in rows.values():
        if values and "time" in values[0]:
            values.sort(key=lambda r: (r["time"] is not None, r["time"], r.get("turn")))
    return rows


def _field(row: dict[str, Any], suffix: str) -> Any:
    for name, value in row.items():
        if name.endswith(suffix):
            return value
    raise KeyError(suffix)


def test_rrd_reads_back_with_rerun_in_order(run: SimRun, files: dict[str, Path]) -> None:
    rerun = shutil.which("rerun")
    assert rerun is not None
    verified = subprocess.run(
        [rerun, "rrd", "verify", str(files["rrd"])], capture_output=True, text=True, timeout=120
    )
    assert verified.returncode == 0, verified.stderr
    want = _store_expectations(run)
    rows = _entity_rows(files["rrd"])
    frames = rows["/camera/front"]
    assert len(frames) == want["frames"]
    assert all(_field(r, "EncodedImage:media_type") == ["image/jpeg"] for r in frames)
    gripper = [_field(r, "Transform3D:translation")[0] for r in rows["/world/gripper"]]
    assert [tuple(round(v, 5) for v in p) for p in gripper] == [
        tuple(round(v, 5) for v in p) for p in want["poses"]
    ]
    zones = rows["/world/zones"]
    assert len(zones) == 1 and "time" not in zones[0]  # static: on every timeline
    assert len(_field(zones[0], "Boxes3D:half_sizes")) == 2
    centers: dict[str, list[float]] = {}
    for entity in ("/world/objects", "/world/fixtures"):  # solid and see-through boxes
        last = rows[entity][-1]
        labels = [label.split(" ")[0] for label in _field(last, "Boxes3D:labels")]
        centers.update(zip(labels, _field(last, "Boxes3D:centers"), strict=True))
    assert {"table_1", "tray_1", "red_cube_1"} <= set(centers)
    assert set(centers) == set(want["final"])
    for ref, position in want["final"].items():
        assert [round(v, 4) for v in centers[ref]] == [round(v, 4) for v in position]
    logs = rows["/log"]
    assert len(logs) == len(want["lines"])
    assert _field(logs[0], "TextLog:text")[0].startswith("task: ")
    totals = [_field(r, "Scalars:scalars")[0] for r in rows["/context/total_tokens"]]
    assert totals == want["totals"]
    calls = [
        json.loads(_field(r, "TextDocument:text")[0])["call_id"] for r in rows["/harness/tool_call"]
    ]
    assert calls == want["tool_calls"]


# ====================================================================== the command


def test_export_usage_errors_are_one_line(run: SimRun, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(run.store)
    assert main(["export", "--store", store, "--format", "rrd"]) == 2
    assert main(["export", "--store", store, "--format", "mcap", "--what", "items", "-o", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "harness export: error: --format rrd writes a file: name it with -o run.rrd",
        "harness export: error: --what works with --format jsonl, not --format mcap",
    ]


def test_mcap_to_a_stream_matches_the_file(run: SimRun, tmp_path: Path) -> None:
    """The writer is deterministic for a given store (same bytes for the same run)."""
    with RunLog(run.store, redact=True) as log:
        task = log.task(run.task_id)
        export_task(log, task, format="mcap", output=tmp_path / "a.mcap")
        export_task(log, task, format="mcap", output=tmp_path / "b.mcap")
    assert (tmp_path / "a.mcap").read_bytes() == (tmp_path / "b.mcap").read_bytes()
    assert io.BytesIO((tmp_path / "a.mcap").read_bytes()).read(8) == b"\x89MCAP0\r\n"


def test_eval_export_writes_a_readable_file_per_episode(tmp_path: Path) -> None:
    """``harness eval SUITE --export mcap --export rrd``: every finished episode gets its
    viewer files beside its run store, and each reads back with the official readers."""
    from harness.fleet.journal import EvalFolder
    from tests.fleet_helpers import write_deployment, write_suite

    write_deployment(tmp_path)
    suite = write_suite(tmp_path)
    out = tmp_path / "eval"
    assert (
        main(
            [
                "eval",
                str(suite),
                "--episodes",
                "2",
                "--workers",
                "1",
                "--out",
                str(out),
                "--export",
                "mcap",
                "--export",
                "rrd",
            ]
        )
        == 0
    )
    records = EvalFolder(out).records()
    assert len(records) == 2
    for record in records:
        folder = (out / record.store).parent
        topics = _read_mcap(folder / "episode.mcap")
        assert topics["/log"][0][1].name == "task_started"
        assert topics["/log"][-1][1].name == "done"
        assert topics["/camera/front/image"], record.key
        from rerun.chunk import RrdReader

        assert sum(1 for _ in RrdReader(folder / "episode.rrd").stream()) > 0
