import { deepStrictEqual, notDeepStrictEqual, ok, throws } from "node:assert";
import { createHash } from "node:crypto";
import {
  assignChunks,
  chunkScore,
  leaderScore,
  rankLeaders,
} from "./assignment.ts";

const JOB = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const PEERS = Array.from(
  { length: 10 },
  (_, i) => `12D3KooW${"ABCDEFGHJK"[(i * 7) % 10]}peer${i}`,
);

function hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function shuffled<T>(items: readonly T[], seed: number): T[] {
  // A fixed permutation per seed is enough to show order independence.
  return [...items].sort((a, b) =>
    hex(`${seed}${a}`) < hex(`${seed}${b}`) ? -1 : 1
  );
}

Deno.test("assignChunks gives each chunk to the highest-scoring peer", () => {
  const shares = assignChunks({ job: JOB, round: 4, peers: PEERS, chunks: 50 });
  for (let chunk = 0; chunk < 50; chunk++) {
    // The spec, written out independently: the max of the hex digests.
    const scores = PEERS.map((p) => [hex(`${JOB}\0${4}\0${chunk}\0${p}`), p]);
    const winner = scores.sort().at(-1)![1];
    ok(shares.get(winner)!.includes(chunk), `chunk ${chunk} not at ${winner}`);
  }
  deepStrictEqual(
    toHex(chunkScore(JOB, 4, 7, PEERS[0])),
    hex(`${JOB}\x004\x007\x00${PEERS[0]}`),
  );
});

Deno.test("assignChunks is disjoint, covering, sorted and order-independent", () => {
  const shares = assignChunks({
    job: JOB,
    round: 1,
    peers: PEERS,
    chunks: 1000,
  });
  deepStrictEqual([...shares.keys()], [...PEERS].sort());
  const all = [...shares.values()].flat().sort((a, b) => a - b);
  deepStrictEqual(all, Array.from({ length: 1000 }, (_, i) => i));
  for (const chunks of shares.values()) {
    deepStrictEqual(chunks, [...chunks].sort((a, b) => a - b));
    // 100 expected each; hashing spreads them, without wild imbalance.
    ok(chunks.length > 60 && chunks.length < 140, `${chunks.length} chunks`);
  }
  for (const seed of [1, 2, 3]) {
    deepStrictEqual(
      assignChunks({
        job: JOB,
        round: 1,
        peers: shuffled(PEERS, seed),
        chunks: 1000,
      }),
      shares,
    );
  }
});

Deno.test("assignChunks depends on the job and the round", () => {
  const base = assignChunks({ job: JOB, round: 1, peers: PEERS, chunks: 200 });
  notDeepStrictEqual(
    assignChunks({ job: JOB, round: 2, peers: PEERS, chunks: 200 }),
    base,
  );
  notDeepStrictEqual(
    assignChunks({ job: `${JOB}x`, round: 1, peers: PEERS, chunks: 200 }),
    base,
  );
});

Deno.test("removing a peer moves only that peer's chunks", () => {
  const before = assignChunks({
    job: JOB,
    round: 9,
    peers: PEERS,
    chunks: 500,
  });
  for (const gone of PEERS) {
    const after = assignChunks({
      job: JOB,
      round: 9,
      peers: PEERS.filter((p) => p !== gone),
      chunks: 500,
    });
    for (const peer of PEERS) {
      if (peer === gone) continue;
      const kept = before.get(peer)!;
      const now = after.get(peer)!;
      // Everything the peer had it keeps; it only gains the leaver's chunks.
      ok(kept.every((c) => now.includes(c)), `${peer} lost a chunk`);
      ok(now.every((c) => kept.includes(c) || before.get(gone)!.includes(c)));
    }
  }
});

Deno.test("a peer of weight 1 beside peers of weight 4 gets a quarter of their chunks", () => {
  const [slow, ...fast] = PEERS.slice(0, 4);
  const counts = new Map<string, number>(PEERS.slice(0, 4).map((p) => [p, 0]));
  // Chunk shares from hashing are noisy; summed over rounds they are not.
  for (let round = 0; round < 20; round++) {
    const shares = assignChunks({
      job: JOB,
      round,
      peers: PEERS.slice(0, 4),
      chunks: 500,
      weights: { [slow]: 1 },
    });
    for (const [p, c] of shares) counts.set(p, counts.get(p)! + c.length);
  }
  // Expected 1/13 of 10,000 chunks (769) and 4/13 (3077) each.
  const got = counts.get(slow)!;
  ok(got > 650 && got < 890, `slow peer got ${got} chunks`);
  for (const p of fast) {
    ok(counts.get(p)! > 2850 && counts.get(p)! < 3300, `${counts.get(p)}`);
  }
  // The draws are the spec: draw 0 is the unweighted score, draw d adds d.
  deepStrictEqual(
    toHex(chunkScore(JOB, 4, 7, PEERS[0], 3)),
    hex(`${JOB}\x004\x007\x00${PEERS[0]}\x003`),
  );
  deepStrictEqual(
    chunkScore(JOB, 4, 7, PEERS[0], 0),
    chunkScore(JOB, 4, 7, PEERS[0]),
  );
});

Deno.test("equal weights assign as no weights, and a weighted leaver's chunks only move", () => {
  const assign = (weights?: Record<string, number>, peers = PEERS) =>
    assignChunks({ job: JOB, round: 3, peers, chunks: 300, weights });
  const base = assign();
  for (const w of [1, 2, 3, 4]) {
    deepStrictEqual(assign(Object.fromEntries(PEERS.map((p) => [p, w]))), base);
  }
  // Weights 2 and 4 draw as 1 and 2 do.
  const halves = Object.fromEntries(PEERS.map((p, i) => [p, i % 2 ? 2 : 4]));
  const ones = Object.fromEntries(PEERS.map((p, i) => [p, i % 2 ? 1 : 2]));
  const weighted = assign(halves);
  deepStrictEqual(assign(ones), weighted);
  const gone = PEERS[1];
  const after = assign(halves, PEERS.filter((p) => p !== gone));
  for (const [peer, now] of after) {
    ok(weighted.get(peer)!.every((c) => now.includes(c)), `${peer} lost one`);
  }
});

Deno.test("assignChunks handles edge counts and rejects bad input", () => {
  deepStrictEqual(
    assignChunks({ job: JOB, round: 0, peers: [], chunks: 0 }),
    new Map(),
  );
  deepStrictEqual(
    assignChunks({ job: JOB, round: 0, peers: ["solo"], chunks: 3 }),
    new Map([["solo", [0, 1, 2]]]),
  );
  const bad: [Parameters<typeof assignChunks>[0], RegExp][] = [
    [{ job: JOB, round: 0, peers: [], chunks: 1 }, /at least one peer/],
    [{ job: JOB, round: -1, peers: ["a"], chunks: 1 }, /round must be/],
    [{ job: JOB, round: 0.5, peers: ["a"], chunks: 1 }, /round must be/],
    [{ job: JOB, round: 0, peers: ["a"], chunks: NaN }, /chunks must be/],
    [
      { job: JOB, round: 0, peers: ["a", "a"], chunks: 1 },
      /"a" is listed twice/,
    ],
    [{ job: "", round: 0, peers: ["a"], chunks: 1 }, /job .* non-empty/],
    [{ job: JOB, round: 0, peers: ["a\0b"], chunks: 1 }, /without NUL/],
    ...[0, 5, 1.5, NaN].map((
      w,
    ): [Parameters<typeof assignChunks>[0], RegExp] => [
      { job: JOB, round: 0, peers: ["a"], chunks: 1, weights: { a: w } },
      /weight of a must be an integer in 1..4/,
    ]),
  ];
  for (const [params, message] of bad) {
    throws(() => assignChunks(params), message);
  }
});

Deno.test("rankLeaders sorts by sha256(parent ‖ 0x00 ‖ peer), ascending", () => {
  const parent = "bafkreiparentcheckpoint";
  const expected = [...PEERS].sort((a, b) =>
    hex(`${parent}\0${a}`) < hex(`${parent}\0${b}`) ? -1 : 1
  );
  deepStrictEqual(rankLeaders(parent, PEERS), expected);
  for (const seed of [4, 5]) {
    deepStrictEqual(rankLeaders(parent, shuffled(PEERS, seed)), expected);
  }
  // A new checkpoint reshuffles who leads.
  notDeepStrictEqual(rankLeaders(`${parent}2`, PEERS), expected);
  deepStrictEqual(rankLeaders(parent, []), []);
  throws(() => rankLeaders(parent, ["x", "x"]), /listed twice/);
  throws(() => rankLeaders("", ["x"]), TypeError);
});

Deno.test("the separator keeps concatenations unambiguous", () => {
  // Without the 0x00, ("cid", "Xpeer") and ("cidX", "peer") would collide.
  notDeepStrictEqual(leaderScore("cid", "Xpeer"), leaderScore("cidX", "peer"));
  notDeepStrictEqual(chunkScore("j", 1, 23, "p"), chunkScore("j", 12, 3, "p"));
  deepStrictEqual(
    toHex(leaderScore("cid", "Xpeer")),
    hex("cid\0Xpeer"),
  );
});
