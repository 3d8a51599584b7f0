"""A parser of server-sent events (text/event-stream), fed bytes in any pieces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

__all__ = ["Event", "EventParser"]


@dataclass
class Event:
    """One dispatched event: its type ("message" when none was given) and data."""

    event: str
    data: str


class EventParser:
    """Turns bytes into events, however the bytes were split.

    Lines end in CRLF, LF or CR; a line is decoded only once whole, so a
    UTF-8 character split between two pieces is never broken. Comment lines
    (": keep-alive") and the id and retry fields are skipped; several data
    lines of one event are joined with a newline; a blank line dispatches.
    """

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: List[str] = []
        self._has_data = False

    def feed(self, piece: bytes) -> List[Event]:
        """The events completed by this piece."""
        self._buf += piece
        events: List[Event] = []
        while True:
            line = self._take_line()
            if line is None:
                return events
            ev = self._line(line)
            if ev is not None:
                events.append(ev)

    def close(self) -> List[Event]:
        """The events the end of the stream completes (a last line without its end)."""
        events: List[Event] = []
        if self._buf.endswith(b"\r"):
            self._buf += b"\n"
        while True:
            line = self._take_line()
            if line is None:
                break
            ev = self._line(line)
            if ev is not None:
                events.append(ev)
        # An event without its blank line is not dispatched: the stream was cut.
        self._buf = b""
        return events

    def _take_line(self) -> Optional[bytes]:
        buf = self._buf
        lf = buf.find(b"\n")
        cr = buf.find(b"\r", 0, lf if lf >= 0 else len(buf))
        if cr >= 0:
            if cr + 1 == len(buf):
                return None  # a CR last: its LF may come in the next piece
            end = cr + 2 if buf[cr + 1] == 0x0A else cr + 1
            self._buf = buf[end:]
            return buf[:cr]
        if lf >= 0:
            self._buf = buf[lf + 1 :]
            return buf[:lf]
        return None

    def _line(self, raw: bytes) -> Optional[Event]:
        line = raw.decode("utf-8", "replace")
        if line == "":
            if not self._has_data:
                self._event = ""
                return None
            ev = Event(self._event or "message", "\n".join(self._data))
            self._event, self._data, self._has_data = "", [], False
            return ev
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._has_data = True
        return None
