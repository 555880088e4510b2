"""Server-sent events, read incrementally: bytes in, frames out. A frame is
(id, event, data), `data` the joined data lines (None when it had none);
lines end with CRLF, LF or CR, a blank line ends a frame, and comments
(keep-alives) alone give no frame."""

import codecs
import re
from typing import List, NamedTuple, Optional

_LINE_END = re.compile(r"\r\n|\n|\r")


class Frame(NamedTuple):
    id: Optional[str]
    event: Optional[str]
    data: Optional[str]


class SseParser:
    def __init__(self) -> None:
        self._buffer = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._reset()

    def _reset(self) -> None:
        self._id: Optional[str] = None
        self._event: Optional[str] = None
        self._data: List[str] = []
        self._fields = 0

    def push(self, chunk) -> List[Frame]:
        """The frames completed by this chunk (bytes or str)."""
        text = self._buffer + (chunk if isinstance(chunk, str) else self._decoder.decode(chunk))
        frames: List[Frame] = []
        pos = 0
        while True:
            m = _LINE_END.search(text, pos)
            # A CR last may be the first half of a CRLF: wait for the next chunk.
            if m is None or (m.group() == "\r" and m.end() == len(text)):
                break
            line = text[pos : m.start()]
            pos = m.end()
            if line == "":
                if self._fields:
                    data = "\n".join(self._data) if self._data else None
                    frames.append(Frame(self._id, self._event, data))
                self._reset()
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                self._fields += 1
                if name == "id":
                    self._id = value
                elif name == "event":
                    self._event = value
                elif name == "data":
                    self._data.append(value)
        self._buffer = text[pos:]
        return frames
