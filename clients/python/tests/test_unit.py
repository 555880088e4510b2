"""The package alone, against scripted transports: parsing, errors, views,
long polls, signing and the feed's resume logic. tests/api/clients.rs runs
tests/integration.py against a real service."""

import asyncio
import json
import pathlib
import time

import httpx
import nacl.signing
import pytest

import lendex_client

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


def test_the_oracle_goes_beside_the_commitment_and_a_calls_own_wins():
    def script(request, n):
        if request.url.path.endswith("/stream"):
            return httpx.Response(400, json={"error": "invalid"})
        return httpx.Response(200, json={"liquidations": [], "pools": []})

    handler, calls = scripted(script)
    client = Client("http://lendex.test", oracle="feed", transport=httpx.MockTransport(handler))
    client.liquidations(limit=2)
    client.unhealthy(oracle="pool")
    client.pools()
    assert calls[0].url.params["oracle"] == "feed"
    assert calls[1].url.params["oracle"] == "pool"
    assert "oracle" not in calls[2].url.params
    with pytest.raises(LendexError):
        for _ in client.unhealthy_stream(commitment="processed", oracle="pool"):
            pass
    assert (calls[3].url.params["oracle"], calls[3].url.params["commitment"]) == ("pool", "processed")


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


def readme_block(language):
    """The first fenced block of that language in the package's README."""
    text = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    return text.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_the_readme_loop_prints_candidates_and_passes_over_reset_and_resync(monkeypatch, capsys):
    quote = {"repay_amount": "5", "debt_pool": "P"}
    body = (
        b'id: 1.1\nevent: candidate_start\ndata: {"owner":"A","account_health_factor_wad":"900000000000000000","liquidation":null}\n\n'
        b'event: resync\ndata: {"reason":"subscriber too slow","resync":"/api/positions/unhealthy"}\n\n'
    )
    after = (
        b'event: reset\ndata: {"reason":"unknown epoch"}\n\n'
        b'id: 2.1\nevent: candidate_update\ndata: {"owner":"B","account_health_factor_wad":"800000000000000000","liquidation":'
        + json.dumps(quote).encode() + b"}\n\n"
    )

    def script(request, n):
        if n <= 2:
            return httpx.Response(200, content=[body, after][n - 1])
        return httpx.Response(400, json={"error": "invalid"})

    handler, _ = scripted(script)

    class Scripted(Client):
        def __init__(self, url):
            super().__init__(url, transport=httpx.MockTransport(handler))

    monkeypatch.setattr(lendex_client, "Client", Scripted)
    with pytest.raises(LendexError):
        exec(readme_block("python"), {})
    assert capsys.readouterr().out.splitlines() == ["candidate_start A 0.9000 ", "candidate_update B 0.8000 repay 5 in P"]


def test_a_held_poll_outlasts_the_client_timeout():
    """A transport that times out as a real one would: a hold longer than the
    request's read timeout ends in ReadTimeout. At the defaults (10 s timeout,
    25 s holds) the quiet holds must end in 304s and the change come at once."""

    def script(request, n):
        if n > 6:  # a client that never got past the holds: end it, not hang
            return httpx.Response(400, json={"error": "invalid"})
        hold = int(request.url.params.get("wait_ms", "0")) / 1000
        if hold > request.extensions["timeout"]["read"]:
            raise httpx.ReadTimeout("read timed out", request=request)
        if n == 1:
            return httpx.Response(200, json={"n": 1}, headers={"etag": '"1"'})
        if n <= 3:
            return httpx.Response(304, headers={"etag": '"1"'})
        return httpx.Response(200, json={"n": 2}, headers={"etag": '"2"'})

    handler, calls = scripted(script)
    client = Client("http://lendex.test", transport=httpx.MockTransport(handler))
    answers = client.watch("liquidations", {"limit": 50})
    assert next(answers).body == {"n": 1}
    started = time.monotonic()
    assert next(answers).body == {"n": 2}
    assert time.monotonic() - started < 0.5  # no backoff: no hold counted as a failure
    assert [c.url.params.get("wait_ms") for c in calls] == [None, "25000", "25000", "25000"]
    assert calls[1].extensions["timeout"]["read"] == 35.0
    assert calls[0].extensions["timeout"]["read"] == 10.0  # other calls keep the client's own


def test_both_feeds_stop():
    frames = b"".join(f'id: 1.{i}\nevent: candidate_update\ndata: {{"owner":"A{i}"}}\n\n'.encode() for i in range(5))
    handler, calls = scripted(lambda request, n: httpx.Response(200, content=frames))
    feed = Client("http://lendex.test", transport=httpx.MockTransport(handler)).unhealthy_stream()
    seen = []
    for event in feed:
        seen.append(event.data["owner"])
        if len(seen) == 2:
            feed.stop()
    assert seen == ["A0", "A1"] and len(calls) == 1

    async def run():
        feed = AsyncClient("http://lendex.test", transport=httpx.MockTransport(handler)).unhealthy_stream()
        seen = []
        async for event in feed:
            seen.append(event.data["owner"])
            if len(seen) == 3:
                feed.stop()
        return seen

    assert asyncio.run(run()) == ["A0", "A1", "A2"]
