"""A server's stderr, written to its log file only after redaction.

A stdio server's stderr must be a real file descriptor (the SDK hands it to the
subprocess), so a Python wrapper around the log file cannot see what the server writes.
:class:`RedactedLog` gives the server the write end of a pipe instead; a thread reads the
other end, redacts it as one stream (a key split across two writes is still caught) and
appends it to ``<name>.log``. The file never holds what the server printed unredacted.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import threading
from pathlib import Path

from harness.redact import RedactingStream, Redactor

__all__ = ["RedactedLog"]

READ_CHUNK = 65_536
POLL_S = 0.2
"""How often the reader wakes up without data (only to notice a closed log)."""


class RedactedLog:
    """The ``errlog`` of one server start: file-like for our own lines (``write``,
    ``flush``, ``tell``), and ``fileno()`` is what the server process writes to.

    :meth:`close` closes our end of the pipe and writes out everything the server has
    written so far (so a failed start's stderr tail can be read at once); :meth:`sync`
    does the same later (a crash's last words). The reader goes on appending until the
    server's end closes too (the process exited), then releases the held-back tail and
    closes the file.
    """

    def __init__(self, path: Path, redactor: Redactor | None = None) -> None:
        self.path = path
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the reader
        self._stream: RedactingStream = (redactor or Redactor()).stream()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        self._lock = threading.Lock()
        self._write_open = True
        self._ended = False
        self._reader = threading.Thread(target=self._pump, name=f"mcp-log-{path.stem}", daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ the server's side

    def fileno(self) -> int:
        return self._write_fd

    # ------------------------------------------------------------------ our side

    def write(self, text: str) -> int:
        with self._lock:
            if not self._ended:
                self._file.write(self._stream.feed(text))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if not self._ended:
                self._file.flush()

    def tell(self) -> int:
        with self._lock:
            if self._ended:
                return self.path.stat().st_size
            self._file.flush()
            return self._file.tell()

    def close(self) -> None:
        """Close our end of the pipe (the server keeps its own) and write out what the
        server has written so far."""
        with self._lock:
            if self._write_open:
                self._write_open = False
                os.close(self._write_fd)
        self.sync()

    def sync(self) -> None:
        """Write out everything the server has written so far (read before the log file
        is, e.g. for the stderr tail of a server that just crashed)."""
        with self._lock:
            self._drain()
            if not self._ended:
                self._file.flush()

    def __enter__(self) -> RedactedLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the reader

    def _pump(self) -> None:
        while True:
            with contextlib.suppress(OSError, ValueError):
                select.select([self._read_fd], [], [], POLL_S)
            with self._lock:
                if self._ended:
                    return
                self._drain()
                if self._ended:
                    return

    def _drain(self) -> None:
        """Read everything available now (under the lock); at end of file, release the
        held-back tail and close the file."""
        while not self._ended:
            try:
                data = os.read(self._read_fd, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if data:
                self._file.write(self._stream.feed(self._decoder.decode(data)))
                continue
            self._file.write(self._stream.feed(self._decoder.decode(b"", final=True)))
            self._file.write(self._stream.finish())
            self._file.close()
            os.close(self._read_fd)
            self._ended = True
        return
