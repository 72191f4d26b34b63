/**
 * `zoo-node import --car FILE`: the files and blocks of a CAR (one written
 * by `zoo-node export --car`, or by `ipfs dag export` of a file added as
 * zoo-node lays files out, or of raw blocks) into the data dir's
 * blockstore, each block verified against its CID first.
 *
 * @module
 */
import { cidToString } from "../../protocol/content/cid.ts";
import type { Config, PartialConfig } from "../config.ts";
import { blockstoreDir } from "../node.ts";
import { Blockstore } from "../store/blockstore.ts";
import { CHUNK_SIZE } from "../store/block_storage.ts";
import { filesOfCar, readCar } from "../store/car.ts";
import { DAG_PB_CODEC } from "../../protocol/content/unixfs.ts";
import { UsageError } from "./flags.ts";

/** `zoo-node import ...` as parsed. */
export interface ImportCommand {
  kind: "import";
  /** The CAR file to read. */
  car: string;
  flags: PartialConfig;
}

/**
 * Reads the CAR as a stream, verifying each block as it comes, puts each
 * file together from its leaves, and stores files and the other blocks
 * the way `blob put` does: an atomic put, safe while a node runs on it.
 * A bad block stops the import before anything is stored. Prints the
 * roots, then a count.
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
  const { files, blocks, count } = await filesOfCar(car, config.maxBlobBytes);
  const store = await Blockstore.open(blockstoreDir(config.dataDir));
  let bytes = 0;
  for (const file of files) {
    await store.put(file.bytes, DAG_PB_CODEC);
    bytes += file.bytes.length;
  }
  for (const block of blocks) {
    await store.put(block.bytes, block.cid.code);
    bytes += block.bytes.length;
  }
  for (const root of car.roots) console.log(cidToString(root));
  console.log(
    `imported ${cmd.car}: ${count} block${
      count === 1 ? "" : "s"
    }, ${files.length} file${
      files.length === 1 ? "" : "s"
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
