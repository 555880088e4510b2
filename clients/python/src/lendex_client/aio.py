"""The asyncio client: the same routes and behaviour as `Client`, awaited."""

import asyncio
from typing import Any, AsyncIterator, Callable, Dict, Optional

import httpx

from . import _routes as routes
from ._follow import Event, Follow
from .client import Polled, signed_message
from .errors import LendexError, RefusedError, TransportError, error_of, is_transient
from .signing import (
    CREATE_WEBHOOK_ACTION,
    READ_AUDIT_ACTION,
    READ_WEBHOOKS_ACTION,
    Signer,
    add_admin_action,
    delete_webhook_action,
    init_pool_action,
    redeliver_webhook_action,
    revoke_admin_action,
)


class AsyncFeed(Follow):
    """`Feed` over asyncio: `async for event in feed`."""

    async def __aiter__(self) -> AsyncIterator[Event]:
        while not self._stopped:
            attempt = self._attempt()
            await asyncio.sleep(attempt["pause"])
            try:
                async with self._client._http.stream(**attempt["args"]) as response:
                    if response.status_code != 200:
                        text = (await response.aread()).decode(errors="replace")
                        self._refused(response.status_code, text, response.headers)
                        continue
                    self._opened()
                    async for chunk in response.aiter_bytes():
                        for event in self._events(chunk):
                            yield event
                            if self._stopped:
                                return
            except httpx.HTTPError:
                self._dropped()


class AsyncClient(routes.Routes):
    """Lendex over HTTP with asyncio: `await client.liquidations(limit=10)`."""

    def __init__(self, base_url: str, *, commitment: Optional[str] = None, oracle: Optional[str] = None,
                 timeout: float = 10.0,
                 transport: Optional[httpx.AsyncBaseTransport] = None, headers: Optional[Dict[str, str]] = None):
        self.commitment = commitment
        self.oracle = oracle
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout, transport=transport,
                                       headers=headers or {})

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def _send(self, request: routes.Request) -> httpx.Response:
        try:
            return await self._http.request(request.method, request.path, params=routes.clean(request.query),
                                            json=request.body, headers=request.headers,
                                            timeout=routes.timeout_for(self._http.timeout, request))
        except httpx.HTTPError as e:
            raise TransportError(str(e) or type(e).__name__) from e

    async def _call(self, request: routes.Request) -> Any:
        response = await self._send(request)
        if not response.is_success:
            raise error_of(response.status_code, response.text, response.headers)
        return response.json()

    async def request(self, method: str, path: str, *, query: Optional[Dict[str, Any]] = None, body: Any = None,
                      headers: Optional[Dict[str, str]] = None) -> Any:
        return await self._call(routes.Request(method, path, query or {}, body, headers))

    async def poll_once(self, route: str, params: Optional[Dict[str, Any]] = None, *, etag: Optional[str] = None,
                        wait_ms: int = 0) -> Polled:
        response = await self._send(routes.poll_request(self, route, params or {}, etag, wait_ms))
        if response.status_code == 304:
            return Polled(False, response.headers.get("etag", etag))
        if not response.is_success:
            raise error_of(response.status_code, response.text, response.headers)
        return Polled(True, response.headers.get("etag"), response.json())

    async def watch(self, route: str, params: Optional[Dict[str, Any]] = None, *,
                    wait_ms: int = 25000) -> AsyncIterator[Polled]:
        etag, failures = None, 0
        while True:
            try:
                answer = await self.poll_once(route, params, etag=etag, wait_ms=wait_ms if etag else 0)
            except (LendexError, TransportError) as e:
                if not is_transient(e):
                    raise
                failures += 1
                await asyncio.sleep(routes.backoff_seconds(failures))
                continue
            failures, etag = 0, answer.etag
            if answer.changed:
                yield answer

    def unhealthy_stream(self, *, commitment: Optional[str] = None, oracle: Optional[str] = None,
                         last_event_id: Optional[str] = None,
                         silence: float = routes.SILENCE_SECONDS,
                         on_reconnect: Optional[Callable[[Optional[str], int], None]] = None) -> AsyncFeed:
        view = {"commitment": commitment, "oracle": oracle}
        return AsyncFeed(self, view, last_event_id, silence, on_reconnect)

    async def sign(self, signer: Signer, action: str) -> Dict[str, str]:
        return signed_message(await self.nonce(signer.public_key, action), action, signer)

    async def add_admin(self, signer: Signer, pubkey: str, role: str, label: Optional[str] = None):
        signed = await self.sign(signer, add_admin_action(pubkey, role))
        body = routes.admin_body(signed, pubkey=pubkey, role=role, label=label)
        return await self.request("POST", "/api/admin/allowlist", body=body)

    async def revoke_admin(self, signer: Signer, pubkey: str):
        signed = await self.sign(signer, revoke_admin_action(pubkey))
        return await self.request("DELETE", "/api/admin/allowlist", body=routes.admin_body(signed, pubkey=pubkey))

    async def register_pool(self, signer: Signer, pool_address: str, *, init_signature: Optional[str] = None,
                            symbol: Optional[str] = None):
        pool = await self.pool_on_chain(pool_address)
        init_signature = init_signature or pool.get("init_signature")
        if not init_signature:
            raise RefusedError("the chain does not tell the init signature: pass init_signature")
        signed = await self.sign(signer, init_pool_action(pool["token_mint"]))
        body = routes.init_pool_body(signed, pool, init_signature, symbol)
        return await self.request("POST", "/api/pools/init", body=body)

    async def audit(self, *, signer: Optional[Signer] = None, **query):
        headers = None
        if signer is not None:
            signed = await self.sign(signer, READ_AUDIT_ACTION)
            headers = routes.signed_headers(signed)
        return await self._call(routes.Request("GET", "/api/admin/audit", query, None, headers))

    # ---- webhooks (docs/webhooks.md) ----------------------------------------

    async def create_webhook(self, signer: Signer, url: str, *, below_wad: Optional[str] = None,
                             owners: Optional[list] = None, pools: Optional[list] = None,
                             description: Optional[str] = None):
        signed = await self.sign(signer, CREATE_WEBHOOK_ACTION)
        body = routes.webhook_body(signed, url, below_wad, owners, pools, description)
        return await self.request("POST", "/api/webhooks", body=body)

    async def webhooks(self, signer: Signer):
        headers = routes.signed_headers(await self.sign(signer, READ_WEBHOOKS_ACTION))
        return await self._call(routes.Request("GET", "/api/webhooks", {}, None, headers))

    async def webhook_deliveries(self, signer: Signer, webhook_id: str, **query):
        headers = routes.signed_headers(await self.sign(signer, READ_WEBHOOKS_ACTION))
        path = routes.webhook_path(webhook_id, "/deliveries")
        return await self._call(routes.Request("GET", path, query, None, headers))

    async def delete_webhook(self, signer: Signer, webhook_id: str):
        signed = await self.sign(signer, delete_webhook_action(webhook_id))
        return await self.request("DELETE", routes.webhook_path(webhook_id), body=signed)

    async def redeliver_webhook(self, signer: Signer, webhook_id: str, delivery_id: str):
        signed = await self.sign(signer, redeliver_webhook_action(webhook_id, delivery_id))
        body = routes.admin_body(signed, delivery_id=delivery_id)
        return await self.request("POST", routes.webhook_path(webhook_id, "/redeliver"), body=body)

