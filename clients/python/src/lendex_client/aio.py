"""The asyncio client: the same routes and behaviour as `Client`, awaited."""

import asyncio
import json
from typing import Any, AsyncIterator, Callable, Dict, Optional

import httpx

from . import _routes as routes
from .client import Event, Polled, signed_message
from .errors import LendexError, RefusedError, TransportError, error_of, is_transient
from .signing import READ_AUDIT_ACTION, Signer, add_admin_action, init_pool_action, revoke_admin_action
from .sse import SseParser


class AsyncFeed:
    """`Feed` over asyncio: `async for event in feed`."""

    def __init__(self, client: "AsyncClient", commitment, last_event_id, silence, on_reconnect):
        self._client = client
        self._commitment = commitment
        self.last_event_id: Optional[str] = last_event_id
        self._silence = silence
        self._on_reconnect = on_reconnect
        self.connects = 0
        self.refused = 0

    async def __aiter__(self) -> AsyncIterator[Event]:
        failures = 0
        attempts = 0
        while True:
            if attempts and self._on_reconnect:
                self._on_reconnect(self.last_event_id, failures)
            attempts += 1
            if failures:
                await asyncio.sleep(routes.backoff_seconds(failures))
            request = routes.stream_request(self._client, self._commitment, self.last_event_id)
            timeout = httpx.Timeout(5.0, read=self._silence)
            connected = False
            try:
                async with self._client._http.stream(
                    "GET", request.path, params=routes.clean(request.query), headers=request.headers, timeout=timeout
                ) as response:
                    if response.status_code != 200:
                        text = (await response.aread()).decode(errors="replace")
                        error = error_of(response.status_code, text, response.headers)
                        if not is_transient(error):
                            raise error
                        failures += 1
                        self.refused += 1
                        continue
                    failures, connected = 0, True
                    self.connects += 1
                    parser = SseParser()
                    async for chunk in response.aiter_bytes():
                        for frame in parser.push(chunk):
                            if frame.id is not None:
                                self.last_event_id = frame.id
                            if frame.event is None:
                                continue
                            data = json.loads(frame.data) if frame.data is not None else None
                            yield Event(frame.id, frame.event, data)
            except httpx.HTTPError:
                if not connected:
                    failures += 1
                    self.refused += 1


class AsyncClient(routes.Routes):
    """Lendex over HTTP with asyncio: `await client.liquidations(limit=10)`."""

    def __init__(self, base_url: str, *, commitment: Optional[str] = None, timeout: float = 10.0,
                 transport: Optional[httpx.AsyncBaseTransport] = None, headers: Optional[Dict[str, str]] = None):
        self.commitment = commitment
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
                                            json=request.body, headers=request.headers)
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

    def unhealthy_stream(self, *, commitment: Optional[str] = None, last_event_id: Optional[str] = None,
                         silence: float = routes.SILENCE_SECONDS,
                         on_reconnect: Optional[Callable[[Optional[str], int], None]] = None) -> AsyncFeed:
        return AsyncFeed(self, commitment, last_event_id, silence, on_reconnect)

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
            headers = {"x-actor": signed["actor"], "x-nonce": signed["nonce"], "x-signature": signed["signature"]}
        return await self._call(routes.Request("GET", "/api/admin/audit", query, None, headers))
