"""The hardware lease: one Harness per robot and host, across threads and processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from embodiment.errors import HardwareBusyError
from embodiment.lease import HardwareLease, hardware_identity
from harness.runtime.harness import Harness
from tests.tiers import repeats


def test_a_second_holder_is_refused_at_once_naming_the_first(tmp_path: Path) -> None:
    first = HardwareLease("arm-7", folder=tmp_path, owner="session A").acquire()
    second = HardwareLease("arm-7", folder=tmp_path)
    started = time.monotonic()
    with pytest.raises(HardwareBusyError) as caught:
        second.acquire()
    assert time.monotonic() - started < 1.0
    message = str(caught.value)
    assert "arm-7" in message and f"process {os.getpid()}" in message and "session A" in message
    assert "driver.lease_timeout_s" in message
    assert caught.value.holder is not None and caught.value.holder["pid"] == os.getpid()
    first.release()
    second.acquire()  # free again
    second.release()
    HardwareLease("arm-8", folder=tmp_path).acquire().release()  # another robot: no conflict


def test_a_waiting_holder_gets_the_lease_when_it_is_released(tmp_path: Path) -> None:
    first = HardwareLease("arm", folder=tmp_path).acquire()
    released = threading.Event()

    def release() -> None:
        released.set()  # before the release: the waiter cannot have the lease earlier
        first.release()

    threading.Timer(0.4, release).start()
    second = HardwareLease("arm", folder=tmp_path, timeout_s=30)
    second.acquire()  # waits (its timeout is the hang guard), then gets it
    assert released.is_set()
    second.release()


def test_a_wait_that_times_out_says_how_long_it_waited(tmp_path: Path) -> None:
    held = HardwareLease("arm", folder=tmp_path).acquire()
    try:
        with pytest.raises(HardwareBusyError, match=r"after waiting 0\.[3-9]"):
            HardwareLease("arm", folder=tmp_path, timeout_s=0.3).acquire()
    finally:
        held.release()


RACE_TRIES = 0


@pytest.mark.parametrize("round_", range(repeats(5)))
def test_racing_threads_never_hold_it_together(tmp_path: Path, round_: int) -> None:
    """Eight threads, each taking and giving back the lease 25 times as fast as it can:
    inside the lease no other thread is ever inside (five rounds in the whole suite, one
    in the fast tier: each waits about half a second for the lease's 50 ms polls)."""
    inside = 0
    overlaps = 0
    guard = threading.Lock()
    acquired = 0

    def worker() -> None:
        nonlocal inside, overlaps, acquired
        global RACE_TRIES
        lease = HardwareLease("shared", folder=tmp_path, timeout_s=30)
        for _ in range(25):
            lease.acquire()
            with guard:
                inside += 1
                overlaps += inside > 1
                acquired += 1
            time.sleep(0.0005)
            with guard:
                inside -= 1
                RACE_TRIES += 1
            lease.release()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert acquired == 200
    assert overlaps == 0


HOLDER = textwrap.dedent(
    """
    import sys, time
    from embodiment.lease import HardwareLease
    lease = HardwareLease("arm", folder=sys.argv[1], owner="other process").acquire()
    print("held", flush=True)
    time.sleep(60)
    """
)


def test_another_process_holds_it_until_it_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(HardwareBusyError, match=f"process {holder.pid}.*other process"):
            HardwareLease("arm", folder=tmp_path).acquire()
        holder.kill()  # kill -9: no cleanup runs; the operating system drops the lock
        holder.wait(timeout=10)
        HardwareLease("arm", folder=tmp_path, timeout_s=5).acquire().release()
    finally:
        if holder.poll() is None:
            holder.kill()


def test_identity_declarations() -> None:
    class Sim:
        pass

    class Dry:
        def hardware_identity(self) -> None:
            return None

    class Bad:
        def hardware_identity(self) -> str:
            return "  "

    assert hardware_identity(Sim()) is None
    assert hardware_identity(Dry()) is None
    with pytest.raises(TypeError, match="non-empty string"):
        hardware_identity(Bad())


# ---------------------------------------------------------------------- through the Harness


def _overrides(lease_dir: Path, identity: str | None, **extra: str) -> list[str]:
    items = [
        "driver.name=fake",
        f"driver.lease_dir={lease_dir}",
        "run.store=null",
        "memory.enabled=false",
        "scene.enabled=false",
    ]
    if identity is not None:
        items.append(f"driver.hardware_id={identity}")
    items.extend(f"{key}={value}" for key, value in extra.items())
    return items


def test_two_harnesses_on_one_robot_the_second_is_refused(tmp_path: Path) -> None:
    first = Harness.from_config(None, overrides=_overrides(tmp_path, "arm@10.0.0.2"))
    try:
        with pytest.raises(HardwareBusyError, match=r"arm@10\.0\.0\.2"):
            Harness.from_config(None, overrides=_overrides(tmp_path, "arm@10.0.0.2"))
        # A second robot on the same host is no conflict.
        Harness.from_config(None, overrides=_overrides(tmp_path, "arm@10.0.0.3")).close()
    finally:
        first.close()
    Harness.from_config(None, overrides=_overrides(tmp_path, "arm@10.0.0.2")).close()


def test_a_refused_harness_never_connected_its_driver(tmp_path: Path) -> None:
    from embodiment.profile import load_profile
    from worlds.fake import FakeRobot

    held = HardwareLease("arm", folder=tmp_path).acquire()
    try:
        robot = FakeRobot(load_profile("panda_tabletop"), hardware_id="arm")
        with pytest.raises(HardwareBusyError):
            _build_with(robot, tmp_path)
        assert not robot.connected
    finally:
        held.release()


def _build_with(robot: object, lease_dir: Path) -> None:
    """Build through the assembly with a driver object the test can inspect."""
    from embodiment import drivers

    drivers.register_driver("probe", lambda profile, **_: robot)
    try:
        Harness.from_config(
            None, overrides=[*_overrides(lease_dir, None)[1:], "driver.name=probe"]
        ).close()
    finally:
        drivers.DRIVERS.pop("probe", None)


def test_a_harness_in_a_thread_waits_for_the_lease(tmp_path: Path) -> None:
    first = Harness.from_config(None, overrides=_overrides(tmp_path, "arm"))
    closing = threading.Event()

    def close() -> None:
        closing.set()  # before the close: the second cannot have the lease earlier
        first.close()

    threading.Timer(0.5, close).start()
    second = Harness.from_config(
        None, overrides=_overrides(tmp_path, "arm", **{"driver.lease_timeout_s": "30"})
    )
    assert closing.is_set()  # it waited for the first to close
    second.close()


def test_the_simulator_takes_no_lease(tmp_path: Path) -> None:
    pytest.importorskip("pybullet")
    overrides = [f"driver.lease_dir={tmp_path}", "run.store=null", "memory.enabled=false"]
    with (
        Harness.from_config(None, overrides=overrides),
        Harness.from_config(None, overrides=overrides),
    ):
        pass
    assert not list(tmp_path.iterdir())
