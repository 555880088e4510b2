// clients/scenarios.json replayed against this package: the behaviour the
// three clients share.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { LendexClient, LendexError, SseParser } from "../src/index.js";

const scenarios = JSON.parse(readFileSync(new URL("../../scenarios.json", import.meta.url), "utf8"));

/** A fetch answering each request with the next scripted response. */
function service(responses) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    calls.push({ url: new URL(url), headers: init.headers ?? {} });
    const r = responses[calls.length - 1];
    assert.ok(r, `request ${calls.length} was not expected`);
    if (r.sse) {
      const body = new ReadableStream({
        start(c) {
          for (const chunk of r.sse) c.enqueue(new TextEncoder().encode(chunk));
          c.close();
        },
      });
      return new Response(body, { status: r.status });
    }
    return new Response(r.status === 304 ? null : r.body, { status: r.status, headers: r.headers ?? {} });
  };
  return { fetch, calls };
}

for (const s of scenarios.sse) {
  test(`sse: ${s.name}`, () => {
    for (let cut = 0; cut <= s.text.length; cut += 1) {
      const parser = new SseParser();
      const frames = [...parser.push(s.text.slice(0, cut)), ...parser.push(s.text.slice(cut))];
      assert.deepEqual(frames.map((f) => [f.id, f.event, f.data]), s.frames, `cut at ${cut}`);
    }
  });
}

for (const s of scenarios.errors) {
  test(`errors: ${s.name}`, async () => {
    const { fetch } = service([s]);
    await assert.rejects(new LendexClient("http://lendex.test", { fetch }).pools(), (e) => {
      assert.ok(e instanceof LendexError);
      assert.deepEqual([e.status, e.error, e.retryAfter, e.transient, e.field], [s.status, s.error, s.retry_after, s.transient, s.field]);
      return true;
    });
  });
}

for (const s of scenarios.polls) {
  test(`polls: ${s.name}`, async () => {
    const { fetch, calls } = service(s.responses);
    const client = new LendexClient("http://lendex.test", { fetch });
    for (const [i, call] of s.calls.entries()) {
      const answer = await client.pollOnce("liquidations", {}, { etag: call.etag, waitMs: call.wait_ms });
      assert.equal(answer.changed, call.changed);
      if (call.etag_after) assert.equal(answer.etag, call.etag_after);
      assert.equal(calls[i].headers["if-none-match"] ?? null, call.sent.if_none_match);
      assert.equal(calls[i].url.searchParams.get("wait_ms"), call.sent.wait_ms);
    }
  });
}

for (const s of scenarios.feeds) {
  test(`feeds: ${s.name}`, async () => {
    const { fetch, calls } = service(s.responses);
    const client = new LendexClient("http://lendex.test", { fetch, commitment: s.commitment });
    const seen = [];
    await assert.rejects(
      (async () => {
        for await (const e of client.unhealthyStream()) seen.push([e.id, e.event, e.data]);
      })(),
      (e) => e instanceof LendexError && e.status === s.ends_with.status && e.error === s.ends_with.error,
    );
    assert.deepEqual(seen, s.events);
    assert.deepEqual(calls.map((c) => c.headers["last-event-id"] ?? null), s.last_event_ids);
    assert.ok(calls.every((c) => c.url.searchParams.get("commitment") === s.commitment));
  });
}
