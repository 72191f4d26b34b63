import {
  deepStrictEqual,
  notStrictEqual,
  ok,
  strictEqual,
  throws,
} from "node:assert";
import { createHash } from "node:crypto";
import { DEFAULT_ADAMW } from "../../kernels/adamw.ts";
import { DEFAULT_MUON } from "../../kernels/muon.ts";
import { cidFromDigest, cidToString } from "../content/cid.ts";
import {
  decodeJobSpec,
  defaultJobSpec,
  encodeJobSpec,
  jobIdOf,
  type JobSpec,
  JobSpecError,
  maxTokensPerRound,
  parseJobSpec,
  resetsMoments,
} from "./job_spec.ts";

const DATASET = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const SPEC = defaultJobSpec({ dataset: { cid: DATASET } });

/** A deep copy of SPEC as plain JSON with `path` set to `value`. */
function withField(path: string, value: unknown): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(SPEC));
  const keys = path.split(".");
  let at = copy;
  for (const key of keys.slice(0, -1)) at = at[key];
  if (value === undefined) delete at[keys.at(-1)!];
  else at[keys.at(-1)!] = value;
  return copy;
}

function rejects(value: unknown, field: string, message: RegExp): void {
  throws(() => parseJobSpec(value), (error) => {
    ok(error instanceof JobSpecError, String(error));
    strictEqual(error.field, field, error.message);
    ok(message.test(error.message), error.message);
    return true;
  });
}

Deno.test("defaultJobSpec fills in DiLoCo's settings and derived fields", () => {
  strictEqual(SPEC.v, 1);
  deepStrictEqual(SPEC.outer, { lr: 1, momentum: 0.6, nesterov: true });
  deepStrictEqual(SPEC.compression, { format: "int4", blockSize: 256 });
  deepStrictEqual(SPEC.aggregation, {
    rule: "trimmed-mean",
    trimFraction: 0.2,
    clipTau: 1,
    clipIterations: 3,
  });
  deepStrictEqual(SPEC.dataset, { cid: DATASET, valFraction: 0.1 });
  strictEqual(SPEC.model.vocabSize, 256);
  strictEqual(SPEC.contextLength, SPEC.model.contextLength);
  strictEqual(SPEC.inner.totalSteps, SPEC.rounds * SPEC.innerSteps);
  deepStrictEqual(
    { ...SPEC.inner, totalSteps: 0 },
    { ...DEFAULT_ADAMW, totalSteps: 0, muon: DEFAULT_MUON },
  );
  strictEqual(SPEC.quorum, 2); // majority of minPeers 2
});

Deno.test("defaultJobSpec merges nested overrides field by field", () => {
  const spec = defaultJobSpec({
    dataset: { cid: DATASET, valFraction: 0.25 },
    model: { contextLength: 128, layers: 4 },
    outer: { nesterov: false },
    innerSteps: 10,
    rounds: 3,
    minPeers: 5,
  });
  deepStrictEqual(spec.model, { ...SPEC.model, contextLength: 128, layers: 4 });
  strictEqual(spec.contextLength, 128);
  deepStrictEqual(spec.outer, { lr: 1, momentum: 0.6, nesterov: false });
  strictEqual(spec.dataset.valFraction, 0.25);
  strictEqual(spec.inner.totalSteps, 30);
  strictEqual(spec.quorum, 3);
  // Overrides are checked like any input.
  throws(
    () => defaultJobSpec({ dataset: { cid: DATASET }, outer: { lr: 0 } }),
    /outer\.lr must be a number in \(0, 10\]: current value is 0/,
  );
});

Deno.test("encodeJobSpec is canonical: sorted keys, no whitespace", async () => {
  const bytes = encodeJobSpec(SPEC);
  const text = new TextDecoder().decode(bytes);
  ok(text.startsWith('{"aggregation":{"clipIterations":3,"clipTau":1,'), text);
  ok(text.includes('"outer":{"lr":1,"momentum":0.6,"nesterov":true}'));
  ok(!/\s/.test(text), "whitespace in canonical form");
  // The same spec written with keys in another order encodes the same.
  const reversed = Object.fromEntries(Object.entries(SPEC).reverse());
  deepStrictEqual(encodeJobSpec(reversed as unknown as JobSpec), bytes);
  deepStrictEqual(decodeJobSpec(bytes), SPEC);
  // The job id is the raw CID of exactly these bytes.
  const digest = createHash("sha256").update(bytes).digest();
  strictEqual(await jobIdOf(SPEC), cidToString(cidFromDigest(digest)));
  ok((await jobIdOf(SPEC)).startsWith("bafkrei"));
});

Deno.test("every field changes the job id", async () => {
  const base = await jobIdOf(SPEC);
  const changes: [string, unknown][] = [
    ["name", "other"],
    ["model.layers", 3],
    ["inner.maxLr", 0.001],
    ["inner.muon.lr", 0.01],
    ["inner.muon.momentum", 0.9],
    ["outer.nesterov", false],
    ["compression.format", "int8"],
    ["aggregation.rule", "median"],
    ["seed", 1],
  ];
  for (const [path, value] of changes) {
    const spec = parseJobSpec(withField(path, value));
    notStrictEqual(await jobIdOf(spec), base, path);
  }
});

Deno.test("parseJobSpec names each bad field, its value and the fix", () => {
  const cases: [string, unknown, RegExp][] = [
    ["v", 2, /v must be 1: current value is 2/],
    ["name", "has space", /name must be 1-64 chars/],
    ["name", "", /name must be/],
    [
      "model.vocabSize",
      100,
      /model\.vocabSize must be an integer in \[256, 65536\] \(the tokenizer is byte-level\): current value is 100/,
    ],
    ["model.layers", 1.5, /model\.layers must be an integer/],
    [
      "model.heads",
      3,
      /model\.heads must divide model\.dModel \(128\): current value is 3/,
    ],
    ["dataset.cid", "nope", /dataset\.cid must be the dataset manifest's CID/],
    [
      "dataset.cid",
      "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi",
      /raw codec/,
    ],
    [
      "dataset.cid",
      "zb2rhk6GMPQF3hfzwXTaNYFLKomMeC6UXdUt6jZKPpeVirLtV", // DATASET in base58
      /must be written in base32 as bafkrei/,
    ],
    ["dataset.valFraction", 1, /valFraction must be a number in \[0, 1\)/],
    ["inner.maxLr", 0, /inner\.maxLr must be a number in \(0, 10\]/],
    ["inner.minLr", 1, /inner\.minLr .* \(at most inner\.maxLr\)/],
    ["inner.beta2", 1, /inner\.beta2 must be a number in \[0, 1\)/],
    ["inner.gradClip", null, /inner\.gradClip .*current value is null/],
    ["innerSteps", 0, /innerSteps must be an integer in \[1, 1000000\]/],
    ["batchSize", "16", /batchSize .*current value is "16"/],
    ["contextLength", 65, /\[1, 64\] \(at most model\.contextLength\)/],
    [
      "outer.lr",
      -1,
      /^Cannot use job spec as outer\.lr must be a number in \(0, 10\]: current value is -1$/,
    ],
    ["outer.momentum", 1, /outer\.momentum must be a number in \[0, 1\)/],
    ["outer.nesterov", "yes", /outer\.nesterov must be true or false/],
    [
      "compression.format",
      "fp16",
      /compression\.format must be one of "int8", "int4", "sign", "none"/,
    ],
    [
      "compression.blockSize",
      0,
      /blockSize must be an integer in \[1, 65536\]/,
    ],
    ["aggregation.rule", "mean", /aggregation\.rule must be one of/],
    ["aggregation.trimFraction", 0.5, /trimFraction must be .* \[0, 0\.5\)/],
    ["aggregation.clipTau", 0, /clipTau must be a number in \(0, 1000000000\]/],
    ["aggregation.clipIterations", 101, /clipIterations .* \[1, 100\]/],
    [
      "quorum",
      3,
      /quorum .* \[1, 2\] \(at most minPeers\): current value is 3/,
    ],
    ["roundDeadlineMs", 0, /roundDeadlineMs must be an integer/],
    ["rounds", 0, /rounds must be an integer/],
    ["minPeers", 0, /minPeers must be an integer in \[1, 10000\]/],
    ["seed", -1, /seed must be an integer in \[0, 9007199254740991\]/],
    ["outer.lr", undefined, /outer\.lr must be a number in .*: it is missing/],
    ["model", [], /model must be a JSON object: current value is \[\]/],
    ["extra", 1, /extra is not a field of a job spec: remove it/],
    ["outer.foo", 1, /outer\.foo is not a field of outer: remove it/],
  ];
  for (const [path, value, message] of cases) {
    rejects(withField(path, value), path, message);
  }
  // Values JSON cannot carry, from callers building specs in code.
  rejects(
    { ...SPEC, inner: { ...SPEC.inner, gradClip: Infinity } },
    "inner.gradClip",
    /\(0, 1000000000\] \(1e9 means no clipping\): current value is Infinity/,
  );
  rejects({ ...SPEC, seed: NaN }, "seed", /current value is NaN/);
  rejects(null, "", /it must be a JSON object: current value is null/);
  rejects("spec", "", /must be a JSON object/);
});

Deno.test("parseJobSpec refuses a rule that cannot drop a peer at minPeers", () => {
  const noTrim = { ...SPEC.aggregation, trimFraction: 0 };
  rejects(
    { ...SPEC, minPeers: 3, aggregation: noTrim },
    "aggregation.trimFraction",
    /^Cannot use job spec as aggregation\.trimFraction must be > 0 for rule trimmed-mean with minPeers 3, so one peer is dropped from each end \(or use rule median or centered-clip\): current value is 0$/,
  );
  throws(
    () =>
      defaultJobSpec({
        dataset: { cid: DATASET },
        minPeers: 5,
        aggregation: { trimFraction: 0 },
      }),
    /aggregation\.trimFraction must be > 0 .* minPeers 5/,
  );
  // Below 3 peers no rule can outvote one bad peer, so none is refused.
  for (const minPeers of [1, 2]) {
    const spec = parseJobSpec({
      ...SPEC,
      minPeers,
      quorum: 1,
      aggregation: noTrim,
    });
    strictEqual(spec.aggregation.trimFraction, 0);
  }
  // The default trims one peer from 3 up; median needs no trimFraction.
  for (const minPeers of [3, 10]) {
    parseJobSpec({ ...SPEC, minPeers });
    parseJobSpec({
      ...SPEC,
      minPeers,
      aggregation: { ...noTrim, rule: "median" },
    });
  }
});

Deno.test("decodeJobSpec accepts only canonical, bounded UTF-8 JSON", () => {
  const fail = (bytes: Uint8Array, message: RegExp) =>
    throws(() => decodeJobSpec(bytes), (error) => {
      ok(error instanceof JobSpecError && error.field === "", String(error));
      ok(message.test(error.message), error.message);
      return true;
    });
  const utf8 = (text: string) => new TextEncoder().encode(text);
  fail(utf8(JSON.stringify(SPEC, null, 2)), /canonical form/);
  fail(utf8(JSON.stringify(SPEC)), /canonical form/); // unsorted keys
  fail(utf8("{"), /must be UTF-8 JSON/);
  fail(new Uint8Array([0x7b, 0xff, 0x7d]), /must be UTF-8 JSON/);
  fail(new Uint8Array(16 * 1024 + 1), /at most 16384 bytes/);
  throws(
    () => decodeJobSpec(utf8('{"v":2}')),
    /v must be 1: current value is 2/,
  );
});

Deno.test("maxTokensPerRound is innerSteps × batchSize × contextLength", () => {
  strictEqual(maxTokensPerRound(SPEC), 50 * 16 * 64);
});

Deno.test("audit.rate is optional: absent it leaves the spec and its id as before, set it is checked", async () => {
  strictEqual("audit" in SPEC, false);
  const encoded = new TextDecoder().decode(encodeJobSpec(SPEC));
  strictEqual(encoded.includes("audit"), false);
  const sampled = defaultJobSpec({
    dataset: { cid: DATASET },
    audit: { rate: 0.25 },
  });
  deepStrictEqual(sampled.audit, { rate: 0.25 });
  notStrictEqual(await jobIdOf(sampled), await jobIdOf(SPEC));
  deepStrictEqual(decodeJobSpec(encodeJobSpec(sampled)), sampled);
  const base = JSON.parse(JSON.stringify(SPEC));
  for (const rate of [0, -0.5, 1.5, "1", null]) {
    rejects({ ...base, audit: { rate } }, "audit.rate", /audit.rate must be/);
  }
  rejects(
    { ...base, audit: { rate: 1, auditors: 2 } },
    "audit.auditors",
    /not a field/,
  );
  rejects({ ...base, audit: 1 }, "audit", /must be/);
  // The deterrence floor rides beside the rate; absent, it is not written.
  const floored = defaultJobSpec({
    dataset: { cid: DATASET },
    audit: { rate: 0.2, deterrence: 25 },
  });
  deepStrictEqual(decodeJobSpec(encodeJobSpec(floored)), floored);
  notStrictEqual(await jobIdOf(floored), await jobIdOf(sampled));
  for (const deterrence of [-1, "10", null, 2e6]) {
    rejects(
      { ...base, audit: { rate: 1, deterrence } },
      "audit.deterrence",
      /audit.deterrence must be/,
    );
  }
});

Deno.test("moments is optional: absent it leaves the spec and its id as before, set it is checked", async () => {
  strictEqual("moments" in SPEC, false);
  strictEqual(resetsMoments(SPEC), false);
  const reset = defaultJobSpec({ dataset: { cid: DATASET }, moments: "reset" });
  strictEqual(resetsMoments(reset), true);
  notStrictEqual(await jobIdOf(reset), await jobIdOf(SPEC));
  deepStrictEqual(decodeJobSpec(encodeJobSpec(reset)), reset);
  const base = JSON.parse(JSON.stringify(SPEC));
  for (const moments of ["zero", 1, null]) {
    rejects({ ...base, moments }, "moments", /moments must be/);
  }
});

Deno.test("shares is optional: absent it leaves the spec and its id as before, set it is checked", async () => {
  strictEqual("shares" in SPEC, false);
  const encoded = new TextDecoder().decode(encodeJobSpec(SPEC));
  strictEqual(encoded.includes("shares"), false);
  const full = defaultJobSpec({ dataset: { cid: DATASET }, shares: "full" });
  strictEqual(full.shares, "full");
  notStrictEqual(await jobIdOf(full), await jobIdOf(SPEC));
  deepStrictEqual(decodeJobSpec(encodeJobSpec(full)), full);
  const base = JSON.parse(JSON.stringify(SPEC));
  for (const shares of ["fast", 1, null]) {
    rejects({ ...base, shares }, "shares", /shares must be/);
  }
});

Deno.test("inner.muon: Muon by default, null for AdamW alone; a spec without it keeps its id; set it is checked", async () => {
  deepStrictEqual(SPEC.inner.muon, DEFAULT_MUON);
  const adamw = defaultJobSpec({
    dataset: { cid: DATASET },
    inner: { muon: null },
  });
  strictEqual("muon" in adamw.inner, false);
  const encoded = new TextDecoder().decode(encodeJobSpec(adamw));
  strictEqual(encoded.includes("muon"), false);
  // A spec written before the field parses as it was, with its old id.
  const before = parseJobSpec(withField("inner.muon", undefined));
  deepStrictEqual(before, adamw);
  strictEqual(await jobIdOf(before), await jobIdOf(adamw));
  notStrictEqual(await jobIdOf(adamw), await jobIdOf(SPEC));
  deepStrictEqual(decodeJobSpec(encodeJobSpec(SPEC)), SPEC);
  const tuned = defaultJobSpec({
    dataset: { cid: DATASET },
    inner: { muon: { lr: 0.01, momentum: 0.9 }, maxLr: 1e-3 },
  });
  deepStrictEqual(tuned.inner.muon, { lr: 0.01, momentum: 0.9 });
  strictEqual(tuned.inner.maxLr, 1e-3);
  // Merged field by field, as every nested override.
  const partial = defaultJobSpec({
    dataset: { cid: DATASET },
    inner: { muon: { lr: 0.01 } },
  });
  deepStrictEqual(partial.inner.muon, { ...DEFAULT_MUON, lr: 0.01 });
  for (const lr of [0, -1, 11, "0.02", null]) {
    rejects(
      withField("inner.muon", { lr, momentum: 0.95 }),
      "inner.muon.lr",
      /inner.muon.lr must be/,
    );
  }
  for (const momentum of [-0.1, 1, "0.9"]) {
    rejects(
      withField("inner.muon", { lr: 0.02, momentum }),
      "inner.muon.momentum",
      /inner.muon.momentum must be/,
    );
  }
  rejects(
    withField("inner.muon", { lr: 0.02, momentum: 0.9, steps: 5 }),
    "inner.muon.steps",
    /not a field/,
  );
  rejects(withField("inner.muon", "on"), "inner.muon", /must be/);
  rejects(withField("inner.muon", null), "inner.muon", /must be/);
});
