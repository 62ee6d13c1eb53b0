"""Viewer records and control steps as ROS 2 standard messages (``rosbags`` types, CDR).

The one place that decides which ROS 2 type carries what, so a bag's topics read as any
ROS 2 tool expects them (``ros2 bag play`` into RViz, ``rqt_bag``, Foxglove):

=====================================  ===================================  ==================
topic                                  type                                 from
=====================================  ===================================  ==================
``/harness/camera/CAM/compressed``     ``sensor_msgs/msg/CompressedImage``  control steps
``/harness/observation/CAM/compressed`` ``sensor_msgs/msg/CompressedImage`` each turn's frames
``/joint_states``                      ``sensor_msgs/msg/JointState``       control steps
``/harness/action``                    ``std_msgs/msg/Float64MultiArray``   control steps
``/tf``                                ``tf2_msgs/msg/TFMessage``           gripper, base
``/tf_static``                         ``tf2_msgs/msg/TFMessage``           profile frames
``/harness/objects``                   ``visualization_msgs/msg/MarkerArray`` scene graph
``/harness/zones``                     ``visualization_msgs/msg/MarkerArray`` workspace, keep-out
``/rosout``                            ``rcl_interfaces/msg/Log``           every event
=====================================  ===================================  ==================

``/joint_states`` names each joint as the driver does; the action's components (not
always joints: a controller's deltas, say) are named in the bag's metadata
(``harness.action_names``), its ``/harness/action`` array labelled ``action``. Without
recorded control steps, ``/joint_states`` carries each turn's ``joint_positions`` reading
(named ``joint_1``... as the observation does not name them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.export.records import Box, Boxes, LogLine, Pose

__all__ = ["DISTROS", "RosMessages"]

DISTROS = {"jazzy": "ROS2_JAZZY", "humble": "ROS2_HUMBLE"}
"""``--ros-distro`` -> the ``rosbags`` type store whose message definitions are written."""

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_MARKER_ID_BITS = 31


def marker_id(box_id: str) -> int:
    """A stable positive int32 for a box id (markers are addressed by namespace and id)."""
    import zlib

    return zlib.crc32(box_id.encode("utf-8")) & ((1 << _MARKER_ID_BITS) - 1)


class RosMessages:
    """Builds messages of the type store of ``distro`` (see :data:`DISTROS`)."""

    def __init__(self, distro: str = "jazzy") -> None:
        from rosbags.typesys import Stores, get_typestore

        if distro not in DISTROS:
            raise ValueError(f"ROS 2 distro {distro!r}: expected one of {', '.join(DISTROS)}")
        self.distro = distro
        self.store = get_typestore(getattr(Stores, DISTROS[distro]))
        self._t = self.store.types

    def serialize(self, message: Any) -> bytes:
        return bytes(self.store.serialize_cdr(message, message.__msgtype__))

    # ------------------------------------------------------------------ basics

    def stamp(self, nanoseconds: int) -> Any:
        """A time in nanoseconds (integers: a float of seconds since 1970 is only good to
        about 0.2 microseconds, too coarse to keep steps exactly a period apart)."""
        nanoseconds = max(0, int(nanoseconds))
        return self._t["builtin_interfaces/msg/Time"](
            sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000
        )

    def header(self, ns: int, frame: str) -> Any:
        return self._t["std_msgs/msg/Header"](stamp=self.stamp(ns), frame_id=frame)

    def _vector(self, x: float, y: float, z: float) -> Any:
        return self._t["geometry_msgs/msg/Vector3"](x=float(x), y=float(y), z=float(z))

    def _quaternion(self, q: Sequence[float]) -> Any:
        return self._t["geometry_msgs/msg/Quaternion"](
            x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3])
        )

    # ------------------------------------------------------------------ messages

    def compressed_image(self, ns: int, camera: str, media_type: str, data: bytes) -> Any:
        import numpy as np

        fmt = "png" if media_type.endswith("png") else "jpeg"
        return self._t["sensor_msgs/msg/CompressedImage"](
            header=self.header(ns, f"camera_{camera}"),
            format=fmt,
            data=np.frombuffer(data, dtype=np.uint8),
        )

    def joint_state(self, ns: int, names: Sequence[str], positions: Sequence[float]) -> Any:
        import numpy as np

        return self._t["sensor_msgs/msg/JointState"](
            header=self.header(ns, ""),
            name=list(names),
            position=np.asarray(positions, dtype=np.float64),
            velocity=np.zeros(0, dtype=np.float64),
            effort=np.zeros(0, dtype=np.float64),
        )

    def action(self, values: Sequence[float]) -> Any:
        import numpy as np

        dimension = self._t["std_msgs/msg/MultiArrayDimension"](
            label="action", size=len(values), stride=len(values)
        )
        layout = self._t["std_msgs/msg/MultiArrayLayout"](dim=[dimension], data_offset=0)
        return self._t["std_msgs/msg/Float64MultiArray"](
            layout=layout, data=np.asarray(values, dtype=np.float64)
        )

    def transforms(self, ns: int, poses: Sequence[Pose]) -> Any:
        stamped = [
            self._t["geometry_msgs/msg/TransformStamped"](
                header=self.header(ns, pose.parent),
                child_frame_id=pose.child,
                transform=self._t["geometry_msgs/msg/Transform"](
                    translation=self._vector(*pose.position),
                    rotation=self._quaternion(pose.rotation),
                ),
            )
            for pose in poses
        ]
        return self._t["tf2_msgs/msg/TFMessage"](transforms=stamped)

    def markers(self, ns: int, boxes: Boxes) -> Any:
        t = self._t
        marker = t["visualization_msgs/msg/Marker"]
        namespace = boxes.group
        items = [self._box(ns, namespace, box) for box in boxes.boxes]
        for removed in boxes.removed:
            items.append(
                self._marker_defaults(
                    marker,
                    header=self.header(ns, "world"),
                    ns=namespace,
                    id=marker_id(removed),
                    type=marker.CUBE,
                    action=marker.DELETE,
                    text="",
                )
            )
        return t["visualization_msgs/msg/MarkerArray"](markers=items)

    def _box(self, ns: int, namespace: str, box: Box) -> Any:
        t = self._t
        marker = t["visualization_msgs/msg/Marker"]
        pose = t["geometry_msgs/msg/Pose"](
            position=t["geometry_msgs/msg/Point"](
                x=float(box.center[0]), y=float(box.center[1]), z=float(box.center[2])
            ),
            orientation=self._quaternion(box.rotation),
        )
        return self._marker_defaults(
            marker,
            header=self.header(ns, "world"),
            ns=namespace,
            id=marker_id(box.id),
            type=marker.CUBE,
            action=marker.ADD,
            pose=pose,
            scale=self._vector(*box.size),
            color=t["std_msgs/msg/ColorRGBA"](
                r=float(box.color[0]),
                g=float(box.color[1]),
                b=float(box.color[2]),
                a=float(box.color[3]),
            ),
            text=box.label,
        )

    def _marker_defaults(self, marker: Any, **fields: Any) -> Any:
        """A Marker with every field the distro's definition has (Jazzy added texture and
        mesh fields Humble does not know)."""
        import numpy as np

        t = self._t
        values: dict[str, Any] = {
            "pose": t["geometry_msgs/msg/Pose"](
                position=t["geometry_msgs/msg/Point"](x=0.0, y=0.0, z=0.0),
                orientation=self._quaternion((0.0, 0.0, 0.0, 1.0)),
            ),
            "scale": self._vector(0.0, 0.0, 0.0),
            "color": t["std_msgs/msg/ColorRGBA"](r=0.0, g=0.0, b=0.0, a=0.0),
            "lifetime": t["builtin_interfaces/msg/Duration"](sec=0, nanosec=0),
            "frame_locked": False,
            "points": [],
            "colors": [],
            "text": "",
            "mesh_resource": "",
            "mesh_use_embedded_materials": False,
        }
        fields_of = set(marker.__dataclass_fields__)
        if "texture_resource" in fields_of:
            values["texture_resource"] = ""
            values["texture"] = t["sensor_msgs/msg/CompressedImage"](
                header=self.header(0.0, ""), format="", data=np.zeros(0, dtype=np.uint8)
            )
            values["uv_coordinates"] = []
            values["mesh_file"] = t["visualization_msgs/msg/MeshFile"](
                filename="", data=np.zeros(0, dtype=np.uint8)
            )
        values.update(fields)
        return marker(**{k: v for k, v in values.items() if k in fields_of})

    def log(self, ns: int, line: LogLine) -> Any:
        return self._t["rcl_interfaces/msg/Log"](
            stamp=self.stamp(ns),
            level=_LEVELS.get(line.level, 20),
            name=f"harness.{line.source}" if line.source else "harness",
            msg=line.text,
            file="",
            function="",
            line=0,
        )

    def static_transforms(
        self, ns: int, frames: Sequence[tuple[str, str, tuple[float, float, float], float]]
    ) -> Any:
        """``(child, parent, position, yaw)`` of each fixed frame."""
        poses = [
            Pose(
                ns / 1e9,
                0,
                child,
                parent,
                position,
                (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)),
            )
            for child, parent, position, yaw in frames
        ]
        return self.transforms(ns, poses)
