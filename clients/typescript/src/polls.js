// Conditional GETs and long polls (docs/liquidators.md): send the ETag held
// and `wait_ms`, and the service holds the request until the answer changes
// (200, a new body and tag) or the wait ends (304).
import { backoffMs, sleep } from "./backoff.js";
import { TransportError, errorOf, isTransient } from "./errors.js";

/** The six routes that answer with an ETag and hold long polls. */
export const WATCHABLE = {
  pools: () => "/api/pools",
  unhealthy: () => "/api/positions/unhealthy",
  liquidations: () => "/api/liquidations",
  atRisk: () => "/api/positions/at-risk",
  positions: (params) => `/api/positions/${encodeURIComponent(params.user)}`,
  detail: (params) => `/api/positions/${encodeURIComponent(params.user)}/detail`,
};

/** The longest hold the service grants. */
export const MAX_WAIT_MS = 30000;

/** One conditional GET: {changed: true, etag, body} or {changed: false, etag}. */
export async function pollOnce(client, route, params = {}, { etag = null, waitMs = 0, signal } = {}) {
  const path = pathOf(route, params);
  const query = { ...params, user: undefined };
  if (waitMs > 0) query.wait_ms = Math.min(waitMs, MAX_WAIT_MS);
  const headers = etag ? { "if-none-match": etag } : {};
  let response;
  try {
    response = await client.fetch(client.url(path, client.withView(route, query)), { headers, signal });
  } catch (cause) {
    if (signal?.aborted) throw cause;
    throw new TransportError(cause?.message ?? String(cause), cause);
  }
  if (response.status === 304) {
    return { changed: false, etag: response.headers.get("etag") ?? etag };
  }
  if (!response.ok) throw await errorOf(response);
  return { changed: true, etag: response.headers.get("etag"), body: await response.json() };
}

/**
 * Every new answer of a route: the current one first, then each change as
 * the service reports it, by long polls of `waitMs`. Backs off with jitter
 * while the service is away or busy; ends when `signal` aborts.
 */
export async function* watch(client, route, params = {}, { waitMs = 25000, signal } = {}) {
  let etag = null;
  let failures = 0;
  while (!signal?.aborted) {
    let answer;
    try {
      answer = await pollOnce(client, route, params, { etag, waitMs: etag ? waitMs : 0, signal });
    } catch (error) {
      if (signal?.aborted) return;
      if (!isTransient(error)) throw error;
      failures += 1;
      try {
        await sleep(backoffMs(failures), signal);
      } catch {
        return;
      }
      continue;
    }
    failures = 0;
    etag = answer.etag;
    if (answer.changed) yield { etag: answer.etag, body: answer.body };
  }
}

function pathOf(route, params) {
  const build = WATCHABLE[route];
  if (!build) throw new TypeError(`${route} is not a route that long-polls`);
  return build(params);
}
