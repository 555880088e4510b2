"""Lendex from Python 3.9+: `Client` (sync) and `AsyncClient` (asyncio), the
liquidation feed that resumes by itself, long polls with ETags, and signed
admin calls with a Solana keypair. See README.md."""

from ._follow import CANDIDATE_EVENTS, Event
from ._routes import MAX_WAIT_MS, SILENCE_SECONDS, WATCHABLE, backoff_seconds
from .aio import AsyncClient, AsyncFeed
from .client import Client, Feed, Polled
from .errors import LendexError, RefusedError, TransportError
from .signing import KeypairSigner, Signer, canonical_message, keypair_file
from .wad import WAD, format_wad

__all__ = [
    "AsyncClient", "AsyncFeed", "CANDIDATE_EVENTS", "Client", "Event", "Feed", "KeypairSigner", "LendexError", "MAX_WAIT_MS",
    "Polled", "RefusedError", "SILENCE_SECONDS", "Signer", "TransportError", "WAD", "WATCHABLE",
    "backoff_seconds", "canonical_message", "format_wad", "keypair_file",
]
