import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { fileDag } from "./unixfs.ts";
import { ProtocolError } from "../errors.ts";
import {
  decodeStateHead,
  decodeStateMoments,
  decodeStateParams,
  encodeState,
  momentsByteLength,
  momentsDigest,
  paramsByteLength,
  paramsDigest,
  STATE_HEAD_BYTES,
  stateHash,
  stateParts,
} from "./state_hash.ts";

const state = (step = 3) => ({
  step,
  params: Float32Array.from([1, -2, 0.5]),
  m: Float32Array.from([0.1, 0.2, 0.3]),
  v: Float32Array.from([1e-3, 2e-3, 3e-3]),
});

const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
};
const bytesOf = (x: Float32Array) => new Uint8Array(x.buffer);
/** The root digest of the file of `parts`, one after the other. */
const fileRoot = (...parts: Uint8Array[]) => {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) all.set(p, (at += p.length) - p.length);
  return fileDag(all).root.multihash.digest;
};

Deno.test("stateHash hashes the documented bytes: the head over the file roots of the parameters and of the moments", () => {
  const s = state();
  const want = sha256(
    new TextEncoder().encode("ZST2"),
    new Uint8Array([3, 0, 0, 0, 3, 0, 0, 0]),
    fileRoot(bytesOf(s.params)),
    // Every second moment set: the mask is 0b111, then all three.
    fileRoot(bytesOf(s.m), new Uint8Array([0b111]), bytesOf(s.v)),
  );
  assert.deepEqual(stateHash(s), want);
  // Zeros, as Muon leaves them, are only cleared bits of the mask.
  const muon = { ...s, v: Float32Array.from([0, 2e-3, 0]) };
  const sparse = fileRoot(
    bytesOf(s.m),
    new Uint8Array([0b010]),
    bytesOf(Float32Array.from([2e-3])),
  );
  assert.deepEqual(
    stateHash(muon),
    sha256(
      new TextEncoder().encode("ZST2"),
      new Uint8Array([3, 0, 0, 0, 3, 0, 0, 0]),
      fileRoot(bytesOf(s.params)),
      sparse,
    ),
  );
  assert.equal(encodeState(muon).moments.length, 12 + 1 + 4);
});

Deno.test("one bit anywhere in the state, or the step, changes the hash", () => {
  const h = stateHash(state());
  assert.notDeepEqual(stateHash(state(4)), h);
  for (const key of ["params", "m", "v"] as const) {
    const s = state();
    const bits = new Uint32Array(s[key].buffer);
    bits[1] ^= 1;
    assert.notDeepEqual(stateHash(s), h, key);
  }
  // The same values in a view at an offset hash the same.
  const big = new Float32Array(8);
  big.set([1, -2, 0.5], 5);
  assert.deepEqual(stateHash({ ...state(), params: big.subarray(5) }), h);
});

Deno.test("stateHash refuses mismatched moments and bad steps", () => {
  assert.throws(
    () => stateHash({ ...state(), m: new Float32Array(2) }),
    ProtocolError,
  );
  assert.throws(() => stateHash(state(-1)), ProtocolError);
});

Deno.test("a state's blocks: the head hashes to its stateHash and names the other two by their digests; each decodes back", () => {
  const s = state(7);
  const { head, params, moments } = encodeState(s);
  assert.equal(head.length, STATE_HEAD_BYTES);
  assert.equal(params.length, paramsByteLength(3));
  assert.equal(moments.length, momentsByteLength(3));
  assert.deepEqual(sha256(head), stateHash(s));
  const decoded = decodeStateHead(head, 3);
  assert.equal(decoded.step, 7);
  assert.deepEqual(decoded.params, fileRoot(params));
  assert.deepEqual(decoded.moments, fileRoot(moments));
  // From unaligned views, as blocks read from disk may be.
  const unaligned = (b: Uint8Array) => {
    const padded = new Uint8Array(b.length + 1);
    padded.set(b, 1);
    return padded.subarray(1);
  };
  assert.deepEqual(decodeStateParams(unaligned(params), 3), s.params);
  assert.deepEqual(decodeStateMoments(unaligned(moments), 3), {
    m: s.m,
    v: s.v,
  });
});

Deno.test("a state's blocks refuse other sizes, magic and counts", () => {
  const { head, params, moments } = encodeState(state());
  assert.throws(() => decodeStateHead(head, 4), /4 parameters/);
  assert.throws(() => decodeStateHead(head.subarray(1), 3), ProtocolError);
  const magic = head.slice();
  magic[0] ^= 1;
  assert.throws(() => decodeStateHead(magic, 3), /ZST2/);
  const same = head.slice();
  same.set(head.subarray(12, 44), 44);
  assert.throws(() => decodeStateHead(same, 3), /one block/);
  // A writer's head from its store's digests: the same bytes.
  const parts = stateParts(state());
  assert.deepEqual(
    parts.head(fileRoot(parts.params), fileRoot(parts.moments)),
    head,
  );
  assert.throws(() => parts.head(new Uint8Array(31), params), /32 bytes/);
  assert.throws(() => decodeStateParams(params, 4), ProtocolError);
  assert.throws(() => decodeStateParams(moments, 3), /parameters/);
  assert.throws(() => decodeStateMoments(params, 3), /moments/);
  // The mask and the values must agree, one encoding per state.
  const muon = encodeState({ ...state(), v: Float32Array.from([0, 2e-3, 0]) })
    .moments;
  assert.deepEqual(
    decodeStateMoments(muon, 3).v,
    Float32Array.from([0, 2e-3, 0]),
  );
  assert.throws(
    () => decodeStateMoments(muon.subarray(0, 16), 3),
    /mask sets 1/,
  );
  const spare = muon.slice();
  spare[12] |= 0b1000;
  assert.throws(() => decodeStateMoments(spare, 3), ProtocolError);
  const zero = muon.slice();
  zero.fill(0, 13);
  assert.throws(() => decodeStateMoments(zero, 3), /\+0/);
});

Deno.test("paramsDigest and momentsDigest are the digests a state's head names, without the blocks", () => {
  const s = state();
  const { head, params, moments } = encodeState(s);
  assert.deepEqual(paramsDigest(s.params), fileRoot(params));
  assert.deepEqual(momentsDigest(s), fileRoot(moments));
  const h = decodeStateHead(head, s.params.length);
  assert.deepEqual([h.params, h.moments], [
    fileRoot(params),
    fileRoot(moments),
  ]);
  assert.throws(
    () => momentsDigest({ m: s.m, v: s.v.subarray(1) }),
    ProtocolError,
  );
});

Deno.test("stateParts: the parameters' bytes are a view of the state's, not a copy; the head keeps only the step and size", () => {
  const s = state(7);
  const parts = stateParts(s);
  assert.equal(parts.params.buffer, s.params.buffer);
  assert.deepEqual(parts.params, bytesOf(s.params));
  const head = parts.head(fileRoot(parts.params), fileRoot(parts.moments));
  // A state changed after its parts were made has the same head from
  // them: the closure read nothing of it but its step and size.
  s.step = 8;
  assert.deepEqual(
    parts.head(fileRoot(parts.params), fileRoot(parts.moments)),
    head,
  );
});
