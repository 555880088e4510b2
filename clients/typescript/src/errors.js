// What a call can end in besides its answer.

/** The service answered with one of the spec's error bodies: `error` is its
 *  short reason ("invalid", "rate limited", "nonce invalid or expired", ...). */
export class LendexError extends Error {
  constructor(status, error, retryAfter = null, field = null) {
    super(`${status}: ${error}` + (field ? ` (${field})` : ""));
    this.name = "LendexError";
    this.status = status;
    this.error = error;
    /** Seconds to wait, when the service said (429, 503). */
    this.retryAfter = retryAfter;
    /** The field at fault, for an `invalid` of a body with many (a webhook's). */
    this.field = field;
  }

  /** Worth trying again later: the service away, busy, draining or limiting. */
  get transient() {
    return [429, 502, 503, 504].includes(this.status);
  }
}

/** The service could not be reached, or its answer was cut short. */
export class TransportError extends Error {
  constructor(message, cause) {
    super(`unreachable: ${message}`, { cause });
    this.name = "TransportError";
  }

  get transient() {
    return true;
  }
}

/** Refused here, before anything was signed or sent: a server asking to sign
 *  another message than the canonical one, a key that is not one. */
export class RefusedError extends Error {
  constructor(message) {
    super(`refused: ${message}`);
    this.name = "RefusedError";
  }

  get transient() {
    return false;
  }
}

/** The error a non-2xx answer stands for. */
export async function errorOf(response) {
  const text = await response.text().catch(() => "");
  let error = text || response.statusText;
  let field = null;
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === "string") {
      error = body.error;
      if (typeof body.field === "string") field = body.field;
    }
  } catch {
    // Not the spec's body (a proxy's page): its text is the reason.
  }
  const after = Number.parseInt(response.headers.get("retry-after") ?? "", 10);
  return new LendexError(response.status, error, Number.isFinite(after) ? after : null, field);
}

export function isTransient(error) {
  return Boolean(error && error.transient);
}
