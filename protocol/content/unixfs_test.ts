import assert from "node:assert/strict";
import * as dagPB from "@ipld/dag-pb";
import { UnixFS } from "ipfs-unixfs";
import { CID } from "multiformats/cid";
import { sha256 } from "multiformats/hashes/sha2";
import {
  DAG_PB_CODEC,
  decodeDagNodes,
  decodeFileNode,
  encodeDagNodes,
  FILE_BLOCK_BYTES,
  FILE_LINKS_PER_NODE,
  type FileDag,
  fileDag,
  FileDagError,
  FileDagHasher,
  fileDagOfLeaves,
  fileDagOfNodes,
  type FileLeaf,
  FileTooLargeError,
  maxDagNodesBytes,
} from "./unixfs.ts";
import { blockCid } from "./cid.ts";

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) {
    crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  }
  return out;
}

/** `count` made-up full leaves (the last `last` bytes), without their bytes. */
async function leaves(count: number, last: number): Promise<FileLeaf[]> {
  const out: FileLeaf[] = [];
  for (let i = 0; i < count; i++) {
    out.push({
      cid: await blockCid(new TextEncoder().encode(`leaf ${i}`)),
      offset: i * FILE_BLOCK_BYTES,
      length: i === count - 1 ? last : FILE_BLOCK_BYTES,
    });
  }
  return out;
}

const walkBack = (dag: FileDag, max = Number.MAX_SAFE_INTEGER) =>
  fileDagOfNodes(dag.root, dag.nodes.map((n) => n.bytes), max);

Deno.test("fileDag: leaves are the bytes cut at 1 MiB, each named by its hash", async () => {
  const size = 2 * FILE_BLOCK_BYTES + 1 + Math.floor(Math.random() * 1000);
  const bytes = randomBytes(size);
  const dag = fileDag(bytes);
  assert.equal(dag.root.code, DAG_PB_CODEC);
  assert.equal(dag.size, size);
  assert.deepEqual(dag.leaves.map((l) => l.length), [
    FILE_BLOCK_BYTES,
    FILE_BLOCK_BYTES,
    size - 2 * FILE_BLOCK_BYTES,
  ]);
  for (const leaf of dag.leaves) {
    const cid = await blockCid(
      bytes.subarray(leaf.offset, leaf.offset + leaf.length),
    );
    assert(cid.equals(leaf.cid));
  }
  assert.equal(dag.nodes.length, 1);
  const root = decodeFileNode(dag.nodes[0].bytes);
  assert.deepEqual(
    root.links.map(String),
    dag.leaves.map((l) => String(l.cid)),
  );
  assert.deepEqual(root.blockSizes, dag.leaves.map((l) => l.length));
});

Deno.test("FileDagHasher: the same root whatever the bytes' chunking", () => {
  const bytes = randomBytes(FILE_BLOCK_BYTES + 12345);
  const whole = fileDag(bytes);
  const hasher = new FileDagHasher();
  for (let at = 0; at < bytes.length;) {
    const n = 1 + Math.floor(Math.random() * 300_000);
    hasher.update(bytes.subarray(at, at + n));
    at += n;
  }
  assert((hasher.finish()).root.equals(whole.root));
  assert(!(fileDag(bytes.subarray(1))).root.equals(whole.root));
});

Deno.test("fileDagOfLeaves: balanced from the left, 174 links a node", async () => {
  for (const count of [1, FILE_LINKS_PER_NODE, FILE_LINKS_PER_NODE + 1, 2000]) {
    const dag = fileDagOfLeaves(await leaves(count, 7));
    const depth = count <= FILE_LINKS_PER_NODE ? 1 : 2;
    const root = decodeFileNode(dag.nodes[0].bytes);
    assert.equal(
      root.links.length,
      depth === 1 ? count : Math.ceil(count / FILE_LINKS_PER_NODE),
    );
    assert.equal(dag.size, (count - 1) * FILE_BLOCK_BYTES + 7);
    assert.equal(root.blockSizes.reduce((a, b) => a + b, 0), dag.size);
    const back = await walkBack(dag);
    assert(back.root.equals(dag.root));
    assert.deepEqual(back.leaves, dag.leaves);
  }
});

Deno.test("fileDag: an empty file is one node with no links", async () => {
  const dag = fileDag(new Uint8Array());
  assert.equal(dag.leaves.length, 0);
  assert.equal(dag.size, 0);
  assert.equal(decodeFileNode(dag.nodes[0].bytes).links.length, 0);
  assert.equal((await walkBack(dag)).size, 0);
});

Deno.test("fileDagOfNodes refuses a missing, tampered, oversized or foreign DAG", async () => {
  const dag = fileDagOfLeaves(await leaves(FILE_LINKS_PER_NODE + 3, 100));
  const nodes = dag.nodes.map((n) => n.bytes);
  assert.throws(
    () => fileDagOfNodes(dag.root, nodes.slice(0, -1), Infinity),
    FileDagError,
  );
  assert.throws(
    () => fileDagOfNodes(dag.root, nodes, dag.size - 1),
    /over the limit/,
  );
  assert.equal(
    (fileDagOfNodes(dag.root, nodes, dag.size)).size,
    dag.size,
  );
  // A leaf swapped in the second node: its CID no longer names it.
  const second = dagPB.decode(nodes[2]);
  const forged = dagPB.encode({
    ...second,
    Links: [
      { ...second.Links[0], Hash: dag.leaves[0].cid },
      ...second.Links.slice(1),
    ],
  });
  assert.throws(
    () => fileDagOfNodes(dag.root, [nodes[0], nodes[1], forged], Infinity),
    /missing/,
  );
  // The same leaves laid out two to a node: a valid UnixFS file, not ours.
  const two = await twoLinkRoot(dag.leaves.slice(0, 4));
  assert.throws(
    () => fileDagOfNodes(two.root, two.nodes, Infinity),
    /not laid out/,
  );
  // A short leaf in the middle.
  const gap = fileDagOfLeaves([
    { ...dag.leaves[0], length: 10 },
    { ...dag.leaves[1], offset: 10 },
  ]);
  assert.throws(() => walkBack(gap), /only the last leaf may be short/);
  // Not dag-pb at all.
  assert.throws(
    () => fileDagOfNodes(dag.leaves[0].cid, [], Infinity),
    /not dag-pb/,
  );
  assert.throws(() => decodeFileNode(new Uint8Array([1, 2, 3])), FileDagError);
});

/** A root over pairs of leaves: a UnixFS file, laid out otherwise. */
async function twoLinkRoot(
  leaves: readonly FileLeaf[],
): Promise<{ root: CID; nodes: Uint8Array[] }> {
  const nodes: Uint8Array[] = [];
  const node = async (children: { cid: CID; size: number }[]) => {
    const bytes = dagPB.encode(dagPB.prepare({
      Data: new UnixFS({
        type: "file",
        blockSizes: children.map((c) => BigInt(c.size)),
      }).marshal(),
      Links: children.map((c) => ({ Hash: c.cid, Name: "", Tsize: c.size })),
    }));
    nodes.push(bytes);
    return {
      cid: CID.createV1(dagPB.code, await sha256.digest(bytes)),
      size: children.reduce((n, c) => n + c.size, 0),
    };
  };
  const a = await node(
    leaves.slice(0, 2).map((l) => ({ cid: l.cid, size: l.length })),
  );
  const b = await node(
    leaves.slice(2, 4).map((l) => ({ cid: l.cid, size: l.length })),
  );
  return { root: (await node([a, b])).cid, nodes };
}

Deno.test("encodeDagNodes / decodeDagNodes round-trip; cut input is refused", async () => {
  const dag = fileDagOfLeaves(await leaves(400, 1));
  const wire = encodeDagNodes(dag.nodes);
  assert(wire.length <= maxDagNodesBytes(dag.size));
  assert.deepEqual(decodeDagNodes(wire), dag.nodes.map((n) => n.bytes));
  assert.throws(
    () => decodeDagNodes(wire.subarray(0, wire.length - 1)),
    FileDagError,
  );
  assert.throws(() => decodeDagNodes(wire.subarray(0, 2)), FileDagError);
});

Deno.test("fileDagOfNodes: a root claiming too much, or a node linked over and over, is refused at once", async () => {
  // An empty file node linked 174 times a level, 5 levels up: a few
  // hundred kilobytes of nodes that would walk 174^5 of them.
  const encode = (links: CID[]) =>
    dagPB.encode(dagPB.prepare({
      Data: new UnixFS({
        type: "file",
        blockSizes: links.map(() => 0n),
      }).marshal(),
      Links: links.map((Hash) => ({ Hash, Name: "", Tsize: 0 })),
    }));
  const cidOf = async (bytes: Uint8Array) =>
    CID.createV1(DAG_PB_CODEC, await sha256.digest(bytes));
  let bytes = encode([]);
  const nodes = [bytes];
  for (let level = 0; level < 5; level++) {
    bytes = encode(Array(FILE_LINKS_PER_NODE).fill(await cidOf(bytes)));
    nodes.push(bytes);
  }
  const root = await cidOf(bytes);
  const start = performance.now();
  assert.throws(
    () => fileDagOfNodes(root, nodes, 1 << 30),
    /walks more nodes than a file of at most/,
  );
  assert.ok(performance.now() - start < 1000);

  const big = fileDagOfLeaves(await leaves(3, 10));
  assert.throws(
    () => fileDagOfNodes(big.root, big.nodes.map((n) => n.bytes), 1000),
    FileTooLargeError,
  );
});
