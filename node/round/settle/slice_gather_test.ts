import assert from "node:assert/strict";
import { Rng } from "../../../kernels/data/rng.ts";
import { sliceBounds } from "../../../protocol/aggregation/shards.ts";
import type {
  GossipMessage,
  SlicePlanAnnounce,
} from "../../../protocol/messages/messages.ts";
import {
  MAX_PLAN_MESSAGES,
  plannedSlices,
  producedBy,
  sliceProducers,
} from "../../../protocol/round/slice_plan.ts";
import { cidToString } from "../../../protocol/content/cid.ts";
import {
  screenSharded,
  updateSlices,
} from "../../../protocol/round/slice_update.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import { claimedShare } from "../../../protocol/audit/inner_steps.ts";
import { MemoryBlocks, SPEC } from "../services/_fakes.ts";
import { gatherSlices, SliceReports } from "./slice_gather.ts";
import { type Plan, SliceProducer, SliceReadError } from "./slice_produce.ts";

const spec: JobSpec = { ...SPEC, sharding: "slices" };
const P = 4 * 8192;
const N = 8;
const PEERS = Array.from({ length: N }, (_, i) => `12D3KooWPeer${i}`);
const TOKENS = spec.innerSteps * spec.batchSize * spec.contextLength;
const PARENT = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";

const rng = new Rng("slice-gather");
const common = Float32Array.from({ length: P }, () => rng.normal());
const DELTAS = new Map(PEERS.map((peer, i) => [
  peer,
  Float32Array.from(
    common,
    (v) => 1e-3 * (v + 0.3 * rng.normal()) * (i === 3 ? 40 : 1),
  ),
]));

/**
 * How a producer misbehaves: its sums or update changed, silence, or its
 * sums (update) a block of garbage it stores and serves.
 */
type Fault =
  | "lying-sums"
  | "lying-update"
  | "silent"
  | "garbage-sums"
  | "garbage-update";

/**
 * N peers on one in-memory bus, each producing the slices it is drawn
 * for; PEERS[0] leads. `faults` by peer; `unserved` peers' deltas cannot
 * be read by anyone (by `withheldFrom` alone, when given).
 */
function network(
  faults: ReadonlyMap<string, Fault> = new Map(),
  unserved: readonly string[] = [],
  /** When given, only this peer is refused the `unserved` deltas. */
  withheldFrom?: string,
) {
  const stores = new Map(PEERS.map((p) => [p, new MemoryBlocks()]));
  const reads = new Map(PEERS.map((p) => [p, 0]));
  const computed = new Map(PEERS.map((p) => [p, 0]));
  const logged: string[] = [];
  /** Which peer read which delta's slice: it then serves those pieces. */
  const holds = new Set<string>();
  const reports = new SliceReports();
  const producers = new Map<string, SliceProducer>();
  const block = (cid: string, _max: number, providers: string[]) => {
    for (const p of [...providers, ...PEERS]) {
      const bytes = stores.get(p)!.blocks.get(cid);
      if (bytes) return Promise.resolve(bytes);
    }
    return Promise.reject(new Error(`${cid}: no provider`));
  };
  const publisherOf = (self: string) => ({
    header: <T extends string>(type: T, round: number, parent: string) => ({
      v: 1 as const,
      type,
      peer: self,
      job: "bafkjob",
      round,
      parent,
    }),
    publish: (msg: GossipMessage) => {
      if (msg.type === "plan") {
        for (const [peer, producer] of producers) {
          if (peer !== self) {
            producer.onPlan(msg as SlicePlanAnnounce).catch(() => {});
          }
        }
      } else if (msg.type === "slice") {
        const fault = faults.get(self);
        if (fault === "silent") return Promise.resolve();
        if (fault === "garbage-sums" || fault === "garbage-update") {
          // The same garbage from every producer of the fault: they agree.
          const garbage = new TextEncoder().encode(`garbage ${msg.slice}`);
          return stores.get(self)!.put(garbage).then((cid) => {
            const lie = fault === "garbage-sums" && msg.update === ""
              ? { sums: cidToString(cid) }
              : fault === "garbage-update" && msg.update !== ""
              ? { update: cidToString(cid) }
              : {};
            reports.take({ ...msg, ...lie });
          });
        }
        const lie = fault === "lying-sums" && msg.update === ""
          ? { sums: PARENT }
          : fault === "lying-update" && msg.update !== ""
          ? { update: PARENT }
          : {};
        reports.take({ ...msg, ...lie });
      }
      return Promise.resolve();
    },
  });
  for (const peer of PEERS) {
    producers.set(
      peer,
      new SliceProducer({
        spec,
        self: peer,
        parameterCount: P,
        readSlice: (d, k, j, providers) => {
          reads.set(peer, reads.get(peer)! + 1);
          // Withheld by its author; served by a provider that read it.
          const withheld = unserved.includes(d.peer) &&
            (withheldFrom === undefined || withheldFrom === peer) &&
            !providers.some((p) => holds.has(`${p} ${d.peer} ${k} ${j}`));
          if (withheld) {
            return Promise.reject(new Error(`${d.peer} serves nothing`));
          }
          holds.add(`${peer} ${d.peer} ${k} ${j}`);
          const b = sliceBounds(P, k);
          return Promise.resolve(DELTAS.get(d.peer)!.slice(b[j], b[j + 1]));
        },
        block,
        store: (bytes) => stores.get(peer)!.put(bytes),
        publisher: publisherOf(peer),
        computed: () => computed.set(peer, computed.get(peer)! + 1),
        current: () => true,
        log: (line) => logged.push(line),
      }),
    );
  }
  const plan: Plan = {
    job: "bafkjob",
    round: 0,
    parent: PARENT,
    peer: PEERS[0],
    pass: 1,
    deltas: PEERS.map((peer) => ({
      peer,
      delta: PARENT,
      tokens: TOKENS,
    })),
  };
  const k = plannedSlices(N, P);
  const gather = () =>
    gatherSlices(
      {
        spec,
        self: PEERS[0],
        producer: producers.get(PEERS[0])!,
        reports,
        publisher: publisherOf(PEERS[0]),
        block,
        waitMs: 1_000,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
        log: (line) => logged.push(line),
      },
      plan,
      0,
      k,
    );
  return { gather, reads, computed, logged, k, producers, plan };
}

/** The update and screen the whole deltas make. */
function whole() {
  const deltas = PEERS.map((peer) => ({
    peer,
    tokens: TOKENS,
    delta: DELTAS.get(peer)!,
    share: claimedShare(spec, TOKENS),
  }));
  const screen = screenSharded(deltas);
  const out = new Set(screen.excluded.map((e) => e.peer));
  return {
    screen,
    update: updateSlices(spec, screen, deltas.filter((d) => !out.has(d.peer))),
  };
}

Deno.test("gatherSlices: producers holding only their slices give the leader, bit for bit, the screen and update of the whole deltas; none reads past its share", async () => {
  const net = network();
  assert.equal(net.k, 4);
  const got = await net.gather();
  const expected = whole();
  assert.deepEqual(got.screen.excluded, expected.screen.excluded);
  assert.ok(got.screen.excluded.some((e) => e.peer === PEERS[3]));
  assert.deepEqual(got.update, expected.update);
  // Two producers a slice, the leader none (it reads every slice's sums),
  // each other peer at most its share: ⌈2 · 4 / 7⌉ slices, so 2N reads.
  for (const [peer, n] of net.reads) {
    assert.ok(n <= 2 * N, `${peer} read ${n} slices of deltas`);
  }
  assert.equal(net.reads.get(PEERS[0]) ?? 0, 0);
  // Each peer its slices' sums and updates, the leader none.
  const producers = sliceProducers(net.plan.parent, PEERS[0], net.k, PEERS);
  assert.deepEqual(
    [...net.computed.entries()],
    PEERS.map((p) => [p, 2 * producedBy(producers, p).length]),
  );
  assert.equal(net.computed.get(PEERS[0]), 0);
  // Each producer remembers what it published, to check the manifest's
  // slices without a fetch (manifest_check.ts).
  const { round, parent, peer, deltas } = net.plan;
  let remembered = 0;
  for (const [p, producer] of net.producers) {
    if (p === PEERS[0]) continue;
    for (const [j, cids] of producer.produced(round, parent, peer, deltas)) {
      assert.deepEqual(cids, { sums: got.sums[j], update: got.updateCids[j] });
      remembered++;
    }
    assert.equal(
      producer.produced(round, parent, peer, deltas.slice(1)).size,
      0,
    );
  }
  assert.ok(remembered >= 2 * net.k - 2, `${remembered}`);
  assert.deepEqual(net.logged, []);
});

Deno.test("gatherSlices: a lying or silent producer is outvoted by the other and the slice's backup; the leader computes nothing more", async () => {
  const expected = whole();
  for (const fault of ["lying-sums", "lying-update", "silent"] as const) {
    const net = network(new Map([[PEERS[5], fault]]));
    const got = await net.gather();
    assert.deepEqual(got.update, expected.update, fault);
    assert.ok(
      net.logged.some((l) => l.includes("asked the backups of 1 of 4 slices")),
      `${fault}: ${JSON.stringify(net.logged)}`,
    );
    assert.ok(
      !net.logged.some((l) => l.includes("left unsettled")),
      JSON.stringify(net.logged),
    );
    // The backup computed the steps a silent producer left undone, or the
    // one a liar lied in, on top of the 16 of a round without faults (4
    // slices, 2 producers, 2 steps).
    const total = [...net.computed.values()].reduce((a, b) => a + b, 0);
    assert.equal(total, fault === "silent" ? 18 : 17, fault);
    assert.ok(net.computed.get(PEERS[0])! <= 4, fault);
    // The manifest names the backup in the faulty producer's place: its
    // fetchers ask the backup, not all the other producer.
    const producers = sliceProducers(net.plan.parent, PEERS[0], net.k, PEERS);
    const [j] = producedBy(producers, PEERS[5]);
    assert.equal(got.backups.length, 1, fault);
    const [b] = got.backups;
    assert.deepEqual([b.slice, b.replaces], [j, PEERS[5]], fault);
    assert.ok(!producers[j].includes(b.peer) && b.peer !== PEERS[0], fault);
    if (fault !== "silent") {
      assert.ok(
        net.logged.some((l) => l.includes(`from ${PEERS[5]} is not the one`)),
        JSON.stringify(net.logged),
      );
    }
  }
});

Deno.test("gatherSlices: a slice neither its producers nor its backup settle, the leader computes", async () => {
  const net = network(new Map(PEERS.slice(1).map((p) => [p, "silent"])));
  const got = await net.gather();
  assert.deepEqual(got.update, whole().update);
  assert.ok(
    net.logged.some((l) => l.includes("that their producers left unsettled")),
    JSON.stringify(net.logged),
  );
});

Deno.test("gatherSlices: a slice's producers agreeing on a block of garbage settle nothing: the leader computes it and names them", async () => {
  const expected = whole();
  const k = plannedSlices(N, P);
  const producers = sliceProducers(PARENT, PEERS[0], k, PEERS);
  const j = producers.findIndex((ps) => !ps.includes(PEERS[0]));
  for (const fault of ["garbage-sums", "garbage-update"] as const) {
    const net = network(new Map(producers[j].map((p) => [p, fault])));
    const got = await net.gather();
    assert.deepEqual(got.update, expected.update, fault);
    assert.ok(
      net.logged.some((l) =>
        l.includes(`slice ${j}'s`) && l.includes("cannot be used")
      ),
      `${fault}: ${JSON.stringify(net.logged)}`,
    );
    for (const p of producers[j]) {
      assert.ok(
        net.logged.some((l) => l.includes(`from ${p} is not the one taken`)),
        `${fault}: ${JSON.stringify(net.logged)}`,
      );
    }
  }
});

Deno.test("gatherSlices: a delta whose slice no one can read ends the plan, naming it", async () => {
  const net = network(new Map(), [PEERS[6]]);
  const err = await net.gather().then(() => null, (e) => e);
  assert.ok(err instanceof SliceReadError, String(err));
  assert.deepEqual(err.failed.map((f) => f.peer), [PEERS[6]]);
  // The slice the leader could not read, for the manifest's exclusion.
  assert.equal(err.slices, net.k);
  assert.ok(err.slice >= 0 && err.slice < net.k);
});

Deno.test("gatherSlices: a delta withheld from the leader alone counts, read by its slices' producers", async () => {
  const net = network(new Map(), [PEERS[6]], PEERS[0]);
  const got = await net.gather();
  assert.deepEqual(got.update, whole().update);
  // Each producer remembers it read that delta's slices: a leader saying
  // it could not would be caught by them (manifest_check.ts).
  const producers = sliceProducers(net.plan.parent, PEERS[0], net.k, PEERS);
  for (const [j, ps] of producers.entries()) {
    for (const p of ps) {
      assert.ok(
        net.producers.get(p)!.readSliceOf(
          net.plan.round,
          net.plan.parent,
          PEERS[0],
          net.k,
          j,
          PEERS[6],
        ),
        `${p} slice ${j}`,
      );
    }
  }
  assert.equal(
    net.producers.get(producers[0][0])!.readSliceOf(
      net.plan.round,
      net.plan.parent,
      PEERS[1],
      net.k,
      0,
      PEERS[6],
    ),
    false,
  );
  assert.ok(
    !net.logged.some((l) => l.includes("left unsettled")),
    JSON.stringify(net.logged),
  );
});

Deno.test("gatherSlices: a delta withheld from the leader alone counts when the leader must compute its slice: read from the slice's producers", async () => {
  const k = plannedSlices(N, P);
  const producers = sliceProducers(PARENT, PEERS[0], k, PEERS);
  const j = producers.findIndex((ps) => !ps.includes(PEERS[0]));
  const [liar, honest] = producers[j];
  // Its producers disagree on slice j's update and every other peer is
  // silent, so the backup settles nothing: the leader computes slice j.
  const faults = new Map<string, Fault>(
    PEERS.slice(1).map((p) => [p, p === liar ? "lying-update" : "silent"]),
  );
  faults.delete(honest);
  const withheld = PEERS.find((p) => p !== PEERS[0] && p !== honest)!;
  const net = network(faults, [withheld], PEERS[0]);
  const got = await net.gather();
  assert.deepEqual(got.update, whole().update);
  assert.ok(
    net.logged.some((l) => l.includes("left unsettled")),
    JSON.stringify(net.logged),
  );
});

Deno.test("SliceProducer works on two plans of one pass with other deltas each as itself", async () => {
  const net = network();
  const producer = net.producers.get(PEERS[1])!;
  const k = plannedSlices(N, P);
  const all = await producer.sums(net.plan, k, 0);
  // The same leader and pass, one delta fewer (a liar's second plan).
  const fewer = { ...net.plan, deltas: net.plan.deltas.slice(1) };
  const some = await producer.sums(fewer, k, 0);
  const fresh = await net.producers.get(PEERS[2])!.sums(fewer, k, 0);
  assert.equal(some.sums.sums.length, N - 1);
  assert.equal(some.cid, fresh.cid);
  assert.notEqual(some.cid, all.cid);
});

Deno.test("SliceProducer works on at most MAX_PLAN_MESSAGES plans of one leader a round", async () => {
  const net = network();
  const msg: SlicePlanAnnounce = {
    v: 1,
    type: "plan",
    ...net.plan,
    rank: 0,
    sums: [],
    groups: [],
    extra: [],
  };
  const producer = net.producers.get(PEERS[1])!;
  const slices = (leader: string) =>
    producedBy(
      sliceProducers(net.plan.parent, leader, net.k, PEERS),
      PEERS[1],
    ).length;
  for (let i = 0; i < MAX_PLAN_MESSAGES + 5; i++) await producer.onPlan(msg);
  // Its slices' sums, once a plan (read once).
  assert.equal(
    net.computed.get(PEERS[1]),
    MAX_PLAN_MESSAGES * slices(PEERS[0]),
  );
  // Another leader's plans are counted apart.
  await producer.onPlan({ ...msg, peer: PEERS[2] });
  assert.equal(
    net.computed.get(PEERS[1]),
    MAX_PLAN_MESSAGES * slices(PEERS[0]) + slices(PEERS[2]),
  );
});
