"""The package alone, against scripted transports: parsing, errors, views,
long polls, signing and the feed's resume logic. tests/api/clients.rs runs
tests/integration.py against a real service."""

import asyncio
import json

import httpx
import nacl.signing
import pytest

from lendex_client import (
    AsyncClient,
    Client,
    KeypairSigner,
    LendexError,
    RefusedError,
    backoff_seconds,
    canonical_message,
    format_wad,
)
from lendex_client.sse import Frame, SseParser


def scripted(script):
    calls = []

    def handler(request):
        calls.append(request)
        return script(request, len(calls))

    return handler, calls


def test_frames_split_anywhere_parse_the_same():
    text = 'id: 7.1\nevent: candidate_start\ndata: {"owner":"A"}\n\n: keep-alive\n\nid: 7.2\n\r\nevent: reset\r\ndata: {"reason":"x"}\r\n\r\n'
    whole = SseParser().push(text.encode())
    for cut in range(1, len(text)):
        parser = SseParser()
        assert parser.push(text[:cut].encode()) + parser.push(text[cut:].encode()) == whole, cut
    assert whole == [
        Frame("7.1", "candidate_start", '{"owner":"A"}'),
        Frame("7.2", None, None),
        Frame(None, "reset", '{"reason":"x"}'),
    ]


def test_backoff_and_wads():
    assert backoff_seconds(1, lambda: 1) == pytest.approx(0.1)
    assert backoff_seconds(40, lambda: 0) == pytest.approx(2.5)
    assert format_wad("888888888888888888") == "0.8888"
    assert format_wad("340282366920938463463374607431768211455") == "340282366920938463463.3746"


def test_error_bodies_and_views():
    def script(request, n):
        if request.url.path == "/api/pools":
            return httpx.Response(429, json={"error": "rate limited"}, headers={"retry-after": "2"})
        return httpx.Response(200, json={"positions": []})

    handler, calls = scripted(script)
    client = Client("http://lendex.test", commitment="processed", transport=httpx.MockTransport(handler))
    with pytest.raises(LendexError) as e:
        client.pools()
    assert (e.value.status, e.value.error, e.value.retry_after, e.value.transient) == (429, "rate limited", 2, True)
    client.unhealthy(limit=5)
    client.positions("OWNER", commitment="confirmed")
    assert calls[1].url.params["commitment"] == "processed"
    assert calls[2].url.params["commitment"] == "confirmed"


def test_a_long_poll_sends_its_tag_and_wait():
    def script(request, n):
        if n == 1:
            return httpx.Response(200, json={"liquidations": []}, headers={"etag": '"a"'})
        return httpx.Response(304, headers={"etag": '"a"'})

    handler, calls = scripted(script)
    client = Client("http://lendex.test", transport=httpx.MockTransport(handler))
    first = client.poll_once("liquidations", {"limit": 3})
    assert first.changed and first.etag == '"a"'
    second = client.poll_once("liquidations", {"limit": 3}, etag='"a"', wait_ms=99999)
    assert not second.changed
    assert calls[1].url.params["wait_ms"] == "30000"
    assert calls[1].headers["if-none-match"] == '"a"'


def test_signing_refuses_a_non_canonical_message_and_a_bad_keypair():
    signer = KeypairSigner.generate()
    honest = {"yes": True}

    def script(request, n):
        if request.url.path == "/api/auth/nonce":
            action = json.loads(request.content)["action"]
            nonce = "0123456789abcdef0123456789abcdef"
            message = canonical_message(action, nonce) + ("" if honest["yes"] else "\nAlso: transfer")
            return httpx.Response(200, json={"nonce": nonce, "message": message, "expiresAt": "x"})
        return httpx.Response(200, json={"ok": True})

    handler, calls = scripted(script)
    client = Client("http://lendex.test", transport=httpx.MockTransport(handler))
    assert client.add_admin(signer, "WALLET", "pool_admin") == {"ok": True}
    sent = json.loads(calls[1].content)
    assert sent["actor"] == signer.public_key and sent["role"] == "pool_admin"
    honest["yes"] = False
    with pytest.raises(RefusedError):
        client.revoke_admin(signer, "WALLET")
    assert len(calls) == 3
    key = nacl.signing.SigningKey.generate()
    mixed = bytes(key) + bytes(nacl.signing.SigningKey.generate().verify_key)
    with pytest.raises(RefusedError):
        KeypairSigner(mixed)


class Cut(httpx.SyncByteStream):
    """A stream body that sends its chunks, then is cut."""

    def __init__(self, *chunks):
        self.chunks = chunks

    def __iter__(self):
        yield from self.chunks
        raise httpx.ReadError("cut")


def test_the_feed_resumes_surfaces_reset_and_backs_off():
    def script(request, n):
        if n == 1:
            return httpx.Response(200, stream=Cut(b'id: 3.1\nevent: candidate_start\ndata: {"owner":"A"}\n\n', b"id: 3.2\n\n"))
        if n == 2:
            return httpx.Response(503, json={"error": "draining"})
        if n == 3:
            body = b'event: reset\ndata: {"reason":"unknown epoch"}\n\nid: 4.1\nevent: candidate_start\ndata: {"owner":"B"}\n\n'
            return httpx.Response(200, content=body)
        return httpx.Response(400, json={"error": "invalid"})

    handler, calls = scripted(script)
    client = Client("http://lendex.test", commitment="processed", transport=httpx.MockTransport(handler))
    feed = client.unhealthy_stream()
    seen = []
    with pytest.raises(LendexError) as e:
        for event in feed:
            seen.append((event.id, event.event, event.data))
    assert e.value.error == "invalid"
    assert seen == [
        ("3.1", "candidate_start", {"owner": "A"}),
        (None, "reset", {"reason": "unknown epoch"}),
        ("4.1", "candidate_start", {"owner": "B"}),
    ]
    assert calls[0].url.params["commitment"] == "processed"
    assert "last-event-id" not in calls[0].headers
    assert [c.headers["last-event-id"] for c in calls[1:]] == ["3.2", "3.2", "4.1"]
    assert (feed.last_event_id, feed.connects, feed.refused) == ("4.1", 2, 1)


def test_the_async_client_says_the_same():
    async def run():
        def script(request, n):
            if request.url.path == "/api/positions/unhealthy/stream":
                if n == 2:
                    return httpx.Response(200, content=b'id: 1.1\nevent: candidate_update\ndata: {"owner":"A"}\n\n')
                return httpx.Response(400, json={"error": "invalid"})
            return httpx.Response(200, json={"liquidations": []}, headers={"etag": '"b"'})

        handler, calls = scripted(script)
        client = AsyncClient("http://lendex.test", transport=httpx.MockTransport(handler))
        assert (await client.poll_once("liquidations")).etag == '"b"'
        seen = []
        with pytest.raises(LendexError):
            async for event in client.unhealthy_stream():
                seen.append(event.id)
        assert seen == ["1.1"]
        assert calls[2].headers["last-event-id"] == "1.1"
        await client.aclose()

    asyncio.run(run())
