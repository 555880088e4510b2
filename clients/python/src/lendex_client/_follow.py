"""What following the feed decides, once for the sync and the asyncio client:
where to resume (Last-Event-ID), how long to back off, which refusals end it,
and which frames are events. Each client only does the I/O."""

import json
from typing import Any, List, NamedTuple, Optional

import httpx

from . import _routes as routes
from .errors import error_of, is_transient
from .sse import SseParser


class Event(NamedTuple):
    """One event of the feed: `candidate_start`, `candidate_update`,
    `candidate_stop` (data: the owner, its health factor, positions, best
    quote), `reset` (the service could not resume: a snapshot follows) or
    `resync` (this client read too slowly; the feed resumes by itself).
    Only candidate events carry an owner: test `is_candidate` first."""

    id: Optional[str]
    event: str
    data: Any

    @property
    def is_candidate(self) -> bool:
        """A `candidate_*` event (data: an owner and its quote); False for the
        feed's own news, `reset` and `resync`, whose data is only a reason."""
        return self.event in CANDIDATE_EVENTS


#: The events that carry an owner.
CANDIDATE_EVENTS = frozenset({"candidate_start", "candidate_update", "candidate_stop"})


class Follow:
    """A feed's state between connections. The feed reconnects by itself with
    the last frame's id, backs off with jitter while the service is away or
    busy, takes a connection silent for `silence` seconds as dead, and hands
    over `reset` rather than hiding it."""

    def __init__(self, client, view, last_event_id, silence, on_reconnect):
        self._client = client
        # The view named by the call ({"commitment": ..., "oracle": ...}).
        self._view = view
        self.last_event_id: Optional[str] = last_event_id
        self._silence = silence
        self._on_reconnect = on_reconnect
        self.connects = 0
        self.refused = 0
        self._failures = 0
        self._attempts = 0
        self._connected = False
        self._parser = SseParser()
        self._stopped = False

    def stop(self) -> None:
        """Ends the iteration at its next event or reconnect."""
        self._stopped = True

    def _attempt(self) -> dict:
        """Before each connection: says so when it is a reconnect; the pause
        to take first (seconds) and the request's arguments."""
        if self._attempts and self._on_reconnect:
            self._on_reconnect(self.last_event_id, self._failures)
        self._attempts += 1
        self._connected = False
        request = routes.stream_request(self._client, self._view, self.last_event_id)
        return {
            "pause": routes.backoff_seconds(self._failures) if self._failures else 0.0,
            "args": dict(method="GET", url=request.path, params=routes.clean(request.query),
                         headers=request.headers, timeout=httpx.Timeout(5.0, read=self._silence)),
        }

    def _refused(self, status: int, text: str, headers) -> None:
        """A connection answered other than 200: raised when for good."""
        error = error_of(status, text, headers)
        if not is_transient(error):
            raise error
        self._failures += 1
        self.refused += 1

    def _opened(self) -> None:
        self._failures, self._connected = 0, True
        self.connects += 1
        self._parser = SseParser()

    def _dropped(self) -> None:
        """Cut or silent: resume from the last id at once; unreachable: back off first."""
        if not self._connected:
            self._failures += 1
            self.refused += 1

    def _events(self, chunk: bytes) -> List[Event]:
        events = []
        for frame in self._parser.push(chunk):
            if frame.id is not None:
                self.last_event_id = frame.id
            if frame.event is None:
                continue  # the feed's place alone
            events.append(Event(frame.id, frame.event, json.loads(frame.data) if frame.data is not None else None))
        return events
