"""Run stores written directly (no simulator) with control steps whose every value is known.

Each step of episode ``e`` gets a state, an action and, per camera, a solid-colour frame
made from ``(e, step)`` alone (:func:`expected_state`, :func:`expected_action`,
:func:`expected_color`), so a test can say what any exported row or video frame must be
without reading the exporter or the store. Frames are stored as PNG (lossless) the way
the harness stores them: once, by hash.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from harness.events import ControlStepsEvent, DoneEvent, ObservationEvent, TaskStartedEvent
from harness.messages import ImagePart
from harness.store import SQLiteRunStore

__all__ = [
    "Synth",
    "SynthEpisode",
    "expected_action",
    "expected_color",
    "expected_state",
    "write_store",
]


@dataclass(frozen=True)
class SynthEpisode:
    instruction: str
    commands: tuple[int, ...]
    """Steps per command."""
    outcome: str = "achieved"
    status: str = "completed"


@dataclass
class Synth:
    store: Path
    task_ids: list[str] = field(default_factory=list)
    session_id: str = ""


def expected_state(episode: int, step: int, dims: int) -> list[float]:
    return [episode * 10.0 + step * 0.01 + d * 0.001 for d in range(dims)]


def expected_action(episode: int, step: int, dims: int) -> list[float]:
    return [-(episode * 10.0) - step * 0.02 - d * 0.003 for d in range(dims)]


def expected_color(episode: int, step: int, camera: int) -> tuple[int, int, int]:
    return (
        (37 * episode + 11 * step + 60 * camera) % 200 + 20,
        (53 * step + 90 * camera) % 200 + 20,
        (29 * episode + 7 * step) % 200 + 20,
    )


def _png(color: tuple[int, int, int], width: int, height: int, label: str) -> ImagePart:
    buffer = io.BytesIO()
    Image.fromarray(np.full((height, width, 3), color, np.uint8)).save(buffer, format="PNG")
    return ImagePart(
        data=buffer.getvalue(), media_type="image/png", width=width, height=height, label=label
    )


def write_store(
    folder: Path,
    episodes: list[SynthEpisode],
    *,
    rate: float = 10,
    state_dims: int = 3,
    action_dims: int = 2,
    cameras: tuple[str, ...] = ("cam",),
    size: tuple[int, int] = (32, 24),
    embodiment: str | None = "panda_tabletop",
) -> Synth:
    """One session, one task per episode, each command one ``control_steps`` event."""
    layout = {
        "rate_hz": rate,
        "state_names": [f"s{d}" for d in range(state_dims)],
        "action_names": [f"a{d}" for d in range(action_dims)],
        "state_description": "synthetic state",
        "action_description": "synthetic action",
        "cameras": list(cameras),
    }
    store = SQLiteRunStore(folder)
    session = f"sess_synth{abs(hash(folder)) % 10**8}"
    store.open_session(session, config={"embodiment": embodiment})
    synth = Synth(store=folder, session_id=session)
    clock = 1_700_000_000.0
    seq = 0
    sim_time = 0.0
    for index, episode in enumerate(episodes):
        task = f"task_synth{index:04d}"
        synth.task_ids.append(task)
        store.start_task(session, task, episode.instruction)
        common = {"session_id": session, "task_id": task}
        seq += 1
        store.append_event(
            TaskStartedEvent(
                **common, seq=seq, time=clock, instruction=episode.instruction, max_turns=5
            )
        )
        step = 0
        for number, count in enumerate(episode.commands):
            clock += 2.0  # the model thinks
            seq += 1
            store.append_event(
                ObservationEvent(
                    **common, seq=seq, time=clock, state={"joint_positions": [0.0, 1.0]}
                )
            )
            frames: dict[str, list[str]] = {name: [] for name in cameras}
            times, states, actions = [], [], []
            for _ in range(count):
                for c, name in enumerate(cameras):
                    image = _png(expected_color(index, step, c), *size, label=name)
                    store.put_image(image)
                    frames[name].append(image.sha256)
                times.append(sim_time)
                states.append(expected_state(index, step, state_dims))
                actions.append(expected_action(index, step, action_dims))
                sim_time += 1.0 / rate
                step += 1
            seq += 1
            store.append_event(
                ControlStepsEvent(
                    **common,
                    seq=seq,
                    time=clock + 0.5,
                    started=clock + 0.1,
                    call_id=f"call_{index}_{number}",
                    tool="move",
                    layout=layout,
                    times=times,
                    states=states,
                    actions=actions,
                    frames=frames,
                )
            )
            clock += 0.5
        seq += 1
        store.append_event(
            DoneEvent(
                **common,
                seq=seq,
                time=clock + 1,
                status=episode.status,  # type: ignore[arg-type]
                termination_reason="",
                turns=1,
                outcome=episode.outcome,  # type: ignore[arg-type]
            )
        )
        store.end_task(
            task,
            status=episode.status,
            reason="",
            report="",
            turns=1,
            usage={},
            outcome=episode.outcome,
            evidence={"check": "programmatic", "checked_by": "simulator", "summary": "synthetic"},
        )
    store.close()
    return synth
