// The unhealthy stream, followed (docs/liquidators.md): it reconnects by
// itself with the id of the last frame it read (Last-Event-ID), so a cut, a
// restart or a move to another replica costs no event; it backs off with
// jitter while the service is away or busy, takes a connection silent past
// its keep-alives as dead, and hands over every event, `reset` included (the
// service could not resume: a new snapshot follows).
import { backoffMs, sleep } from "./backoff.js";
import { TransportError, errorOf, isTransient } from "./errors.js";
import { SseParser } from "./sse.js";

/** The service sends a keep-alive every second: this long without a byte and
 *  the connection is taken as dead. */
export const SILENCE_MS = 5000;

export class Feed {
  #client;
  #path;
  #signal;
  #silenceMs;
  #lastEventId;
  #onReconnect;
  connects = 0;
  refused = 0;

  constructor(client, path, { lastEventId = null, signal, silenceMs = SILENCE_MS, onReconnect } = {}) {
    this.#client = client;
    this.#path = path;
    this.#signal = signal;
    this.#silenceMs = silenceMs;
    this.#lastEventId = lastEventId;
    this.#onReconnect = onReconnect;
  }

  /** The id of the last frame read: resume from here (in this process or another). */
  get lastEventId() {
    return this.#lastEventId;
  }

  async *[Symbol.asyncIterator]() {
    let failures = 0;
    let attempts = 0;
    while (!this.#signal?.aborted) {
      if (attempts++ > 0) this.#onReconnect?.({ lastEventId: this.#lastEventId, failures });
      if (failures > 0) {
        try {
          await sleep(backoffMs(failures), this.#signal);
        } catch {
          return;
        }
      }
      const connection = new AbortController();
      const stop = () => connection.abort(this.#signal.reason);
      this.#signal?.addEventListener("abort", stop, { once: true });
      try {
        const response = await this.#connect(connection.signal);
        if (response === null) {
          failures += 1;
          this.refused += 1;
          continue;
        }
        failures = 0;
        this.connects += 1;
        // Its events, until it ends, is cut or falls silent: then resume from
        // the last id. (Inline, not a nested generator: one hop per event.)
        const reader = response.body.getReader();
        const parser = new SseParser();
        for (;;) {
          const chunk = await this.#readWithin(reader);
          if (chunk === null) break;
          for (const frame of parser.push(chunk)) {
            if (frame.id !== null) this.#lastEventId = frame.id;
            if (frame.event === null) continue; // the feed's place alone
            yield { id: frame.id, event: frame.event, data: parseData(frame) };
          }
        }
      } finally {
        this.#signal?.removeEventListener("abort", stop);
        connection.abort();
      }
    }
  }

  /** The next chunk, or null when the connection ended, was cut or stayed
   *  silent past `silenceMs`. */
  async #readWithin(reader) {
    let timer;
    const silent = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), this.#silenceMs);
    });
    try {
      const read = await Promise.race([reader.read(), silent]);
      return read === null || read.done ? null : read.value;
    } catch {
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  /** One attempt: the response, null to try again, or a throw for good. */
  async #connect(signal) {
    const headers = { accept: "text/event-stream" };
    if (this.#lastEventId) headers["last-event-id"] = this.#lastEventId;
    let response;
    try {
      response = await this.#client.fetch(this.#client.url(this.#path), { headers, signal });
    } catch {
      return null; // unreachable (or stopped): the loop decides
    }
    if (response.status === 200) return response;
    const error = await errorOf(response);
    if (isTransient(error)) return null;
    throw error;
  }
}

/** The events that carry an owner (data: a Candidate). */
export const CANDIDATE_EVENTS = Object.freeze(["candidate_start", "candidate_update", "candidate_stop"]);

/** True for a `candidate_*` event; false for the feed's own news, `reset` and
 *  `resync`, whose data is only a reason. */
export function isCandidate(event) {
  return CANDIDATE_EVENTS.includes(event.event);
}

function parseData(frame) {
  if (frame.data === null) return null;
  try {
    return JSON.parse(frame.data);
  } catch {
    throw new TransportError(`a ${frame.event} event that is not JSON`);
  }
}
