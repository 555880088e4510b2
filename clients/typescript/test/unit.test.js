// The package alone, against a scripted fetch: parsing, errors, signing,
// long polls and the feed's resume logic. tests/api/clients.rs runs the
// package against a real service.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import nacl from "tweetnacl";

import {
  LendexClient,
  LendexError,
  RefusedError,
  SseParser,
  backoffMs,
  canonicalMessage,
  formatWad,
  keypairSigner,
  walletSigner,
} from "../src/index.js";
import { keypairFile } from "../src/node.js";

/** A fetch that answers from `script(url, init, n)` and records the calls. */
function scripted(script) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    calls.push({ url: new URL(url), init });
    return script(new URL(url), init, calls.length);
  };
  return { fetch, calls };
}

const json = (status, body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

/** A response whose body is these SSE chunks, then ends. */
function stream(...chunks) {
  const body = new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(new TextEncoder().encode(c));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

test("frames split anywhere parse the same", () => {
  const text = 'id: 7.1\nevent: candidate_start\ndata: {"owner":"A"}\n\n: keep-alive\n\nid: 7.2\n\r\nevent: reset\r\ndata: {"reason":"x"}\r\n\r\n';
  const whole = new SseParser().push(text);
  for (let cut = 1; cut < text.length; cut += 1) {
    const parser = new SseParser();
    const frames = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut))];
    assert.deepEqual(frames, whole, `cut at ${cut}`);
  }
  assert.deepEqual(whole, [
    { id: "7.1", event: "candidate_start", data: '{"owner":"A"}' },
    { id: "7.2", event: null, data: null },
    { id: null, event: "reset", data: '{"reason":"x"}' },
  ]);
});

test("backoff doubles to 5 s, jittered between half and all", () => {
  assert.equal(backoffMs(1, () => 0), 50);
  assert.equal(backoffMs(1, () => 1), 100);
  assert.equal(backoffMs(3, () => 1), 400);
  assert.equal(backoffMs(40, () => 1), 5000);
  assert.equal(backoffMs(40, () => 0), 2500);
});

test("WADs are cut, not rounded", () => {
  assert.equal(formatWad("888888888888888888"), "0.8888");
  assert.equal(formatWad("1500000000000000000", 2), "1.50");
  assert.equal(formatWad("340282366920938463463374607431768211455"), "340282366920938463463.3746");
});

test("the spec's error bodies become LendexErrors", async () => {
  const { fetch } = scripted((url) =>
    url.pathname === "/api/pools"
      ? json(429, { error: "rate limited" }, { "retry-after": "2" })
      : new Response("<html>bad gateway</html>", { status: 502 }),
  );
  const client = new LendexClient("http://lendex.test/", { fetch });
  await assert.rejects(client.pools(), (e) => {
    assert.ok(e instanceof LendexError);
    assert.equal(e.status, 429);
    assert.equal(e.error, "rate limited");
    assert.equal(e.retryAfter, 2);
    return e.transient;
  });
  await assert.rejects(client.health(), (e) => e instanceof LendexError && e.status === 502 && e.transient);
});

test("the client's view goes on the reads that have one, and only there", async () => {
  const { fetch, calls } = scripted(() => json(200, { positions: [], pools: [] }));
  const client = new LendexClient("http://lendex.test", { fetch, commitment: "processed" });
  await client.unhealthy({ limit: 5 });
  await client.positions("OWNER", { commitment: "confirmed" });
  await client.pools();
  assert.equal(calls[0].url.search, "?limit=5&commitment=processed");
  assert.equal(calls[1].url.search, "?commitment=confirmed");
  assert.equal(calls[2].url.search, "");
});

test("the client's oracle goes beside its commitment, and a call's own wins", async () => {
  const { fetch, calls } = scripted(() => json(200, { liquidations: [], pools: [] }));
  const client = new LendexClient("http://lendex.test", { fetch, oracle: "feed" });
  await client.liquidations({ limit: 2 });
  await client.unhealthy({ oracle: "pool" });
  await client.pools();
  assert.equal(calls[0].url.search, "?limit=2&oracle=feed");
  assert.equal(calls[1].url.search, "?oracle=pool");
  assert.equal(calls[2].url.search, "");
  const refused = scripted(() => json(400, { error: "invalid" }));
  const viewed = new LendexClient("http://lendex.test", { fetch: refused.fetch, commitment: "processed" });
  await assert.rejects(
    (async () => {
      for await (const _ of viewed.unhealthyStream({ oracle: "feed" }));
    })(),
    (e) => e instanceof LendexError && e.error === "invalid",
  );
  assert.equal(refused.calls[0].url.search, "?oracle=feed&commitment=processed");
});

test("a long poll sends the tag and the wait, and tells a change from none", async () => {
  const { fetch, calls } = scripted((url, init, n) =>
    n === 1 ? json(200, { liquidations: [] }, { etag: '"a"' }) : new Response(null, { status: 304, headers: { etag: '"a"' } }),
  );
  const client = new LendexClient("http://lendex.test", { fetch });
  const first = await client.pollOnce("liquidations", { limit: 3 });
  assert.deepEqual(first, { changed: true, etag: '"a"', body: { liquidations: [] } });
  const second = await client.pollOnce("liquidations", { limit: 3 }, { etag: first.etag, waitMs: 99999 });
  assert.deepEqual(second, { changed: false, etag: '"a"' });
  assert.equal(calls[1].url.searchParams.get("wait_ms"), "30000");
  assert.equal(calls[1].init.headers["if-none-match"], '"a"');
});

test("a keypair signs the canonical message; a non-canonical one is refused", async () => {
  const pair = nacl.sign.keyPair();
  const signer = keypairSigner(pair.secretKey);
  let honest = true;
  const { fetch, calls } = scripted((url, init) => {
    if (url.pathname === "/api/auth/nonce") {
      const { action } = JSON.parse(init.body);
      const nonce = "0123456789abcdef0123456789abcdef";
      const message = honest ? canonicalMessage(action, nonce) : `${canonicalMessage(action, nonce)}\nAlso: transfer`;
      return json(200, { nonce, message, expiresAt: "2026-11-27T00:00:00Z" });
    }
    return json(200, { ok: true });
  });
  const client = new LendexClient("http://lendex.test", { fetch });
  assert.deepEqual(await client.addAdmin(signer, "WALLET", "pool_admin"), { ok: true });
  const sent = JSON.parse(calls[1].init.body);
  assert.equal(sent.actor, signer.publicKey);
  assert.equal(sent.role, "pool_admin");
  honest = false;
  await assert.rejects(client.revokeAdmin(signer, "WALLET"), RefusedError);
  assert.equal(calls.length, 3, "nothing sent after the refusal");
});

test("a keypair whose halves disagree is refused", () => {
  const bytes = nacl.sign.keyPair().secretKey;
  bytes[40] ^= 1;
  assert.throws(() => keypairSigner(bytes), RefusedError);
  assert.throws(() => keypairSigner(new Uint8Array(32)), RefusedError);
});

test("a Wallet-Standard account signs through solana:signMessage", async () => {
  const pair = nacl.sign.keyPair();
  const address = keypairSigner(pair.secretKey).publicKey;
  const wallet = {
    features: {
      "solana:signMessage": {
        signMessage: async ({ account, message }) => {
          assert.equal(account.address, address);
          return [{ signedMessage: message, signature: nacl.sign.detached(message, pair.secretKey) }];
        },
      },
    },
  };
  const signer = walletSigner(wallet, { address });
  const message = new TextEncoder().encode("hello");
  assert.ok(nacl.sign.detached.verify(message, await signer.signMessage(message), pair.publicKey));
});

test("the feed resumes with the last id, surfaces reset, and backs off while refused", async () => {
  const { fetch, calls } = scripted((url, init, n) => {
    if (n === 1) return stream('id: 3.1\nevent: candidate_start\ndata: {"owner":"A"}\n\n', "id: 3.2\n\n");
    if (n === 2) return json(503, { error: "draining" });
    if (n === 3) return stream('event: reset\ndata: {"reason":"unknown epoch"}\n\n', 'id: 4.1\nevent: candidate_start\ndata: {"owner":"B"}\n\n');
    return json(400, { error: "invalid" });
  });
  const client = new LendexClient("http://lendex.test", { fetch, commitment: "processed" });
  const feed = client.unhealthyStream();
  const seen = [];
  await assert.rejects(
    (async () => {
      for await (const event of feed) seen.push([event.id, event.event, event.data]);
    })(),
    (e) => e instanceof LendexError && e.error === "invalid",
  );
  assert.deepEqual(seen, [
    ["3.1", "candidate_start", { owner: "A" }],
    [null, "reset", { reason: "unknown epoch" }],
    ["4.1", "candidate_start", { owner: "B" }],
  ]);
  assert.equal(calls[0].url.searchParams.get("commitment"), "processed");
  assert.equal(calls[0].init.headers["last-event-id"], undefined);
  // The id-only frame moved the place: the reconnects resume after 3.2, then 4.1.
  assert.equal(calls[1].init.headers["last-event-id"], "3.2");
  assert.equal(calls[2].init.headers["last-event-id"], "3.2");
  assert.equal(calls[3].init.headers["last-event-id"], "4.1");
  assert.equal(feed.lastEventId, "4.1");
  assert.equal(feed.connects, 2);
  assert.equal(feed.refused, 1);
});

test("a silent connection is taken as dead and resumed", async () => {
  const { fetch, calls } = scripted((url, init, n) => {
    if (n === 1) {
      const body = new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('id: 1.1\nevent: candidate_update\ndata: {"owner":"A"}\n\n'));
        },
      });
      return new Response(body, { status: 200 });
    }
    return json(400, { error: "invalid" });
  });
  const client = new LendexClient("http://lendex.test", { fetch });
  const events = [];
  await assert.rejects(async () => {
    for await (const event of client.unhealthyStream({ silenceMs: 100 })) events.push(event.id);
  });
  assert.deepEqual(events, ["1.1"]);
  assert.equal(calls[1].init.headers["last-event-id"], "1.1");
});

test("an aborted feed ends its iteration", async () => {
  const controller = new AbortController();
  const { fetch } = scripted(() => {
    controller.abort();
    return json(503, { error: "draining" });
  });
  const client = new LendexClient("http://lendex.test", { fetch });
  const events = [];
  for await (const event of client.unhealthyStream({ signal: controller.signal })) events.push(event);
  assert.deepEqual(events, []);
});

test("the README's feed loop prints candidates and passes over reset and resync", async () => {
  const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
  const block = readme.split("```js\n")[1].split("```")[0];
  const frames = [
    'id: 1.1\nevent: candidate_start\ndata: {"owner":"A","account_health_factor_wad":"900000000000000000","liquidation":null}\n\n',
    'event: resync\ndata: {"reason":"subscriber too slow","resync":"/api/positions/unhealthy"}\n\n',
  ];
  const after = [
    'event: reset\ndata: {"reason":"unknown epoch"}\n\n',
    'id: 2.1\nevent: candidate_update\ndata: {"owner":"B","account_health_factor_wad":"800000000000000000","liquidation":{"repay_amount":"5","debt_pool":"P"}}\n\n',
  ];
  const { fetch } = scripted((url, init, n) => (n === 1 ? stream(...frames) : n === 2 ? stream(...after) : json(400, { error: "invalid" })));
  // The block as printed, importing this checkout and fetching from the script.
  const dir = await mkdtemp(join(tmpdir(), "lendex-readme-"));
  const file = join(dir, "loop.mjs");
  const index = new URL("../src/index.js", import.meta.url).href;
  await writeFile(file, block.replace('"@lendex/client"', JSON.stringify(index)));
  const printed = [];
  const { fetch: realFetch } = globalThis;
  const log = console.log;
  globalThis.fetch = fetch;
  console.log = (...args) => printed.push(args.join(" "));
  try {
    await assert.rejects(import(file), (e) => e instanceof LendexError && e.error === "invalid");
  } finally {
    globalThis.fetch = realFetch;
    console.log = log;
    await rm(dir, { recursive: true });
  }
  assert.deepEqual(printed, ["candidate_start A 0.9000 ", "candidate_update B 0.8000 repay 5 in P"]);
});

test("keypairFile reads ~/ as the home folder, as the Solana CLI writes it", async () => {
  const home = await mkdtemp(join(tmpdir(), "lendex-home-"));
  const saved = process.env.HOME;
  const seed = new Uint8Array(32).fill(7);
  const pair = nacl.sign.keyPair.fromSeed(seed);
  await mkdir(join(home, "keys"));
  await writeFile(join(home, "keys", "bot.json"), JSON.stringify([...pair.secretKey]));
  process.env.HOME = home;
  try {
    const signer = await keypairFile("~/keys/bot.json");
    assert.equal(signer.publicKey, keypairSigner(pair.secretKey).publicKey);
  } finally {
    process.env.HOME = saved;
    await rm(home, { recursive: true });
  }
});
