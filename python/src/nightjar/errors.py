"""Errors: each carries the daemon's error kind (``not-found``, ``invalid``,
...) and its message, as the CLI prints it."""

from __future__ import annotations


class NightjarError(Exception):
    """A request the daemon refused or could not do.

    ``kind`` is the daemon's error kind (the protocol's ``ErrorKind``):
    ``not-found``, ``invalid``, ``forbidden``, ``bad-request``, ``protocol``,
    ``unavailable``, ``internal`` or ``other``; ``message`` says what and what
    to do.
    """

    kind = "other"

    def __init__(self, message: str, kind: str | None = None):
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return self.message


class NotFound(NightjarError):
    """No such task, run or file."""

    kind = "not-found"


class Invalid(NightjarError):
    """Bad input, or a task in the wrong state for the request."""

    kind = "invalid"


class Forbidden(NightjarError):
    """Another user's task, or an administrator's verb."""

    kind = "forbidden"


class BadRequest(NightjarError):
    """The daemon did not understand the request (a client bug)."""

    kind = "bad-request"


class ProtocolMismatch(NightjarError):
    """Client and daemon speak different protocol versions."""

    kind = "protocol"


class Unavailable(NightjarError):
    """The daemon is stopping, or halted."""

    kind = "unavailable"


class Internal(NightjarError):
    """The daemon failed inside (its store, its disk): its log says more."""

    kind = "internal"


class NotRunning(NightjarError):
    """No daemon answers at the socket (or URL) tried."""

    kind = "not-running"


class WaitTimeout(NightjarError):
    """``wait`` gave up before every task ended; ``ended`` of ``total`` had."""

    kind = "timeout"

    def __init__(self, message: str, ended: int, total: int):
        super().__init__(message)
        self.ended = ended
        self.total = total


_BY_KIND = {
    c.kind: c
    for c in (NotFound, Invalid, Forbidden, BadRequest, ProtocolMismatch, Unavailable, Internal)
}


def from_reply(message: str, kind: str | None) -> NightjarError:
    """The exception for an error reply with ``kind`` (an unknown kind, a
    newer daemon's, is a plain ``NightjarError`` carrying it)."""
    cls = _BY_KIND.get(kind or "other", NightjarError)
    return cls(message, kind or "other")
