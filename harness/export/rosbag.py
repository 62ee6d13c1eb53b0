"""A recorded task as a ROS 2 bag (rosbag2, MCAP storage) with ``rosbags``: no ROS install.

``harness export RUN --format rosbag2 -o DIR`` writes ``DIR/metadata.yaml`` (the format
``ros2 bag info`` reads: bag format version 8, Jazzy's, which Humble and later read too)
and ``DIR/DIR.mcap``: the task's viewer records (:mod:`harness.export.translate`: frames,
the gripper's and base's poses, the scene's objects, the workspace and keep-out zones,
every event in words) and, when the run recorded them, its control steps (joint states,
actions and camera frames at the control rate), as ROS 2 standard messages
(:mod:`harness.export.ros_messages` says which). Times follow one replay clock
(:mod:`harness.export.replay_clock`): real pauses between commands, each command at the
robot's own pace. Everything is read from the run store with redaction; the bag's
``custom_data`` names the task, its instruction, status and outcome, and what the state
and action components are.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.export.control import ExportError
from harness.export.episodes import Episode
from harness.export.recorded import recorded_profile
from harness.export.records import Boxes, Frame, LogLine, Pose, Record
from harness.export.replay_clock import CommandSpan, ReplayClock
from harness.export.translate import Translator

__all__ = ["BAG_VERSION", "BagSummary", "write_rosbag"]

BAG_VERSION = 8
"""rosbag2's metadata version: Jazzy writes 8 (``offered_qos_profiles`` as a string,
``ros_distro``); Humble's and Kilted's readers decode it field by field."""


LATCHED = frozenset({"/tf_static", "/harness/zones"})
"""Topics published once and kept for late subscribers (transient local), as ROS 2 does
for static transforms: ``ros2 bag play`` offers them so, and RViz sees them whenever it
starts."""


def _latched() -> Any:
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )

    infinite = QosTime(2147483647, 4294967295)
    return Qos(
        history=QosHistory.KEEP_LAST,
        depth=1,
        reliability=QosReliability.RELIABLE,
        durability=QosDurability.TRANSIENT_LOCAL,
        deadline=infinite,
        lifespan=infinite,
        liveliness=QosLiveliness.AUTOMATIC,
        liveliness_lease_duration=infinite,
        avoid_ros_namespace_conventions=False,
    )


@dataclass
class BagSummary:
    """What was written: messages per topic."""

    path: Path
    topics: dict[str, str] = field(default_factory=dict)
    """Topic -> message type."""
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def messages(self) -> int:
        return sum(self.counts.values())


@dataclass(order=True)
class _Message:
    nanoseconds: int
    order: int
    topic: str = field(compare=False)
    data: bytes = field(compare=False, repr=False)


class _Bag:
    """Messages collected, then written in time order."""

    def __init__(self, messages: Any) -> None:
        self.ros = messages
        self.types: dict[str, str] = {}
        self.items: list[_Message] = []

    def add(self, topic: str, ns: int, message: Any) -> None:
        """Add a message at ``ns`` nanoseconds since 1970."""
        msgtype = message.__msgtype__
        known = self.types.setdefault(topic, msgtype)
        if known != msgtype:
            raise ExportError(f"topic {topic}: {msgtype} after {known}")
        self.items.append(_Message(max(0, ns), len(self.items), topic, self.ros.serialize(message)))


def write_rosbag(
    episode: Episode, output: str | os.PathLike[str], *, distro: str = "jazzy"
) -> BagSummary:
    """Write ``episode`` (its task, with its sub-agent lanes) as a bag in the folder
    ``output`` (which must not exist: rosbag2 never writes over a bag)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    from harness.export.ros_messages import RosMessages

    path = Path(output)
    if path.exists():
        raise ExportError(f"-o {path}: it exists already (a bag is written into a new folder)")
    bag = _Bag(RosMessages(distro))
    clock = _clock(episode)
    _add_records(bag, episode, clock)
    _add_control(bag, episode, clock)
    summary = BagSummary(path=path, topics=dict(bag.types))
    writer = Writer(path, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
    for key, value in _custom_data(episode, distro).items():
        writer.set_custom_data(key, value)
    with writer:
        connections = {
            topic: writer.add_connection(
                topic,
                msgtype,
                typestore=bag.ros.store,
                offered_qos_profiles=[_latched()] if topic in LATCHED else [],
            )
            for topic, msgtype in bag.types.items()
        }
        for item in sorted(bag.items):
            writer.write(connections[item.topic], item.nanoseconds, item.data)
            summary.counts[item.topic] += 1
    return summary


def _clock(episode: Episode) -> ReplayClock:
    track = episode.track
    if track is None:
        return ReplayClock([])
    period = 1.0 / track.layout.rate_hz
    spans = []
    for command in track.commands:
        times = track.times[command.first : command.first + command.count]
        spans.append(
            CommandSpan(
                wall_start=command.wall_start,
                wall_end=command.wall_end,
                duration=float(times[-1] - times[0]) + period,
            )
        )
    return ReplayClock(spans)


def _add_records(bag: _Bag, episode: Episode, clock: ReplayClock) -> None:
    """The task's viewer records: frames, poses, boxes and log lines (payloads and
    scalars have no ROS 2 standard type; every event is on /rosout in words)."""
    log, task = episode.log, episode.task
    profile = recorded_profile(log, task.session_id)
    translator = Translator(images=log.image, profile=profile)
    ids = [task.id, *(lane.id for lane in log.lanes(task.id))]
    ros = bag.ros
    first = True
    joints_from_control = episode.track is not None and len(episode.track) > 0
    for _, event in log.events_with_pos(task_ids=ids):
        ns = _ns(clock.at(event.time))
        if first and profile is not None:
            static = _static_frames(profile)
            if static:
                bag.add("/tf_static", ns, ros.static_transforms(ns, static))
            first = False
        records: list[Record] = translator.translate(event)
        poses = [r for r in records if isinstance(r, Pose)]
        if poses:
            bag.add("/tf", ns, ros.transforms(ns, poses))
        for record in records:
            if isinstance(record, Frame):
                bag.add(
                    f"/harness/observation/{record.camera}/compressed",
                    ns,
                    ros.compressed_image(ns, record.camera, record.media_type, record.data),
                )
            elif isinstance(record, Boxes):
                topic = "/harness/zones" if record.group == "zones" else "/harness/objects"
                bag.add(topic, ns, ros.markers(ns, record))
            elif isinstance(record, LogLine):
                bag.add("/rosout", ns, ros.log(ns, record))
        if not joints_from_control and getattr(event, "type", "") == "observation":
            joints = (event.state or {}).get("joint_positions")  # type: ignore[attr-defined]
            if (
                isinstance(joints, list)
                and joints
                and all(isinstance(v, int | float) for v in joints)
            ):
                names = [f"joint_{index}" for index in range(1, len(joints) + 1)]
                bag.add("/joint_states", ns, ros.joint_state(ns, names, joints))


def _add_control(bag: _Bag, episode: Episode, clock: ReplayClock) -> None:
    """Joint states, actions and camera frames at the control rate."""
    track = episode.track
    if track is None:
        return
    ros, layout = bag.ros, track.layout
    for number, command in enumerate(track.commands):
        start = _ns(clock.command_start(number))
        origin = float(track.times[command.first])
        for k in range(command.first, command.first + command.count):
            ns = start + _ns(float(track.times[k]) - origin)
            bag.add(
                "/joint_states",
                ns,
                ros.joint_state(ns, layout.state_names, track.states[k].tolist()),
            )
            bag.add("/harness/action", ns, ros.action(track.actions[k].tolist()))
            for camera, shas in track.frames.items():
                image = episode.log.image(shas[k])
                if image is None:
                    raise ExportError(
                        f"task {episode.task.id}: frame {shas[k][:12]} of {camera} is not in "
                        "the run store"
                    )
                bag.add(
                    f"/harness/camera/{camera}/compressed",
                    ns,
                    ros.compressed_image(ns, camera, image.media_type, image.data),
                )


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _static_frames(profile: Any) -> list[tuple[str, str, tuple[float, float, float], float]]:
    """The profile's fixed frames (a mobile base moves: it is on /tf)."""
    frames = []
    for name, pose in profile.frames.items():
        if name == "base" and profile.mobile:
            continue
        frames.append((name, pose.parent, tuple(pose.position), float(pose.yaw)))
    return frames


def _custom_data(episode: Episode, distro: str) -> dict[str, str]:
    """What the bag says about itself (``metadata.yaml``'s ``custom_data``, strings only)."""
    task = episode.task
    data = {
        "harness.task_id": task.id,
        "harness.session_id": task.session_id,
        "harness.instruction": task.instruction,
        "harness.status": task.status,
        "harness.outcome": task.outcome,
        "harness.success": json.dumps(episode.success),
        "harness.evidence": task.evidence.model_dump_json(),
        "harness.ros_distro": distro,
    }
    track = episode.track
    if track is not None:
        layout = track.layout
        data.update(
            {
                "harness.control_rate_hz": repr(layout.rate_hz),
                "harness.state_names": json.dumps(list(layout.state_names)),
                "harness.state_description": layout.state_description,
                "harness.action_names": json.dumps(list(layout.action_names)),
                "harness.action_description": layout.action_description,
            }
        )
    return data
