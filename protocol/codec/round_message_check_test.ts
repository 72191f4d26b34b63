import { deepStrictEqual, strictEqual } from "node:assert";
import { decodeMessage, encodeMessage } from "./codec.ts";
import {
  MAX_CID_LENGTH,
  MAX_LEADER_RANK,
  MAX_LOSS,
} from "../messages/messages.ts";
import { validateFields } from "./message_check.ts";
import {
  ACCOUNT,
  ATTEST,
  AUDIT,
  base58Of,
  CHECKPOINT,
  COMMITTED,
  DELTA,
  DELTA_CID,
  failedRoundField,
  FAULT,
  MANIFEST,
  MANIFEST_CID,
  PARENT,
  PEER,
  PLAN,
  REFUTE,
  ROUND_MESSAGES,
  SLICE,
} from "./_message_fixtures.ts";
import {
  MAX_PLAN_DELTAS,
  MAX_PLAN_PASSES,
  MAX_PLAN_SLICES,
  MAX_SUM_GROUPS,
} from "../messages/messages.ts";
import { shardCount } from "../aggregation/shards.ts";
import { sumGroupBounds } from "../aggregation/slice_screen.ts";

// Round messages: delta announcements, manifests, attestations, commits.

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

Deno.test("validateAuditFailure() bounds its fields", () => {
  const cases: [string, unknown, string][] = [
    ["accused", PEER, "accused"], // the auditor accusing itself
    ["accused", "", "accused"],
    ["accusedAccount", "0x12", "accusedAccount"],
    ["segment", 0, "ok"],
    ["segment", 15, "ok"],
    ["segment", 16, "segment"],
    ["segment", -1, "segment"],
    ["segment", 1.5, "segment"],
    ["check", "delta", "ok"],
    ["check", "loss", "check"],
    ["check", "toString", "check"],
    ["account", "0x", "account"],
    ["signature", `0x${"ab".repeat(64)}`, "signature"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedRoundField(AUDIT, { [field]: value }),
      expected,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("validateRefutation() bounds its fields", () => {
  const cases: [string, unknown, string][] = [
    ["accused", PEER, "accused"], // the refuting peer clearing itself
    ["accused", "", "accused"],
    ["accusedAccount", "0x12", "accusedAccount"],
    ["accuser", "0x12", "accuser"],
    ["accuser", REFUTE.accusedAccount, "ok"],
    ["account", "0x", "account"],
    ["signature", `0x${"ab".repeat(64)}`, "signature"],
    ["segment", 3, "segment"], // not a field of a refutation
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedRoundField(REFUTE, { [field]: value }),
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

Deno.test("validateSlicePlan() wants deltas sorted by peer, each once, and at most MAX_PLAN_SLICES sums and slices", () => {
  const [a, b] = PLAN.deltas;
  const cases: [Record<string, unknown>, string][] = [
    [{}, "ok"],
    [{ deltas: [b, a] }, "deltas[1].peer"],
    [{ deltas: [a, a] }, "deltas[1].peer"],
    [{ deltas: [] }, "deltas"],
    [{ deltas: [{ ...a, tokens: 0 }] }, "deltas[0].tokens"],
    [{ deltas: [{ ...a, extra: 1 }] }, "deltas[0].extra"],
    [{ sums: Array(MAX_PLAN_SLICES + 1).fill(PARENT) }, "sums"],
    [{ groups: [] }, "groups"],
    [{ groups: [PARENT, PARENT] }, "groups"],
    [{ groups: ["bafy"] }, "groups[0]"],
    [{ sums: Array(10).fill(PARENT), groups: Array(3).fill(PARENT) }, "ok"],
    [{ sums: [], groups: [] }, "ok"],
    [{ sums: ["QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"] }, "sums[0]"],
    [{ extra: [1, 1] }, "extra[1]"],
    [{ extra: [MAX_PLAN_SLICES] }, "extra[0]"],
    [{ extra: [MAX_PLAN_SLICES - 1] }, "ok"],
    [{ extra: [-1] }, "extra[0]"],
    [{ extra: [0, 1] }, "ok"],
    [{ pass: 0 }, "pass"],
    [{ pass: MAX_PLAN_PASSES + 1 }, "pass"],
  ];
  for (const [edit, expected] of cases) {
    strictEqual(failedRoundField(PLAN, edit), expected, JSON.stringify(edit));
  }
});

Deno.test("validateSliceFault() wants a manifest CID and a slice below the plan's bound", () => {
  strictEqual(failedRoundField(FAULT, {}), "ok");
  strictEqual(failedRoundField(FAULT, { manifest: "x" }), "manifest");
  // Parts: slices, then groups of sums.
  const parts = MAX_PLAN_SLICES + MAX_SUM_GROUPS;
  strictEqual(failedRoundField(FAULT, { slice: parts }), "slice");
  strictEqual(failedRoundField(FAULT, { slice: parts - 1 }), "ok");
  strictEqual(failedRoundField(FAULT, { slice: -1 }), "slice");
  strictEqual(failedRoundField(FAULT, { leader: PEER }), "leader");
});

Deno.test("validateSlice() takes an update CID or none, and a slice below the plan's bound", () => {
  strictEqual(failedRoundField(SLICE, { update: "" }), "ok");
  strictEqual(failedRoundField(SLICE, { update: "x" }), "update");
  strictEqual(failedRoundField(SLICE, { slice: MAX_PLAN_SLICES }), "slice");
  strictEqual(failedRoundField(SLICE, { slice: MAX_PLAN_SLICES - 1 }), "ok");
});

Deno.test("MAX_PLAN_SLICES: the slices of a plan of MAX_PLAN_DELTAS deltas of the largest model", () => {
  strictEqual(shardCount(MAX_PLAN_DELTAS, 1e12), MAX_PLAN_SLICES);
  strictEqual(sumGroupBounds(MAX_PLAN_SLICES).length - 1, MAX_SUM_GROUPS);
  strictEqual(failedRoundField(SLICE, { leader: "" }), "leader");
});
