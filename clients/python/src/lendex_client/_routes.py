"""The public routes, once for both clients: each method describes its
request and hands it to the client's `_call`, which the sync client performs
and the asyncio client returns as a coroutine."""

import random
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple, Union
from urllib.parse import quote

import httpx

#: Routes that read a view (design §15): the client's `commitment` applies.
VIEWED = {"unhealthy", "liquidations", "at_risk", "positions", "detail", "stream"}

#: The six routes that answer with an ETag and hold long polls.
WATCHABLE = {
    "pools": lambda p: "/api/pools",
    "unhealthy": lambda p: "/api/positions/unhealthy",
    "liquidations": lambda p: "/api/liquidations",
    "at_risk": lambda p: "/api/positions/at-risk",
    "positions": lambda p: f"/api/positions/{quote(p['user'], safe='')}",
    "detail": lambda p: f"/api/positions/{quote(p['user'], safe='')}/detail",
}
MAX_WAIT_MS = 30000
#: The service sends a keep-alive every second: this long without a byte and
#: a stream is taken as dead.
SILENCE_SECONDS = 5.0


def backoff_seconds(failures: int, rand=random.random) -> float:
    """100 ms doubling to 5 s, each between half and all of it, so followers
    cut together do not come back together."""
    full = min(0.1 * 2 ** min(max(failures - 1, 0), 16), 5.0)
    return full / 2 + rand() * full / 2


class Request(NamedTuple):
    method: str
    path: str
    query: Dict[str, Any]
    body: Any = None
    headers: Optional[Dict[str, str]] = None
    #: Seconds the service may take to answer past the client's own timeout:
    #: a held long poll's wait, which must never read as a failure.
    hold: float = 0.0


def clean(query: Dict[str, Any]) -> Dict[str, str]:
    out = {}
    for name, value in query.items():
        if value is None:
            continue
        out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _key(text: str) -> str:
    return quote(text, safe="")


class Routes:
    commitment: Optional[str] = None
    oracle: Optional[str] = None

    def _call(self, request: Request):  # pragma: no cover - each client's own
        raise NotImplementedError

    def _with_view(self, route: str, query: Dict[str, Any]) -> Dict[str, Any]:
        if route not in VIEWED:
            return query
        view = dict(query)
        if view.get("commitment") is None and self.commitment:
            view["commitment"] = self.commitment
        if view.get("oracle") is None and self.oracle:
            view["oracle"] = self.oracle
        return view

    def _get(self, path: str, **query):
        return self._call(Request("GET", path, query))

    def _viewed(self, route: str, path: str, **query):
        return self._call(Request("GET", path, self._with_view(route, query)))

    # --- health and pools
    def health(self):
        return self._get("/api/health")

    def pools(self):
        return self._get("/api/pools")

    def pool_status(self):
        return self._get("/api/pools/status")

    def unregistered_pools(self):
        return self._get("/api/pools/unregistered")

    def pool_on_chain(self, address: str):
        return self._get(f"/api/pools/{_key(address)}/chain")

    def pool_prices(self, pool: str, **query):
        return self._get(f"/api/pools/{_key(pool)}/prices", **query)

    def sync_pool(self, pool_address: str, symbol: Optional[str] = None):
        return self._call(Request("POST", "/api/pools/sync", {}, {"pool_address": pool_address, "symbol": symbol}))

    # --- positions and liquidations
    def positions(self, user: str, **query):
        return self._viewed("positions", f"/api/positions/{_key(user)}", **query)

    def detail(self, user: str, **query):
        return self._viewed("detail", f"/api/positions/{_key(user)}/detail", **query)

    def address(self, address: str):
        """What the index knows an address as: a pool, a position (with its
        pool and owner), a wallet, or unknown."""
        return self._get(f"/api/addresses/{_key(address)}")

    def owner_history(self, user: str, **query):
        return self._get(f"/api/positions/{_key(user)}/history", **query)

    def sync_position(self, pool_address: str, user: str):
        return self._call(Request("POST", "/api/positions/sync", {}, {"pool_address": pool_address, "user": user}))

    def unhealthy(self, **query):
        return self._viewed("unhealthy", "/api/positions/unhealthy", **query)

    def liquidations(self, **query):
        return self._viewed("liquidations", "/api/liquidations", **query)

    def at_risk(self, **query):
        return self._viewed("at_risk", "/api/positions/at-risk", **query)

    # --- history, risk, transactions
    def history_events(self, **query):
        return self._get("/api/history/events", **query)

    def history_market(self, **query):
        return self._get("/api/history/market", **query)

    def risk_shock(self, shocks: Union[str, Iterable[Tuple[str, int]]], **query):
        text = shocks if isinstance(shocks, str) else ",".join(f"{p}:{b}" for p, b in shocks)
        return self._get("/api/risk/shock", shock=text, **query)

    def risk_curve(self, pool: str, **query):
        return self._get("/api/risk/curve", pool=pool, **query)

    def transactions(self, **query):
        return self._get("/api/transactions", **query)

    def record_transaction(self, transaction: Dict[str, Any]):
        return self._call(Request("POST", "/api/transactions", {}, transaction))

    # --- admins
    def me(self, pubkey: str):
        return self._get("/api/admin/me", pubkey=pubkey)

    def allowlist(self):
        return self._get("/api/admin/allowlist")

    def nonce(self, pubkey: str, action: str):
        return self._call(Request("POST", "/api/auth/nonce", {}, {"pubkey": pubkey, "action": action}))


def poll_request(client: Routes, route: str, params: Dict[str, Any], etag: Optional[str], wait_ms: int) -> Request:
    """The conditional GET of a long-polling route."""
    if route not in WATCHABLE:
        raise ValueError(f"{route} is not a route that long-polls")
    query = {k: v for k, v in params.items() if k != "user"}
    hold = 0.0
    if wait_ms > 0:
        query["wait_ms"] = min(wait_ms, MAX_WAIT_MS)
        hold = query["wait_ms"] / 1000
    headers = {"if-none-match": etag} if etag else {}
    return Request("GET", WATCHABLE[route](params), client._with_view(route, query), None, headers, hold)


def timeout_for(base: "httpx.Timeout", request: Request) -> "httpx.Timeout":
    """The client's timeout, its read and pool phases lengthened by the hold a
    long poll asked for: a hold that runs its course answers 304, not a timeout."""
    if not request.hold:
        return base
    longer = lambda t: None if t is None else t + request.hold
    return httpx.Timeout(connect=base.connect, read=longer(base.read), write=base.write, pool=longer(base.pool))


def stream_request(client: Routes, view: Dict[str, Optional[str]], last_event_id: Optional[str]) -> Request:
    query = client._with_view("stream", {k: v for k, v in view.items() if v is not None})
    headers = {"accept": "text/event-stream"}
    if last_event_id:
        headers["last-event-id"] = last_event_id
    return Request("GET", "/api/positions/unhealthy/stream", query, None, headers)


def signed_headers(signed: Dict[str, str]) -> Dict[str, str]:
    """A signed read's credentials as its headers (the mainnet audit read)."""
    return {"x-actor": signed["actor"], "x-nonce": signed["nonce"], "x-signature": signed["signature"]}


def admin_body(signed: Dict[str, str], **fields) -> Dict[str, Any]:
    return {**signed, **fields}


def init_pool_body(signed: Dict[str, str], pool: Dict[str, Any], init_signature: str, symbol: Optional[str]) -> Dict[str, Any]:
    keys: List[str] = ["pool_address", "token_mint", "authority", "vault", "pool_bump", "authority_bump", "vault_bump"]
    return {**signed, **{k: pool[k] for k in keys}, "init_signature": init_signature, "symbol": symbol}


def webhook_body(signed: Dict[str, str], url: str, below_wad: Optional[str], owners: Optional[List[str]],
                 pools: Optional[List[str]], description: Optional[str]) -> Dict[str, Any]:
    """POST /api/webhooks' body (docs/webhooks.md)."""
    fields = {"url": url, "below_wad": below_wad, "owners": owners, "pools": pools, "description": description}
    return {**signed, **{k: v for k, v in fields.items() if v is not None}}


def webhook_path(webhook_id: str, rest: str = "") -> str:
    return f"/api/webhooks/{quote(webhook_id, safe='')}{rest}"
