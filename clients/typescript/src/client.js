// The client: one method per public route of the service, typed by the
// OpenAPI document (src/schema.d.ts), errors as the spec's bodies.
import bs58 from "bs58";

import { RefusedError, TransportError, errorOf } from "./errors.js";
import { pollOnce, watch } from "./polls.js";
import { actions, canonicalMessage, verifies } from "./signing.js";
import { Feed } from "./stream.js";

/** Routes that read a view (docs: design §15, §17): the client's
 *  `commitment` and `oracle` apply to them unless a call names its own. */
const VIEWED = new Set(["unhealthy", "liquidations", "atRisk", "positions", "detail", "stream"]);

export class LendexClient {
  #fetch;
  #headers;

  /**
   * @param baseUrl the service, e.g. "http://127.0.0.1:8080"
   * @param options.fetch another fetch (a test's, a proxy's)
   * @param options.commitment "confirmed" (the service's default) or "processed"
   * @param options.oracle "pool" (the service's default: the pools' own
   *   prices) or "feed" (their Pyth feeds: entries, quotes and events list
   *   the pools to crank in `crank`)
   * @param options.headers sent with every request
   */
  constructor(baseUrl, { fetch, commitment = null, oracle = null, headers = {} } = {}) {
    this.baseUrl = String(baseUrl).replace(/\/+$/, "");
    this.#fetch = fetch ?? globalThis.fetch.bind(globalThis);
    this.commitment = commitment;
    this.oracle = oracle;
    this.#headers = headers;
  }

  /** `path` under the base, with the defined values of `query`. */
  url(path, query = {}) {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  /** fetch with the client's headers. */
  fetch(url, init = {}) {
    return this.#fetch(url, { ...init, headers: { ...this.#headers, ...init.headers } });
  }

  /** The query with the client's view, for a route that reads one. */
  withView(route, query) {
    if (!VIEWED.has(route)) return query;
    const view = { ...query };
    if (view.commitment === undefined && this.commitment) view.commitment = this.commitment;
    if (view.oracle === undefined && this.oracle) view.oracle = this.oracle;
    return view;
  }

  /** One request; the parsed JSON answer, or a LendexError or TransportError. */
  async request(method, path, { query = {}, body, headers = {}, signal } = {}) {
    const init = { method, headers: { accept: "application/json", ...headers }, signal };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["content-type"] = "application/json";
    }
    let response;
    try {
      response = await this.fetch(this.url(path, query), init);
    } catch (cause) {
      if (signal?.aborted) throw cause;
      throw new TransportError(cause?.cause?.code ?? cause?.message ?? String(cause), cause);
    }
    if (!response.ok) throw await errorOf(response);
    try {
      return await response.json();
    } catch (cause) {
      throw new TransportError("an answer cut short", cause);
    }
  }

  #get(path, query, options) {
    return this.request("GET", path, { ...options, query });
  }

  #viewed(route, path, query = {}, options = {}) {
    return this.#get(path, this.withView(route, query), options);
  }

  // --- health and pools
  health(options) {
    return this.#get("/api/health", {}, options);
  }
  pools(options) {
    return this.#get("/api/pools", {}, options);
  }
  poolStatus(options) {
    return this.#get("/api/pools/status", {}, options);
  }
  unregisteredPools(options) {
    return this.#get("/api/pools/unregistered", {}, options);
  }
  poolOnChain(address, options) {
    return this.#get(`/api/pools/${encodeURIComponent(address)}/chain`, {}, options);
  }
  poolPrices(pool, query = {}, options) {
    return this.#get(`/api/pools/${encodeURIComponent(pool)}/prices`, query, options);
  }
  syncPool(poolAddress, { symbol } = {}, options) {
    return this.request("POST", "/api/pools/sync", { ...options, body: { pool_address: poolAddress, symbol } });
  }

  // --- positions and liquidations
  positions(user, query = {}, options) {
    return this.#viewed("positions", `/api/positions/${encodeURIComponent(user)}`, query, options);
  }
  detail(user, query = {}, options) {
    return this.#viewed("detail", `/api/positions/${encodeURIComponent(user)}/detail`, query, options);
  }
  address(address, options) {
    return this.#get(`/api/addresses/${encodeURIComponent(address)}`, {}, options);
  }
  ownerHistory(user, query = {}, options) {
    return this.#get(`/api/positions/${encodeURIComponent(user)}/history`, query, options);
  }
  syncPosition(poolAddress, user, options) {
    return this.request("POST", "/api/positions/sync", { ...options, body: { pool_address: poolAddress, user } });
  }
  unhealthy(query = {}, options) {
    return this.#viewed("unhealthy", "/api/positions/unhealthy", query, options);
  }
  liquidations(query = {}, options) {
    return this.#viewed("liquidations", "/api/liquidations", query, options);
  }
  atRisk(query = {}, options) {
    return this.#viewed("atRisk", "/api/positions/at-risk", query, options);
  }

  // --- history, risk, transactions
  historyEvents(query = {}, options) {
    return this.#get("/api/history/events", query, options);
  }
  historyMarket(query = {}, options) {
    return this.#get("/api/history/market", query, options);
  }
  riskShock(shocks, query = {}, options) {
    const shock = Array.isArray(shocks) ? shocks.map(([pool, bps]) => `${pool}:${bps}`).join(",") : shocks;
    return this.#get("/api/risk/shock", { ...query, shock }, options);
  }
  riskCurve(pool, query = {}, options) {
    return this.#get("/api/risk/curve", { ...query, pool }, options);
  }
  transactions(query = {}, options) {
    return this.#get("/api/transactions", query, options);
  }
  recordTransaction(transaction, options) {
    return this.request("POST", "/api/transactions", { ...options, body: transaction });
  }

  // --- long polls and the stream
  /** One conditional GET of a long-polling route (pools, unhealthy,
   *  liquidations, atRisk, positions, detail; `user` in params for the last two). */
  pollOnce(route, params, options) {
    return pollOnce(this, route, params, options);
  }
  /** Every new answer of such a route, by long polls: an async iterator. */
  watch(route, params, options) {
    return watch(this, route, params, options);
  }
  /** The liquidation feed: an async iterator of {id, event, data} that
   *  resumes by itself; `lastEventId` resumes where another left. */
  unhealthyStream({ commitment, oracle, ...options } = {}) {
    const named = {};
    if (commitment !== undefined) named.commitment = commitment;
    if (oracle !== undefined) named.oracle = oracle;
    const query = this.withView("stream", named);
    const path = new URL(this.url("/api/positions/unhealthy/stream", query));
    return new Feed(this, path.pathname + path.search, options);
  }

  // --- admins and the signed handshake
  me(pubkey, options) {
    return this.#get("/api/admin/me", { pubkey }, options);
  }
  allowlist(options) {
    return this.#get("/api/admin/allowlist", {}, options);
  }
  /** The audit log; on mainnet a signer signs `read_audit` into the headers. */
  async audit(query = {}, { signer, ...options } = {}) {
    if (!signer) return this.#get("/api/admin/audit", query, options);
    const headers = await this.#signedHeaders(signer, actions.readAudit());
    return this.#get("/api/admin/audit", query, { ...options, headers });
  }
  nonce(pubkey, action, options) {
    return this.request("POST", "/api/auth/nonce", { ...options, body: { pubkey, action } });
  }

  /** Steps 1 and 2 of the handshake: a nonce for `action`, and the signature
   *  of the canonical message (only if the server's message is exactly it). */
  async sign(signer, action) {
    const actor = signer.publicKey;
    const issued = await this.nonce(actor, action);
    const message = canonicalMessage(action, issued.nonce);
    if (issued.message !== message) {
      throw new RefusedError(`the server's message is not the canonical one for ${action}`);
    }
    const bytes = new TextEncoder().encode(message);
    const signature = await signer.signMessage(bytes);
    if (!verifies(actor, bytes, signature)) {
      throw new RefusedError("the signer's signature does not verify with its public key");
    }
    return { actor, nonce: issued.nonce, signature: bs58.encode(signature) };
  }

  /** POST /api/admin/allowlist: `pubkey` becomes an admin of `role`. */
  async addAdmin(signer, pubkey, role, { label } = {}) {
    const signed = await this.sign(signer, actions.addAdmin(pubkey, role));
    return this.request("POST", "/api/admin/allowlist", { body: { ...signed, pubkey, role, label } });
  }

  /** DELETE /api/admin/allowlist: a soft revoke. */
  async revokeAdmin(signer, pubkey) {
    const signed = await this.sign(signer, actions.revokeAdmin(pubkey));
    return this.request("DELETE", "/api/admin/allowlist", { body: { ...signed, pubkey } });
  }

  /** POST /api/webhooks (docs/webhooks.md): keep the answer's `secret`, it
   *  is shown once. */
  async createWebhook(signer, { url, belowWad, owners, pools, description }) {
    const signed = await this.sign(signer, actions.createWebhook());
    const body = { ...signed, url, below_wad: belowWad, owners, pools, description };
    return this.request("POST", "/api/webhooks", { body });
  }

  /** GET /api/webhooks: the ones the signer may see. */
  async webhooks(signer, options = {}) {
    return this.#get("/api/webhooks", {}, { ...options, headers: await this.#signedHeaders(signer, actions.readWebhooks()) });
  }

  /** GET /api/webhooks/{id}/deliveries: the newest first. */
  async webhookDeliveries(signer, id, query = {}, options = {}) {
    const headers = await this.#signedHeaders(signer, actions.readWebhooks());
    return this.#get(`/api/webhooks/${encodeURIComponent(id)}/deliveries`, query, { ...options, headers });
  }

  /** DELETE /api/webhooks/{id}: the webhook as it was. */
  async deleteWebhook(signer, id) {
    const signed = await this.sign(signer, actions.deleteWebhook(id));
    return this.request("DELETE", `/api/webhooks/${encodeURIComponent(id)}`, { body: signed });
  }

  /** POST /api/webhooks/{id}/redeliver: sent again, with its id, after those queued. */
  async redeliverWebhook(signer, id, deliveryId) {
    const signed = await this.sign(signer, actions.redeliverWebhook(id, deliveryId));
    const body = { ...signed, delivery_id: deliveryId };
    return this.request("POST", `/api/webhooks/${encodeURIComponent(id)}/redeliver`, { body });
  }

  async #signedHeaders(signer, action) {
    const signed = await this.sign(signer, action);
    return { "x-actor": signed.actor, "x-nonce": signed.nonce, "x-signature": signed.signature };
  }

  /** Registers a pool the signer is the on-chain authority of: its fields as
   *  the service reads them from chain, then POST /api/pools/init. */
  async registerPool(signer, poolAddress, { initSignature, symbol } = {}) {
    const pool = await this.poolOnChain(poolAddress);
    const init_signature = initSignature ?? pool.init_signature;
    if (!init_signature) {
      throw new RefusedError("the chain does not tell the init signature: pass initSignature");
    }
    const signed = await this.sign(signer, actions.initPool(pool.token_mint));
    const body = {
      ...signed,
      pool_address: pool.pool_address,
      token_mint: pool.token_mint,
      authority: pool.authority,
      vault: pool.vault,
      pool_bump: pool.pool_bump,
      authority_bump: pool.authority_bump,
      vault_bump: pool.vault_bump,
      init_signature,
      symbol,
    };
    return this.request("POST", "/api/pools/init", { body });
  }
}
