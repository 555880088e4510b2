"""What a call can end in besides its answer."""

import json
from typing import Optional


class LendexError(Exception):
    """The service answered with one of the spec's error bodies: `error` is its
    short reason ("invalid", "rate limited", "nonce invalid or expired", ...)."""

    def __init__(
        self,
        status: int,
        error: str,
        retry_after: Optional[int] = None,
        field: Optional[str] = None,
    ):
        super().__init__(f"{status}: {error}" + (f" ({field})" if field else ""))
        self.status = status
        self.error = error
        #: Seconds to wait, when the service said (429, 503).
        self.retry_after = retry_after
        #: The field at fault, for an `invalid` of a body with many (a webhook's).
        self.field = field

    @property
    def transient(self) -> bool:
        """Worth trying again later: the service away, busy, draining or limiting."""
        return self.status in (429, 502, 503, 504)


class TransportError(Exception):
    """The service could not be reached, or its answer was cut short."""

    transient = True


class RefusedError(Exception):
    """Refused here, before anything was signed or sent."""

    transient = False


def error_of(status: int, text: str, headers) -> LendexError:
    """The error a non-2xx answer stands for."""
    error, field = text or str(status), None
    try:
        body = json.loads(text)
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            error = body["error"]
            field = body.get("field") if isinstance(body.get("field"), str) else None
    except ValueError:
        pass  # not the spec's body (a proxy's page): its text is the reason
    after = headers.get("retry-after")
    return LendexError(status, error, int(after) if after and after.isdigit() else None, field)


def is_transient(error: BaseException) -> bool:
    return bool(getattr(error, "transient", False))
