import type { Config } from "../config.ts";
import { ensureIdentity } from "../identity.ts";
import { type JobRun, runJob } from "../job/runner.ts";
import type { RoundBehaviour } from "../round/services/behaviour.ts";
import { startNode } from "../node.ts";
import { isCid } from "../../protocol/content/cid.ts";

/**
 * `zoo-node --join`: runs a node until SIGINT or SIGTERM, then shuts it
 * down in order, the embedded chain included, even when the signal comes
 * while the job is still starting. A second signal exits at once.
 * `behaviour` is HONEST but in the attack suite, which starts real peers
 * with one part swapped.
 */
export async function join(
  config: Config,
  behaviour?: RoundBehaviour,
): Promise<number> {
  // A node keeps serving its peers when a background task fails in a way
  // nothing handled: the failure is logged as the bug it is, not fatal.
  globalThis.addEventListener("unhandledrejection", (e) => {
    e.preventDefault();
    // The stack, as this is a bug to find (an Error's stack never holds
    // keys: it is the message and the call sites).
    const reason = e.reason instanceof Error
      ? e.reason.stack ?? e.reason.message
      : e.reason;
    console.error(`zoo-node: unhandled error in a background task: ${reason}`);
  });
  // Signals are taken from the start: one that comes while the job starts
  // (the embedded chain is up by then) must stop what was started too.
  const stop = new AbortController();
  const { promise: stopped, resolve } = Promise.withResolvers<string>();
  const onSignal = (signal: Deno.Signal) => () => {
    if (stop.signal.aborted) Deno.exit(130);
    stop.abort(new DOMException(signal, "AbortError"));
    resolve(signal);
  };
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  const handlers = signals.map((s) => [s, onSignal(s)] as const);
  for (const [s, h] of handlers) Deno.addSignalListener(s, h);
  const removeHandlers = () => {
    for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  };

  await Deno.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const { identity, created } = await ensureIdentity(config.dataDir);
  if (created) console.log(`created keys in ${config.dataDir}/keys`);
  const node = await startNode(config, identity);
  console.log(`zoo-node ${identity.peerId} started for job "${config.job}"`);
  for (const addr of node.info.addresses) console.log(`  listening ${addr}`);
  console.log(`  http      ${node.info.http ?? "off"}`);

  let run: JobRun | null = null;
  // A job given as a CID is a training job; any other name is only a topic.
  if (isCid(config.job) && !stop.signal.aborted) {
    try {
      run = await runJob(config, node, identity, config.job, {
        behaviour,
        signal: stop.signal,
      });
    } catch (err) {
      if (!stop.signal.aborted) {
        await node.stop();
        removeHandlers();
        throw err;
      }
    }
  }

  node.host.addEventListener("peer:connect", (evt) => {
    console.log(`peer connected    ${evt.detail.toString()}`);
  });
  node.host.addEventListener("peer:disconnect", (evt) => {
    console.log(`peer disconnected ${evt.detail.toString()}`);
  });

  const signal = await stopped;
  console.log(`${signal}: shutting down`);
  await run?.stop();
  await node.stop();
  removeHandlers();
  return 0;
}
