import assert from "node:assert/strict";
import { cidForBytes, cidToString } from "../content/cid.ts";
import { ProtocolError } from "../errors.ts";
import { merkleRoot } from "../content/merkle.ts";
import {
  dataHash,
  decodeWorkRecord,
  encodeWorkRecord,
  segmentBounds,
  segmentCount,
  trajectoryRoot,
} from "./work_record.ts";

const states = await Promise.all(
  Array.from(
    { length: 17 },
    async (_, i) => cidToString(await cidForBytes(new Uint8Array([i]))),
  ),
);

Deno.test("segment bounds cover the round in at most 16 near-equal parts", () => {
  assert.deepEqual(segmentBounds(3), [0, 1, 2, 3]);
  const b = segmentBounds(100);
  assert.equal(b.length, 17);
  assert.equal(b[0], 0);
  assert.equal(b[16], 100);
  for (let k = 1; k < b.length; k++) {
    assert.ok(b[k] - b[k - 1] === 6 || b[k] - b[k - 1] === 7);
  }
  assert.equal(segmentCount(16), 16);
  assert.throws(() => segmentCount(0), ProtocolError);
});

Deno.test("a round cut short keeps the full round's bounds below where it stopped", () => {
  for (const H of [1, 7, 16, 50, 100, 333]) {
    const full = segmentBounds(H);
    for (let steps = 1; steps <= H; steps++) {
      const b = segmentBounds(steps, H);
      // A peer commits its states as it trains, not knowing where it
      // stops: every bound but the last must be one of the full round's.
      assert.deepEqual(b.slice(0, -1), full.filter((x) => x < steps));
      assert.equal(b.at(-1), steps);
      assert.equal(segmentCount(steps, H), b.length - 1);
    }
  }
  assert.throws(() => segmentBounds(101, 100), ProtocolError);
  assert.throws(() => segmentBounds(5, 0), ProtocolError);
});

Deno.test("a record round-trips, canonically, and its root is over the CIDs' digests", async () => {
  const record = {
    peers: ["12D3KooWb", "12D3KooWa"],
    weights: { "12D3KooWb": 1 },
    states,
    shifted: 0,
    from: "",
  };
  const bytes = encodeWorkRecord(record);
  const back = decodeWorkRecord(bytes, 40);
  assert.deepEqual(back.peers, ["12D3KooWa", "12D3KooWb"]);
  assert.deepEqual(back.weights, { "12D3KooWb": 1 });
  assert.deepEqual(back.states, states);
  // Full weights and unlisted peers are not written: one record, one CID.
  assert.deepEqual(
    encodeWorkRecord({
      ...record,
      weights: { "12D3KooWb": 1, "12D3KooWa": 4, "12D3KooWc": 2 },
    }),
    bytes,
  );
  const ahead = { ...record, shifted: 5, from: states[3] };
  assert.deepEqual(
    decodeWorkRecord(encodeWorkRecord(ahead), 40),
    { ...ahead, peers: back.peers },
  );
  const digests = await Promise.all(
    Array.from(
      { length: 17 },
      async (_, i) => (await cidForBytes(new Uint8Array([i]))).multihash.digest,
    ),
  );
  const root = merkleRoot(digests);
  assert.equal(
    trajectoryRoot(states),
    `0x${Array.from(root, (x) => x.toString(16).padStart(2, "0")).join("")}`,
  );
});

Deno.test("decodeWorkRecord refuses what is not a canonical record of the round", () => {
  const good = {
    peers: ["12D3KooWa"],
    weights: {},
    states,
    shifted: 0,
    from: "",
  };
  const w = {};
  const enc = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
  const rec = (x: Record<string, unknown>) =>
    enc({ from: "", peers: ["12D3KooWa"], shifted: 0, states, v: 3, ...x });
  const cases: [Uint8Array, RegExp][] = [
    [encodeWorkRecord({ ...good, states: states.slice(1) }), /states/],
    [rec({ v: 2, weights: w }), /v must/],
    [rec({ peers: [], weights: w }), /peers/],
    [rec({ peers: ["a b"], weights: w }), /peers/],
    [rec({ shifted: 4, weights: w }), /shifted/],
    [rec({ shifted: undefined, weights: w }), /shifted/],
    [rec({}), /weights/],
    [rec({ from: "bafyfoo", weights: w }), /from must be a CID/],
    [rec({ from: undefined, weights: w }), /from must be a CID/],
    // Training ahead starts where round r − 1 ended.
    [rec({ shifted: 5, weights: w }), /from must name a state/],
    ...[{ "12D3KooWb": 1 }, { "12D3KooWa": 4 }, { "12D3KooWa": 1.5 }, []].map((
      weights,
    ): [Uint8Array, RegExp] => [rec({ weights }), /weights/]),
    [rec({ weights: w, x: 1 }), /x is not/],
    [
      enc({
        v: 3,
        from: "",
        shifted: 0,
        states,
        peers: ["12D3KooWa"],
        weights: w,
      }),
      /canonical/,
    ],
    [new Uint8Array([0xff]), /JSON/],
    [new Uint8Array(70_000), /length/],
  ];
  for (const [bytes, why] of cases) {
    assert.throws(() => decodeWorkRecord(bytes, 40), why);
  }
  assert.throws(() => decodeWorkRecord(encodeWorkRecord(good), 8), /9 CIDs/);
  // 17 states are a full round of 40 steps, not one cut short at 20 (the
  // bounds 0, 2, 5, …, 17 and 20: 9 states).
  assert.throws(
    () => decodeWorkRecord(encodeWorkRecord(good), 20, 40),
    /9 CIDs/,
  );
  assert.equal(
    decodeWorkRecord(
      encodeWorkRecord({ ...good, states: good.states.slice(0, 9) }),
      20,
      40,
    ).states.length,
    9,
  );
});

Deno.test("the data hash names job, round, peer, the peer set in any order, the weights and where the round started", () => {
  const of = (
    peers: string[],
    weights: Record<string, number> = {},
    start = { shifted: 0, from: "" },
  ) => ({ peers, weights, ...start });
  const ab = of(["12D3KooWa", "12D3KooWb"]);
  const h = dataHash("job", 2, "12D3KooWa", of(["12D3KooWb", "12D3KooWa"]));
  assert.match(h, /^0x[0-9a-f]{64}$/);
  assert.equal(h, dataHash("job", 2, "12D3KooWa", ab));
  for (
    const other of [
      dataHash("job", 3, "12D3KooWa", ab),
      dataHash("job", 2, "12D3KooWb", ab),
      dataHash("job", 2, "12D3KooWa", of(["12D3KooWa"])),
      dataHash("jo", 2, "12D3KooWa", ab),
      dataHash("job", 2, "12D3KooWa", of(ab.peers, { "12D3KooWb": 1 })),
      dataHash("job", 2, "12D3KooWa", of(ab.peers, { "12D3KooWb": 2 })),
      dataHash(
        "job",
        2,
        "12D3KooWa",
        of(ab.peers, {}, { shifted: 0, from: states[0] }),
      ),
      dataHash(
        "job",
        2,
        "12D3KooWa",
        of(ab.peers, {}, { shifted: 2, from: states[0] }),
      ),
    ]
  ) assert.notEqual(other, h);
});
