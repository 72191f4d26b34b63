/**
 * Waits that end early when a round driver stops: the rejection carries
 * the abort signal's reason, and nothing is left behind (no timer, no
 * listener).
 *
 * @module
 */

/** Resolves after `ms`, or rejects with the signal's reason on abort. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (!signal) return new Promise((resolve) => setTimeout(resolve, ms));
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", abort);
      resolve();
    }, ms);
    signal.addEventListener("abort", abort, { once: true });
  });
}

/** Resolves with `until`, or rejects with the signal's reason on abort. */
export function untilOrAborted<T>(
  until: Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  if (!signal) return until;
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    until.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", onAbort)
    );
  });
}
