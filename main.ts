/**
 * zoo-node: one program that is both worker and coordinator candidate of a
 * decentralized training network. This file only composes: parsing, the
 * commands and the node live in `node/`.
 *
 * @module
 */
import { runCli } from "./node/cli/run.ts";

if (import.meta.main) {
  // libp2p leaves a BroadcastChannel open after stop(), which Deno cannot
  // unref, so the process exits explicitly once a command is done.
  Deno.exit(await runCli(Deno.args));
}
