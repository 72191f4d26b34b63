import { FULL_TIER } from "../../../tests/_tier.ts";
import {
  cidForBytes,
  cidFromDigest,
  cidToString,
} from "../../../protocol/content/cid.ts";
import {
  decodeStateHead,
  momentsDigest,
  STATE_PART_CODEC,
} from "../../../protocol/content/state_hash.ts";
import assert from "node:assert/strict";
import { chunkDataset } from "../../../protocol/content/dataset.ts";
import { createJsBackend } from "../../../kernels/js_backend.ts";
import { createCpuTrainer } from "../../../kernels/trainer.ts";
import {
  defaultJobSpec,
  type JobSpec,
} from "../../../protocol/spec/job_spec.ts";
import { genesisCheckpoint } from "../../../protocol/round/round_checkpoint.ts";
import { decodeDeltaBlob } from "../../../protocol/round/delta_blob.ts";
import { HONEST } from "../services/behaviour.ts";
import { RoundLedger } from "../records/ledger.ts";
import { RoundTrainer } from "../trainer/inner_loop.ts";
import { RoundTraining, type TrainedDelta } from "./train.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import { KEEP_STATE_ROUNDS } from "../trainer/state_window.ts";
import {
  decodeWorkRecord,
  segmentBounds,
} from "../../../protocol/audit/work_record.ts";
import {
  claimedSteps,
  EARLY_STOP_FROM,
} from "../../../protocol/audit/inner_steps.ts";

const H = 20;
const bytes = new TextEncoder().encode(
  "the peer trains a round and signs the manifest by noon. ".repeat(300),
);
const dataset = await chunkDataset(bytes, 1024);
const spec: JobSpec = defaultJobSpec({
  dataset: { cid: dataset.id, valFraction: 0.2 },
  model: { contextLength: 16, dModel: 32, heads: 2, layers: 1 },
  innerSteps: H,
  batchSize: 4,
  rounds: 5,
  inner: { maxLr: 1e-2, minLr: 1e-3, warmupSteps: 2 },
});
const genesis = genesisCheckpoint("bafkreijob", spec.model, spec.seed).params;
/** The moments digest of a round started from zero moments. */
const ZERO = momentsDigest({
  m: new Float32Array(genesis.length),
  v: new Float32Array(genesis.length),
});

/** θ_local(0): round 0 trained from genesis (the trainer is deterministic). */
async function local0(): Promise<Float32Array> {
  return (await setup().trainer.trainRound({
    round: 0,
    params: genesis,
    chunks: [],
  })).params;
}

/**
 * A RoundTraining on the JS backend, with what it delivered and stored.
 * Each step of a round in `slowRounds` takes 50 ms more, so that round is
 * still training when the test moves on.
 */
function setup(
  jobSpec = spec,
  slowRounds: readonly number[] = [],
  startSpeed?: number,
) {
  const trainer = new RoundTrainer({
    createTrainer: (init) => {
      const cpu = createCpuTrainer(createJsBackend(), init);
      const step = cpu.step.bind(cpu);
      cpu.step = async (batch, lr) => {
        const round = Math.floor(cpu.optimizerStep / jobSpec.innerSteps);
        if (slowRounds.includes(round)) {
          await new Promise((r) => setTimeout(r, 50));
        }
        return await step(batch, lr);
      };
      return cpu;
    },
    spec: jobSpec,
    dataset,
    peerId: "peerA",
  });
  const ledger = new RoundLedger(jobSpec, trainer.parameterCount);
  const state = {
    round: 0,
    live: ["peerA"] as readonly string[],
    deltas: new Map<string, DeltaAnnounce>(),
    early: [] as { msg: DeltaAnnounce; at: number }[],
  };
  const blocks = new Map<string, Uint8Array>();
  const delivered: TrainedDelta[] = [];
  /** Set to make announcements fail. */
  const faults = { announce: false };
  /** What the manifests of a round list of this peer (see `listed`). */
  const listing = { value: "bafkreidelta" as string | null | undefined };
  /**
   * What the manifest the chain committed lists of this peer, fetched
   * (see `known`) when no manifest is held; undefined: none to be had.
   */
  const committed = { value: undefined as string | null | undefined };
  /** Rounds whose committed manifest was asked for. */
  const asked: number[] = [];
  /** Throughputs the other peers' heartbeats reported. */
  const speeds = new Map<string, number>();
  const training = new RoundTraining({
    jobId: "bafkreijob",
    peerId: "peerA",
    spec: jobSpec,
    trainer,
    ledger,
    state: () => state,
    throughput: (peer) => speeds.get(peer) ?? 0,
    startSpeed,
    progress: () => {},
    store: async (b, codec) => {
      const cid = cidToString(await cidForBytes(b, codec));
      blocks.set(cid, b);
      return cid;
    },
    drop: (cid) => {
      blocks.delete(cid);
      return Promise.resolve();
    },
    announce: (d) => {
      if (faults.announce) return Promise.reject(new Error("publish failed"));
      delivered.push(d);
      return Promise.resolve();
    },
    signal: new AbortController().signal,
    behaviour: HONEST,
    announced: () => Promise.resolve([]),
    listed: () => listing.value,
    known: (round) => {
      if (listing.value === undefined) {
        asked.push(round);
        listing.value = committed.value;
      }
      return Promise.resolve();
    },
  });
  const delta = (d: TrainedDelta) =>
    decodeDeltaBlob(
      blocks.get(d.cid)!,
      { job: "bafkreijob", round: d.round, parent: d.parent, peer: "peerA" },
      trainer.parameterCount,
    );
  /** Inner steps taken in `round` so far. */
  const stepsIn = (round: number) =>
    ledger.steps.since(0).filter((s) => s.round === round).length;
  /** The work record of the delta delivered for `round`. */
  const record = (round: number) => {
    const d = delivered.find((x) => x.round === round)!;
    return decodeWorkRecord(blocks.get(d.work)!, d.steps, H);
  };
  /** The moments digest of the stored state `cid`. */
  const moments = (cid: string) =>
    decodeStateHead(blocks.get(cid)!, genesis.length).moments;
  return {
    record,
    moments,
    trainer,
    state,
    training,
    delivered,
    delta,
    stepsIn,
    blocks,
    speeds,
    faults,
    listing,
    committed,
    asked,
  };
}

/** Root mean square of a vector. */
function rms(x: Float32Array): number {
  return Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);
}

/** Resolves once `ok()` holds (polling), or fails after 10 s. */
async function until(ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 2));
  }
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    worst = Math.max(worst, Math.abs(a[i] - b[i]));
  }
  return worst;
}

Deno.test(
  "RoundTraining: a round's delta is C(r) − θ_end, as trained from C(r)",
  FULL_TIER,
  async () => {
    const { training, delivered, delta } = setup();
    await training.train(0, "bafkreic0", genesis);
    assert.equal(delivered.length, 1);
    assert.equal(delivered[0].round, 0);
    assert.equal(delivered[0].parent, "bafkreic0");
    assert.equal(delivered[0].steps, H);
    // The same steps on a fresh trainer give θ_end; the delta is int4 (the
    // default), so it matches within a quantization step.
    const end = await local0();
    const want = Float32Array.from(genesis, (g, i) => g - end[i]);
    const got = delta(delivered[0]);
    const scale = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    assert.ok(scale > 0);
    assert.ok(maxAbsDiff(got, want) <= scale / 7, "delta off by a step");
  },
);

Deno.test(
  "RoundTraining: each round's states are stored by CID, in its work record, and kept for KEEP_STATE_ROUNDS rounds",
  FULL_TIER,
  async () => {
    const { training, delivered, blocks, state } = setup();
    const rounds = KEEP_STATE_ROUNDS + 1;
    for (let r = 0; r < rounds; r++) {
      state.round = r;
      await training.train(r, `bafkreic${r}`, genesis);
    }
    const statesOf = (d: TrainedDelta) =>
      decodeWorkRecord(blocks.get(d.work)!, H).states;
    assert.equal(statesOf(delivered[0]).length, segmentBounds(H).length);
    // Round 0's states are gone but its last, which round 1, still kept,
    // continues.
    assert.ok(
      statesOf(delivered[0]).slice(0, -1).every((cid) => !blocks.has(cid)),
      "round 0's states are gone",
    );
    for (const d of delivered.slice(1)) {
      // The state its moments continue, the end of the round before: its
      // audits check its start against it.
      const { from } = decodeWorkRecord(blocks.get(d.work)!, H);
      assert.ok(from !== "" && blocks.has(from), `round ${d.round}: ${from}`);
      // Every block of every state kept, the moments a round starts with
      // (those the round before ended with, deleted with it) included.
      for (const cid of statesOf(d)) {
        const head = decodeStateHead(blocks.get(cid)!, genesis.length);
        for (const digest of [head.params, head.moments]) {
          const part = cidToString(cidFromDigest(digest, STATE_PART_CODEC));
          assert.ok(blocks.has(part), `round ${d.round}: ${part}`);
        }
      }
    }
  },
);

Deno.test(
  "RoundTraining: trained ahead from an estimate equal to C(r+1) gives round r+1 trained from it",
  FULL_TIER,
  async () => {
    const ahead = setup();
    await ahead.training.train(0, "bafkreic0", genesis);
    const start = await local0();
    const running = ahead.training.trainAhead(1, start);
    // C(1) equal to the estimate: the move onto it is zero.
    ahead.state.round = 1;
    await ahead.training.rebase(1, "bafkreic1", start);
    await running;
    assert.deepEqual(ahead.delivered.map((d) => [d.round, d.parent]), [
      [0, "bafkreic0"],
      [1, "bafkreic1"],
    ]);

    const plain = setup();
    await plain.training.train(0, "bafkreic0", genesis);
    plain.state.round = 1;
    await plain.training.train(1, "bafkreic1", start);
    assert.deepEqual(
      ahead.delta(ahead.delivered[1]),
      plain.delta(plain.delivered[1]),
    );
  },
);

Deno.test(
  "RoundTraining: a checkpoint other than the estimate moves the steps trained ahead",
  FULL_TIER,
  async () => {
    const t = setup();
    await t.training.train(0, "bafkreic0", genesis);
    const start = await local0();
    const running = t.training.trainAhead(1, start);
    t.state.round = 1;
    // A C(1) 1.0 away from the estimate in every coordinate: the
    // rest of the round starts from it, so θ_end lies near it and the delta
    // is only the round's own progress. AdamW moves a parameter at most lr
    // (1e-2) a step, 0.2 in 20 steps; without the move the delta would
    // carry the whole offset, 1.0 in every coordinate.
    const c1 = Float32Array.from(start, (x, i) => x + (i % 2 ? 1 : -1));
    await t.training.rebase(1, "bafkreic1", c1);
    await running;
    const d1 = rms(t.delta(t.delivered[1]));
    assert.ok(d1 > 0 && d1 < 0.25, `rms of Δ1 ${d1}`);
  },
);

Deno.test(
  "RoundTraining: ahead, a tenth of the steps run, then it waits; two such rounds in a row stay on their checkpoints",
  FULL_TIER,
  async () => {
    const t = setup();
    await t.training.train(0, "bafkreic0", genesis);
    let base = await local0();
    for (const round of [1, 2]) {
      const running = t.training.trainAhead(round, base);
      // H/10 steps on the estimated base, then the hold: no more come.
      await until(() => t.stepsIn(round) === H / 10);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(t.stepsIn(round), H / 10, `round ${round} held`);
      // Its checkpoint arrives late and 1.0 away in every coordinate.
      const c = Float32Array.from(base, (x, i) => x + (i % 2 ? 1 : -1));
      t.state.round = round;
      await t.training.rebase(round, `bafkreic${round}`, c);
      await running;
      const d = rms(t.delta(t.delivered[round]));
      // Only the round's own progress (at most 0.2 here): an offset left in
      // the parameters from the round before would show as ~1.0.
      assert.ok(d > 0 && d < 0.25, `rms of Δ${round} ${d}`);
      base = c;
    }
  },
);

Deno.test(
  "RoundTraining: with H < 10 nothing is trained ahead of the checkpoint",
  FULL_TIER,
  async () => {
    const short = { ...spec, innerSteps: 5 };
    const t = setup(short);
    await t.training.train(0, "bafkreic0", genesis);
    const running = t.training.trainAhead(1, genesis);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(t.stepsIn(1), 0);
    t.state.round = 1;
    await t.training.rebase(1, "bafkreic1", genesis);
    await running;
    assert.equal(t.stepsIn(1), 5);
    assert.deepEqual(t.delivered.map((d) => d.round), [0, 1]);
  },
);

Deno.test(
  "RoundTraining: a round trained ahead that the chain skips is dropped, not delivered",
  FULL_TIER,
  async () => {
    const t = setup();
    await t.training.train(0, "bafkreic0", genesis);
    const running = t.training.trainAhead(1, genesis);
    // The chain jumps to round 2: it is trained from C(2), the work ahead
    // on round 1 is abandoned.
    await until(() => t.stepsIn(1) > 0);
    t.state.round = 2;
    await t.training.train(2, "bafkreic2", genesis);
    await running;
    assert.deepEqual(t.delivered.map((d) => d.round), [0, 2]);
    assert.ok(t.stepsIn(1) < H, "round 1 was cut short");
  },
);

Deno.test(
  "RoundTraining: rebase without work ahead trains the round from its checkpoint",
  FULL_TIER,
  async () => {
    const t = setup();
    await t.training.rebase(0, "bafkreic0", genesis);
    assert.deepEqual(t.delivered.map((d) => [d.round, d.parent]), [
      [0, "bafkreic0"],
    ]);
  },
);

Deno.test(
  "RoundTraining: a peer far slower than most takes a share of the steps its throughput allows, and says so in its tokens",
  FULL_TIER,
  async () => {
    const { training, delivered, blocks, state, speeds } = setup();
    state.live = ["peerA", "peerB", "peerC"];
    // Nothing is known of anyone's speed in a first round: a full share.
    await training.train(0, "bafkreic0", genesis);
    assert.equal(delivered[0].steps, H);
    // Its peers then report far more than it measured of itself.
    speeds.set("peerB", 1e11).set("peerC", 1e11);
    state.round = 1;
    await training.train(1, "bafkreic1", genesis);
    const slow = delivered[1];
    assert.equal(slow.steps, 1);
    assert.equal(slow.tokens, spec.batchSize * spec.contextLength);
    assert.equal(claimedSteps(spec, slow.tokens), 1);
    const record = decodeWorkRecord(blocks.get(slow.work)!, 1, H);
    assert.equal(record.states.length, segmentBounds(1, H).length);
    // One peer as slow as it and one as fast: the upper median is its own
    // speed, so it takes a full share again.
    speeds.set("peerB", 1);
    state.round = 2;
    await training.train(2, "bafkreic2", genesis);
    assert.equal(delivered[2].steps, H);
  },
);

Deno.test(
  "RoundTraining: a speed measured before the first step (a priced job's benchmark) sizes the first round's share",
  FULL_TIER,
  async () => {
    const { training, delivered, state, speeds } = setup(spec, [], 1);
    state.live = ["peerA", "peerB", "peerC"];
    speeds.set("peerB", 1e11).set("peerC", 1e11);
    // Its benchmark said it is far slower than the others report: round 0
    // is already a small share, not a full one.
    await training.train(0, "bafkreic0", genesis);
    assert.equal(delivered[0].steps, 1);
  },
);

Deno.test(
  "RoundTraining: a round committed without this peer stops training when the next one starts, which is delivered",
  FULL_TIER,
  async () => {
    // Slowed down, so round 0 is still training when round 1 comes.
    const { training, delivered, state, stepsIn } = setup(spec, [0]);
    const late = training.train(0, "bafkreic0", genesis);
    await until(() => stepsIn(0) >= 1);
    state.round = 1;
    await training.train(1, "bafkreic1", genesis);
    await late;
    assert.ok(stepsIn(0) < H, `round 0 ran all ${stepsIn(0)} steps`);
    assert.deepEqual(delivered.map((d) => d.round), [1]);
  },
);

Deno.test(
  "RoundTraining: a job of full shares takes H steps however slow the peer",
  FULL_TIER,
  async () => {
    const { training, delivered, state, speeds } = setup({
      ...spec,
      shares: "full",
    });
    state.live = ["peerA", "peerB", "peerC"];
    await training.train(0, "bafkreic0", genesis);
    speeds.set("peerB", 1e11).set("peerC", 1e11);
    state.round = 1;
    await training.train(1, "bafkreic1", genesis);
    assert.deepEqual(delivered.map((d) => d.steps), [H, H]);
  },
);

/**
 * Rounds 0 and 1 trained plainly from genesis and C(1) = θ_local(0), and
 * another RoundTraining with round 0 trained, ready to start round 1 early.
 */
async function plainAndEarly() {
  const c1 = await local0();
  const plain = setup();
  await plain.training.train(0, "bafkreic0", genesis);
  plain.state.round = 1;
  await plain.training.train(1, "bafkreic1", c1);
  const early = setup();
  await early.training.train(0, "bafkreic0", genesis);
  return { c1, plain, early };
}

/** Both delivered rounds 0 and 1 from C(0), C(1), round 1 bit for bit. */
function sameRoundOne(got: TrainedDelta[], want: TrainedDelta[]): void {
  assert.deepEqual(got.map((d) => [d.round, d.parent]), [
    [0, "bafkreic0"],
    [1, "bafkreic1"],
  ]);
  assert.equal(got[1].cid, want[1].cid);
  assert.equal(got[1].work, want[1].work);
}

Deno.test(
  "RoundTraining: a round started early from its previewed checkpoint is delivered once committed, the very delta of a round trained after the commit",
  FULL_TIER,
  async () => {
    const { c1, plain, early } = await plainAndEarly();
    const started = early.training.early(1, "bafkreic1", c1);
    await until(() => early.stepsIn(1) === H);
    // Trained, but not delivered before the chain commits its checkpoint.
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(early.delivered.map((d) => d.round), [0]);
    early.state.round = 1;
    await early.training.train(1, "bafkreic1", c1);
    await started;
    sameRoundOne(early.delivered, plain.delivered);
  },
);

Deno.test(
  "RoundTraining: a round started early stops when the others' deltas of that round are in, heard while the machine is still in the round before",
  FULL_TIER,
  async () => {
    const { c1, early } = await plainAndEarly();
    early.state.live = ["peerA", "peerB"];
    early.state.early.push({ msg: announced("peerB", 1, H), at: 0 });
    const started = early.training.early(1, "bafkreic1", c1);
    const stop = Math.ceil(H * EARLY_STOP_FROM);
    await until(() => early.stepsIn(1) >= stop);
    // Before, it went on to H until the machine entered round 1.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(early.stepsIn(1), stop);
    early.state.round = 1;
    await early.training.train(1, "bafkreic1", c1);
    await started;
    assert.deepEqual(early.delivered.map((d) => [d.round, d.steps]), [
      [0, H],
      [1, stop],
    ]);
  },
);

Deno.test(
  "RoundTraining: the deltas of the round before, still held by a machine syncing to this round, do not stop it",
  FULL_TIER,
  async () => {
    const { training, delivered, state } = setup();
    await training.train(0, "bafkreic0", genesis);
    state.live = ["peerA", "peerB"];
    state.deltas.set("peerB", announced("peerB", 0, H));
    state.round = 1;
    await training.train(1, "bafkreic1", genesis);
    assert.deepEqual(delivered.map((d) => d.steps), [H, H]);
  },
);

Deno.test(
  "RoundTraining: a round started early from the checkpoint the chain commits, whose manifest leaves out its round r − 1 delta, is trained again from zero moments",
  FULL_TIER,
  async () => {
    const { c1, early } = await plainAndEarly();
    const started = early.training.early(1, "bafkreic1", c1);
    await until(() => early.stepsIn(1) >= 3);
    // Its own delta of round 0 was screened out by the preview and the
    // leader alike: the same C(1), but nothing to go on from.
    early.listing.value = null;
    early.state.round = 1;
    await early.training.train(1, "bafkreic1", c1);
    await started;
    assert.deepEqual(early.delivered.map((d) => d.round), [0, 1]);
    assert.equal(early.record(1).from, "");
    assert.deepEqual(early.moments(early.record(1).states[0]), ZERO);
  },
);

Deno.test(
  "RoundTraining: a round committed before its early start was chosen chooses it again, against the committed manifest",
  FULL_TIER,
  async () => {
    const { c1, early } = await plainAndEarly();
    early.listing.value = null;
    const started = early.training.early(1, "bafkreic1", c1);
    // The commit comes while the early start still waits for its moments.
    early.state.round = 1;
    await early.training.train(1, "bafkreic1", c1);
    await started;
    assert.deepEqual(early.delivered.map((d) => d.round), [0, 1]);
    assert.equal(early.record(1).from, "");
    assert.deepEqual(early.moments(early.record(1).states[0]), ZERO);
  },
);

Deno.test(
  "RoundTraining: a round started early from a checkpoint the chain does not commit is trained again from the committed one, as if never started",
  FULL_TIER,
  async () => {
    const { c1, plain, early } = await plainAndEarly();
    const started = early.training.early(1, "bafkreicother", genesis);
    await until(() => early.stepsIn(1) >= 3);
    early.state.round = 1;
    await early.training.train(1, "bafkreic1", c1);
    await started;
    // The AdamW moments were put back: bit for bit the plain round.
    sameRoundOne(early.delivered, plain.delivered);
  },
);

Deno.test(
  "RoundTraining: a round started early that the chain skips is dropped, and the next round is delivered",
  FULL_TIER,
  async () => {
    const { training, delivered, state, stepsIn } = setup(spec, [1]);
    await training.train(0, "bafkreic0", genesis);
    const started = training.early(1, "bafkreic1", genesis);
    await until(() => stepsIn(1) >= 1);
    state.round = 2;
    await training.train(2, "bafkreic2", genesis);
    await started;
    assert.ok(stepsIn(1) < H, `round 1 ran all ${stepsIn(1)} steps`);
    assert.deepEqual(delivered.map((d) => d.round), [0, 2]);
  },
);

Deno.test(
  "RoundTraining: a preview that comes once its round has begun starts nothing",
  FULL_TIER,
  async () => {
    const { training, delivered, state, stepsIn } = setup();
    state.round = 1;
    await training.early(1, "bafkreic1", genesis);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(stepsIn(1), 0);
    assert.deepEqual(delivered, []);
  },
);

Deno.test(
  "RoundTraining: steps trained ahead and moved onto their preview are delivered once the chain commits it, the very delta of a round trained after the commit",
  FULL_TIER,
  async () => {
    const { c1, plain, early } = await plainAndEarly();
    // The estimate is C(1) itself, so the move is zero and the round must
    // be the plain one bit for bit.
    const running = early.training.trainAhead(1, c1);
    await early.training.early(1, "bafkreic1", c1);
    await until(() => early.stepsIn(1) === H);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(early.delivered.map((d) => d.round), [0]);
    early.state.round = 1;
    await early.training.rebase(1, "bafkreic1", c1);
    await running;
    sameRoundOne(early.delivered, plain.delivered);
  },
);

Deno.test(
  "RoundTraining: steps trained ahead and moved onto a preview the chain does not commit are trained again from the committed checkpoint, from the moments they began with",
  FULL_TIER,
  async () => {
    const { c1, plain, early } = await plainAndEarly();
    const running = early.training.trainAhead(1, genesis);
    await early.training.early(1, "bafkreicother", genesis);
    await until(() => early.stepsIn(1) >= 3);
    early.state.round = 1;
    await early.training.rebase(1, "bafkreic1", c1);
    await running;
    sameRoundOne(early.delivered, plain.delivered);
  },
);

/** `peer`'s announcement of `steps` steps in `round`: all that counts. */
const announced = (peer: string, round: number, steps: number) =>
  ({
    peer,
    round,
    tokens: steps * spec.batchSize * spec.contextLength,
  }) as DeltaAnnounce;

Deno.test(
  "RoundTraining: a peer stops when the others are done, and its record and tokens say how far it got",
  FULL_TIER,
  async () => {
    const { training, delivered, blocks, state } = setup();
    state.live = ["peerA", "peerB"];
    state.deltas.set("peerB", announced("peerB", 0, H));
    await training.train(0, "bafkreic0", genesis);
    const stopped = Math.ceil(H * EARLY_STOP_FROM);
    assert.equal(delivered[0].steps, stopped);
    assert.equal(
      delivered[0].tokens,
      stopped * spec.batchSize * spec.contextLength,
    );
    assert.equal(claimedSteps(spec, delivered[0].tokens), stopped);
    // Its states are the full round's bounds below where it stopped, then
    // that step: what an auditor expects of its claim.
    const record = decodeWorkRecord(blocks.get(delivered[0].work)!, stopped, H);
    assert.equal(record.states.length, segmentBounds(stopped, H).length);
    // No one done: the full share.
    state.deltas.clear();
    state.round = 1;
    await training.train(1, "bafkreic1", genesis);
    assert.equal(delivered[1].steps, H);
  },
);

Deno.test(
  "RoundTraining: a job of full shares takes H steps even when the others are done",
  FULL_TIER,
  async () => {
    const { training, delivered, state } = setup({ ...spec, shares: "full" });
    state.live = ["peerA", "peerB"];
    state.deltas.set("peerB", announced("peerB", 0, H));
    await training.train(0, "bafkreic0", genesis);
    assert.equal(delivered[0].steps, H);
  },
);

Deno.test(
  "RoundTraining: a round goes on from the moments its announced round r − 1 ended with, named in its record; otherwise from zero moments",
  FULL_TIER,
  async () => {
    const { training, record, moments, state } = setup();
    await training.train(0, "bafkreic0", genesis);
    state.round = 1;
    await training.train(1, "bafkreic1", genesis);
    const [r0, r1] = [record(0), record(1)];
    assert.equal(r0.from, "");
    assert.deepEqual(moments(r0.states[0]), ZERO);
    assert.equal(r1.from, r0.states.at(-1));
    assert.deepEqual(moments(r1.states[0]), moments(r0.states.at(-1)!));
    // A round skipped: nothing announced in round 2 to go on from.
    state.round = 3;
    await training.train(3, "bafkreic3", genesis);
    assert.equal(record(3).from, "");
    assert.deepEqual(moments(record(3).states[0]), ZERO);

    // A round cut short and never announced leaves moments no record names.
    const slow = setup(spec, [1]);
    await slow.training.train(0, "bafkreic0", genesis);
    slow.state.round = 1;
    const late = slow.training.train(1, "bafkreic1", genesis);
    await until(() => slow.stepsIn(1) >= 1);
    slow.state.round = 2;
    await slow.training.train(2, "bafkreic2", genesis);
    await late;
    assert.deepEqual(slow.delivered.map((d) => d.round), [0, 2]);
    assert.equal(slow.record(2).from, "");
    assert.deepEqual(slow.moments(slow.record(2).states[0]), ZERO);
  },
);

Deno.test(
  "RoundTraining: a peer without its round r − 1 moments (restarted, or its announcement failed) trains nothing ahead and starts from zero moments",
  FULL_TIER,
  async () => {
    // Restarted: a new RoundTraining on a fresh trainer.
    const fresh = setup();
    fresh.state.round = 1;
    await fresh.training.trainAhead(1, genesis);
    assert.equal(fresh.stepsIn(1), 0);
    await fresh.training.rebase(1, "bafkreic1", genesis);
    assert.deepEqual([fresh.record(1).shifted, fresh.record(1).from], [0, ""]);

    // Its announcement of round 0 failed: round 1 does not go on from it.
    const failed = setup();
    failed.faults.announce = true;
    await assert.rejects(
      failed.training.train(0, "bafkreic0", genesis),
      /publish failed/,
    );
    failed.faults.announce = false;
    failed.state.round = 1;
    await failed.training.trainAhead(1, genesis);
    assert.equal(failed.stepsIn(1), 0);
    await failed.training.train(1, "bafkreic1", genesis);
    assert.equal(failed.record(1).from, "");
  },
);

Deno.test(
  "RoundTraining: a round goes on from round r − 1's moments only if the manifest that made its checkpoint lists that round's delta",
  FULL_TIER,
  async () => {
    const t = setup();
    await t.training.train(0, "bafkreic0", genesis);
    t.listing.value = null;
    t.state.round = 1;
    await t.training.train(1, "bafkreic1", genesis);
    assert.equal(t.record(1).from, "");
    assert.deepEqual(t.moments(t.record(1).states[0]), ZERO);
    // Listed again: round 2 goes on from round 1. A manifest not held
    // cannot show it was listed: round 3 starts from zero moments.
    t.listing.value = "bafkreidelta";
    t.state.round = 2;
    await t.training.train(2, "bafkreic2", genesis);
    assert.equal(t.record(2).from, t.record(1).states.at(-1));
    t.listing.value = undefined;
    t.state.round = 3;
    await t.training.train(3, "bafkreic3", genesis);
    assert.equal(t.record(3).from, "");
  },
);

Deno.test(
  "RoundTraining: a peer that holds no manifest for its checkpoint (it refused the one committed) goes on from its moments when the committed one lists its delta",
  FULL_TIER,
  async () => {
    const t = setup();
    await t.training.train(0, "bafkreic0", genesis);
    // It refused the committed manifest: none held, the chain's is fetched.
    t.listing.value = undefined;
    t.committed.value = "bafkreidelta";
    t.state.round = 1;
    await t.training.train(1, "bafkreic1", genesis);
    assert.deepEqual(t.asked, [0]);
    assert.equal(t.record(1).from, t.record(0).states.at(-1));
    assert.deepEqual(
      t.moments(t.record(1).states[0]),
      t.moments(t.record(0).states.at(-1)!),
    );
  },
);
