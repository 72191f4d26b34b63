import { deepStrictEqual, strictEqual } from "node:assert";
import { base58btc } from "multiformats/bases/base58";
import * as Digest from "multiformats/hashes/digest";
import { CID, cidForBytes, cidToString } from "./cid.ts";
import { decodeMessage, encodeMessage } from "./codec.ts";
import {
  type AttestationMessage,
  type CommitNotice,
  type DeltaAnnounce,
  type GossipMessage,
  type Heartbeat,
  type ManifestAnnounce,
  MAX_CID_LENGTH,
  MAX_DEVICE_LENGTH,
  MAX_JOB_ID_LENGTH,
  MAX_LEADER_RANK,
  MAX_LOSS,
  MAX_MESSAGE_BYTES,
  MAX_PEER_ID_LENGTH,
  MAX_THROUGHPUT,
  MAX_VERSION_LENGTH,
  type MessageType,
} from "./messages.ts";
import { isCanonicalCid } from "./message_fields.ts";
import { isMessageType, validateFields } from "./message_check.ts";
import { validateHeartbeat } from "./heartbeat_check.ts";

const HEARTBEAT: Heartbeat = {
  v: 1,
  type: "heartbeat",
  peer: "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo",
  version: "0.1.0",
  job: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  round: 3,
  step: 17,
  backend: "wasm",
  device: "wasm-relaxed x1",
  throughput: 812.5,
  seq: 42,
  addrs: ["/ip4/127.0.0.1/tcp/4001"],
};

/** The field that failed, or "ok". */
function failedField(obj: Record<string, unknown>): string {
  const check = validateHeartbeat(obj);
  return check.ok ? "ok" : check.field;
}

Deno.test("validateHeartbeat() accepts a valid heartbeat unchanged", () => {
  const check = validateHeartbeat({ ...HEARTBEAT });
  deepStrictEqual(check, { ok: true, message: HEARTBEAT });
});

Deno.test("validateHeartbeat() rebuilds the message in schema key order", () => {
  const shuffled = Object.fromEntries(Object.entries(HEARTBEAT).reverse());
  const check = validateHeartbeat(shuffled);
  if (!check.ok) throw new Error(check.problem);
  deepStrictEqual(Object.keys(check.message), Object.keys(HEARTBEAT));
  strictEqual(JSON.stringify(check.message), JSON.stringify(HEARTBEAT));
});

Deno.test("validateHeartbeat() rejects unknown and missing fields", () => {
  strictEqual(failedField({ ...HEARTBEAT, extra: 1 }), "extra");
  strictEqual(failedField({ ...HEARTBEAT, __proto__x: 1 }), "__proto__x");
  for (const field of Object.keys(HEARTBEAT)) {
    if (field === "v" || field === "type") continue; // checked by the codec
    const obj: Record<string, unknown> = { ...HEARTBEAT };
    delete obj[field];
    strictEqual(failedField(obj), field, `missing ${field}`);
  }
});

Deno.test("validateHeartbeat() bounds string fields", () => {
  const cases: [string, unknown, string][] = [
    ["peer", "", "peer"],
    ["peer", "a".repeat(MAX_PEER_ID_LENGTH), "ok"],
    ["peer", "a".repeat(MAX_PEER_ID_LENGTH + 1), "peer"],
    ["peer", "12D3Koo W", "peer"],
    ["peer", "peer/evil", "peer"],
    ["peer", 12, "peer"],
    ["version", "1.2.3-rc.1+build.5", "ok"],
    ["version", "1." + "0".repeat(MAX_VERSION_LENGTH - 4) + ".0", "ok"],
    ["version", "1." + "0".repeat(MAX_VERSION_LENGTH - 3) + ".0", "version"],
    ["version", "1.2", "version"],
    ["version", "v1.2.3", "version"],
    ["version", "1.2.3\n", "version"],
    ["job", "tiny-shakespeare.v2", "ok"],
    ["job", "j".repeat(MAX_JOB_ID_LENGTH), "ok"],
    ["job", "j".repeat(MAX_JOB_ID_LENGTH + 1), "job"],
    ["job", "", "job"],
    ["job", "a b", "job"],
    ["job", null, "job"],
    ["backend", "webgpu", "ok"],
    ["backend", "none", "ok"],
    ["backend", "cuda", "backend"],
    ["backend", "WASM", "backend"],
    ["device", "", "ok"],
    ["device", "d".repeat(MAX_DEVICE_LENGTH), "ok"],
    ["device", "d".repeat(MAX_DEVICE_LENGTH + 1), "device"],
    ["device", "gpu\u001b[31m", "device"],
    ["device", "gpü", "device"],
    ["device", 7, "device"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedField({ ...HEARTBEAT, [field]: value }),
      expected,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("validateHeartbeat() bounds numeric fields", () => {
  for (const field of ["round", "step", "seq"]) {
    const cases: [unknown, string][] = [
      [0, "ok"],
      [Number.MAX_SAFE_INTEGER, "ok"],
      [Number.MAX_SAFE_INTEGER + 1, field],
      [1e300, field],
      [-1, field],
      [1.5, field],
      [NaN, field],
      [Infinity, field],
      ["3", field],
      [null, field],
      [[3], field],
    ];
    for (const [value, expected] of cases) {
      strictEqual(
        failedField({ ...HEARTBEAT, [field]: value }),
        expected,
        `${field} = ${String(value)}`,
      );
    }
  }
  const throughputCases: [unknown, string][] = [
    [0, "ok"],
    [0.25, "ok"],
    [MAX_THROUGHPUT, "ok"],
    [MAX_THROUGHPUT * 2, "throughput"],
    [-0.5, "throughput"],
    [NaN, "throughput"],
    [Infinity, "throughput"],
    ["1", "throughput"],
  ];
  for (const [value, expected] of throughputCases) {
    strictEqual(
      failedField({ ...HEARTBEAT, throughput: value }),
      expected,
      `throughput = ${String(value)}`,
    );
  }
});

Deno.test("isMessageType() knows every union member and nothing inherited", () => {
  for (
    const type of ["heartbeat", "delta", "manifest", "attest", "committed"]
  ) {
    strictEqual(isMessageType(type), true, type);
  }
  strictEqual(isMessageType("vote"), false);
  strictEqual(isMessageType("toString"), false);
  strictEqual(isMessageType("__proto__"), false);
});

Deno.test("validateFields() dispatches on type", () => {
  deepStrictEqual(validateFields("heartbeat", { ...HEARTBEAT }), {
    ok: true,
    message: HEARTBEAT,
  });
});

// Round messages: delta announcements, manifests, attestations, commits.

const PEER = HEARTBEAT.peer;
const JOB = HEARTBEAT.job;
const cidOf = async (text: string) =>
  cidToString(await cidForBytes(new TextEncoder().encode(text)));
const PARENT = await cidOf("C(3)");
const DELTA_CID = await cidOf("delta");
const MANIFEST_CID = await cidOf("manifest");
const CHECKPOINT = await cidOf("C(4)");
const ACCOUNT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

const DELTA: DeltaAnnounce = {
  v: 1,
  type: "delta",
  peer: PEER,
  job: JOB,
  round: 3,
  parent: PARENT,
  delta: DELTA_CID,
  tokens: 8192,
  loss: 2.75,
  account: ACCOUNT,
};
const MANIFEST: ManifestAnnounce = {
  v: 1,
  type: "manifest",
  peer: PEER,
  job: JOB,
  round: 3,
  parent: PARENT,
  manifest: MANIFEST_CID,
  checkpoint: CHECKPOINT,
  rank: 0,
};
const ATTEST: AttestationMessage = {
  v: 1,
  type: "attest",
  peer: PEER,
  job: JOB,
  round: 3,
  parent: PARENT,
  manifest: MANIFEST_CID,
  checkpoint: CHECKPOINT,
  account: ACCOUNT,
  signature: `0x${"ab".repeat(64)}1c`,
};
const COMMITTED: CommitNotice = {
  v: 1,
  type: "committed",
  peer: PEER,
  job: JOB,
  round: 3,
  parent: PARENT,
  checkpoint: CHECKPOINT,
  tx: `0x${"0f".repeat(32)}`,
};
const ROUND_MESSAGES: readonly GossipMessage[] = [
  DELTA,
  MANIFEST,
  ATTEST,
  COMMITTED,
];

/** The field of `base` (edited by `edit`) that fails, or "ok". */
function failedRoundField(
  base: GossipMessage,
  edit: Record<string, unknown>,
): string {
  const check = validateFields(base.type, { ...base, ...edit });
  return check.ok ? "ok" : check.field;
}

/** The same CID in base58btc: valid, but not the canonical spelling. */
function base58Of(cid: string): string {
  return CID.parse(cid).toString(base58btc);
}

Deno.test("round messages are accepted unchanged and rebuilt in schema order", () => {
  for (const message of ROUND_MESSAGES) {
    deepStrictEqual(validateFields(message.type, { ...message }), {
      ok: true,
      message,
    });
    const shuffled = Object.fromEntries(Object.entries(message).reverse());
    const check = validateFields(message.type, shuffled);
    if (!check.ok) throw new Error(`${check.field} ${check.problem}`);
    strictEqual(JSON.stringify(check.message), JSON.stringify(message));
  }
});

Deno.test("round messages reject unknown and missing fields", () => {
  for (const message of ROUND_MESSAGES) {
    strictEqual(failedRoundField(message, { extra: 1 }), "extra");
    // A field of another round message is still unknown here.
    const foreign = message.type === "committed" ? "manifest" : "tx";
    strictEqual(failedRoundField(message, { [foreign]: PARENT }), foreign);
    for (const field of Object.keys(message)) {
      if (field === "v" || field === "type") continue; // checked by the codec
      const obj: Record<string, unknown> = { ...message };
      delete obj[field];
      const check = validateFields(message.type, obj);
      strictEqual(check.ok ? "ok" : check.field, field, `${message.type}`);
    }
  }
});

Deno.test("round messages bound the shared fields", () => {
  const cases: [string, unknown, string][] = [
    ["peer", "a".repeat(MAX_PEER_ID_LENGTH), "ok"],
    ["peer", "a".repeat(MAX_PEER_ID_LENGTH + 1), "peer"],
    ["peer", "peer/evil", "peer"],
    ["peer", "", "peer"],
    ["job", "tiny-shakespeare.v2", "ok"],
    ["job", "j".repeat(MAX_JOB_ID_LENGTH + 1), "job"],
    ["job", "a b", "job"],
    ["round", 0, "ok"],
    ["round", Number.MAX_SAFE_INTEGER, "ok"],
    ["round", -1, "round"],
    ["round", 1.5, "round"],
    ["round", "3", "round"],
    ["parent", DELTA_CID, "ok"],
    ["parent", "", "parent"],
    ["parent", "bafy", "parent"],
    ["parent", base58Of(PARENT), "parent"],
    ["parent", PARENT.toUpperCase(), "parent"],
    ["parent", PARENT + " ", "parent"],
    ["parent", "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "parent"],
    ["parent", "b" + "a".repeat(MAX_CID_LENGTH), "parent"],
    ["parent", null, "parent"],
  ];
  for (const message of ROUND_MESSAGES) {
    for (const [field, value, expected] of cases) {
      strictEqual(
        failedRoundField(message, { [field]: value }),
        expected,
        `${message.type}.${field} = ${JSON.stringify(value)}`,
      );
    }
  }
});

Deno.test("isCanonicalCid() wants CIDv1, sha2-256, base32", async () => {
  strictEqual(isCanonicalCid(PARENT), true);
  strictEqual(isCanonicalCid(base58Of(PARENT)), false);
  strictEqual(isCanonicalCid(42), false);
  // A well-formed CID with another hash (identity, 0x00) is refused.
  const identity = CID.createV1(0x55, Digest.create(0x00, new Uint8Array(32)));
  strictEqual(isCanonicalCid(identity.toString()), false);
  // Any codec is fine: blobs are raw, but nothing here depends on it.
  const dagJson = CID.createV1(
    0x0129,
    (await cidForBytes(new Uint8Array([1]))).multihash,
  );
  strictEqual(isCanonicalCid(dagJson.toString()), true);
});

Deno.test("validateDeltaAnnounce() bounds its fields", () => {
  const cases: [string, unknown, string][] = [
    ["delta", PARENT, "ok"],
    ["delta", base58Of(DELTA_CID), "delta"],
    ["delta", 7, "delta"],
    ["tokens", 1, "ok"],
    ["tokens", Number.MAX_SAFE_INTEGER, "ok"],
    ["tokens", 0, "tokens"],
    ["tokens", -5, "tokens"],
    ["tokens", 2.5, "tokens"],
    ["tokens", 2 ** 53, "tokens"],
    ["tokens", "8192", "tokens"],
    ["loss", 0, "ok"],
    ["loss", MAX_LOSS, "ok"],
    ["loss", MAX_LOSS * 1.5, "loss"],
    ["loss", -0.1, "loss"],
    ["loss", NaN, "loss"],
    ["loss", Infinity, "loss"],
    ["loss", null, "loss"],
    ["account", ACCOUNT.toLowerCase(), "ok"],
    ["account", ACCOUNT.toUpperCase().replace("0X", "0x"), "ok"],
    ["account", ACCOUNT.slice(0, -1), "account"],
    ["account", ACCOUNT + "0", "account"],
    ["account", ACCOUNT.slice(2), "account"],
    ["account", "0x" + "g".repeat(40), "account"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedRoundField(DELTA, { [field]: value }),
      expected,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("validateManifestAnnounce() bounds its fields", () => {
  const cases: [string, unknown, string][] = [
    ["manifest", base58Of(MANIFEST_CID), "manifest"],
    ["manifest", "", "manifest"],
    ["checkpoint", base58Of(CHECKPOINT), "checkpoint"],
    ["checkpoint", undefined, "checkpoint"],
    ["rank", MAX_LEADER_RANK, "ok"],
    ["rank", MAX_LEADER_RANK + 1, "rank"],
    ["rank", -1, "rank"],
    ["rank", 0.5, "rank"],
    ["rank", "0", "rank"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedRoundField(MANIFEST, { [field]: value }),
      expected,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("validateAttestation() bounds its fields", () => {
  const cases: [string, unknown, string][] = [
    ["manifest", "nope", "manifest"],
    ["checkpoint", base58Of(CHECKPOINT), "checkpoint"],
    ["account", "0x1234", "account"],
    ["signature", `0x${"AB".repeat(65)}`, "ok"],
    ["signature", `0x${"ab".repeat(64)}`, "signature"],
    ["signature", `0x${"ab".repeat(66)}`, "signature"],
    ["signature", "ab".repeat(65), "signature"],
    ["signature", `0x${"zz".repeat(65)}`, "signature"],
    ["signature", `0x${"ab".repeat(65)}\n`, "signature"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedRoundField(ATTEST, { [field]: value }),
      expected,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("validateCommitNotice() bounds its fields", () => {
  const cases: [string, unknown, string][] = [
    ["checkpoint", "bafy", "checkpoint"],
    ["tx", `0x${"AB".repeat(32)}`, "ok"],
    ["tx", `0x${"ab".repeat(31)}`, "tx"],
    ["tx", `0x${"ab".repeat(33)}`, "tx"],
    ["tx", "ab".repeat(32), "tx"],
    ["tx", 1, "tx"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedRoundField(COMMITTED, { [field]: value }),
      expected,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("round messages turn a received -0 into 0", () => {
  const check = validateFields("delta", { ...DELTA, round: -0, loss: -0 });
  if (!check.ok || check.message.type !== "delta") throw new Error("refused");
  strictEqual(Object.is(check.message.round, 0), true);
  strictEqual(Object.is(check.message.loss, 0), true);
});

Deno.test("the bounds keep every message type far under MAX_MESSAGE_BYTES", () => {
  // Every string at its cap (a CID cannot reach MAX_CID_LENGTH, so use the
  // cap itself in the sum) and every number at its longest.
  const longest: Record<MessageType, Record<string, unknown>> = {
    heartbeat: {},
    delta: { tokens: Number.MAX_SAFE_INTEGER, loss: 123456.78901234567 },
    manifest: { rank: MAX_LEADER_RANK },
    attest: {},
    committed: {},
  };
  const messages: GossipMessage[] = [HEARTBEAT, ...ROUND_MESSAGES];
  for (const message of messages) {
    const check = validateFields(message.type, {
      ...message,
      peer: "P".repeat(MAX_PEER_ID_LENGTH),
      job: "j".repeat(MAX_JOB_ID_LENGTH),
      round: Number.MAX_SAFE_INTEGER,
      ...longest[message.type],
    });
    if (!check.ok) throw new Error(`${check.field} ${check.problem}`);
    const cids = Object.values(check.message).filter(isCanonicalCid).length;
    const size = new TextEncoder().encode(JSON.stringify(check.message))
      .byteLength + cids * MAX_CID_LENGTH;
    strictEqual(size < 2048, true, `${message.type}: ${size} bytes`);
    strictEqual(size < MAX_MESSAGE_BYTES, true);
  }
});

Deno.test("the codec carries every round message", () => {
  for (const message of ROUND_MESSAGES) {
    const bytes = encodeMessage(message);
    deepStrictEqual(decodeMessage(bytes, { from: PEER }), {
      verdict: "accept",
      message,
    });
    const forged = decodeMessage(bytes, { from: "12D3KooWSomebodyElse" });
    strictEqual(forged.verdict, "reject");
    const bad = new TextEncoder().encode(
      JSON.stringify({ ...message, parent: base58Of(PARENT) }),
    );
    const verdict = decodeMessage(bad);
    strictEqual(
      verdict.verdict !== "accept" && verdict.detail,
      `${message.type}.parent must be a CIDv1 (sha2-256) in base32, at most ${MAX_CID_LENGTH} chars`,
    );
  }
});
