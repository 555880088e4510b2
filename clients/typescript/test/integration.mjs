// The package against a real `lendex serve` with a market (run by
// tests/api/clients.rs): every public route's answer, the errors as the
// spec's bodies, a signed call and a forged one, and a feed that cannot
// resume surfacing `reset`. Prints "ok <n> checks" or fails with the first
// difference.
//
//   LENDEX_URL=... KEYPAIR=<super-admin keypair file> node test/integration.mjs
import assert from "node:assert/strict";

import nacl from "tweetnacl";

import { LendexClient, LendexError, RefusedError, keypairSigner } from "../src/index.js";
import { keypairFile } from "../src/node.js";

const client = new LendexClient(process.env.LENDEX_URL ?? "http://127.0.0.1:8080");
const root = await keypairFile(process.env.KEYPAIR);
let checks = 0;
/** @param {string} what @param {() => unknown} fn */
const check = (what, fn) => Promise.resolve(fn()).then(() => (checks += 1), (e) => {
  e.message = `${what}: ${e.message}`;
  throw e;
});
/** @param {number} status @param {string} error @param {string} [field] @returns {(e: any) => boolean} */
const refused = (status, error, field) => (e) =>
  e instanceof LendexError && e.status === status && e.error === error && (field === undefined || e.field === field);

// Reads.
const health = await client.health();
await check("health", () => assert.ok(["ok", "degraded"].includes(health.status)));
const { pools } = await client.pools();
await check("pools", () => assert.ok(pools.length >= 2));
const pool = pools[0].pool_address;
await check("pool status", async () => assert.equal((await client.poolStatus()).pools.length, pools.length));
await check("pool prices", async () => assert.equal((await client.poolPrices(pool)).pool, pool));
await check("unregistered pools", async () => assert.ok(Array.isArray((await client.unregisteredPools()).pools)));
const { positions: under } = await client.unhealthy({ limit: 10 });
await check("unhealthy", () => assert.ok(under.length >= 1));
const owner = under[0].owner;
await check("positions", async () => assert.ok((await client.positions(owner)).positions.length >= 1));
await check("detail", async () => assert.ok((await client.detail(owner)).positions.length >= 1));
await check("addresses", async () => {
  const { positions: held } = await client.positions(owner);
  const found = await client.address(held[0].position_address);
  assert.deepEqual([found.kind, found.owner, found.pool_address], ["position", owner, held[0].pool_address]);
  assert.equal((await client.address(pool)).kind, "pool");
  assert.equal((await client.address(owner)).kind, "wallet");
});
await check("owner history", async () => assert.ok(Array.isArray((await client.ownerHistory(owner)).points)));
await check("liquidations", async () => {
  const { liquidations } = await client.liquidations({ limit: 5 });
  assert.ok(liquidations.length >= 1 && BigInt(liquidations[0].repay_amount) > 0n);
});
await check("at risk", async () => assert.ok(Array.isArray((await client.atRisk()).accounts)));
await check("history events", async () => assert.ok(Array.isArray((await client.historyEvents()).events)));
await check("history market", async () => assert.ok(Array.isArray((await client.historyMarket()).points)));
await check("shock", async () => assert.equal((await client.riskShock([[pool, -3300]])).shock[0].pool, pool));
await check("curve", async () => assert.equal((await client.riskCurve(pool, { steps: 4 })).points.length, 5));
await check("me", async () => assert.equal((await client.me(root.publicKey)).role, "super_admin"));
await check("allowlist", async () => assert.ok((await client.allowlist()).admins.length >= 1));
await check("audit", async () => assert.ok(Array.isArray((await client.audit({ limit: 5 })).entries)));
await check("transactions", async () => {
  const signature = `ts-client-${Date.now()}`;
  const recorded = await client.recordTransaction({ signature, wallet: owner, action: "deposit", amount: "5" });
  assert.equal(recorded.ok, true);
  const { transactions } = await client.transactions({ wallet: owner });
  assert.ok(transactions.some((t) => t.signature === signature));
});
await check("sync pool", async () => assert.equal((await client.syncPool(pool)).pool_address, pool));

// Errors, as the spec's bodies.
await check("not found", () => assert.rejects(client.positions("x"), refused(400, "invalid")));
await check("bad shock", () => assert.rejects(client.riskShock(`${pool}:999999`), refused(400, "invalid")));
await check("processed on a confirmed server", () =>
  assert.rejects(client.liquidations({ commitment: "processed" }), refused(400, "invalid")));
await check("unknown pool", () =>
  assert.rejects(client.poolPrices("11111111111111111111111111111111"), refused(404, "not found")));

// Signed calls: one that passes, one a stranger makes, one forged.
const wallet = keypairSigner(nacl.sign.keyPair().secretKey).publicKey;
await check("add admin", async () => assert.deepEqual(await client.addAdmin(root, wallet, "pool_admin", { label: "ts" }), { ok: true }));
await check("me after", async () => assert.equal((await client.me(wallet)).role, "pool_admin"));
const stranger = keypairSigner(nacl.sign.keyPair().secretKey);
await check("stranger", () => assert.rejects(client.revokeAdmin(stranger, wallet), refused(401, "not authorized")));
await check("forged", async () => {
  const { nonce } = await client.nonce(root.publicKey, `revoke_admin:${wallet}`);
  const body = { actor: root.publicKey, nonce, signature: "1".repeat(64), pubkey: wallet };
  await assert.rejects(client.request("DELETE", "/api/admin/allowlist", { body }), refused(401, "bad signature"));
});
await check("a wallet signing something else", async () => {
  const liar = { publicKey: root.publicKey, signMessage: async () => new Uint8Array(64) };
  await assert.rejects(client.revokeAdmin(liar, wallet), RefusedError);
});
await check("revoke", async () => assert.deepEqual(await client.revokeAdmin(root, wallet), { ok: true }));

// Webhooks: created (the secret once), listed, their deliveries, deleted.
await check("webhooks", async () => {
  const created = await client.createWebhook(root, { url: "https://93.184.215.14/ts", belowWad: "1050000000000000000", owners: [owner] });
  assert.ok(created.secret.startsWith("whsec_"));
  assert.ok((await client.webhooks(root)).webhooks.some((w) => w.id === created.id && !("secret" in w)));
  assert.deepEqual(await client.webhookDeliveries(root, created.id, { limit: 5 }), { deliveries: [] });
  assert.equal((await client.deleteWebhook(root, created.id)).id, created.id);
  await assert.rejects(client.createWebhook(root, { url: "ftp://example.com" }), refused(400, "invalid", "url"));
});

// A feed asked to resume from an epoch the service never had: reset, then the snapshot.
await check("reset", async () => {
  const controller = new AbortController();
  const seen = [];
  for await (const event of client.unhealthyStream({ lastEventId: "1.1", signal: controller.signal })) {
    seen.push(event.event);
    if (event.event === "candidate_start") controller.abort();
  }
  assert.deepEqual(seen.slice(0, 2), ["reset", "candidate_start"]);
});

console.log(`ok ${checks} checks`);
