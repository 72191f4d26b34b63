import assert from "node:assert/strict";
import { cidForBytes, cidToString } from "../content/cid.ts";
import { defaultJobSpec } from "../spec/job_spec.ts";
import {
  CROSS_KERNEL_TOLERANCE,
  recordFault,
  replayFault,
  segmentSpan,
  startStepFault,
} from "./segment_checks.ts";
import { dataHash, trajectoryRoot, type WorkRecord } from "./work_record.ts";

const spec = defaultJobSpec({
  dataset: {
    cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  },
  innerSteps: 20,
});
const fullTokens = spec.innerSteps * spec.batchSize * spec.contextLength;

Deno.test("segment checks: a segment's span is cut by the claimed tokens; one the round lacks is a RangeError", () => {
  const span = segmentSpan(spec, fullTokens, 0);
  assert.equal(span.steps, 20);
  assert.equal(span.from, 0);
  assert.equal(span.to, span.bounds[1]);
  assert.equal(span.bounds.at(-1), 20);
  const last = span.bounds.length - 2;
  assert.equal(segmentSpan(spec, fullTokens, last).to, 20);
  assert.throws(() => segmentSpan(spec, fullTokens, last + 1), RangeError);
  assert.throws(() => segmentSpan(spec, fullTokens, -1), RangeError);
});

Deno.test("segment checks: a record must hash to the announced data and trajectory and name a state at each bound", async () => {
  const span = segmentSpan(spec, fullTokens, 0);
  const states = await Promise.all(
    span.bounds.map(async (b) =>
      cidToString(await cidForBytes(new TextEncoder().encode(`state ${b}`)))
    ),
  );
  const record: WorkRecord = {
    peers: ["a", "b"],
    weights: {},
    states,
    shifted: 0,
    from: "",
  };
  const msg = {
    round: 3,
    peer: "a",
    data: dataHash("job", 3, "a", record),
    trajectory: trajectoryRoot(states),
  };
  assert.equal(recordFault("job", msg, record, span), null);
  assert.match(recordFault("other", msg, record, span)!, /data/);
  assert.match(
    recordFault("job", { ...msg, peer: "c" }, record, span)!,
    /data/,
  );
  assert.match(
    recordFault(
      "job",
      { ...msg, trajectory: `0x${"00".repeat(32)}` },
      record,
      span,
    )!,
    /trajectory/,
  );
  const short = { ...record, states: states.slice(1) };
  assert.match(
    recordFault(
      "job",
      {
        ...msg,
        data: dataHash("job", 3, "a", short),
        trajectory: trajectoryRoot(short.states),
      },
      short,
      span,
    )!,
    /names \d+ states/,
  );
});

Deno.test("segment checks: the start is at its step; a replay is exact on the same build, within tolerance on another", () => {
  const span = segmentSpan(spec, fullTokens, 1);
  assert.equal(startStepFault(1, span.from, span), null);
  assert.match(startStepFault(1, span.from + 1, span)!, /not \d+/);
  const same = { kernel: "wasm-simd128", theirKernel: "wasm-simd128" };
  const other = { kernel: "webgpu", theirKernel: "wasm-simd128" };
  assert.equal(replayFault({ exact: true, ...same }, span), null);
  assert.match(replayFault({ exact: false, ...same }, span)!, /reproduce/);
  const within = CROSS_KERNEL_TOLERANCE * 0.9;
  assert.equal(
    replayFault({ exact: false, ...other, off: within, progress: 1 }, span),
    null,
  );
  assert.match(
    replayFault({ exact: false, ...other, off: 0.5, progress: 1 }, span)!,
    /0\.500 of the progress/,
  );
});
