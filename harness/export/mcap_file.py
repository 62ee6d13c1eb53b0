"""Writing viewer records to an MCAP file with the ``mcap`` library (zstd chunks, a
summary with statistics and indexes, so Foxglove seeks in it at once).

One file holds one task (with its sub-agent lanes). Each topic is registered once with
its schema (:mod:`harness.export.foxglove_messages` says which and why); log time and
publish time are the run store's event time. A ``harness.task`` metadata record says which
run the file came from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from harness.export.foxglove_messages import FoxgloveMessage, FoxgloveSchema, encode_record
from harness.export.records import Record

__all__ = ["McapSink", "write_mcap"]

LIBRARY = "embodied-harness"


class McapSink:
    """Records in, MCAP messages out; :meth:`close` writes the summary."""

    def __init__(self, output: str | os.PathLike[str] | IO[bytes]) -> None:
        from mcap.writer import Writer

        self._file: IO[bytes] | None = None
        if isinstance(output, str | os.PathLike):
            self._file = open(Path(output), "wb")  # noqa: SIM115 (closed in close())
            output = self._file
        self._writer = Writer(output)
        self._writer.start(profile="", library=LIBRARY)
        self._schemas: dict[FoxgloveSchema, int] = {}
        self._channels: dict[str, int] = {}
        self._sequence = 0
        self.messages = 0
        self.closed = False

    def metadata(self, name: str, data: Mapping[str, Any]) -> None:
        self._writer.add_metadata(name, {str(k): str(v) for k, v in data.items()})

    def write(self, record: Record) -> None:
        for message in encode_record(record):
            self._add(message)

    def _add(self, message: FoxgloveMessage) -> None:
        channel = self._channels.get(message.topic)
        if channel is None:
            schema = self._schemas.get(message.schema)
            if schema is None:
                schema = self._writer.register_schema(
                    name=message.schema.name,
                    encoding=message.schema.encoding,
                    data=message.schema.data,
                )
                self._schemas[message.schema] = schema
            channel = self._writer.register_channel(
                topic=message.topic,
                message_encoding=message.schema.message_encoding,
                schema_id=schema,
            )
            self._channels[message.topic] = channel
        self._sequence += 1
        self._writer.add_message(
            channel_id=channel,
            log_time=message.time_ns,
            data=message.data,
            publish_time=message.time_ns,
            sequence=self._sequence,
        )
        self.messages += 1

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._writer.finish()
        if self._file is not None:
            self._file.close()


def write_mcap(
    records: Iterable[Record],
    output: str | os.PathLike[str] | IO[bytes],
    *,
    metadata: Mapping[str, Any] | None = None,
) -> int:
    """Write ``records`` to ``output``; returns the number of messages written."""
    sink = McapSink(output)
    try:
        if metadata:
            sink.metadata("harness.task", metadata)
        for record in records:
            sink.write(record)
    finally:
        sink.close()
    return sink.messages
