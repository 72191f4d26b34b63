/**
 * Content over one block as a UnixFS file DAG, the form IPFS moves files
 * in: raw leaves of at most {@linkcode FILE_BLOCK_BYTES} (1 MiB) under
 * dag-pb nodes of at most {@linkcode FILE_LINKS_PER_NODE} links, built
 * balanced from the left, as `ipfs add --cid-version=1 --raw-leaves
 * --chunker=size-1048576` builds it. The root's CID names the file; Kubo,
 * Helia, `ipfs-car` and gateways fetch, verify and serve it as it is, and
 * a peer checks each leaf against its CID as it arrives.
 *
 * One layout only: the same bytes always give the same root, so a root
 * whose DAG is laid out otherwise (another chunk size, a trickle DAG) is
 * refused by {@linkcode fileDagOfNodes} rather than stored under a second
 * name.
 *
 * Synchronous, as the protocol's other hashing (a training state's parts
 * are files, hashed between training steps), on `node:crypto`'s SHA-256.
 *
 * Pure: no I/O.
 *
 * @module
 */
import * as dagPB from "@ipld/dag-pb";
import { UnixFS } from "ipfs-unixfs";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import * as Digest from "multiformats/hashes/digest";
import { createHash } from "node:crypto";
import { ProtocolError } from "../errors.ts";

/** Bytes per leaf: the largest block IPFS peers exchange as a matter of course. */
export const FILE_BLOCK_BYTES = 1 << 20;
/** Links per dag-pb node, Kubo's default for balanced DAGs. */
export const FILE_LINKS_PER_NODE = 174;
/** Multicodec code of dag-pb (0x70), the codec of a file's root. */
export const DAG_PB_CODEC: number = dagPB.code;
/** Levels of nodes above the leaves a walk follows: 174^6 MiB is beyond any file. */
const MAX_DEPTH = 6;

/** One leaf of a file: its CID and the bytes of the file it holds. */
export interface FileLeaf {
  readonly cid: CID;
  readonly offset: number;
  readonly length: number;
}

/** A dag-pb node of a file DAG and its encoded bytes. */
export interface DagNode {
  readonly cid: CID;
  readonly bytes: Uint8Array;
}

/** A file's DAG: its root, its leaves in file order, its dag-pb nodes. */
export interface FileDag {
  readonly root: CID;
  /** Bytes of the file: the leaves' lengths added up. */
  readonly size: number;
  readonly leaves: readonly FileLeaf[];
  /** Every dag-pb node, the root first, then level by level downwards. */
  readonly nodes: readonly DagNode[];
}

/** A file DAG that cannot be taken: malformed, too big or laid out otherwise. */
export class FileDagError extends ProtocolError {
  constructor(message: string) {
    super(message);
    this.name = "FileDagError";
  }
}

/** The CIDv1 of one block under `codec`. */
function blockCidOf(bytes: Uint8Array, codec: number): CID {
  const digest = createHash("sha256").update(bytes).digest();
  return CID.createV1(codec, Digest.create(SHA256, new Uint8Array(digest)));
}

/** Multihash code of sha2-256. */
const SHA256 = 0x12;

/**
 * The file DAG of `bytes` (one leaf when they fit in one, still under a
 * dag-pb root: a file is always named by its root; no leaf when empty).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileDag, FILE_BLOCK_BYTES } from "./unixfs.ts";
 * const dag = fileDag(new Uint8Array(FILE_BLOCK_BYTES + 1));
 * assert.equal(dag.leaves.length, 2);
 * assert(dag.root.toString().startsWith("bafybei"));
 * ```
 */
export function fileDag(bytes: Uint8Array): FileDag {
  const hasher = new FileDagHasher();
  hasher.update(bytes);
  return hasher.finish();
}

/**
 * Builds a file's DAG from its bytes as they stream past, holding one leaf
 * at a time: how a file on disk or arriving over the network is named.
 */
export class FileDagHasher {
  readonly #leaf = new Uint8Array(FILE_BLOCK_BYTES);
  #filled = 0;
  #offset = 0;
  readonly #leaves: FileLeaf[] = [];

  /** Takes the next bytes of the file. */
  update(chunk: Uint8Array): void {
    for (let at = 0; at < chunk.length;) {
      const n = Math.min(chunk.length - at, FILE_BLOCK_BYTES - this.#filled);
      this.#leaf.set(chunk.subarray(at, at + n), this.#filled);
      this.#filled += n;
      at += n;
      if (this.#filled === FILE_BLOCK_BYTES) this.#cut();
    }
  }

  #cut(): void {
    const bytes = this.#leaf.subarray(0, this.#filled);
    this.#leaves.push({
      cid: blockCidOf(bytes, raw.code),
      offset: this.#offset,
      length: this.#filled,
    });
    this.#offset += this.#filled;
    this.#filled = 0;
  }

  /** The DAG of every byte taken. */
  finish(): FileDag {
    if (this.#filled > 0) this.#cut();
    return fileDagOfLeaves(this.#leaves);
  }
}

/** What a level of the tree hands to the level above. */
interface Child {
  cid: CID;
  /** Bytes of the file below it. */
  fileSize: number;
  /** Bytes of every block below it, itself included (dag-pb's Tsize). */
  treeSize: number;
}

/**
 * The dag-pb nodes over `leaves` (in file order, each full but the last;
 * none for an empty file):
 * groups of {@linkcode FILE_LINKS_PER_NODE} from the left, level by level,
 * until one node is left.
 */
export function fileDagOfLeaves(leaves: readonly FileLeaf[]): FileDag {
  let level: Child[] = leaves.map((l) => ({
    cid: l.cid,
    fileSize: l.length,
    treeSize: l.length,
  }));
  const levels: DagNode[][] = [];
  do {
    const nodes: DagNode[] = [];
    const next: Child[] = [];
    // An empty file is one node with no links, as the IPFS importer makes it.
    for (let i = 0; i === 0 || i < level.length; i += FILE_LINKS_PER_NODE) {
      const group = level.slice(i, i + FILE_LINKS_PER_NODE);
      const data = new UnixFS({
        type: "file",
        blockSizes: group.map((c) => BigInt(c.fileSize)),
      }).marshal();
      const bytes = dagPB.encode(dagPB.prepare({
        Data: data,
        Links: group.map((c) => ({ Hash: c.cid, Name: "", Tsize: c.treeSize })),
      }));
      const cid = blockCidOf(bytes, dagPB.code);
      nodes.push({ cid, bytes });
      next.push({
        cid,
        fileSize: group.reduce((n, c) => n + c.fileSize, 0),
        treeSize: group.reduce((n, c) => n + c.treeSize, bytes.length),
      });
    }
    levels.push(nodes);
    level = next;
  } while (level.length > 1);
  return {
    root: level[0].cid,
    size: level[0].fileSize,
    leaves,
    nodes: levels.reverse().flat(),
  };
}

/** A file whose root claims more bytes than the reader takes. */
export class FileTooLargeError extends FileDagError {
  constructor(root: CID, readonly size: number, readonly limit: number) {
    super(
      `Cannot read file ${root} as its root claims ${size} bytes, over the limit of ${limit}`,
    );
    this.name = "FileTooLargeError";
  }
}

/** A decoded file node: its children and the file bytes under each. */
export interface FileNode {
  readonly links: readonly CID[];
  readonly blockSizes: readonly number[];
}

/** Decodes one dag-pb node of a UnixFS file; FileDagError if it is not one. */
export function decodeFileNode(bytes: Uint8Array): FileNode {
  let node: dagPB.PBNode;
  let unixfs: UnixFS;
  try {
    node = dagPB.decode(bytes);
    if (!node.Data) throw new Error("it carries no UnixFS data");
    unixfs = UnixFS.unmarshal(node.Data);
  } catch (err) {
    throw new FileDagError(
      `Cannot read a file node as it is not dag-pb UnixFS: ${
        err instanceof Error ? err.message : String(err)
      }`,
    );
  }
  if (unixfs.type !== "file" || (unixfs.data?.length ?? 0) > 0) {
    throw new FileDagError(
      `Cannot read a file node of type ${unixfs.type} with ${
        unixfs.data?.length ?? 0
      } inline bytes: only raw-leaf files are taken`,
    );
  }
  if (unixfs.blockSizes.length !== node.Links.length) {
    throw new FileDagError(
      `Cannot read a file node with ${node.Links.length} links and ${unixfs.blockSizes.length} block sizes`,
    );
  }
  return {
    links: node.Links.map((l) => l.Hash),
    blockSizes: unixfs.blockSizes.map(Number),
  };
}

/**
 * The file DAG under `root`, from its dag-pb `nodes` (in any order), as a
 * fetcher takes it from an untrusted peer before asking for the leaves:
 * every node's bytes must hash to the link that names it, the file must be
 * at most `maxBytes` (a root claiming more is a {@linkcode
 * FileTooLargeError} before anything is walked), and the DAG must be the
 * one {@linkcode fileDag} lays out for a file of that size, or a
 * {@linkcode FileDagError} says why.
 */
export function fileDagOfNodes(
  root: CID,
  nodes: readonly Uint8Array[],
  maxBytes: number,
): FileDag {
  if (root.code !== DAG_PB_CODEC) {
    throw new FileDagError(
      `Cannot read file ${root} as its root is not dag-pb`,
    );
  }
  const byCid = new Map<string, Uint8Array>();
  for (const bytes of nodes) {
    byCid.set(blockCidOf(bytes, dagPB.code).toString(), bytes);
  }
  const maxLeaves = Math.max(1, Math.ceil(maxBytes / FILE_BLOCK_BYTES));
  const rootBytes = byCid.get(root.toString());
  if (rootBytes) {
    const claimed = decodeFileNode(rootBytes).blockSizes.reduce(
      (a, b) => a + b,
      0,
    );
    if (claimed > maxBytes) {
      throw new FileTooLargeError(root, claimed, maxBytes);
    }
  }
  const leaves: FileLeaf[] = [];
  let offset = 0;
  // A node may be linked more than once (equal subtrees of equal bytes),
  // so the walk is bounded by what a file within the limit can hold, not
  // by the nodes given: a few nodes linked 174 times a level would
  // otherwise expand past any machine.
  let visits = 0;
  const walk = (cid: CID, depth: number) => {
    if (++visits > maxLeaves + MAX_DEPTH) {
      throw new FileDagError(
        `Cannot read file ${root}: it walks more nodes than a file of at most ${maxBytes} bytes has`,
      );
    }
    const bytes = byCid.get(cid.toString());
    if (!bytes) {
      throw new FileDagError(
        `Cannot read file ${root}: node ${cid} is missing`,
      );
    }
    if (depth > MAX_DEPTH) {
      throw new FileDagError(
        `Cannot read file ${root}: deeper than ${MAX_DEPTH} levels`,
      );
    }
    const node = decodeFileNode(bytes);
    node.links.forEach((link, i) => {
      if (link.code === DAG_PB_CODEC) return walk(link, depth + 1);
      const length = node.blockSizes[i];
      if (link.code !== raw.code || length > FILE_BLOCK_BYTES) {
        throw new FileDagError(
          `Cannot read file ${root}: leaf ${link} is not a raw block of at most ${FILE_BLOCK_BYTES} bytes`,
        );
      }
      if (leaves.length === maxLeaves || offset + length > maxBytes) {
        throw new FileDagError(
          `Cannot read file ${root} as it is over the limit of ${maxBytes} bytes`,
        );
      }
      leaves.push({ cid: link, offset, length });
      offset += length;
    });
  };
  walk(root, 0);
  const short = leaves.findIndex((l, i) =>
    l.length !== FILE_BLOCK_BYTES && i !== leaves.length - 1
  );
  if (short >= 0) {
    throw new FileDagError(
      `Cannot read file ${root} as leaf ${short} holds ${
        leaves[short].length
      } bytes: only the last leaf may be short of ${FILE_BLOCK_BYTES}`,
    );
  }
  const dag = fileDagOfLeaves(leaves);
  if (!dag.root.equals(root)) {
    throw new FileDagError(
      `Cannot read file ${root} as its DAG is not laid out as zoo-node lays out files (balanced, ${FILE_LINKS_PER_NODE} links a node): the same leaves give ${dag.root}`,
    );
  }
  return dag;
}

/**
 * The nodes of a DAG for the wire: each as a 4-byte big-endian length and
 * its bytes.
 */
export function encodeDagNodes(nodes: readonly DagNode[]): Uint8Array {
  const size = nodes.reduce((n, d) => n + 4 + d.bytes.length, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const { bytes } of nodes) {
    view.setUint32(at, bytes.length);
    out.set(bytes, at + 4);
    at += 4 + bytes.length;
  }
  return out;
}

/** The node bytes of {@linkcode encodeDagNodes}; FileDagError if malformed. */
export function decodeDagNodes(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const nodes: Uint8Array[] = [];
  for (let at = 0; at < bytes.length;) {
    if (at + 4 > bytes.length) {
      throw new FileDagError("Cannot read DAG nodes: cut in a length");
    }
    const length = view.getUint32(at);
    if (at + 4 + length > bytes.length) {
      throw new FileDagError("Cannot read DAG nodes: cut in a node");
    }
    nodes.push(bytes.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return nodes;
}

/** The largest encoded nodes of a file of `size` bytes: what a fetcher accepts. */
export function maxDagNodesBytes(size: number): number {
  const leaves = Math.max(1, Math.ceil(size / FILE_BLOCK_BYTES));
  // Every level has at most one node per 174 below it; a link is ~45 bytes.
  const links = 2 * leaves + FILE_LINKS_PER_NODE;
  return 4096 + 64 * links;
}
