// Waits between reconnects: 100 ms doubling to 5 s, each between half and all
// of it, so followers cut together do not come back together.

export const FIRST_BACKOFF_MS = 100;
export const MAX_BACKOFF_MS = 5000;

/** The pause after `failures` failed attempts in a row (1, 2, ...). */
export function backoffMs(failures, random = Math.random) {
  const full = Math.min(FIRST_BACKOFF_MS * 2 ** Math.min(Math.max(failures - 1, 0), 16), MAX_BACKOFF_MS);
  return full / 2 + random() * (full / 2);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
