import { cidToString, parseCid } from "../../protocol/content/cid.ts";
import { atomicWriteFile } from "../store/atomic_write.ts";
import type { FetchReport } from "../p2p/blob_pull.ts";
import { Blockstore } from "../store/blockstore.ts";
import type { Config } from "../config.ts";
import { blockstoreDir, readRuntimeInfo } from "../node.ts";
import { callRpc } from "../http/rpc_client.ts";
import { readRpcToken } from "../http/rpc_token.ts";
import { UsageError } from "./parse.ts";

/** `zoo-node blob put <file>`: stores a file by content, prints its CID. */
export async function blobPut(config: Config, file: string): Promise<number> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(file);
  } catch {
    throw new UsageError(`cannot read ${JSON.stringify(file)}: no such file`);
  }
  if (!info.isFile || info.size > config.maxBlobBytes) {
    throw new UsageError(
      `${file} must be a file of at most ${config.maxBlobBytes} bytes (maxBlobBytes): current size is ${info.size}`,
    );
  }
  const store = await Blockstore.open(blockstoreDir(config.dataDir));
  const cid = await store.put(await Deno.readFile(file));
  console.log(cidToString(cid));
  return 0;
}

/**
 * `zoo-node blob get <cid>`: has the running node fetch the blob (verified
 * against the CID), then optionally copies it out of the store.
 */
export async function blobGet(
  config: Config,
  opts: { cid: string; out: string | null; from: string[] },
): Promise<number> {
  let cid;
  try {
    cid = parseCid(opts.cid);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const info = await readRuntimeInfo(config.dataDir);
  if (!info?.http) {
    console.error(
      `zoo-node: no node with HTTP is running on ${config.dataDir}: start one with "zoo-node --join"`,
    );
    return 1;
  }
  const started = performance.now();
  const token = await readRpcToken(config.dataDir) ?? undefined;
  const report = await callRpc<FetchReport>(info.http, "zoo_fetchBlob", {
    cid: opts.cid,
    ...(opts.from.length > 0 ? { providers: opts.from } : {}),
  }, { token });
  const seconds = (performance.now() - started) / 1000;
  if (report.local) {
    console.log(`${report.cid}: already stored (${report.size} bytes)`);
  } else {
    const mbps = report.size / 1e6 / seconds;
    console.log(
      `${report.cid}: ${report.size} bytes in ${seconds.toFixed(2)} s (${
        mbps.toFixed(1)
      } MB/s), verified`,
    );
    for (const [peer, bytes] of Object.entries(report.bytesFrom)) {
      console.log(`  ${bytes} bytes from ${peer}`);
    }
    for (const peer of report.bad) {
      console.log(`  bad bytes from ${peer}: avoided`);
    }
  }
  if (opts.out) {
    const store = await Blockstore.open(blockstoreDir(config.dataDir));
    await atomicWriteFile(opts.out, await store.get(cid));
    console.log(`wrote ${opts.out}`);
  }
  return 0;
}
