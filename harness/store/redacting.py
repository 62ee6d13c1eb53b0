"""The redaction rule both run stores share.

A store redacts with the redactor it was built with; one built without gets the session's
when a Harness adopts it (:meth:`RedactingStore.adopt_redactor`), so secrets are redacted
the same way whichever store keeps them.
"""

from __future__ import annotations

from harness.redact import Redactor

__all__ = ["RedactingStore"]


class RedactingStore:
    """The redaction rule both stores share: the redactor they were built with, else the
    session's (a Harness offers its own through :meth:`adopt_redactor`)."""

    redactor: Redactor
    _redactor_fixed: bool

    def _init_redactor(self, redactor: Redactor | None) -> None:
        self.redactor = redactor or Redactor()
        self._redactor_fixed = redactor is not None

    def adopt_redactor(self, redactor: Redactor) -> None:
        """Redact with ``redactor`` from now on, unless this store was built with one (or
        already adopted one: a store several sessions share keeps the first's)."""
        if not self._redactor_fixed:
            self.redactor = redactor
            self._redactor_fixed = True
