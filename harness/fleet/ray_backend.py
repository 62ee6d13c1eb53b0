"""The Ray backend: one actor per worker, on a local Ray or an existing cluster.

``pip install 'embodied-harness[fleet]'``. Ray is imported only when this backend runs.
Each actor asks for ``fleet.num_cpus`` (and ``fleet.num_gpus``) of the config, builds a
Harness per episode from the same config the coordinator validated, writes the episode's
run store to a scratch folder on its own node and sends back the record with the store
packed (``.tar.gz``); the coordinator unpacks it into ``runs/<episode>/``, so an eval on a
cluster ends with every run store on the machine that started it.

Results stream back as they finish (``ray.wait``). An actor that dies (its process killed,
its node lost) fails its episode with ``RayActorError``: the episode goes to a new actor
(:class:`~harness.fleet.dispatch.Dispatch`), and no finished episode is lost or run again.
Ctrl-C cancels the running episodes through each actor's ``cancel()`` (actors are
threaded for that), so their tasks end cooperatively.

Secrets never go through Ray's ``runtime_env`` (Ray writes it in plain text to its session
logs; the config refuses a secret there). The variables named in ``fleet.forward_env``,
and every ``api_key_env`` the config names, are read from the coordinator's environment
and handed to each actor as an argument when it is created; the actor sets them in its
own process before it builds anything.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.config import FleetConfig, HarnessConfig, secret_sources
from harness.errors import UsageError
from harness.fleet.dispatch import Dispatch
from harness.fleet.episode import EpisodeRecord, EpisodeSpec, run_episode

__all__ = ["EpisodeActor", "RayBackend", "forwarded_env", "import_ray", "unreachable"]

logger = logging.getLogger("harness.fleet")

POLL_S = 0.25
UNPLACED_WARNING_S = 60.0
STOP_GRACE_S = 30.0
CONNECT_PROBE_S = 10.0
"""How long a cluster's address is given to accept a connection before the eval starts."""
INSTALL_HINT = "pip install 'embodied-harness[fleet]'"


def unreachable(address: str, timeout_s: float) -> str | None:
    """Why nothing answers at ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``), or None
    when something does (or the address is ``auto``, which Ray looks up itself). Asked
    before ``ray.init``, which retries an address that does not answer for minutes."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return None
    except OSError as exc:
        return f"nothing answers there ({exc.strerror or exc})"


def import_ray() -> Any:
    """Ray, or a usage error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(f"--ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def forwarded_env(config: HarnessConfig) -> dict[str, str]:
    """What each actor is handed: the coordinator's values of ``fleet.forward_env`` and of
    every ``api_key_env`` the config names (those not set here are left to the nodes)."""
    _, key_names = secret_sources(config.model_dump(mode="json"))
    names = dict.fromkeys([*config.fleet.forward_env, *key_names])
    return {name: os.environ[name] for name in names if os.environ.get(name)}


class EpisodeActor:
    """What each Ray actor is: runs one episode at a time and can be cancelled.

    ``env`` (the forwarded variables) is set in the actor's process first."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        os.environ.update(env or {})
        self._cancel = threading.Event()

    def ready(self) -> str:
        """Where this actor runs (answered once it is placed and started)."""
        return f"{socket.gethostname()}:{os.getpid()}"

    def run(self, spec_json: str) -> tuple[str, bytes]:
        """The episode's record (JSON) and its folder packed as ``.tar.gz``."""
        self._cancel.clear()
        spec = EpisodeSpec.model_validate_json(spec_json)
        scratch = Path(tempfile.mkdtemp(prefix="harness-episode-"))
        try:
            folder = scratch / spec.plan.slug
            record = run_episode(spec, folder, cancelled=self._cancel.is_set)
            return record.model_dump_json(), pack(folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def cancel(self) -> None:
        self._cancel.set()


def pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        if folder.is_dir():
            archive.add(folder, arcname=".")
    return buffer.getvalue()


def unpack(data: bytes, folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
            archive.extractall(folder, filter="data")
        else:
            archive.extractall(folder, members=_plain_members(archive))


def _plain_members(archive: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """What the ``data`` extraction filter allows, for Pythons before 3.11.4 that lack it:
    plain files and folders, inside the destination (an actor's archive is trusted less
    than the driver's own disk)."""
    members = []
    for member in archive.getmembers():
        path = Path(member.name)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"an actor's run store archive names {member.name!r}, outside it")
        if not (member.isfile() or member.isdir()):
            raise ValueError(f"an actor's run store archive holds a link: {member.name!r}")
        member.mode &= 0o755  # no set-id bits, as the data filter does
        members.append(member)
    return members


class RayBackend:
    """Episodes on Ray actors (see the module docstring).

    Args:
        address: None starts a local Ray of its own for the run (stopped at the end);
            ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT`` joins an existing cluster (an
            address where nothing answers is a usage error at once).
        workers: Actors to start (None: as many as the cluster's CPUs allow).
        runs: Where the episodes' folders are unpacked.
        fleet: Resource requests, attempts and the runtime environment.
        notice: Where messages for the operator go (actors not placed, ...).
        env: Variables handed to each actor directly (:func:`forwarded_env`).
    """

    name = "ray"

    def __init__(
        self,
        *,
        address: str | None,
        workers: int | None,
        runs: Path,
        fleet: FleetConfig,
        notice: Callable[[str], None] = lambda _text: None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.env = dict(env or {})
        self.address = address
        self.workers = workers
        self.runs = runs
        self.fleet = fleet
        self.notice = notice
        self.ray = import_ray()
        self._started_here = False
        self.actual_workers = 0

    def describe(self) -> str:
        where = "a local Ray" if self.address is None else f"the Ray cluster at {self.address}"
        count = self.actual_workers or self.workers
        return f"{count or '?'} Ray actor(s) on {where}"

    # ------------------------------------------------------------------ cluster

    def connect(self, episodes: int) -> None:
        """Start or join Ray now (a cluster that cannot be reached is a UsageError before
        anything runs) and settle how many actors the run gets."""
        ray = self.ray
        if ray.is_initialized():
            self.actual_workers = self.actual_workers or self._worker_count(episodes)
            return
        options: dict[str, Any] = {
            "logging_level": logging.WARNING,
            "log_to_driver": False,
        }
        if self.address is None:
            wanted = (self.workers or os.cpu_count() or 1) * self.fleet.num_cpus
            options["num_cpus"] = max(os.cpu_count() or 1, math.ceil(wanted))
            if self.fleet.num_gpus:
                options["num_gpus"] = math.ceil((self.workers or 1) * self.fleet.num_gpus)
            options["include_dashboard"] = False
            # "local": a Ray of its own, always. Without it ray.init() joins whatever
            # RAY_ADDRESS or the last `ray start` on this machine points at, and refuses
            # the num_cpus asked for here.
            options["address"] = "local"
        else:
            why = unreachable(self.address, CONNECT_PROBE_S)
            if why is not None:
                raise UsageError(f"--ray: could not reach {self.address}: {why}")
            options["address"] = self.address
        try:
            ray.init(**options)
        except Exception as exc:  # an unreachable cluster is the operator's to fix, not a bug
            where = "start a local Ray" if self.address is None else f"reach {self.address}"
            raise UsageError(f"--ray: could not {where}: {_reason(exc)}") from None
        self._started_here = True
        self.actual_workers = self._worker_count(episodes)

    def _worker_count(self, episodes: int) -> int:
        if self.workers is not None:
            return max(1, min(self.workers, episodes))
        cpus = float(self.ray.cluster_resources().get("CPU", 1))
        return max(1, min(episodes, int(cpus // self.fleet.num_cpus)))

    def _new_actor(self) -> Any:
        # ``fleet.runtime_env`` goes with each actor, not with ``ray.init``: a control script
        # that has already called ``ray.init`` itself gets it too.
        remote = self.ray.remote(EpisodeActor).options(
            num_cpus=self.fleet.num_cpus,
            num_gpus=self.fleet.num_gpus or 0,
            max_concurrency=2,  # run() and cancel() at once
            max_restarts=0,
            **({"runtime_env": self.fleet.runtime_env} if self.fleet.runtime_env else {}),
        )
        return remote.remote(self.env)

    # ------------------------------------------------------------------ the loop

    def run(self, dispatch: Dispatch) -> None:
        ray = self.ray
        self.connect(dispatch.total)
        count = self.actual_workers
        actors: dict[int, Any] = {}
        starting: dict[Any, int] = {}  # ready() ref -> actor id
        running: dict[Any, tuple[int, EpisodeSpec]] = {}  # run() ref -> (actor id, spec)
        idle: list[int] = []
        names: dict[int, str] = {}
        next_id = 0

        def start_actor() -> None:
            nonlocal next_id
            actor = self._new_actor()
            actors[next_id] = actor
            starting[actor.ready.remote()] = next_id
            next_id += 1

        try:
            for _ in range(count):
                start_actor()
            began = time.monotonic()
            warned = False
            while not dispatch.done:
                while idle:
                    spec = dispatch.take()
                    if spec is None:
                        break
                    actor_id = idle.pop()
                    ref = actors[actor_id].run.remote(spec.model_dump_json())
                    running[ref] = (actor_id, spec)
                refs = list(starting) + list(running)
                if not refs:
                    if dispatch.pending and not actors:
                        start_actor()
                    time.sleep(0.05)
                    continue
                ready, _ = ray.wait(refs, num_returns=1, timeout=POLL_S)
                for ref in ready:
                    if ref in starting:
                        actor_id = starting.pop(ref)
                        try:
                            names[actor_id] = ray.get(ref)
                            idle.append(actor_id)
                        except Exception as exc:  # it died starting: replace it
                            logger.warning("a Ray actor failed to start: %s", exc)
                            self._forget(actors, actor_id)
                            if dispatch.pending:
                                start_actor()
                        continue
                    actor_id, spec = running.pop(ref)
                    try:
                        payload, archive = ray.get(ref)
                    except Exception as exc:
                        self._forget(actors, actor_id)
                        dispatch.lost(spec, _reason(exc), worker=names.get(actor_id, ""))
                        if dispatch.pending:
                            start_actor()
                        continue
                    record = EpisodeRecord.model_validate_json(payload)
                    unpack(archive, self.runs / spec.plan.slug)
                    idle.append(actor_id)
                    dispatch.finished(record)
                if not warned and starting and time.monotonic() - began > UNPLACED_WARNING_S:
                    warned = True
                    self.notice(
                        f"{len(starting)} of {count} Ray actors are not running yet: the "
                        f"cluster may lack the resources asked for (num_cpus="
                        f"{self.fleet.num_cpus}, num_gpus={self.fleet.num_gpus or 0} each)"
                    )
        except KeyboardInterrupt:
            dispatch.stop()
            self._interrupt(dispatch, actors, running)
            raise
        finally:
            for actor in actors.values():
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
            if self._started_here:
                ray.shutdown()

    def _interrupt(
        self,
        dispatch: Dispatch,
        actors: dict[int, Any],
        running: dict[Any, tuple[int, EpisodeSpec]],
    ) -> None:
        ray = self.ray
        for actor_id, _spec in running.values():
            with contextlib.suppress(Exception):
                actors[actor_id].cancel.remote()
        deadline = time.monotonic() + STOP_GRACE_S
        try:
            while running and time.monotonic() < deadline:
                ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    _actor_id, spec = running.pop(ref)
                    try:
                        payload, archive = ray.get(ref)
                    except Exception as exc:
                        dispatch.lost(spec, _reason(exc))
                        continue
                    record = EpisodeRecord.model_validate_json(payload)
                    if not record.interrupted:
                        unpack(archive, self.runs / spec.plan.slug)
                    dispatch.finished(record)
        except KeyboardInterrupt:
            pass
        for _actor_id, spec in running.values():
            dispatch.lost(spec, "interrupted")
        running.clear()

    def _forget(self, actors: dict[int, Any], actor_id: int) -> None:
        actor = actors.pop(actor_id, None)
        if actor is not None:
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
