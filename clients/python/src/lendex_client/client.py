"""The synchronous client (httpx). `aio.AsyncClient` is the same over asyncio."""

import time
from typing import Any, Callable, Dict, Iterator, NamedTuple, Optional

import httpx

from . import _routes as routes
from ._follow import Event, Follow
from .errors import LendexError, RefusedError, TransportError, error_of, is_transient
from .signing import (
    CREATE_WEBHOOK_ACTION,
    READ_AUDIT_ACTION,
    READ_WEBHOOKS_ACTION,
    Signer,
    add_admin_action,
    b58encode,
    canonical_message,
    delete_webhook_action,
    init_pool_action,
    redeliver_webhook_action,
    revoke_admin_action,
    verifies,
)


class Polled(NamedTuple):
    changed: bool
    etag: Optional[str]
    body: Any = None


def signed_message(client_nonce: Dict[str, str], action: str, signer: Signer) -> Dict[str, str]:
    """Step 2 of the handshake, shared by both clients: sign the canonical
    message, only if the server's is exactly it, and check the signature."""
    message = canonical_message(action, client_nonce["nonce"])
    if client_nonce["message"] != message:
        raise RefusedError(f"the server's message is not the canonical one for {action}")
    data = message.encode()
    signature = bytes(signer.sign_message(data))
    if not verifies(signer.public_key, data, signature):
        raise RefusedError("the signer's signature does not verify with its public key")
    return {"actor": signer.public_key, "nonce": client_nonce["nonce"], "signature": b58encode(signature)}


class Feed(Follow):
    """The liquidation feed, followed: iterate it for Events (see Follow)."""

    def __iter__(self) -> Iterator[Event]:
        while not self._stopped:
            attempt = self._attempt()
            time.sleep(attempt["pause"])
            try:
                with self._client._http.stream(**attempt["args"]) as response:
                    if response.status_code != 200:
                        self._refused(response.status_code, response.read().decode(errors="replace"), response.headers)
                        continue
                    self._opened()
                    for chunk in response.iter_bytes():
                        for event in self._events(chunk):
                            yield event
                            if self._stopped:
                                return
            except httpx.HTTPError:
                self._dropped()


class Client(routes.Routes):
    """Lendex over HTTP, synchronously. Every public route is a method; answers
    are the service's JSON (dicts shaped as lendex_client.models says)."""

    def __init__(self, base_url: str, *, commitment: Optional[str] = None, oracle: Optional[str] = None,
                 timeout: float = 10.0,
                 transport: Optional[httpx.BaseTransport] = None, headers: Optional[Dict[str, str]] = None):
        self.commitment = commitment
        self.oracle = oracle
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, transport=transport,
                                  headers=headers or {})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, request: routes.Request) -> httpx.Response:
        try:
            return self._http.request(request.method, request.path, params=routes.clean(request.query),
                                      json=request.body, headers=request.headers,
                                      timeout=routes.timeout_for(self._http.timeout, request))
        except httpx.HTTPError as e:
            raise TransportError(str(e) or type(e).__name__) from e

    def _call(self, request: routes.Request) -> Any:
        response = self._send(request)
        if not response.is_success:
            raise error_of(response.status_code, response.text, response.headers)
        return response.json()

    def request(self, method: str, path: str, *, query: Optional[Dict[str, Any]] = None, body: Any = None,
                headers: Optional[Dict[str, str]] = None) -> Any:
        """Any request: the parsed answer, or a LendexError or TransportError."""
        return self._call(routes.Request(method, path, query or {}, body, headers))

    # --- long polls and the stream
    def poll_once(self, route: str, params: Optional[Dict[str, Any]] = None, *, etag: Optional[str] = None,
                  wait_ms: int = 0) -> Polled:
        """One conditional GET of a long-polling route (pools, unhealthy,
        liquidations, at_risk, positions, detail; `user` in params for the last two)."""
        response = self._send(routes.poll_request(self, route, params or {}, etag, wait_ms))
        if response.status_code == 304:
            return Polled(False, response.headers.get("etag", etag))
        if not response.is_success:
            raise error_of(response.status_code, response.text, response.headers)
        return Polled(True, response.headers.get("etag"), response.json())

    def watch(self, route: str, params: Optional[Dict[str, Any]] = None, *, wait_ms: int = 25000) -> Iterator[Polled]:
        """Every new answer of such a route: the current one, then each change,
        by long polls. Backs off with jitter while the service is away or busy."""
        etag, failures = None, 0
        while True:
            try:
                answer = self.poll_once(route, params, etag=etag, wait_ms=wait_ms if etag else 0)
            except (LendexError, TransportError) as e:
                if not is_transient(e):
                    raise
                failures += 1
                time.sleep(routes.backoff_seconds(failures))
                continue
            failures, etag = 0, answer.etag
            if answer.changed:
                yield answer

    def unhealthy_stream(self, *, commitment: Optional[str] = None, oracle: Optional[str] = None,
                         last_event_id: Optional[str] = None,
                         silence: float = routes.SILENCE_SECONDS,
                         on_reconnect: Optional[Callable[[Optional[str], int], None]] = None) -> Feed:
        view = {"commitment": commitment, "oracle": oracle}
        return Feed(self, view, last_event_id, silence, on_reconnect)

    # --- the signed handshake
    def sign(self, signer: Signer, action: str) -> Dict[str, str]:
        return signed_message(self.nonce(signer.public_key, action), action, signer)

    def add_admin(self, signer: Signer, pubkey: str, role: str, label: Optional[str] = None):
        signed = self.sign(signer, add_admin_action(pubkey, role))
        return self.request("POST", "/api/admin/allowlist", body=routes.admin_body(signed, pubkey=pubkey, role=role, label=label))

    def revoke_admin(self, signer: Signer, pubkey: str):
        signed = self.sign(signer, revoke_admin_action(pubkey))
        return self.request("DELETE", "/api/admin/allowlist", body=routes.admin_body(signed, pubkey=pubkey))

    def register_pool(self, signer: Signer, pool_address: str, *, init_signature: Optional[str] = None,
                      symbol: Optional[str] = None):
        pool = self.pool_on_chain(pool_address)
        init_signature = init_signature or pool.get("init_signature")
        if not init_signature:
            raise RefusedError("the chain does not tell the init signature: pass init_signature")
        signed = self.sign(signer, init_pool_action(pool["token_mint"]))
        return self.request("POST", "/api/pools/init", body=routes.init_pool_body(signed, pool, init_signature, symbol))

    def audit(self, *, signer: Optional[Signer] = None, **query):
        """The audit log; on mainnet a signer signs `read_audit` into the headers."""
        headers = None
        if signer is not None:
            signed = self.sign(signer, READ_AUDIT_ACTION)
            headers = routes.signed_headers(signed)
        return self._call(routes.Request("GET", "/api/admin/audit", query, None, headers))

    # ---- webhooks (docs/webhooks.md) ----------------------------------------

    def create_webhook(self, signer: Signer, url: str, *, below_wad: Optional[str] = None,
                       owners: Optional[list] = None, pools: Optional[list] = None,
                       description: Optional[str] = None):
        """POST /api/webhooks; keep the answer's `secret`: it is shown once."""
        signed = self.sign(signer, CREATE_WEBHOOK_ACTION)
        body = routes.webhook_body(signed, url, below_wad, owners, pools, description)
        return self.request("POST", "/api/webhooks", body=body)

    def webhooks(self, signer: Signer):
        """GET /api/webhooks: the ones the signer may see."""
        headers = routes.signed_headers(self.sign(signer, READ_WEBHOOKS_ACTION))
        return self._call(routes.Request("GET", "/api/webhooks", {}, None, headers))

    def webhook_deliveries(self, signer: Signer, webhook_id: str, **query):
        """GET /api/webhooks/{id}/deliveries, the newest first."""
        headers = routes.signed_headers(self.sign(signer, READ_WEBHOOKS_ACTION))
        path = routes.webhook_path(webhook_id, "/deliveries")
        return self._call(routes.Request("GET", path, query, None, headers))

    def delete_webhook(self, signer: Signer, webhook_id: str):
        """DELETE /api/webhooks/{id}: the webhook as it was."""
        signed = self.sign(signer, delete_webhook_action(webhook_id))
        return self.request("DELETE", routes.webhook_path(webhook_id), body=signed)

    def redeliver_webhook(self, signer: Signer, webhook_id: str, delivery_id: str):
        """POST /api/webhooks/{id}/redeliver: sent again with its id, after those queued."""
        signed = self.sign(signer, redeliver_webhook_action(webhook_id, delivery_id))
        body = routes.admin_body(signed, delivery_id=delivery_id)
        return self.request("POST", routes.webhook_path(webhook_id, "/redeliver"), body=body)

