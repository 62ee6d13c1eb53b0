"""A control script around ``Harness.run_stream()``: an e-stop and live instruction revisions.

- ``should_cancel`` is wired to an e-stop: press Enter (or type "stop") in the terminal, or
  let the optional timer fire (``--estop-after SECONDS``). The harness checks it before every
  model call and tool call, and interrupts a motion in flight through the driver's
  ``stop()``; the task ends ``cancelled`` with the robot stopped.
- the ``done`` event's ``outcome`` (``achieved``, ``not_achieved``, ``unverified``) is
  printed with its evidence, and decides the exit code: 0 only when the goal was confirmed.
- ``poll_replan`` is wired to a queue: any other line typed while the task runs becomes an
  instruction revision (e.g. "also put the blue cube in the tray"); ``--revise-after`` queues
  one automatically after the first confirmed place.

Run from the repository root (offline, on the built-in simulator):

    python examples/control_script.py "put the red cube in the tray" --revise-after 1
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading

from harness import Harness, load_config
from harness.events import DoneEvent, EvaluationEvent


class EStop:
    """A latch the harness polls: set by a keypress, a timer or anything else."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def trigger(self, reason: str) -> None:
        self.reason = reason
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


class Revisions:
    """Instruction revisions from any thread, read by the loop between turns."""

    def __init__(self) -> None:
        self._queue: queue.Queue[str] = queue.Queue()

    def put(self, text: str) -> None:
        self._queue.put(text)

    def poll(self) -> str | None:
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None


def read_keyboard(estop: EStop, revisions: Revisions) -> None:
    """Enter or "stop" = e-stop; any other line = a revision."""
    for line in sys.stdin:
        text = line.strip()
        if text in ("", "stop", "estop"):
            estop.trigger("operator e-stop from the keyboard")
            return
        revisions.put(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instruction", nargs="?", default="put all the cubes in the tray")
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--estop-after", type=float, default=None, help="timer e-stop (s)")
    parser.add_argument(
        "--revise-after", type=int, default=None, help="revise after N confirmed places"
    )
    parser.add_argument("--revision", default="also put the blue cube in the tray")
    args = parser.parse_args()

    estop, revisions = EStop(), Revisions()
    if sys.stdin.isatty():
        threading.Thread(target=read_keyboard, args=(estop, revisions), daemon=True).start()
        print("Enter = e-stop; type a sentence + Enter = revise the instruction")
    if args.estop_after is not None:
        timer = threading.Timer(args.estop_after, estop.trigger, args=("timer e-stop",))
        timer.daemon = True
        timer.start()

    placed = 0
    config = load_config(args.config)
    with Harness.from_config(config) as harness:
        for event in harness.run_stream(
            args.instruction, should_cancel=estop.is_set, poll_replan=revisions.poll
        ):
            if isinstance(event, EvaluationEvent):
                print(f"[{event.tool}] {event.verdict.status}: {event.verdict.evidence}")
                if event.tool == "place" and event.verdict.status == "success":
                    placed += 1
                    if placed == args.revise_after:
                        revisions.put(args.revision)
            elif event.type == "replan":
                print(f"[replan] {event.revision}")  # type: ignore[attr-defined]
            elif isinstance(event, DoneEvent):
                print(f"\n{event.status}: {event.termination_reason}")
                if estop.reason:
                    print(f"e-stop: {estop.reason}; robot stopped")
                print(event.report)
                who = f" ({event.evidence.checked_by})" if event.evidence.checked_by else ""
                print(f"outcome: {event.outcome}{who}: {event.evidence.summary}")
                for condition in event.evidence.conditions:
                    mark = "held" if condition.held else "NOT held"
                    print(f"  {mark}: {condition.condition} - {condition.evidence}")
                # 0 only when the goal was confirmed (or nothing is configured to check it)
                return 0 if event.succeeded else 1
    return 1


if __name__ == "__main__":
    sys.exit(main())
