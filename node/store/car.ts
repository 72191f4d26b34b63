/**
 * CAR files (Content Addressable aRchives), the form in which IPFS tools
 * move blocks together with their CIDs: `ipfs dag import` / `export`.
 *
 * zoo-node writes CARv1 through `@ipld/car`'s CarWriter and reads CARv1 or
 * CARv2 through its decoder, one block at a time, checking each block's
 * size against a limit before buffering it and its bytes against its CID
 * before handing it on, since a CAR is as untrusted as any peer.
 *
 * Only zoo-node's own kinds of block pass, in both directions: CIDv1,
 * sha2-256, raw (0x55) for a block and its files' leaves, dag-pb (0x70)
 * for their UnixFS nodes ({@linkcode fileCarBlocks}, {@linkcode filesOfCar}).
 * Another codec (dag-cbor, dag-json) would be a DAG zoo-node does not
 * follow, and another hash a CID the blockstore cannot check.
 *
 * No files here: the caller hands in bytes or a stream.
 *
 * @module
 */
import { CarWriter } from "@ipld/car";
import {
  asyncIterableReader,
  type BytesReader,
  bytesReader,
  limitReader,
  readBlockHead,
  readHeader,
} from "@ipld/car/decoder";
import {
  blockCid,
  type CID,
  cidToString,
  RAW_CODEC,
  SHA256_CODE,
  SHA256_LENGTH,
} from "../../protocol/content/cid.ts";
import {
  DAG_PB_CODEC,
  type FileDag,
  fileDagOfNodes,
} from "../../protocol/content/unixfs.ts";
import { NodeError } from "../errors.ts";

/** One block of a CAR: its CID and its bytes. */
export interface CarBlock {
  readonly cid: CID;
  readonly bytes: Uint8Array;
}

/** A CAR read by {@linkcode readCar}: its roots, then its blocks, verified. */
export interface CarContents {
  /** 1 or 2: the CAR format version. */
  readonly version: number;
  /** The root CIDs the header names, in order. */
  readonly roots: readonly CID[];
  /**
   * The blocks in file order, each checked against its CID before it is
   * yielded; throws {@linkcode CarError} at the first bad one, and at the
   * end if a root's block never came (a CAR cut at a block boundary).
   */
  readonly blocks: AsyncIterable<CarBlock>;
}

/** Options of {@linkcode readCar}. */
export interface ReadCarOptions {
  /** Largest block accepted, in bytes (e.g. the config's maxBlobBytes). */
  readonly maxBlockBytes: number;
}

/** A CAR that cannot be written or read: malformed, refused or damaged. */
export class CarError extends NodeError {
  constructor(
    message: string,
    /** 1-based position of the block at fault; null for the header. */
    readonly block: number | null,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "CarError";
  }
}

/** Names of the codecs an IPFS CAR commonly holds, for error messages. */
const CODEC_NAMES: Record<number, string> = {
  0x55: "raw",
  0x70: "dag-pb",
  0x71: "dag-cbor",
  0x0129: "dag-json",
};

/**
 * The CARv1 bytes of `roots` and `blocks`, in that order. Every root and
 * block must be a CIDv1 raw or dag-pb sha2-256 CID, and every block's bytes
 * must hash to its CID, or a {@linkcode CarError} says which.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cidForBytes } from "../../protocol/content/cid.ts";
 * import { readCar, writeCar } from "./car.ts";
 * const bytes = new TextEncoder().encode("weights");
 * const cid = await cidForBytes(bytes);
 * const car = await writeCar([cid], [{ cid, bytes }]);
 * const { roots } = await readCar(car, { maxBlockBytes: 1024 });
 * assert(roots[0].equals(cid));
 * ```
 */
export async function writeCar(
  roots: readonly CID[],
  blocks: Iterable<CarBlock>,
): Promise<Uint8Array> {
  for (const root of roots) {
    assertOurs(root, "Cannot write CAR root", null);
  }
  const list = [...blocks];
  // All checked before the writer starts, so a refusal leaves nothing half
  // written behind.
  for (const [i, block] of list.entries()) await verifyBlock(block, i + 1);
  const { writer, out } = CarWriter.create([...roots]);
  // CarWriter's put() waits until `out` is drained: drain it alongside.
  const bytes = new Response(ReadableStream.from(out)).bytes();
  for (const block of list) await writer.put(block);
  await writer.close();
  return await bytes;
}

/**
 * Reads a CAR from `source` (all its bytes, or a stream of them, which is
 * then read as the blocks are consumed). The header is read and its roots
 * checked at once; the blocks come as {@linkcode CarContents.blocks} is
 * iterated. Anything wrong is a {@linkcode CarError}: not a CAR, a root or
 * block that is not CIDv1 raw or dag-pb sha2-256, a block over
 * `maxBlockBytes`, a block whose bytes do not hash to its CID, a file that
 * ends early.
 */
export async function readCar(
  source: Uint8Array | AsyncIterable<Uint8Array>,
  options: ReadCarOptions,
): Promise<CarContents> {
  const { maxBlockBytes } = options;
  if (!Number.isSafeInteger(maxBlockBytes) || maxBlockBytes < 0) {
    throw new RangeError(
      `Cannot read CAR as maxBlockBytes must be a non-negative integer: current value is ${maxBlockBytes}`,
    );
  }
  let reader = source instanceof Uint8Array
    ? bytesReader(source)
    : asyncIterableReader(source);
  let header;
  try {
    header = await readHeader(reader);
  } catch (err) {
    throw new CarError(
      `Cannot read CAR as it does not start with a valid CAR header: ${
        reason(err)
      }`,
      null,
      { cause: err },
    );
  }
  if (header.version === 2) {
    // As @ipld/car's own decoder does: read the CARv1 payload only, not
    // the index that follows it.
    const read = reader.pos - header.dataOffset;
    reader = limitReader(reader, header.dataSize - read);
  }
  const roots = [...header.roots];
  for (const root of roots) assertOurs(root, "Cannot read CAR root", null);
  return {
    version: header.version,
    roots,
    blocks: readBlocks(reader, roots, maxBlockBytes),
  };
}

async function* readBlocks(
  reader: BytesReader,
  roots: readonly CID[],
  maxBlockBytes: number,
): AsyncGenerator<CarBlock> {
  const missing = new Set(roots.map(cidToString));
  for (let n = 1; (await reader.upTo(8)).length > 0; n++) {
    const { cid, blockLength } = await readSection(
      n,
      () => readBlockHead(reader),
    );
    // A section length shorter than its own CID would make the reader seek
    // backwards, and loop.
    if (blockLength < 0) {
      throw new CarError(
        `Cannot read CAR block ${n} as its section is shorter than its CID`,
        n,
      );
    }
    assertOurs(cid, `Cannot read CAR block ${n}`, n);
    if (blockLength > maxBlockBytes) {
      throw new CarError(
        `Cannot read CAR block ${n} (${
          cidToString(cid)
        }) as it is ${blockLength} bytes, over the limit of ${maxBlockBytes} (maxBlobBytes)`,
        n,
      );
    }
    const bytes = await readSection(n, () => reader.exactly(blockLength, true));
    const block = { cid, bytes };
    await verifyBlock(block, n);
    missing.delete(cidToString(cid));
    yield block;
  }
  const [root] = missing;
  if (root !== undefined) {
    throw new CarError(
      `Cannot read CAR as it ends without the block of its root ${root}: is it truncated?`,
      null,
    );
  }
}

/** Runs one read of block `n`, turning the decoder's errors into CarErrors. */
async function readSection<T>(n: number, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    throw new CarError(
      `Cannot read CAR block ${n} as ${reason(err)}`,
      n,
      { cause: err },
    );
  }
}

/** Why the decoder failed, in words that fit after "as". */
function reason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message === "Unexpected end of data"
    ? "the file ends early: is it truncated?"
    : message;
}

/** Throws a CarError unless `block`'s bytes hash to its CID. */
async function verifyBlock(block: CarBlock, n: number): Promise<void> {
  assertOurs(block.cid, `Cannot accept CAR block ${n}`, n);
  const actual = await blockCid(block.bytes, block.cid.code);
  if (!actual.equals(block.cid)) {
    throw new CarError(
      `Cannot accept CAR block ${n} ${block.cid} as its bytes hash to ${
        cidToString(actual)
      }: they were damaged or tampered with`,
      n,
    );
  }
}

/** Throws a CarError unless `cid` is CIDv1, raw or dag-pb, 32-byte sha2-256. */
function assertOurs(cid: CID, what: string, block: number | null): void {
  const refuse = (why: string) => {
    throw new CarError(
      `${what} ${cid} as ${why}: zoo-node takes only CIDv1 sha2-256 blocks, raw (0x55) or dag-pb (0x70), as "zoo-node export --car" writes them`,
      block,
    );
  };
  if (cid.version !== 1) refuse(`it is CIDv${cid.version}`);
  if (cid.code !== RAW_CODEC && cid.code !== DAG_PB_CODEC) {
    const name = CODEC_NAMES[cid.code] ?? "unknown";
    refuse(`its codec is ${name} (0x${cid.code.toString(16)})`);
  }
  const { code, digest } = cid.multihash;
  if (code !== SHA256_CODE || digest.length !== SHA256_LENGTH) {
    refuse(
      `its hash is 0x${
        code.toString(16)
      } with ${digest.length} bytes, not sha2-256`,
    );
  }
}

/**
 * The blocks of a file's CAR: its DAG's nodes (the root first), then its
 * leaves, cut from `bytes`, in file order.
 */
export function fileCarBlocks(dag: FileDag, bytes: Uint8Array): CarBlock[] {
  return [
    ...dag.nodes,
    ...dag.leaves.map((l) => ({
      cid: l.cid,
      bytes: bytes.subarray(l.offset, l.offset + l.length),
    })),
  ];
}

/** What a CAR holds, sorted out by {@linkcode filesOfCar}. */
export interface CarFiles {
  /** Each dag-pb root's file, its bytes put together from its leaves. */
  readonly files: readonly { root: CID; bytes: Uint8Array }[];
  /** Raw blocks that are no file's leaf, stored as they are. */
  readonly blocks: readonly CarBlock[];
  /** Blocks read in all. */
  readonly count: number;
}

/**
 * Reads every block of `car` and puts each dag-pb root's file together
 * from its leaves: the DAG must be laid out as zoo-node lays out files
 * (`ipfs add --cid-version=1 --raw-leaves --chunker=size-1048576`), every
 * leaf present and the file at most `maxFileBytes`, or a {@linkcode
 * CarError} says what is wrong.
 */
export async function filesOfCar(
  car: CarContents,
  maxFileBytes: number,
): Promise<CarFiles> {
  const nodes: Uint8Array[] = [];
  const raws = new Map<string, CarBlock>();
  let count = 0;
  for await (const block of car.blocks) {
    count++;
    if (block.cid.code === DAG_PB_CODEC) nodes.push(block.bytes);
    else raws.set(cidToString(block.cid), block);
  }
  const files = [];
  const leaves = new Set<string>();
  for (const root of car.roots) {
    if (root.code !== DAG_PB_CODEC) continue;
    let dag: FileDag;
    try {
      dag = fileDagOfNodes(root, nodes, maxFileBytes);
    } catch (err) {
      throw new CarError(
        `Cannot read file ${root} from the CAR: ${reason(err)}`,
        null,
        { cause: err },
      );
    }
    const bytes = new Uint8Array(dag.size);
    for (const leaf of dag.leaves) {
      const key = cidToString(leaf.cid);
      const block = raws.get(key);
      if (!block) {
        throw new CarError(
          `Cannot read file ${root} from the CAR as its leaf ${key} (bytes ${leaf.offset}-${
            leaf.offset + leaf.length
          }) is not in it`,
          null,
        );
      }
      bytes.set(block.bytes, leaf.offset);
      leaves.add(key);
    }
    files.push({ root, bytes });
  }
  return {
    files,
    blocks: [...raws.values()].filter((b) => !leaves.has(cidToString(b.cid))),
    count,
  };
}
