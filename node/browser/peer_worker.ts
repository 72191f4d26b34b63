/// <reference lib="webworker" />
/**
 * The worker the page starts: takes one `start` message, runs the peer and
 * posts its reports back (see `messages.ts`). The browser build bundles it
 * with the kernels packed in (`build.ts`).
 *
 * @module
 */
import type { PeerReport, StartPeer } from "./messages.ts";
import { type BrowserPeer, startBrowserPeer } from "./peer.ts";

/** Answers the page's `start` on `scope`, the worker's global scope. */
export function servePeerWorker(scope: DedicatedWorkerGlobalScope): void {
  const report = (r: PeerReport) => scope.postMessage(r);
  // A peer keeps serving when a background task fails in a way nothing
  // handled, as a Deno node does: the failure is shown, not fatal.
  scope.addEventListener("unhandledrejection", (e) => {
    e.preventDefault();
    report({
      type: "log",
      line: `unhandled error in a background task: ${
        e.reason instanceof Error ? e.reason.message : String(e.reason)
      }`,
    });
  });
  let peer: Promise<BrowserPeer> | null = null;
  scope.addEventListener("message", (e: MessageEvent<StartPeer>) => {
    if (e.data?.type !== "start" || peer) return;
    peer = startBrowserPeer(e.data.config, e.data.keys, report);
    peer.catch((err) =>
      report({
        type: "error",
        message: err instanceof Error ? err.message : String(err),
      })
    );
  });
}
