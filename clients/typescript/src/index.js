// @lendex/client: Lendex from Node 18+ or a browser. See README.md.
export { LendexClient } from "./client.js";
export { LendexError, RefusedError, TransportError } from "./errors.js";
export { CANDIDATE_EVENTS, Feed, SILENCE_MS, isCandidate } from "./stream.js";
export { MAX_WAIT_MS, WATCHABLE } from "./polls.js";
export { SseParser } from "./sse.js";
export { backoffMs } from "./backoff.js";
export { MESSAGE_HEADER, actions, canonicalMessage, keypairSigner, walletSigner } from "./signing.js";
export { formatWad, WAD } from "./wad.js";
