import { deepStrictEqual, strictEqual, throws } from "node:assert";
import { base58btc } from "multiformats/bases/base58";
import { DEFAULT_AGGREGATION } from "../aggregation/aggregation_rule.ts";
import { MAX_PIECES } from "../aggregation/shards.ts";
import { sumGroupBounds } from "../aggregation/slice_screen.ts";
import { canonicalJson } from "../content/canonical_json.ts";
import { CID, cidForBytes, cidToString } from "../content/cid.ts";
import { MAX_PEER_ID_LENGTH } from "../messages/messages.ts";
import {
  decodeManifest,
  encodeManifest,
  parseManifest,
} from "../codec/manifest_codec.ts";
import {
  type ManifestContribution,
  ManifestError,
  MAX_CONTRIBUTIONS,
  MAX_MANIFEST_BYTES,
  type RoundManifest,
} from "./round_manifest.ts";

const cidOf = async (text: string) =>
  cidToString(await cidForBytes(new TextEncoder().encode(text)));
const PARENT = await cidOf("C(7)");
const CHECKPOINT = await cidOf("C(8)");
const DELTA_A = await cidOf("delta a");
const DELTA_B = await cidOf("delta b");
const PEER_A = "12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const PEER_B = "12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

const MANIFEST: RoundManifest = {
  v: 2,
  job: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  round: 7,
  parent: PARENT,
  leader: PEER_B,
  rule: DEFAULT_AGGREGATION,
  contributions: [
    {
      peer: PEER_A,
      account: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      delta: DELTA_A,
      tokens: 16384,
      loss: 3.25,
    },
    {
      peer: PEER_B,
      account: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
      delta: DELTA_B,
      tokens: 8000,
      loss: 3.5,
    },
  ],
  excluded: [],
  checkpoint: CHECKPOINT,
};

const utf8 = new TextEncoder();

/** The field a ManifestError names for `value`, or "ok". */
function failedField(value: unknown): string {
  try {
    parseManifest(value);
    return "ok";
  } catch (error) {
    if (error instanceof ManifestError) return error.field;
    throw error;
  }
}

/** MANIFEST with contribution `i` edited. */
function withContribution(
  i: number,
  edit: Record<string, unknown>,
): Record<string, unknown> {
  const contributions: Record<string, unknown>[] = MANIFEST.contributions
    .map((c) => ({ ...c }));
  contributions[i] = { ...contributions[i], ...edit };
  return { ...MANIFEST, contributions };
}

Deno.test("encodeManifest() and decodeManifest() round trip", () => {
  const bytes = encodeManifest(MANIFEST);
  deepStrictEqual(decodeManifest(bytes), MANIFEST);
  strictEqual(new TextDecoder().decode(bytes), canonicalJson(MANIFEST));
  strictEqual(
    new TextDecoder().decode(bytes).startsWith('{"checkpoint":'),
    true,
  );
});

Deno.test("encodeManifest() is independent of the input's key order", () => {
  const reverse = <T extends object>(obj: T): T =>
    Object.fromEntries(Object.entries(obj).reverse()) as T;
  const shuffled: RoundManifest = {
    ...reverse(MANIFEST),
    rule: reverse(MANIFEST.rule),
    contributions: MANIFEST.contributions.map(reverse),
  };
  deepStrictEqual(encodeManifest(shuffled), encodeManifest(MANIFEST));
});

Deno.test("parseManifest() rebuilds the manifest from checked fields", () => {
  const parsed = parseManifest(JSON.parse(JSON.stringify(MANIFEST)));
  deepStrictEqual(parsed, MANIFEST);
  // -0 is read as 0, as re-encoding would write it.
  const zero = parseManifest(withContribution(0, { loss: -0 }));
  strictEqual(Object.is(zero.contributions[0].loss, 0), true);
  // Inherited properties are not fields.
  const inherited = Object.create({ v: 1 });
  Object.assign(inherited, { ...MANIFEST, v: undefined });
  delete inherited.v;
  strictEqual(failedField(inherited), "v");
});

Deno.test("decodeManifest() refuses bytes that are not a canonical manifest", () => {
  const json = canonicalJson(MANIFEST);
  const cases: [Uint8Array, string][] = [
    [new Uint8Array([0xc3, 0x28]), "must be UTF-8 JSON"],
    [utf8.encode("{"), "must be UTF-8 JSON"],
    [utf8.encode("null"), "must be a JSON object"],
    [utf8.encode("[]"), "must be a JSON object"],
    [new Uint8Array([0xef, 0xbb, 0xbf, ...utf8.encode(json)]), "UTF-8 JSON"],
    [utf8.encode(JSON.stringify(MANIFEST)), "canonical form"],
    [utf8.encode(json + "\n"), "canonical form"],
    [utf8.encode(json.replace('"round":7', '"round":7.0')), "canonical"],
    // -0 is a valid loss, but it re-encodes as 0: not canonical.
    [utf8.encode(json.replace('"loss":3.25', '"loss":-0')), "canonical form"],
  ];
  for (const [bytes, message] of cases) {
    throws(
      () => decodeManifest(bytes),
      (error: unknown) =>
        error instanceof ManifestError &&
        error.message.includes(message),
      message,
    );
  }
  const huge = new Uint8Array(MAX_MANIFEST_BYTES + 1).fill(0x20);
  throws(
    () => decodeManifest(huge),
    new RegExp(`must be at most ${MAX_MANIFEST_BYTES} bytes`),
  );
  throws(
    () => decodeManifest("{}" as unknown as Uint8Array),
    /must be a Uint8Array/,
  );
});

Deno.test("parseManifest() rejects unknown and missing fields at every level", () => {
  strictEqual(failedField({ ...MANIFEST, extra: 1 }), "extra");
  strictEqual(
    failedField({ ...MANIFEST, rule: { ...MANIFEST.rule, f: 0 } }),
    "rule.f",
  );
  strictEqual(
    failedField(withContribution(1, { signature: "0x" })),
    "contributions[1].signature",
  );
  for (const field of Object.keys(MANIFEST)) {
    const obj: Record<string, unknown> = { ...MANIFEST };
    delete obj[field];
    strictEqual(failedField(obj), field, `missing ${field}`);
  }
  for (const field of Object.keys(MANIFEST.rule)) {
    const rule: Record<string, unknown> = { ...MANIFEST.rule };
    delete rule[field];
    strictEqual(failedField({ ...MANIFEST, rule }), `rule.${field}`);
  }
  for (const field of Object.keys(MANIFEST.contributions[0])) {
    const c: Record<string, unknown> = { ...MANIFEST.contributions[0] };
    delete c[field];
    strictEqual(
      failedField({ ...MANIFEST, contributions: [c] }),
      `contributions[0].${field}`,
    );
  }
});

Deno.test("parseManifest() checks every top-level field", () => {
  const base58 = CID.parse(PARENT).toString(base58btc);
  const cases: [string, unknown, string][] = [
    ["v", 3, "v"],
    ["v", "1", "v"],
    ["job", "", "job"],
    ["job", "a b", "job"],
    ["job", "j".repeat(129), "job"],
    ["round", 0, "ok"],
    ["round", -1, "round"],
    ["round", 1.5, "round"],
    ["round", 2 ** 53, "round"],
    ["round", "7", "round"],
    ["parent", base58, "parent"],
    ["parent", "bafy", "parent"],
    ["parent", null, "parent"],
    ["leader", "P".repeat(MAX_PEER_ID_LENGTH), "ok"],
    ["leader", "P".repeat(MAX_PEER_ID_LENGTH + 1), "leader"],
    ["leader", "12D3/evil", "leader"],
    ["checkpoint", base58, "checkpoint"],
    ["checkpoint", 1, "checkpoint"],
    ["rule", null, "rule"],
    ["rule", "trimmed-mean", "rule"],
    ["contributions", [], "contributions"],
    ["contributions", {}, "contributions"],
    ["contributions", [null], "contributions[0]"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedField({ ...MANIFEST, [field]: value }),
      expected,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("parseManifest() checks the rule as aggregate() would", () => {
  const cases: [string, unknown, string][] = [
    ["rule", "median", "ok"],
    ["rule", "centered-clip", "ok"],
    ["rule", "mean", "rule.rule"],
    ["trimFraction", 0, "ok"],
    ["trimFraction", "0.2", "rule.trimFraction"],
    ["trimFraction", 0.5, "rule"],
    ["trimFraction", -0.1, "rule"],
    ["clipTau", 0, "rule"],
    ["clipTau", null, "rule.clipTau"],
    ["clipIterations", 0, "rule"],
    ["clipIterations", 1.5, "rule"],
    ["clipIterations", 101, "rule"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedField({ ...MANIFEST, rule: { ...MANIFEST.rule, [field]: value } }),
      expected,
      `rule.${field} = ${JSON.stringify(value)}`,
    );
  }
  throws(
    () =>
      parseManifest({ ...MANIFEST, rule: { ...MANIFEST.rule, clipTau: 0 } }),
    /rule must be a rule aggregate\(\) accepts \(Cannot aggregate as clipTau/,
  );
});

Deno.test("parseManifest() checks every contribution field", () => {
  const cases: [string, unknown, string][] = [
    ["peer", "", "peer"],
    ["peer", "a-b", "peer"],
    ["account", "0x70997970c51812dc3a010c7d01b50e0d17dc79c8", "ok"],
    ["account", "0x1234", "account"],
    ["account", "70997970c51812dc3a010c7d01b50e0d17dc79c8", "account"],
    ["delta", CID.parse(DELTA_A).toString(base58btc), "delta"],
    ["delta", "", "delta"],
    ["tokens", 1, "ok"],
    ["tokens", 0, "tokens"],
    ["tokens", 1.5, "tokens"],
    ["tokens", 2 ** 53, "tokens"],
    ["tokens", "16384", "tokens"],
    ["loss", 0, "ok"],
    ["loss", 1e6, "ok"],
    ["loss", 1e7, "loss"],
    ["loss", -1, "loss"],
    ["loss", null, "loss"],
  ];
  for (const [field, value, expected] of cases) {
    const got = failedField(withContribution(0, { [field]: value }));
    strictEqual(
      got,
      expected === "ok" ? "ok" : `contributions[0].${expected}`,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("parseManifest() wants contributions sorted by peer id, each once", () => {
  const [a, b] = MANIFEST.contributions;
  const field = (contributions: unknown[]) =>
    failedField({ ...MANIFEST, contributions });
  strictEqual(field([b, a]), "contributions[1].peer");
  strictEqual(field([a, a]), "contributions[1].peer");
  strictEqual(field([a, { ...a, delta: DELTA_B }]), "contributions[1].peer");
  strictEqual(field([b]), "ok");
  // By UTF-16 code unit, not locale: "Z" < "a".
  strictEqual(field([{ ...a, peer: "Z" }, { ...a, peer: "a" }]), "ok");
  strictEqual(
    field([{ ...a, peer: "a" }, { ...a, peer: "Z" }]),
    "contributions[1].peer",
  );
  throws(
    () => parseManifest({ ...MANIFEST, contributions: [b, a] }),
    new RegExp(`contributions\\[1\\]\\.peer must sort after ${PEER_B}`),
  );
});

Deno.test("the largest valid manifest fits in MAX_MANIFEST_BYTES", () => {
  const contributions: ManifestContribution[] = [];
  for (let i = 0; i < MAX_CONTRIBUTIONS; i++) {
    const suffix = String(i).padStart(4, "0");
    contributions.push({
      peer: "P".repeat(MAX_PEER_ID_LENGTH - 4) + suffix,
      account: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      delta: DELTA_A,
      tokens: Number.MAX_SAFE_INTEGER,
      loss: 123456.78901234567,
    });
  }
  const largest = {
    ...MANIFEST,
    job: "j".repeat(128),
    round: Number.MAX_SAFE_INTEGER,
    leader: "P".repeat(MAX_PEER_ID_LENGTH),
    contributions,
    shards: {
      slices: MAX_PIECES,
      sums: Array(MAX_PIECES).fill(DELTA_A),
      groups: Array(sumGroupBounds(MAX_PIECES).length - 1).fill(DELTA_B),
      update: Array(MAX_PIECES).fill(DELTA_B),
      // A backup for every 8th slice: far more than a round needs.
      backups: Array.from({ length: MAX_PIECES / 8 }, (_, i) => ({
        slice: 8 * i,
        peer: "P".repeat(MAX_PEER_ID_LENGTH),
        replaces: "Q".repeat(MAX_PEER_ID_LENGTH),
      })),
    },
  };
  const bytes = encodeManifest(largest);
  strictEqual(bytes.length < MAX_MANIFEST_BYTES, true, `${bytes.length}`);
  strictEqual(decodeManifest(bytes).contributions.length, MAX_CONTRIBUTIONS);
  strictEqual(
    failedField({
      ...largest,
      contributions: [...contributions, ...contributions],
    }),
    "contributions",
  );
});

Deno.test("a sharded round's manifest names k slices' sums and update, each group's total, and nothing else", () => {
  const shards = {
    slices: 2,
    sums: [DELTA_A, DELTA_B],
    groups: [DELTA_A],
    update: [DELTA_B, DELTA_A],
    backups: [{ slice: 1, peer: "12D3KooWBackup", replaces: "12D3KooWLiar" }],
  };
  const sharded = { ...MANIFEST, shards };
  const backed = (...edits: Record<string, unknown>[]) => ({
    ...shards,
    backups: edits.map((edit) => ({
      slice: 0,
      peer: "12D3KooWB",
      replaces: "12D3KooWC",
      ...edit,
    })),
  });
  deepStrictEqual(decodeManifest(encodeManifest(sharded)), sharded);
  strictEqual("shards" in decodeManifest(encodeManifest(MANIFEST)), false);
  const cases: [unknown, string][] = [
    [{ ...shards, slices: 0 }, "shards.slices"],
    [{ ...shards, slices: MAX_PIECES + 1 }, "shards.slices"],
    [{ ...shards, slices: 1.5 }, "shards.slices"],
    [{ ...shards, sums: [DELTA_A] }, "shards.sums"],
    [{ ...shards, groups: [] }, "shards.groups"],
    [{ ...shards, groups: [DELTA_A, DELTA_B] }, "shards.groups"],
    [{ ...shards, groups: ["bafy"] }, "shards.groups[0]"],
    [{ ...shards, backups: undefined }, "shards.backups"],
    [backed({ slice: 2 }), "shards.backups[0].slice"],
    [backed({ slice: 1 }, { slice: 1 }), "shards.backups[1].slice"],
    [backed({ peer: undefined }), "shards.backups[0].peer"],
    [backed({ replaces: undefined }), "shards.backups[0].replaces"],
    [backed({ extra: 1 }), "shards.backups[0].extra"],
    [{ ...shards, update: [DELTA_A, DELTA_B, DELTA_A] }, "shards.update"],
    [{ ...shards, update: [DELTA_A, "bafy"] }, "shards.update[1]"],
    [{ ...shards, more: 1 }, "shards.more"],
    [[], "shards"],
  ];
  for (const [value, field] of cases) {
    strictEqual(failedField({ ...MANIFEST, shards: value }), field);
  }
});

Deno.test("encodeManifest() refuses what decodeManifest() would", () => {
  throws(
    () => encodeManifest({ ...MANIFEST, round: -1 }),
    (error: unknown) =>
      error instanceof ManifestError && error.field === "round" &&
      error.message ===
        "Cannot use round manifest as round must be a safe integer >= 0: current value is -1",
  );
});

Deno.test("excluded deltas are listed sorted, once, and never also credited", async () => {
  const PEER_C = "12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC";
  const zero = {
    peer: PEER_C,
    delta: await cidOf("zero"),
    reason: "zero",
    evidence: "",
  };
  const back = decodeManifest(
    encodeManifest({ ...MANIFEST, excluded: [zero] } as RoundManifest),
  );
  deepStrictEqual(back.excluded, [zero]);
  strictEqual(failedField({ ...MANIFEST, excluded: undefined }), "excluded");
  strictEqual(
    failedField({ ...MANIFEST, excluded: [{ ...zero, reason: "lazy" }] }),
    "excluded[0].reason",
  );
  strictEqual(
    failedField({ ...MANIFEST, excluded: [{ ...zero, tokens: 1 }] }),
    "excluded[0].tokens",
  );
  strictEqual(
    failedField({ ...MANIFEST, excluded: [zero, zero] }),
    "excluded[1].peer",
  );
  // A peer cannot be credited and excluded in one round.
  strictEqual(
    failedField({ ...MANIFEST, excluded: [{ ...zero, peer: PEER_A }] }),
    "excluded[0].peer",
  );
  strictEqual(
    failedField({ ...MANIFEST, excluded: [{ ...zero, evidence: DELTA_A }] }),
    "excluded[0].evidence",
  );
  const refused = { ...zero, reason: "refused-manifest", evidence: DELTA_A };
  deepStrictEqual(
    decodeManifest(
      encodeManifest({ ...MANIFEST, excluded: [refused] } as RoundManifest),
    ).excluded,
    [refused],
  );
  strictEqual(
    failedField({ ...MANIFEST, excluded: [{ ...refused, evidence: "" }] }),
    "excluded[0].evidence",
  );
  // Unserved: no evidence, or in a round led by slices the slice not read.
  const unserved = { ...zero, reason: "unserved", evidence: "12/3" };
  deepStrictEqual(
    decodeManifest(
      encodeManifest({ ...MANIFEST, excluded: [unserved] } as RoundManifest),
    ).excluded,
    [unserved],
  );
  for (const evidence of ["3/3", "1/0", "012/3", "12/-1", DELTA_A, "12/3 "]) {
    strictEqual(
      failedField({ ...MANIFEST, excluded: [{ ...unserved, evidence }] }),
      "excluded[0].evidence",
      evidence,
    );
  }
  strictEqual(
    failedField({ ...MANIFEST, excluded: [{ ...zero, evidence: "12/3" }] }),
    "excluded[0].evidence",
  );
  strictEqual(failedField({ ...MANIFEST, v: 1 }), "v");
});
