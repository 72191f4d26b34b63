/**
 * `zoo-node import --car FILE`: the blocks of a CAR (one written by
 * `zoo-node export --car`, or by `ipfs dag export` of raw blocks) into the
 * data dir's blockstore, each verified against its CID first.
 *
 * @module
 */
import { cidToString } from "../../protocol/content/cid.ts";
import type { Config, PartialConfig } from "../config.ts";
import { blockstoreDir } from "../node.ts";
import { Blockstore } from "../store/blockstore.ts";
import { CHUNK_SIZE } from "../store/block_storage.ts";
import { readCar } from "../store/car.ts";
import { UsageError } from "./flags.ts";

/** `zoo-node import ...` as parsed. */
export interface ImportCommand {
  kind: "import";
  /** The CAR file to read. */
  car: string;
  flags: PartialConfig;
}

/**
 * Reads the CAR as a stream, so a large one is never held whole, and
 * stores each block as soon as it is verified, the way `blob put` does:
 * an atomic put into the store, safe while a node runs on it. A bad block
 * stops the import before it is stored; the good blocks before it stay,
 * since each is valid under its own CID. Prints the roots, then a count.
 */
export async function importCar(
  config: Config,
  cmd: ImportCommand,
): Promise<number> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(cmd.car, { read: true });
  } catch (err) {
    const why = err instanceof Deno.errors.NotFound
      ? "no such file"
      : (err as Error).message;
    throw new UsageError(`cannot read ${JSON.stringify(cmd.car)}: ${why}`);
  }
  using _ = file;
  const car = await readCar(readChunks(file), {
    maxBlockBytes: config.maxBlobBytes,
  });
  const store = await Blockstore.open(blockstoreDir(config.dataDir));
  let blocks = 0;
  let bytes = 0;
  for await (const block of car.blocks) {
    await store.put(block.bytes);
    blocks++;
    bytes += block.bytes.length;
  }
  for (const root of car.roots) console.log(cidToString(root));
  console.log(
    `imported ${cmd.car}: ${blocks} block${
      blocks === 1 ? "" : "s"
    } (${bytes} bytes), verified`,
  );
  return 0;
}

/** The file from its current offset, in fresh chunks the reader may keep. */
async function* readChunks(file: Deno.FsFile): AsyncGenerator<Uint8Array> {
  for (;;) {
    const chunk = new Uint8Array(CHUNK_SIZE);
    const n = await file.read(chunk);
    if (n === null) return;
    yield chunk.subarray(0, n);
  }
}
