/**
 * Finding a checkpoint the user names: a file, or a CID held in the data
 * dir's blockstore or fetched (verified) by the node running on it.
 *
 * @module
 */
import { type CID, parseCid } from "../../protocol/content/cid.ts";
import { roundCheckpointCid } from "../../protocol/round/round_checkpoint.ts";
import type { Config } from "../config.ts";
import type { FetchReport } from "../p2p/blob_pull.ts";
import { callRpc } from "../http/rpc_client.ts";
import { readRpcToken } from "../http/rpc_token.ts";
import { blockstoreDir, readRuntimeInfo } from "../node.ts";
import { Blockstore } from "../store/blockstore.ts";
import { NodeError } from "../errors.ts";
import { UsageError } from "./flags.ts";

/**
 * The bytes of checkpoint `ref`: the file at that path, else the block
 * with that CID, from the blockstore or else fetched from peers through
 * the running node.
 */
export async function readCheckpointRef(
  config: Config,
  ref: string,
): Promise<Uint8Array> {
  return (await readCheckpointBlock(config, ref)).bytes;
}

/**
 * Checkpoint `ref` as a block, found as {@linkcode readCheckpointRef} finds
 * it: a file gets the CID of its bytes as a checkpoint is named (a UnixFS
 * file's root), a CID is kept as given.
 */
export async function readCheckpointBlock(
  config: Config,
  ref: string,
): Promise<{ cid: CID; bytes: Uint8Array }> {
  const file = await Deno.stat(ref).catch(() => null);
  if (file?.isFile) {
    const bytes = await Deno.readFile(ref);
    return { cid: await roundCheckpointCid(bytes), bytes };
  }
  let cid: CID;
  try {
    cid = parseCid(ref);
  } catch {
    throw new UsageError(
      `cannot read checkpoint ${JSON.stringify(ref)}: no such file, nor a CID`,
    );
  }
  const store = await Blockstore.open(blockstoreDir(config.dataDir));
  if (await store.has(cid)) return { cid, bytes: await store.get(cid) };
  const info = await readRuntimeInfo(config.dataDir);
  if (!info?.http) {
    throw new NodeError(
      `checkpoint ${ref} is not stored in ${config.dataDir} and no node with HTTP runs there to fetch it: start one with "zoo-node --join"`,
    );
  }
  const token = await readRpcToken(config.dataDir) ?? undefined;
  await callRpc<FetchReport>(info.http, "zoo_fetchBlob", { cid: ref }, {
    token,
  });
  return { cid, bytes: await store.get(cid) };
}
