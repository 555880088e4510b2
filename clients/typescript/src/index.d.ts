// The client's types. Request and answer shapes come from the service's
// OpenAPI document (./schema.d.ts, generated: `npm run generate`).
import type { components, operations } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

/** Every named schema of the document: `Schemas["LiquidationQuote"]`, ... */
export type Schemas = components["schemas"];
/** Base58 public key (32 bytes). */
export type Pubkey = Schemas["Pubkey"];
/** The view a read answers from (design §15). */
export type Commitment = "confirmed" | "processed";
/** The price a view values pools at (docs: design §17). */
export type Oracle = "pool" | "feed";

/** The query of an operation, as the document declares it. */
type QueryOf<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
/** What a read takes beyond its path: its query, without what the client sets itself. */
type ReadQuery<Op extends keyof operations> = Omit<QueryOf<Op>, "wait_ms">;

export interface RequestOptions {
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

export interface ClientOptions {
  /** Another fetch: a test's, a proxy's. Default: the global one. */
  fetch?: typeof fetch;
  /** The view of every read that has one, unless a call names its own. */
  commitment?: Commitment | null;
  /** The price of every read that has one, unless a call names its own. */
  oracle?: Oracle | null;
  /** Sent with every request. */
  headers?: Record<string, string>;
}

/** Signs the canonical message: a keypair, a Wallet-Standard account, an adapter. */
export interface Signer {
  /** Base58. */
  publicKey: string;
  signMessage(message: Uint8Array): Promise<Uint8Array>;
}

/** A signed request's three credentials. */
export interface Signed {
  actor: string;
  nonce: string;
  signature: string;
}

/** The routes that answer with an ETag and hold long polls. */
export interface Watchable {
  pools: { params: Record<string, never>; body: Schemas["PoolsResponse"] };
  unhealthy: { params: ReadQuery<"unhealthy">; body: Schemas["UnhealthyResponse"] };
  liquidations: { params: ReadQuery<"liquidations">; body: Schemas["LiquidationsResponse"] };
  atRisk: { params: ReadQuery<"at_risk">; body: Schemas["AtRiskResponse"] };
  positions: { params: ReadQuery<"list_positions"> & { user: Pubkey }; body: Schemas["PositionsResponse"] };
  detail: { params: ReadQuery<"detail"> & { user: Pubkey }; body: Schemas["DetailResponse"] };
}

export type Polled<T> = { changed: true; etag: string; body: T } | { changed: false; etag: string | null };

export interface PollOptions {
  /** The ETag held: an unchanged answer is `{changed: false}`. */
  etag?: string | null;
  /** Hold up to this long (at most 30000) for a change. */
  waitMs?: number;
  signal?: AbortSignal;
}

/** The `data` of every candidate event (the stream's frames are not in the
 *  document: it describes JSON answers, the stream is text/event-stream). */
export interface Candidate {
  owner: Pubkey;
  account_health_factor_wad: Schemas["Wad"];
  positions: Schemas["UnhealthyRow"][];
  /** The owner's best quote; null when no pair qualifies, and on a stop. */
  liquidation: Schemas["LiquidationQuote"] | null;
  /** The largest context slot among the owner's rows and pools. */
  slot: number;
  commitment: Commitment;
  oracle: Oracle;
  /** With `oracle: "feed"`: the owner's pools to crank (UpdateOraclePrice
   *  for each, then Liquidate, in one transaction), sorted. */
  crank?: Pubkey[];
  /** When the service published the event (Unix milliseconds). */
  published_at_ms: number;
  /** True on processed-stream events that undo writes that left the best chain. */
  rolled_back?: true;
}

/** An event that carries an owner. */
export type CandidateEvent = { id: string; event: "candidate_start" | "candidate_update" | "candidate_stop"; data: Candidate };

/** One event of the liquidation feed. */
export type FeedEvent =
  | CandidateEvent
  /** The service could not resume from the id given: the snapshot follows. */
  | { id: string | null; event: "reset"; data: { reason: string } }
  /** This client read too slowly; the feed resumes (or resets) by itself. */
  | { id: string | null; event: "resync"; data: { reason: string } };

/** The event names that carry an owner. */
export const CANDIDATE_EVENTS: readonly CandidateEvent["event"][];
/** True for a `candidate_*` event (its data has an owner); false for `reset`
 *  and `resync`, whose data is only a reason. */
export function isCandidate(event: FeedEvent): event is CandidateEvent;

export class Feed implements AsyncIterable<FeedEvent> {
  /** The id of the last frame read: resume from here, here or elsewhere. */
  readonly lastEventId: string | null;
  /** Connections made, and attempts refused or failed. */
  readonly connects: number;
  readonly refused: number;
  [Symbol.asyncIterator](): AsyncIterator<FeedEvent>;
}

export interface StreamOptions {
  commitment?: Commitment;
  oracle?: Oracle;
  /** Resume after this event (another process's `feed.lastEventId`). */
  lastEventId?: string | null;
  /** Ends the iteration. */
  signal?: AbortSignal;
  /** A connection this long without a byte is taken as dead (default 5000). */
  silenceMs?: number;
  /** Told before each reconnect: where it resumes, and the failures in a row. */
  onReconnect?: (state: { lastEventId: string | null; failures: number }) => void;
}

export class LendexClient {
  constructor(baseUrl: string, options?: ClientOptions);
  readonly baseUrl: string;
  commitment: Commitment | null;
  oracle: Oracle | null;
  /** Any request: the parsed JSON answer, or a LendexError or TransportError. */
  request<T = unknown>(
    method: string,
    path: string,
    options?: RequestOptions & { query?: Record<string, string | number | boolean | null | undefined>; body?: unknown },
  ): Promise<T>;

  health(options?: RequestOptions): Promise<Schemas["HealthResponse"]>;
  pools(options?: RequestOptions): Promise<Schemas["PoolsResponse"]>;
  poolStatus(options?: RequestOptions): Promise<Schemas["PoolStatusResponse"]>;
  unregisteredPools(options?: RequestOptions): Promise<Schemas["UnregisteredPoolsResponse"]>;
  poolOnChain(address: Pubkey, options?: RequestOptions): Promise<Schemas["PoolOnChain"]>;
  poolPrices(pool: Pubkey, query?: QueryOf<"prices">, options?: RequestOptions): Promise<Schemas["PricesResponse"]>;
  syncPool(poolAddress: Pubkey, body?: { symbol?: string }, options?: RequestOptions): Promise<Schemas["SyncPoolResponse"]>;

  positions(user: Pubkey, query?: ReadQuery<"list_positions">, options?: RequestOptions): Promise<Schemas["PositionsResponse"]>;
  detail(user: Pubkey, query?: ReadQuery<"detail">, options?: RequestOptions): Promise<Schemas["DetailResponse"]>;
  /** What the index knows an address as: a pool, a position (with its pool and owner), a wallet, or unknown. */
  address(address: Pubkey, options?: RequestOptions): Promise<Schemas["AddressResponse"]>;
  ownerHistory(user: Pubkey, query?: QueryOf<"owner_history">, options?: RequestOptions): Promise<Schemas["OwnerHistoryResponse"]>;
  syncPosition(poolAddress: Pubkey, user: Pubkey, options?: RequestOptions): Promise<Schemas["SyncPositionResponse"]>;
  unhealthy(query?: ReadQuery<"unhealthy">, options?: RequestOptions): Promise<Schemas["UnhealthyResponse"]>;
  liquidations(query?: ReadQuery<"liquidations">, options?: RequestOptions): Promise<Schemas["LiquidationsResponse"]>;
  atRisk(query?: ReadQuery<"at_risk">, options?: RequestOptions): Promise<Schemas["AtRiskResponse"]>;

  historyEvents(query?: QueryOf<"events">, options?: RequestOptions): Promise<Schemas["HistoryEventsResponse"]>;
  historyMarket(query?: QueryOf<"market">, options?: RequestOptions): Promise<Schemas["MarketHistoryResponse"]>;
  /** `[[pool, bps], ...]` or the `POOL:BPS,...` text. */
  riskShock(shocks: Array<[Pubkey, number]> | string, query?: Omit<QueryOf<"shock">, "shock">, options?: RequestOptions): Promise<Schemas["ShockResponse"]>;
  riskCurve(pool: Pubkey, query?: Omit<QueryOf<"curve">, "pool">, options?: RequestOptions): Promise<Schemas["CurveResponse"]>;
  transactions(query?: QueryOf<"list_transactions">, options?: RequestOptions): Promise<Schemas["TransactionsResponse"]>;
  recordTransaction(transaction: Schemas["RecordTransactionRequest"], options?: RequestOptions): Promise<Schemas["RecordTransactionResponse"]>;

  pollOnce<R extends keyof Watchable>(route: R, params: Watchable[R]["params"], options?: PollOptions): Promise<Polled<Watchable[R]["body"]>>;
  watch<R extends keyof Watchable>(
    route: R,
    params: Watchable[R]["params"],
    options?: { waitMs?: number; signal?: AbortSignal },
  ): AsyncIterableIterator<{ etag: string; body: Watchable[R]["body"] }>;
  unhealthyStream(options?: StreamOptions): Feed;

  me(pubkey: Pubkey, options?: RequestOptions): Promise<Schemas["MeResponse"]>;
  allowlist(options?: RequestOptions): Promise<Schemas["AllowlistResponse"]>;
  audit(query?: Omit<QueryOf<"audit">, "x-actor" | "x-nonce" | "x-signature">, options?: RequestOptions & { signer?: Signer }): Promise<Schemas["AuditResponse"]>;
  nonce(pubkey: Pubkey, action: string, options?: RequestOptions): Promise<Schemas["NonceResponse"]>;
  sign(signer: Signer, action: string): Promise<Signed>;
  addAdmin(signer: Signer, pubkey: Pubkey, role: Schemas["Role"], options?: { label?: string }): Promise<Schemas["OkResponse"]>;
  revokeAdmin(signer: Signer, pubkey: Pubkey): Promise<Schemas["OkResponse"]>;
  registerPool(signer: Signer, poolAddress: Pubkey, options?: { initSignature?: string; symbol?: string }): Promise<Schemas["InitPoolResponse"]>;
  createWebhook(signer: Signer, webhook: { url: string; belowWad?: string; owners?: Pubkey[]; pools?: Pubkey[]; description?: string }): Promise<Schemas["CreatedWebhook"]>;
  webhooks(signer: Signer, options?: RequestOptions): Promise<Schemas["WebhooksResponse"]>;
  webhookDeliveries(signer: Signer, id: string, query?: { limit?: number }, options?: RequestOptions): Promise<Schemas["DeliveriesResponse"]>;
  deleteWebhook(signer: Signer, id: string): Promise<Schemas["Webhook"]>;
  redeliverWebhook(signer: Signer, id: string, deliveryId: string): Promise<Schemas["AcceptedResponse"]>;
}

/** The service answered with one of the spec's error bodies. */
export class LendexError extends Error {
  readonly status: number;
  /** The body's `error`: "invalid", "rate limited", "nonce invalid or expired", ... */
  readonly error: string;
  readonly retryAfter: number | null;
  /** The body's `field`: which field an `invalid` faults, where the body has many (a webhook's). */
  readonly field: string | null;
  readonly transient: boolean;
}
/** The service could not be reached, or its answer was cut short. */
export class TransportError extends Error {
  readonly transient: true;
}
/** Refused here, before anything was signed or sent. */
export class RefusedError extends Error {
  readonly transient: false;
}

export const SILENCE_MS: number;
export const MAX_WAIT_MS: number;
export const WATCHABLE: { readonly [R in keyof Watchable]: (params: Watchable[R]["params"]) => string };
export class SseParser {
  push(chunk: Uint8Array | string): Array<{ id: string | null; event: string | null; data: string | null }>;
}
export function backoffMs(failures: number, random?: () => number): number;

export const MESSAGE_HEADER: string;
export function canonicalMessage(action: string, nonce: string): string;
export const actions: {
  addAdmin(pubkey: Pubkey, role: Schemas["Role"]): string;
  revokeAdmin(pubkey: Pubkey): string;
  initPool(tokenMint: Pubkey): string;
  readAudit(): string;
  createWebhook(): string;
  readWebhooks(): string;
  deleteWebhook(id: string): string;
  redeliverWebhook(id: string, deliveryId: string): string;
};
export function keypairSigner(secretKey: Uint8Array | number[]): Signer;
/** A Wallet-Standard wallet and account (`solana:signMessage`), or an
 *  adapter-style wallet with `publicKey` and `signMessage`. */
export function walletSigner(
  wallet:
    | { features: Record<string, unknown> }
    | { publicKey: string | { toBase58(): string }; signMessage(message: Uint8Array): Promise<Uint8Array> },
  account?: { address: string },
): Signer;

export const WAD: bigint;
export function formatWad(text: string, places?: number): string;
