import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ProtocolError } from "./errors.ts";
import {
  decodeState,
  encodeState,
  stateByteLength,
  stateHash,
} from "./state_hash.ts";

const state = (step = 3) => ({
  step,
  params: Float32Array.from([1, -2, 0.5]),
  m: Float32Array.from([0.1, 0.2, 0.3]),
  v: Float32Array.from([1e-3, 2e-3, 3e-3]),
});

Deno.test("stateHash hashes the documented bytes", () => {
  const s = state();
  const head = new Uint8Array([3, 0, 0, 0, 3, 0, 0, 0]);
  const want = createHash("sha256")
    .update(new TextEncoder().encode("ZST1"))
    .update(head)
    .update(new Uint8Array(s.params.buffer))
    .update(new Uint8Array(s.m.buffer))
    .update(new Uint8Array(s.v.buffer))
    .digest();
  assert.deepEqual(stateHash(s), new Uint8Array(want));
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

Deno.test("a state's encoding hashes to its stateHash and decodes back", () => {
  const s = state(7);
  const bytes = encodeState(s);
  assert.equal(bytes.length, stateByteLength(3));
  assert.deepEqual(
    new Uint8Array(createHash("sha256").update(bytes).digest()),
    stateHash(s),
  );
  // From an unaligned view, as a block read from disk may be.
  const padded = new Uint8Array(bytes.length + 1);
  padded.set(bytes, 1);
  assert.deepEqual(decodeState(padded.subarray(1), 3), s);
});

Deno.test("decodeState refuses other sizes, magic and counts", () => {
  const bytes = encodeState(state());
  assert.throws(() => decodeState(bytes, 4), ProtocolError);
  assert.throws(() => decodeState(bytes.subarray(1), 3), ProtocolError);
  const magic = bytes.slice();
  magic[0] ^= 1;
  assert.throws(() => decodeState(magic, 3), /ZST1/);
  const count = bytes.slice();
  count[8] = 4;
  assert.throws(() => decodeState(count, 3), /3 parameters/);
});
