import { FULL_TIER } from "../../../tests/_tier.ts";
/**
 * Audits of real trajectories trained on the JS backend: every segment of
 * an honest round passes, bit for bit on the same build and within the
 * tolerance on another (WASM); made-up steps, batches drawn from other
 * chunks, an unserved state and a delta that is not the committed final
 * state each fail, on the check that catches them.
 */
import assert from "node:assert/strict";
import { createCpuTrainer } from "../../../kernels/trainer.ts";
import { DEFAULT_MUON } from "../../../kernels/muon.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import {
  H,
  jsRoundTrainer,
  jsTrainer,
  textDataset,
  tinySpec,
} from "../trainer/_inner_loop_fixtures.ts";
import { assignChunks } from "../../../protocol/peers/assignment.ts";
import { splitTrainVal } from "../../../protocol/content/dataset.ts";
import { roundSampler } from "../trainer/round_sampler.ts";
import {
  cidForBytes,
  cidFromDigest,
  cidToString,
} from "../../../protocol/content/cid.ts";
import { DELTA } from "../../../protocol/codec/_message_fixtures.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../../protocol/round/round_checkpoint.ts";
import { pseudoGradient } from "../../../protocol/aggregation/pseudo_gradient.ts";
import { nextCheckpoint } from "../../../protocol/round/round_update.ts";
import {
  decodeStateHead,
  encodeState,
  STATE_HEAD_BYTES,
  STATE_PART_CODEC,
  type TrainingState,
} from "../../../protocol/content/state_hash.ts";
import {
  dataHash,
  decodeWorkRecord,
  segmentBounds,
  trajectoryRoot,
  type WorkRecord,
} from "../../../protocol/audit/work_record.ts";
import { createWasmBackend } from "../../../wasm/modules.ts";
import { Auditor, type AuditorOptions } from "./audit.ts";
import { CROSS_KERNEL_TOLERANCE } from "../../../protocol/audit/segment_checks.ts";
import { StateUnserved } from "./audit_errors.ts";
import { HONEST } from "../services/behaviour.ts";
import { RoundTrainer } from "../trainer/inner_loop.ts";
import { RoundLedger } from "../records/ledger.ts";
import {
  decodeDeltaBlob,
  encodeDelta,
} from "../../../protocol/round/delta_blob.ts";
import { RoundTraining, type TrainedDelta } from "../train/train.ts";
import { BlobGetter } from "../services/blob_getter.ts";
import { WorkReader } from "./work_reader.ts";

const JOB = "bafkreijob";
const dataset = await textDataset();
const spec = tinySpec(dataset);
const genesisCkpt = genesisCheckpoint(JOB, spec.model, spec.seed);
const parent = genesisCkpt.params;
const genesisBytes = encodeRoundCheckpoint(genesisCkpt);
const PARENT_CID = cidToString(await cidForBytes(genesisBytes));

/**
 * A round of peerA trained honestly among `live`; its blocks and
 * announcement. Round 0, or with `slower` > 1 round 1 after its peers
 * reported `slower` times its own throughput: a share of H steps; or with
 * `ahead` round 1 trained ahead from its eager estimate of C(1) (or
 * `ahead.from`), its preview coming once `steps` steps are taken (0:
 * before the first). `announced`: its announcements, by round.
 */
async function trainedRound(
  live: string[],
  slower = 1,
  job = spec,
  ahead?: { from?: Float32Array; steps: number },
) {
  let round = 0, own = 0;
  const trainer = new RoundTrainer({
    createTrainer: jsTrainer,
    spec: job,
    dataset,
    peerId: "peerA",
  });
  const blocks = new Map<string, Uint8Array>([[PARENT_CID, genesisBytes]]);
  const delivered: TrainedDelta[] = [];
  const ledger = new RoundLedger(job, trainer.parameterCount);
  const training = new RoundTraining({
    jobId: JOB,
    peerId: "peerA",
    spec: job,
    trainer,
    ledger,
    state: () => ({ round, live, deltas: new Map(), early: [] }),
    throughput: () => round === 0 ? 0 : own * slower,
    progress: (p) => own = p.throughput ?? own,
    store: (b, codec) => put(blocks, b, codec),
    drop: () => Promise.resolve(),
    announce: (d) => {
      delivered.push(d);
      return Promise.resolve();
    },
    signal: new AbortController().signal,
    behaviour: HONEST,
    announced: () => Promise.resolve([]),
    listed: () => "bafkreidelta",
  });
  await training.train(0, PARENT_CID, parent);
  if (ahead) {
    // As the driver does: the outer step of C(0) with its own delta alone.
    const own = delivered[0];
    const running = training.trainAhead(
      1,
      ahead.from ?? nextCheckpoint({
        spec: job,
        parent: genesisCkpt,
        parentCid: PARENT_CID,
        deltas: [{
          peer: "peerA",
          tokens: own.tokens,
          delta: decodeDeltaBlob(
            blocks.get(own.cid)!,
            { job: JOB, round: 0, parent: PARENT_CID, peer: "peerA" },
            parent.length,
          ),
        }],
      }).params,
    );
    while (
      ledger.steps.since(0).filter((s) => s.round === 1).length < ahead.steps
    ) {
      await new Promise((r) => setTimeout(r, 2));
    }
    await training.early(1, PARENT_CID, parent);
    round = 1;
    await training.rebase(1, PARENT_CID, parent);
    await running;
  } else if (slower > 1) {
    round = 1;
    await training.train(1, PARENT_CID, parent);
  }
  trainer.dispose();
  const announced = delivered.map((d): DeltaAnnounce => ({
    ...DELTA,
    peer: "peerA",
    job: JOB,
    round: d.round,
    parent: PARENT_CID,
    delta: d.cid,
    tokens: d.tokens,
    work: d.work,
    data: d.data,
    trajectory: d.trajectory,
    kernel: d.kernel,
  }));
  const d = delivered[round];
  const record = decodeWorkRecord(blocks.get(d.work)!, d.steps, H);
  return { blocks, msg: announced[round], record, announced };
}

async function put(
  blocks: Map<string, Uint8Array>,
  b: Uint8Array,
  codec?: number,
) {
  const cid = cidToString(await cidForBytes(b, codec));
  blocks.set(cid, b);
  return cid;
}

/**
 * An auditor of peerA's work served from `blocks`, that saw its
 * announcements `announced` (of earlier rounds).
 */
function auditor(
  blocks: Map<string, Uint8Array>,
  createTrainer = jsTrainer,
  queues: Pick<AuditorOptions, "afterSteps" | "exclusive"> = {},
  job = spec,
  announced: readonly DeltaAnnounce[] = [],
  read = { bytes: 0 },
  previous?: AuditorOptions["previous"],
): Auditor {
  return new Auditor({
    jobId: JOB,
    spec: job,
    dataset,
    createTrainer,
    ...queues,
    work: servedBy(blocks, read),
    delta: (msg) =>
      Promise.resolve(
        decodeDeltaBlob(blocks.get(msg.delta)!, msg, parent.length),
      ),
    // The manifests of those rounds list them.
    previous: previous ??
      ((msg) =>
        announced.find((m) =>
          m.round === msg.round - 1 && m.account === msg.account
        )),
  });
}

/**
 * A peer's work as an auditor reads it (a WorkReader over a BlobGetter),
 * fetched from `blocks` as that peer serves them; `read` counts the bytes
 * fetched.
 */
function servedBy(
  blocks: Map<string, Uint8Array>,
  read = { bytes: 0 },
): WorkReader {
  const local = new Map<string, Uint8Array>();
  const getter = new BlobGetter(
    {
      size: (cid) =>
        Promise.resolve(local.get(cidToString(cid))?.length ?? null),
      get: (cid) => Promise.resolve(local.get(cidToString(cid))!),
    },
    {
      fetch: (cid) => {
        const b = blocks.get(cid);
        if (!b) return Promise.reject(new Error(`no block ${cid}`));
        local.set(cid, b);
        return Promise.resolve();
      },
    },
    new AbortController().signal,
  );
  const reader = new WorkReader(
    getter,
    {
      delete: (cid) => {
        local.delete(cidToString(cid));
        return Promise.resolve();
      },
    },
    spec,
    parent.length,
    (bytes) => read.bytes += bytes,
  );
  return reader;
}

/** Stores `state`'s blocks in `blocks`; resolves with its head's CID. */
async function putState(
  blocks: Map<string, Uint8Array>,
  state: TrainingState,
): Promise<string> {
  const { head, params, moments } = encodeState(state);
  await put(blocks, params, STATE_PART_CODEC);
  await put(blocks, moments, STATE_PART_CODEC);
  return put(blocks, head);
}

const honest = await trainedRound(["peerA", "peerB"]);
const S = segmentBounds(H).length - 1;

Deno.test(
  "audit: every segment of an honest round reproduces bit for bit",
  FULL_TIER,
  async () => {
    const a = auditor(honest.blocks);
    for (let segment = 0; segment < S; segment++) {
      const v = await a.audit({ ...honest, segment, parent });
      assert.ok(v.passed, `segment ${segment}: ${JSON.stringify(v)}`);
      assert.equal(v.exact, true);
      assert.equal(v.drift, 0);
      // Templar's check on an honest round: its update lowers the loss on
      // its own batches.
      assert.ok(v.loss.after < v.loss.before, JSON.stringify(v.loss));
    }
  },
);

Deno.test("audit: a segment's audit fetches its start state whole and of the final state only the head and parameters", async () => {
  const { blocks, record } = honest;
  /** The sizes of state `k`'s head, parameters and moments blocks. */
  const sizes = (k: number) => {
    const head = decodeStateHead(blocks.get(record.states[k])!, parent.length);
    return [
      STATE_HEAD_BYTES,
      ...[head.params, head.moments].map((d) =>
        blocks.get(cidToString(cidFromDigest(d, STATE_PART_CODEC)))!.length
      ),
    ];
  };
  const [headBytes, paramBytes, momentBytes] = sizes(3);
  assert.equal(paramBytes, 4 * parent.length);
  // Muon's matrices leave most second moments +0: a mask, not floats.
  assert.ok(momentBytes < 6 * parent.length, `${momentBytes} bytes`);
  for (
    const [segment, want] of [
      // State 0's head for the start check, the start state, then the
      // final state's parameters for the delta check.
      [
        3,
        STATE_HEAD_BYTES + headBytes + paramBytes + momentBytes +
        STATE_HEAD_BYTES + paramBytes,
      ],
      // The last segment's end is the final state, replayed: nothing more.
      [S - 1, STATE_HEAD_BYTES + sizes(S - 1).reduce((a, b) => a + b)],
    ]
  ) {
    const read = { bytes: 0 };
    const a = auditor(blocks, jsTrainer, {}, spec, [], read);
    assert.ok((await a.audit({ ...honest, segment, parent })).passed);
    assert.equal(read.bytes, want, `segment ${segment}`);
  }
});

Deno.test(
  "audit: a round trained ahead passes every segment bit for bit, moved onto its checkpoint before its first step or after steps",
  FULL_TIER,
  async () => {
    // Before the first step the parameters become C(1) itself: Ĉ + (C − Ĉ)
    // in float32 would not be C(1) everywhere, and the audit checks for
    // C(1) bit for bit. After steps (the hold, a tenth of H), the move is
    // replayed, and state 0 is checked to be the eager estimate.
    for (const [steps, shifted] of [[0, 0], [2, 2]]) {
      const t = await trainedRound(["peerA"], 1, spec, { steps });
      assert.equal(t.record.shifted, shifted);
      // It goes on from the moments its round 0 ended with.
      assert.equal(
        t.record.from,
        t.announced[0] && decodeWorkRecord(
          t.blocks.get(t.announced[0].work)!,
          H,
        ).states.at(-1),
      );
      const a = auditor(t.blocks, jsTrainer, {}, spec, t.announced);
      for (let segment = 0; segment < S; segment++) {
        const v = await a.audit({ ...t, segment, parent });
        assert.ok(
          v.passed && v.exact,
          `segment ${segment}: ${JSON.stringify(v)}`,
        );
      }
    }
  },
);

Deno.test("audit: the replay is one task that can wait for the peer's own steps; only the loss check goes between them", async () => {
  const tasks: string[] = [];
  let steps = 0;
  const a = auditor(honest.blocks, (init) => {
    const t = jsTrainer(init);
    const step = t.step.bind(t);
    t.step = (b) => (steps++, step(b));
    return t;
  }, {
    afterSteps: async (task, round) => {
      tasks.push(`after steps of a round, auditing round ${round}`);
      const before = steps;
      const out = await task();
      tasks.push(`${steps - before} steps`);
      return out;
    },
    exclusive: (task) => {
      tasks.push("between steps");
      return task();
    },
  });
  const segment = 3;
  const v = await a.audit({ ...honest, segment, parent });
  assert.ok(v.passed);
  const bounds = segmentBounds(H);
  assert.deepEqual(tasks, [
    `after steps of a round, auditing round ${honest.msg.round}`,
    `${bounds[segment + 1] - bounds[segment]} steps`,
    "between steps",
  ]);
  // Others failed it already: a conviction may wait on it, so it goes
  // between the peer's steps too.
  tasks.length = 0;
  assert.ok(
    (await a.audit({ ...honest, segment, parent, urgent: true })).passed,
  );
  assert.deepEqual(tasks, ["between steps", "between steps"]);
});

Deno.test("audit: an honest round checked on another kernel build passes within the tolerance", async () => {
  const be = await createWasmBackend({ threads: 1 });
  const a = auditor(honest.blocks, (init) => createCpuTrainer(be, init));
  try {
    for (const segment of [0, 7, S - 1]) {
      const v = await a.audit({ ...honest, segment, parent });
      // Not exact: the tolerance rule is what passed it.
      assert.ok(v.passed && !v.exact, JSON.stringify(v));
      assert.ok(v.drift > 0 && v.drift <= CROSS_KERNEL_TOLERANCE, `${v.drift}`);
    }
  } finally {
    be.dispose();
  }
});

/**
 * peerA's round 0 as committed with the states `states` (stored in
 * `blocks`) ending at parameters `end`: the honest record with `fields`,
 * its delta and its announcement.
 */
async function committedRound(
  blocks: Map<string, Uint8Array>,
  states: string[],
  end: Float32Array,
  fields: Partial<WorkRecord> = {},
  base = honest,
) {
  const record: WorkRecord = { ...base.record, ...fields, states };
  const values = pseudoGradient(parent, end);
  const delta = await put(
    blocks,
    encodeDelta(
      spec,
      { job: JOB, round: 0, parent: PARENT_CID, peer: "peerA" },
      values,
    ),
  );
  const msg = {
    ...base.msg,
    delta,
    data: dataHash(JOB, 0, "peerA", record),
    trajectory: trajectoryRoot(states),
  };
  return { blocks, msg, record, values };
}

/**
 * Replaces states after `k` of `base` (the honest round) by a straight
 * extrapolation: work not done.
 */
async function partialWork(k: number, base = honest) {
  const blocks = new Map(base.blocks);
  const bounds = segmentBounds(H);
  const reader = servedBy(blocks);
  const read = (i: number) => reader.state(base.record.states[i], "peerA");
  const s0 = await read(0), sk = await read(k);
  const states = base.record.states.slice(0, k + 1);
  let last: TrainingState = sk;
  for (let i = k + 1; i <= S; i++) {
    const t = bounds[i] / bounds[k];
    last = {
      ...sk,
      step: bounds[i],
      params: sk.params.map((p, j) => s0.params[j] + t * (p - s0.params[j])),
    };
    states.push(await putState(blocks, last));
  }
  return await committedRound(blocks, states, last.params, {}, base);
}

Deno.test("audit: made-up steps fail where audited, and pass only where really trained", async () => {
  const cheat = await partialWork(8);
  const a = auditor(cheat.blocks);
  assert.equal((await a.audit({ ...cheat, segment: 3, parent })).passed, true);
  for (const segment of [8, 12, S - 1]) {
    const v = await a.audit({ ...cheat, segment, parent });
    assert.equal(v.passed, false);
    assert.equal(!v.passed && v.check, "replay", `segment ${segment}`);
  }
  // On another build too: made-up steps miss by far more than the tolerance.
  const be = await createWasmBackend({ threads: 1 });
  try {
    const v = await auditor(cheat.blocks, (init) => createCpuTrainer(be, init))
      .audit({ ...cheat, segment: 12, parent });
    assert.equal(!v.passed && v.check, "replay", JSON.stringify(v));
  } finally {
    be.dispose();
  }
});

Deno.test("audit: in a job that resets moments, the replay runs from C(r) with zero moments and fetches only the final parameters", async () => {
  const job = { ...spec, moments: "reset" as const };
  const round = await trainedRound(["peerA", "peerB"], 1, job);
  assert.equal(round.record.from, "");
  for (const segment of [0, 7, 8, S - 1]) {
    const read = { bytes: 0 };
    const v = await auditor(round.blocks, jsTrainer, {}, job, [], read)
      .audit({ ...round, segment, parent });
    assert.ok(v.passed && v.exact, `segment ${segment}: ${JSON.stringify(v)}`);
    // No state at the segment's start: in the round's first half the final
    // state's head and parameters for the delta check; in its second half
    // the replay goes on to the final state, and nothing is fetched.
    assert.equal(
      read.bytes,
      segment >= S / 2 ? 0 : STATE_HEAD_BYTES + 4 * parent.length,
      `segment ${segment}`,
    );
  }
  // Made-up steps from segment 5 on fail any audit that reaches them: the
  // second half's replays reach them all.
  const cheat = await partialWork(5, round);
  const a = auditor(cheat.blocks, jsTrainer, {}, job);
  assert.equal((await a.audit({ ...cheat, segment: 3, parent })).passed, true);
  for (const segment of [5, 7, 8, S - 1]) {
    const v = await a.audit({ ...cheat, segment, parent });
    assert.equal(!v.passed && v.check, "replay", `segment ${segment}`);
  }
  // A start off C(r), or from moments it names, fails the start.
  const blocks = new Map(round.blocks);
  const off = await putState(blocks, {
    step: 0,
    params: parent.map((x) => x + 1e-3),
    m: new Float32Array(parent.length),
    v: new Float32Array(parent.length),
  });
  const lying = await committedRound(
    blocks,
    [off, ...round.record.states.slice(1)],
    parent,
    {},
    round,
  );
  const v = await auditor(blocks, jsTrainer, {}, job)
    .audit({ ...lying, segment: 5, parent });
  assert.deepEqual(v, {
    passed: false,
    check: "start",
    reason: "its state 0 is not C(r) with zero moments",
  });
  const named = await committedRound(
    blocks,
    [...round.record.states],
    parent,
    { from: round.record.states.at(-1)! },
    round,
  );
  const w = await auditor(blocks, jsTrainer, {}, job)
    .audit({ ...named, segment: 5, parent });
  assert.equal(!w.passed && w.check, "start", JSON.stringify(w));
});

Deno.test(
  "audit: training on chunks other than the assigned ones fails the replay",
  FULL_TIER,
  async () => {
    // Trained alone (every chunk), but claims the assignment among two.
    const alone = await trainedRound(["peerA"]);
    const peers = ["peerA", "peerB"];
    const record = { ...alone.record, peers };
    const msg = { ...alone.msg, data: dataHash(JOB, 0, "peerA", record) };
    const v = await auditor(alone.blocks).audit({
      msg,
      record,
      segment: 5,
      parent,
    });
    assert.equal(!v.passed && v.check, "replay", JSON.stringify(v));
    // Claimed honestly it passes: the data hash names what it trained on.
    assert.equal(
      (await auditor(alone.blocks).audit({ ...alone, segment: 5, parent }))
        .passed,
      true,
    );
  },
);

Deno.test("audit: a record that does not match the commitment fails first", async () => {
  const a = auditor(honest.blocks);
  const v1 = await a.audit({
    ...honest,
    record: { ...honest.record, peers: ["peerA"] },
    segment: 0,
    parent,
  });
  assert.equal(!v1.passed && v1.check, "record");
  const states = [...honest.record.states].reverse();
  const v2 = await a.audit({
    ...honest,
    record: { ...honest.record, states },
    segment: 0,
    parent,
  });
  assert.equal(!v2.passed && v2.check, "record");
});

Deno.test("audit: an unserved state throws; a start off C(r) and a delta off the final state fail", async () => {
  const missing = new Map(honest.blocks);
  missing.delete(honest.record.states[4]);
  await assert.rejects(
    auditor(missing).audit({ ...honest, segment: 4, parent }),
    StateUnserved,
    "its state 4 was not served",
  );

  const moved = parent.map((p, i) => i === 0 ? p + 1e-3 : p);
  const v2 = await auditor(honest.blocks).audit({
    ...honest,
    segment: 0,
    parent: moved,
  });
  assert.equal(!v2.passed && v2.check, "start");

  const other = await put(new Map(), new TextEncoder().encode("another delta"));
  const v3 = await auditor(honest.blocks).audit({
    ...honest,
    msg: { ...honest.msg, delta: other },
    segment: 2,
    parent,
  });
  assert.equal(!v3.passed && v3.check, "delta");
});

Deno.test(
  "audit: a round's one-bit sign delta is rebuilt bit for bit; the same round's int4 delta fails the delta check",
  FULL_TIER,
  async () => {
    const signs: JobSpec = {
      ...spec,
      compression: { format: "sign", blockSize: 128 },
    };
    const t = await trainedRound(["peerA", "peerB"], 1, signs);
    const bytes = t.blocks.get(t.msg.delta)!;
    const signed = decodeDeltaBlob(bytes, t.msg, parent.length);
    // One magnitude a block of 128: the delta is signs times a scale.
    assert.equal(new Set(signed.subarray(0, 128).map(Math.abs)).size, 1);
    const v = await auditor(t.blocks, jsTrainer, {}, signs).audit({
      ...t,
      segment: 1,
      parent,
    });
    assert.ok(v.passed, JSON.stringify(v));

    const int4 = encodeDelta(spec, t.msg, signed);
    const blocks = new Map(t.blocks);
    const other = await put(blocks, int4);
    const v2 = await auditor(blocks, jsTrainer, {}, signs).audit({
      ...t,
      msg: { ...t.msg, delta: other },
      segment: 1,
      parent,
    });
    assert.equal(!v2.passed && v2.check, "delta");
  },
);

Deno.test(
  "audit: a slow peer's shorter round is cut by its tokens and every segment reproduces; a claim of more steps fails",
  FULL_TIER,
  async () => {
    const slow = await trainedRound(["peerA", "peerB", "peerC"], 4);
    const steps = slow.msg.tokens / (spec.batchSize * spec.contextLength);
    assert.equal(steps, H / 4);
    const a = auditor(slow.blocks, jsTrainer, {}, spec, slow.announced);
    const bounds = segmentBounds(steps, H);
    for (let segment = 0; segment < bounds.length - 1; segment++) {
      const v = await a.audit({ ...slow, segment, parent });
      assert.ok(
        v.passed && v.exact,
        `segment ${segment}: ${JSON.stringify(v)}`,
      );
    }
    // Claiming a full round's tokens for the same trajectory: it has a state
    // at each bound of its steps, far fewer than a full round's.
    const claimed = {
      ...slow.msg,
      tokens: H * spec.batchSize * spec.contextLength,
    };
    const v = await a.audit({ ...slow, msg: claimed, segment: 4, parent });
    assert.equal(!v.passed && v.check, "record");
  },
);

Deno.test(
  "audit: a slow peer's chunk weight is recorded and replayed; a record claiming the full weight fails the replay",
  FULL_TIER,
  async () => {
    const slow = await trainedRound(["peerA", "peerB", "peerC"], 4);
    // A quarter of the steps: weight 1 of 4, so about 1/9 of the chunks.
    assert.deepEqual(slow.record.weights, { peerA: 1 });
    const a = auditor(slow.blocks, jsTrainer, {}, spec, slow.announced);
    assert.equal((await a.audit({ ...slow, segment: 2, parent })).passed, true);
    const record = { ...slow.record, weights: {} };
    const msg = {
      ...slow.msg,
      data: dataHash(JOB, slow.msg.round, "peerA", record),
    };
    const v = await a.audit({ msg, record, segment: 2, parent });
    assert.equal(!v.passed && v.check, "replay", JSON.stringify(v));
  },
);

Deno.test(
  "audit: rounds of Muon and of AdamW alone reproduce bit for bit; replayed with the other optimizer they fail",
  FULL_TIER,
  async () => {
    const { muon: _, ...adamw } = spec.inner;
    const jobs: JobSpec[] = [spec, { ...spec, inner: adamw }];
    assert.deepEqual(jobs.map((j) => j.inner.muon), [DEFAULT_MUON, undefined]);
    for (const [k, job] of jobs.entries()) {
      const round = await trainedRound(["peerA", "peerB"], 1, job);
      const a = auditor(round.blocks, jsTrainer, {}, job);
      const other = auditor(
        round.blocks,
        (init) =>
          jsTrainer({ ...init, muon: k === 0 ? undefined : DEFAULT_MUON }),
        {},
        job,
      );
      for (let segment = 0; segment < S; segment++) {
        const at = `job ${k}, segment ${segment}`;
        const v = await a.audit({ ...round, segment, parent });
        assert.ok(v.passed && v.exact, `${at}: ${JSON.stringify(v)}`);
        const w = await other.audit({ ...round, segment, parent });
        assert.equal(w.passed, false, `${at}: ${JSON.stringify(w)}`);
      }
    }
  },
);

/**
 * peerA's round 0 trained honestly on its assigned batches, but from
 * `moments` of its choosing rather than those the protocol prescribes;
 * its blocks and announcement, with `record` fields as given.
 */
async function trainedFromMoments(
  moments: { m: Float32Array; v: Float32Array },
  record: Partial<WorkRecord> = {},
) {
  const blocks = new Map(honest.blocks);
  const trainer = jsRoundTrainer(spec, dataset);
  const assigned = assignChunks({
    job: JOB,
    round: 0,
    peers: honest.record.peers,
    chunks: trainer.trainChunks.length,
    weights: honest.record.weights,
  }).get("peerA")!;
  const written: Promise<string>[] = [];
  const result = await trainer.trainRound({
    round: 0,
    params: parent,
    chunks: assigned.map((i) => trainer.trainChunks[i]),
    moments,
    onState: (s) => void written.push(putState(blocks, s)),
  });
  trainer.dispose();
  const states = await Promise.all(written);
  return await committedRound(blocks, states, result.params, record);
}

Deno.test(
  "audit: a round started from moments of the peer's choosing fails the start check, whatever segment is drawn",
  FULL_TIER,
  async () => {
    // The attack: AdamW's update is m / √v, so a first moment made large
    // where the second is made tiny moves the parameters as far as the
    // cheater likes, in the direction it likes, and every step after is
    // trained honestly from there, so every replay reproduces.
    const n = parent.length;
    const poison = {
      m: new Float32Array(n).map((_, i) => 1e-3 * Math.sin(i)),
      v: new Float32Array(n).fill(1e-8),
    };
    const cheat = await trainedFromMoments(poison);
    const honestValues = pseudoGradient(
      parent,
      (await servedBy(honest.blocks).params(honest.record.states[S], "peerA"))
        .params,
    );
    const norm = (x: Float32Array) => Math.hypot(...x);
    // Its delta is the honest one plus a push larger than the honest round.
    const push = norm(cheat.values.map((x, i) => x - honestValues[i]));
    assert.ok(push > norm(honestValues), `${push} vs ${norm(honestValues)}`);
    const a = auditor(cheat.blocks);
    for (const segment of [0, 5, S - 1]) {
      const v = await a.audit({ ...cheat, segment, parent });
      assert.equal(!v.passed && v.check, "start", JSON.stringify(v));
      assert.match(!v.passed ? v.reason : "", /step-0 moments are not zero/);
    }
    // From zero moments, as its record says, it passes.
    const zero = await trainedFromMoments({
      m: new Float32Array(n),
      v: new Float32Array(n),
    });
    assert.ok(
      (await auditor(zero.blocks).audit({ ...zero, segment: 5, parent }))
        .passed,
    );
  },
);

Deno.test(
  "audit: a round that continues moments is checked against the end of the peer's round r - 1; who never saw that round judges all but the start",
  FULL_TIER,
  async () => {
    // Round 1, after round 0 (slower: round 1 is trained from C and the
    // moments round 0 ended with).
    const t = await trainedRound(["peerA", "peerB"], 2);
    const before = decodeWorkRecord(t.blocks.get(t.announced[0].work)!, H);
    assert.equal(t.record.from, before.states.at(-1));
    const audit = (
      x: {
        blocks: Map<string, Uint8Array>;
        msg: DeltaAnnounce;
        record: WorkRecord;
      },
      announced = t.announced,
    ) =>
      auditor(x.blocks, jsTrainer, {}, spec, announced).audit({
        ...x,
        segment: 3,
        parent,
      });
    // An auditor that never saw its round-0 announcement cannot tell where
    // it started, and judges the rest.
    const unseen = await audit(t, []);
    assert.ok(unseen.passed, JSON.stringify(unseen));
    assert.match(unseen.unjudged ?? "", /round 0/);
    const seen = await audit(t);
    assert.ok(seen.passed && seen.unjudged === undefined, JSON.stringify(seen));
    // Round 0's delta left out of the manifest that made C(1): never
    // audited, so its moments may not be gone on from.
    const unlisted = await auditor(
      t.blocks,
      jsTrainer,
      {},
      spec,
      t.announced,
      { bytes: 0 },
      () => null,
    ).audit({ ...t, segment: 3, parent });
    assert.equal(!unlisted.passed && unlisted.check, "start");
    assert.match(!unlisted.passed ? unlisted.reason : "", /does not list/);
    const garbage = await audit({
      ...t,
      msg: { ...t.msg, delta: await put(new Map(), new Uint8Array([1])) },
    }, []);
    assert.equal(!garbage.passed && garbage.check, "delta");
    // Naming another state of round 0, or claiming moments it never had.
    const rebound = (record: WorkRecord) => ({
      ...t,
      record,
      msg: { ...t.msg, data: dataHash(JOB, 1, "peerA", record) },
    });
    const other = await audit(
      rebound({ ...t.record, from: before.states[3] }),
    );
    assert.equal(!other.passed && other.check, "start");
    assert.match(
      !other.passed ? other.reason : "",
      /not the end of its round 0/,
    );
    const none = await audit(rebound({ ...t.record, from: "" }));
    assert.equal(!none.passed && none.check, "start");
    assert.match(!none.passed ? none.reason : "", /moments are not zero/);
  },
);

Deno.test(
  "audit: a round trained ahead from anything but its eager estimate fails the start check",
  FULL_TIER,
  async () => {
    const from = parent.map((x, i) => x + Math.sin(i) * 1e-3);
    const t = await trainedRound(["peerA"], 1, spec, { steps: 2, from });
    assert.equal(t.record.shifted, 2);
    const v = await auditor(t.blocks, jsTrainer, {}, spec, t.announced).audit({
      ...t,
      segment: 9,
      parent,
    });
    assert.equal(!v.passed && v.check, "start", JSON.stringify(v));
    assert.match(!v.passed ? v.reason : "", /outer step of C\(r - 1\)/);
  },
);

Deno.test("audit: moments made up at one bound and trained on honestly are caught from every segment that starts where they still show", async () => {
  // The chained form of a poisoned start: the cheater makes up the moments
  // of one state (its round's last, say, to carry into the next round),
  // then trains honestly from it. Only the segment ending there fails its
  // replay; the bound check catches the segments after it.
  const j = 6;
  const bounds = segmentBounds(H);
  const blocks = new Map(honest.blocks);
  const reader = servedBy(blocks);
  const made = await reader.state(honest.record.states[j], "peerA");
  const poisoned: TrainingState = {
    ...made,
    m: made.m.map((x, i) => x + 1e-3 * Math.sin(i)),
    v: made.v.map((x) => x === 0 ? 0 : x * 1e-6),
  };
  const trainer = jsTrainer({
    model: spec.model,
    adamw: spec.inner,
    muon: spec.inner.muon,
    params: poisoned.params,
  });
  trainer.setMoments(poisoned);
  const train = splitTrainVal(dataset, spec.dataset.valFraction).train;
  const assigned = assignChunks({
    job: JOB,
    round: 0,
    peers: honest.record.peers,
    chunks: train.length,
    weights: honest.record.weights,
  }).get("peerA")!;
  const sampler = roundSampler(
    spec,
    dataset,
    0,
    "peerA",
    assigned.map((i) => train[i]),
  );
  const batch = {
    inputs: new Int32Array(spec.batchSize * spec.contextLength),
    targets: new Int32Array(spec.batchSize * spec.contextLength),
    B: spec.batchSize,
    T: spec.contextLength,
  };
  const states = [
    ...honest.record.states.slice(0, j),
    await putState(blocks, poisoned),
  ];
  let last = poisoned;
  for (let h = bounds[j]; h < H; h++) {
    trainer.optimizerStep = h;
    sampler.writeBatch(h, batch.inputs, batch.targets);
    await trainer.step(batch);
    if (bounds.includes(h + 1)) {
      last = {
        step: h + 1,
        params: await trainer.readParams(),
        ...await trainer.readMoments(),
      };
      states.push(await putState(blocks, last));
    }
  }
  trainer.dispose();
  assert.equal(states.length, S + 1);
  const cheat = await committedRound(blocks, states, last.params);
  const a = auditor(blocks);
  const verdicts = [];
  for (let segment = 0; segment < S; segment++) {
    const v = await a.audit({ ...cheat, segment, parent });
    verdicts.push(v.passed ? "pass" : v.check);
  }
  // Before it, honest segments pass; the one ending at the made-up state
  // fails its replay; from it on, the moments are out of any run's reach
  // for as long as the poison lasts (here, the rest of the round).
  assert.deepEqual(verdicts.slice(0, j - 1), Array(j - 1).fill("pass"));
  assert.equal(verdicts[j - 1], "replay");
  assert.deepEqual(verdicts.slice(j), Array(S - j).fill("start"));
});
