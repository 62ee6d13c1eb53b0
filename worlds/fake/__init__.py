"""A kinematic fake robot for tests, examples and dry runs (``driver: {name: fake}``).

It implements the full :class:`~embodiment.types.Driver` protocol without physics: the
gripper (and, for mobile profiles, the base) moves in small steps along straight lines,
``stop()`` from another thread halts it between steps, and every command it actually
received is kept in :attr:`FakeRobot.commands`, which is what safety tests inspect. It is
also the tests' one fake robot: :attr:`~FakeRobot.log` records its protocol calls in order,
:attr:`~FakeRobot.executed` every ``execute`` as asked, :attr:`~FakeRobot.moving` is set when
a command starts, and the ``readings`` option adds fixed safety readings (a clearance sensor). Its
actions follow the profile: an arm gets ``move_to``, ``move_joints``, ``pick``, ``place``,
the gripper and ``home``; a mobile profile adds ``move_base``, ``rotate_base`` and
``navigate_to``. Clearance readings come from a rectangular room and box obstacles.

``pick`` and ``place`` move the way the simulator's do (approach from above, descend,
grasp or release, lift or retreat), and ``describe_motion`` returns those waypoints
before anything moves, so the safety envelope checks the real path
(``describes_motion=False`` makes it a driver that cannot, for the conservative path).

The package is split by concern: :mod:`.config` (options and argument models),
:mod:`.actions` (the action specs), :mod:`.robot` (the robot, the Driver protocol and the
action handlers), :mod:`.motion` (planning and following waypoints), :mod:`.clearance`
(room and obstacle geometry) and :mod:`.postconditions`.
"""

from worlds.fake.config import FAKE_GRIP_FORCE_N as FAKE_GRIP_FORCE_N
from worlds.fake.config import CloseArgs as CloseArgs
from worlds.fake.config import FakeRobotConfig
from worlds.fake.config import GripperArgs as GripperArgs
from worlds.fake.config import MoveBaseArgs as MoveBaseArgs
from worlds.fake.config import MoveJointsArgs as MoveJointsArgs
from worlds.fake.config import MoveToArgs as MoveToArgs
from worlds.fake.config import NavigateArgs as NavigateArgs
from worlds.fake.config import NoArgs as NoArgs
from worlds.fake.config import PickArgs as PickArgs
from worlds.fake.config import PlaceArgs as PlaceArgs
from worlds.fake.config import RotateBaseArgs as RotateBaseArgs
from worlds.fake.robot import FakeRobot

__all__ = ["FakeRobot", "FakeRobotConfig"]
