/**
 * One account's transactions leave one at a time. A node sends from
 * several tasks at once (a round's commit, slashing evidence, a lost-work
 * declaration), and a wallet picks each transaction's nonce from the
 * account's pending count: two sends that overlap take the same nonce and
 * all but one fail ("nonce too low"), evidence lost for no fault of its
 * own. Only the send is in turn; receipts are awaited side by side.
 *
 * @module
 */
import type { ChainClient } from "./client.ts";

/** The last send queued per account and endpoint. */
const tails = new Map<string, Promise<unknown>>();

/**
 * Runs `send` once every send queued before it from `client`'s account
 * (to the same endpoint, in this process) has settled; a send that fails
 * rejects its own promise only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { inTurn } from "./send_turns.ts";
 * const client = { rpcUrl: "http://127.0.0.1:8545", account: { address: "0x01" } };
 * const order: number[] = [];
 * const slow = inTurn(client, async () => {
 *   await new Promise((r) => setTimeout(r, 10));
 *   order.push(1);
 * });
 * await Promise.all([slow, inTurn(client, async () => order.push(2))]);
 * assert.deepEqual(order, [1, 2]);
 * ```
 */
export function inTurn<T>(
  client: Pick<ChainClient, "rpcUrl"> & { account: { address: string } },
  send: () => Promise<T>,
): Promise<T> {
  const key = `${client.rpcUrl} ${client.account.address.toLowerCase()}`;
  const run = (tails.get(key) ?? Promise.resolve()).then(send);
  const tail = run.catch(() => {});
  tails.set(key, tail);
  // The map holds only accounts with a send in flight.
  tail.then(() => {
    if (tails.get(key) === tail) tails.delete(key);
  });
  return run;
}
