"""How the Harness shows its session's parts: :class:`SessionPart`, an attribute that reads
through to one part of the :class:`~harness.runtime.session.Session` (and, for the few a
script may swap between tasks, writes through).

:class:`~harness.runtime.harness.Harness` declares one per part (``model``, ``tools``,
``driver``, ``store``, ...): the Harness owns its session and names what it shows of it,
rather than inheriting a class of properties.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

if TYPE_CHECKING:
    from harness.runtime.session import Session

__all__ = ["SessionPart"]

T = TypeVar("T")


class SessionPart(Generic[T]):
    """An attribute of an object with a ``session`` that is ``session.<name>``.

    ``name`` defaults to the attribute's own name. ``settable`` lets a script assign it
    (the value goes to the session, through ``convert`` when given); otherwise assigning
    raises ``AttributeError`` as a read-only property does."""

    def __init__(
        self,
        doc: str = "",
        *,
        name: str | None = None,
        settable: bool = False,
        convert: Any = None,
    ) -> None:
        self.__doc__ = doc
        self._name = name
        self._settable = settable
        self._convert = convert
        self._attribute = name or ""

    def __set_name__(self, owner: type, attribute: str) -> None:
        self._attribute = attribute
        if self._name is None:
            self._name = attribute

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> SessionPart[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        session: Session = instance.session  # type: ignore[attr-defined]
        return getattr(session, self._name or self._attribute)

    def __set__(self, instance: object, value: T) -> None:
        if not self._settable:
            raise AttributeError(f"attribute {self._attribute!r} cannot be set")
        if self._convert is not None:
            value = self._convert(value)
        session: Session = instance.session  # type: ignore[attr-defined]
        setattr(session, self._name or self._attribute, value)
