"""Exceptions raised for the server's error answers.

Every error answer of coderunner is a JSON object
``{"error": {"code", "message", "request_id", "limit"}}``; the client turns
it into a :class:`CoderunnerError` subclass chosen by the HTTP status.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Type

if TYPE_CHECKING:
    from .types import JudgeResult

__all__ = [
    "CoderunnerError",
    "TransportError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "SessionExpired",
    "Conflict",
    "PayloadTooLarge",
    "RateLimited",
    "ServerError",
    "Unavailable",
    "InsufficientStorage",
    "error_for",
    "field_of",
]

# A field path: "limits.memory", "test_cases[0].expected_output", "args[3]".
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])*(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])*)*")


def field_of(message: str) -> Optional[str]:
    """The field path a message names before its first ": ".

    Messages name the field first ("limits.memory: unknown field"), perhaps
    after a prose prefix without a path ("invalid request:
    test_cases[0].expected_ouput: unknown field"): the first piece before a
    ": " that is a whole path is the field.
    """
    pieces = message.split(": ")
    for piece in pieces[:-1]:
        if _FIELD.fullmatch(piece):
            return piece
        if " " not in piece:
            return None  # a word that is not a path: no field
    return None


class CoderunnerError(Exception):
    """An error answer of the server (or, with status 0, no answer at all).

    ``code`` is the server's error code (``bad_request``, ``queue_full`` ...),
    ``message`` its message, ``request_id`` the id to look for in the
    server's log, ``status`` the HTTP status and ``limit`` the limit a 429
    names. ``body`` is the whole decoded JSON answer when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        request_id: str = "",
        status: int = 0,
        limit: Optional[str] = None,
        retry_after: Optional[float] = None,
        body: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.request_id = request_id
        self.status = status
        self.limit = limit
        self.retry_after = retry_after
        self.body: Dict[str, Any] = dict(body) if body else {}

    def __str__(self) -> str:
        parts = []
        if self.status:
            parts.append(str(self.status))
        if self.code:
            parts.append(self.code)
        head = " ".join(parts)
        text = f"{head}: {self.message}" if head else self.message
        if self.request_id:
            text += f" (request {self.request_id})"
        return text


class TransportError(CoderunnerError):
    """The server could not be reached, or its answer was not HTTP or JSON.

    ``sent`` is False only when the request surely never reached the server
    (the connection was refused).
    """

    def __init__(self, message: str, *, sent: bool = True, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.sent = sent


class BadRequest(CoderunnerError):
    """400 (and 415): the request is malformed. ``field`` names the field.

    A refused judge request carries its JudgeResult (status sandbox_error,
    error_info VALIDATION_ERROR) in ``result``; other requests None.
    """

    result: Optional["JudgeResult"] = None

    @property
    def field(self) -> Optional[str]:
        """The path of the field the message starts with (``limits.memory``), or None."""
        return field_of(self.message)


class Unauthorized(CoderunnerError):
    """401: the token is missing or wrong."""


class Forbidden(CoderunnerError):
    """403: the Host or Origin header is not the server's."""


class NotFound(CoderunnerError):
    """404: no such session, file, submission or endpoint."""


class SessionExpired(NotFound):
    """404 session_expired: the session was idle too long; its files are gone."""


class Conflict(CoderunnerError):
    """409: a directory, link or special file stands where a file is asked for."""


class PayloadTooLarge(CoderunnerError):
    """413: the body, or one of its fields, is over its size limit."""


class RateLimited(CoderunnerError):
    """429: over a key's limit (``limit`` names it); ``retry_after`` in seconds."""


class ServerError(CoderunnerError):
    """500 or another unexpected status."""


class Unavailable(CoderunnerError):
    """503: the queue is full, or the server is starting or shutting down."""


class InsufficientStorage(CoderunnerError):
    """507: the session's workspace is full."""


_BY_STATUS: Dict[int, Type[CoderunnerError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    415: BadRequest,
    429: RateLimited,
    503: Unavailable,
    507: InsufficientStorage,
}


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a Retry-After header (delta-seconds only), or None."""
    if value is None:
        return None
    value = value.strip()
    if not value.isdigit():
        return None
    return float(int(value))


def error_for(status: int, body: bytes, retry_after: Optional[str] = None) -> CoderunnerError:
    """The exception for an error answer of this status and body."""
    import json

    decoded: Optional[Dict[str, Any]] = None
    try:
        value = json.loads(body.decode("utf-8")) if body else None
        if isinstance(value, dict):
            decoded = value
    except (UnicodeDecodeError, ValueError):
        decoded = None
    err = decoded.get("error") if decoded else None
    if isinstance(err, dict):
        message = str(err.get("message", ""))
        code = str(err.get("code", ""))
        request_id = str(err.get("request_id", ""))
        limit = err.get("limit")
    else:
        message = body[:200].decode("utf-8", "replace") or f"HTTP {status}"
        code, request_id, limit = "", "", None
    cls = _BY_STATUS.get(status, ServerError)
    if cls is NotFound and code == "session_expired":
        cls = SessionExpired
    return cls(
        message,
        code=code,
        request_id=request_id,
        status=status,
        limit=str(limit) if limit is not None else None,
        retry_after=parse_retry_after(retry_after),
        body=decoded,
    )
