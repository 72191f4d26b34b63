import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { merkleProof, merkleRoot, verifyMerkleProof } from "./merkle.ts";
import { ProtocolError } from "../errors.ts";

const leaf = (i: number) =>
  new Uint8Array(createHash("sha256").update(`state ${i}`).digest());
const leaves = (n: number) => Array.from({ length: n }, (_, i) => leaf(i));
const h = (...parts: Uint8Array[]) => {
  const x = createHash("sha256");
  for (const p of parts) x.update(p);
  return new Uint8Array(x.digest());
};

Deno.test("merkleRoot follows RFC 6962's shape for 1, 2 and 3 leaves", () => {
  const [a, b, c] = leaves(3).map((l) => h(new Uint8Array([0]), l));
  const node = (x: Uint8Array, y: Uint8Array) => h(new Uint8Array([1]), x, y);
  assert.deepEqual(merkleRoot(leaves(1)), a);
  assert.deepEqual(merkleRoot(leaves(2)), node(a, b));
  // Three leaves split 2 + 1.
  assert.deepEqual(merkleRoot(leaves(3)), node(node(a, b), c));
});

Deno.test("every leaf of lists of 1 to 40 leaves proves, and nothing else does", () => {
  for (let n = 1; n <= 40; n++) {
    const list = leaves(n);
    const root = merkleRoot(list);
    for (let i = 0; i < n; i++) {
      const proof = merkleProof(list, i);
      assert.ok(verifyMerkleProof(root, list[i], i, n, proof), `${i}/${n}`);
      // Another leaf, another index or a changed sibling. (The leaf count
      // is fixed by the job, not by the prover: RFC 6962 paths of some
      // lengths also fold for a longer list.)
      assert.ok(!verifyMerkleProof(root, leaf(1000), i, n, proof));
      if (n > 1) {
        assert.ok(!verifyMerkleProof(root, list[i], (i + 1) % n, n, proof));
      }
      if (proof.length > 0) {
        const bent = proof.map((p) => p.slice());
        bent[0][0] ^= 1;
        assert.ok(!verifyMerkleProof(root, list[i], i, n, bent));
        assert.ok(!verifyMerkleProof(root, list[i], i, n, proof.slice(1)));
      }
      assert.ok(!verifyMerkleProof(root, list[i], i, n, [...proof, root]));
    }
  }
});

Deno.test("a leaf cannot pass for an inner node (no second preimage)", () => {
  const list = leaves(4);
  const root = merkleRoot(list);
  // The left inner node, offered as a leaf of a 2-leaf list.
  const proof = merkleProof(list, 0);
  const inner = h(
    new Uint8Array([1]),
    h(new Uint8Array([0]), list[0]),
    h(new Uint8Array([0]), list[1]),
  );
  assert.ok(!verifyMerkleProof(root, inner, 0, 2, proof.slice(2)));
});

Deno.test("bad trees and indices are refused with clear errors", () => {
  assert.throws(() => merkleRoot([]), ProtocolError);
  assert.throws(
    () => merkleRoot([new Uint8Array(31)]),
    /every leaf must be 32 bytes: leaf 0 is 31/,
  );
  assert.throws(() => merkleProof(leaves(3), 3), RangeError);
  assert.equal(
    verifyMerkleProof(new Uint8Array(3), leaf(0), 0, 1, []),
    false,
  );
});
