"""clients/scenarios.json replayed against this package (the sync and the
asyncio client): the behaviour the three clients share."""

import asyncio
import json
import pathlib

import httpx
import pytest

from lendex_client import AsyncClient, Client, LendexError
from lendex_client.sse import SseParser

SCENARIOS = json.loads((pathlib.Path(__file__).parents[2] / "scenarios.json").read_text())


def service(responses):
    calls = []

    def handler(request):
        calls.append(request)
        r = responses[len(calls) - 1]
        if "sse" in r:
            return httpx.Response(r["status"], content=b"".join(c.encode() for c in r["sse"]))
        return httpx.Response(r["status"], content=r["body"].encode(), headers=r.get("headers", {}))

    return handler, calls


@pytest.mark.parametrize("s", SCENARIOS["sse"], ids=lambda s: s["name"])
def test_sse(s):
    data = s["text"].encode()
    for cut in range(len(data) + 1):
        parser = SseParser()
        frames = parser.push(data[:cut]) + parser.push(data[cut:])
        assert [list(f) for f in frames] == s["frames"], cut


@pytest.mark.parametrize("s", SCENARIOS["errors"], ids=lambda s: s["name"])
def test_errors(s):
    handler, _ = service([s])
    with pytest.raises(LendexError) as e:
        Client("http://lendex.test", transport=httpx.MockTransport(handler)).pools()
    assert (e.value.status, e.value.error, e.value.retry_after, e.value.transient, e.value.field) == (
        s["status"], s["error"], s["retry_after"], s["transient"], s["field"])


@pytest.mark.parametrize("s", SCENARIOS["polls"], ids=lambda s: s["name"])
def test_polls(s):
    handler, calls = service(s["responses"])
    client = Client("http://lendex.test", transport=httpx.MockTransport(handler))
    for i, call in enumerate(s["calls"]):
        answer = client.poll_once("liquidations", etag=call["etag"], wait_ms=call["wait_ms"])
        assert answer.changed == call["changed"]
        if call.get("etag_after"):
            assert answer.etag == call["etag_after"]
        assert calls[i].headers.get("if-none-match") == call["sent"]["if_none_match"]
        assert calls[i].url.params.get("wait_ms") == call["sent"]["wait_ms"]


def check_feed(s, seen, calls, error):
    assert (error.status, error.error) == (s["ends_with"]["status"], s["ends_with"]["error"])
    assert seen == [list(e) for e in s["events"]]
    assert [c.headers.get("last-event-id") for c in calls] == s["last_event_ids"]
    assert all(c.url.params["commitment"] == s["commitment"] for c in calls)


@pytest.mark.parametrize("s", SCENARIOS["feeds"], ids=lambda s: s["name"])
def test_feeds(s):
    handler, calls = service(s["responses"])
    client = Client("http://lendex.test", commitment=s["commitment"], transport=httpx.MockTransport(handler))
    seen = []
    with pytest.raises(LendexError) as e:
        for event in client.unhealthy_stream():
            seen.append([event.id, event.event, event.data])
    check_feed(s, seen, calls, e.value)


@pytest.mark.parametrize("s", SCENARIOS["feeds"], ids=lambda s: s["name"])
def test_feeds_asyncio(s):
    async def run():
        handler, calls = service(s["responses"])
        client = AsyncClient("http://lendex.test", commitment=s["commitment"], transport=httpx.MockTransport(handler))
        seen = []
        with pytest.raises(LendexError) as e:
            async for event in client.unhealthy_stream():
                seen.append([event.id, event.event, event.data])
        check_feed(s, seen, calls, e.value)

    asyncio.run(run())
