/**
 * Metadata of a round checkpoint in the blockstore, read from the
 * safetensors header alone: a big checkpoint is not loaded to say which
 * job and round it belongs to.
 *
 * @module
 */
import { SafetensorsError } from "../../../kernels/safetensors.ts";
import { parseCid } from "../../../protocol/content/cid.ts";
import { ROUND_CHECKPOINT_FORMAT } from "../../../protocol/round/round_checkpoint.ts";
import type { BlockStorage } from "../../store/block_storage.ts";
import type { RoundRecord } from "./ledger.ts";

/** Metadata of a round checkpoint this node holds (`zoo_checkpoint`). */
export interface CheckpointInfo {
  cid: string;
  /** Size of the safetensors file, bytes. */
  size: number;
  format: string;
  job: string;
  /** The round this checkpoint starts. */
  round: number;
  /** CID of the previous round's checkpoint; null for the genesis. */
  parent: string | null;
  /** The model config, as recorded in the file. */
  config: unknown;
  /** The round whose commit produced it, as this node recorded it. */
  committed: RoundRecord | null;
}

/** Largest checkpoint header read (a round checkpoint's is a few KiB). */
export const MAX_CHECKPOINT_HEADER_BYTES = 1024 * 1024;

/**
 * The metadata of checkpoint `cid`, or null when the store does not hold
 * it; `records` name the round whose commit produced it. Throws a
 * `TypeError` for a bad CID and a `SafetensorsError` for a blob that is not
 * a round checkpoint.
 */
export async function checkpointInfo(
  store: BlockStorage,
  cid: string,
  records: readonly RoundRecord[],
): Promise<CheckpointInfo | null> {
  const parsed = parseCid(cid);
  const size = await store.size(parsed);
  if (size === null) return null;
  const fail = (why: string): never => {
    throw new SafetensorsError(
      `Cannot read blob ${cid} as a round checkpoint as ${why}`,
    );
  };
  if (size < 8) fail(`it has only ${size} bytes`);
  const view = new DataView((await read(store, cid, 0, 8)).buffer);
  const n = Number(view.getBigUint64(0, true));
  if (n > MAX_CHECKPOINT_HEADER_BYTES || 8 + n > size) {
    fail(`its header length ${n} exceeds the file or the limit`);
  }
  let meta: Record<string, unknown> = {};
  try {
    const header = JSON.parse(
      new TextDecoder().decode(await read(store, cid, 8, n)),
    );
    meta = header?.__metadata__ ?? {};
  } catch {
    fail("its header is not JSON");
  }
  if (meta.format !== ROUND_CHECKPOINT_FORMAT) {
    fail(`its format is ${JSON.stringify(meta.format ?? null)}`);
  }
  let config: unknown = null;
  try {
    config = JSON.parse(String(meta.config));
  } catch {
    fail("its config is not JSON");
  }
  return {
    cid,
    size,
    format: ROUND_CHECKPOINT_FORMAT,
    job: String(meta.job),
    round: Number(meta.round),
    parent: meta.parent ? String(meta.parent) : null,
    config,
    committed: records.find((r) => r.checkpoint === cid) ?? null,
  };
}

async function read(
  store: BlockStorage,
  cid: string,
  offset: number,
  length: number,
): Promise<Uint8Array> {
  const range = await store.readRange(parseCid(cid), offset, length);
  const out = new Uint8Array(length);
  let at = 0;
  for await (const chunk of range.chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
