import { deepStrictEqual, strictEqual } from "node:assert";
import {
  type GossipMessage,
  MAX_CID_LENGTH,
  MAX_JOB_ID_LENGTH,
  MAX_LEADER_RANK,
  MAX_MESSAGE_BYTES,
  MAX_PEER_ID_LENGTH,
  MAX_PLAN_DELTAS,
  MAX_PLAN_MESSAGE_BYTES,
  MAX_PLAN_PASSES,
  MAX_PLAN_SLICES,
  MAX_SUM_GROUPS,
  type MessageType,
} from "../messages/messages.ts";
import { isCanonicalCid } from "../messages/message_fields.ts";
import { isMessageType, validateFields } from "./message_check.ts";
import { HEARTBEAT, PLAN, ROUND_MESSAGES } from "./_message_fixtures.ts";

Deno.test("isMessageType() knows every union member and nothing inherited", () => {
  for (
    const type of [
      "heartbeat",
      "delta",
      "manifest",
      "attest",
      "committed",
      "audit",
      "refute",
      "plan",
      "slice",
    ]
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

Deno.test("the bounds keep every message type far under MAX_MESSAGE_BYTES", () => {
  // Every string at its cap (a CID cannot reach MAX_CID_LENGTH, so use the
  // cap itself in the sum) and every number at its longest.
  const longest: Record<MessageType, Record<string, unknown>> = {
    heartbeat: {},
    delta: { tokens: Number.MAX_SAFE_INTEGER, loss: 123456.78901234567 },
    manifest: { rank: MAX_LEADER_RANK },
    attest: {},
    committed: {},
    audit: {},
    refute: {},
    plan: { rank: MAX_LEADER_RANK },
    slice: {},
    fault: {},
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

Deno.test("a slice plan at its longest stays under MAX_PLAN_MESSAGE_BYTES", () => {
  const cid = (i: number) => `b${String(i).padStart(MAX_CID_LENGTH - 1, "a")}`;
  const peer = (i: number) =>
    `P${String(i).padStart(MAX_PEER_ID_LENGTH - 1, "0")}`;
  // Every string at its cap, bar the validity of the CIDs themselves.
  const longest = {
    ...PLAN,
    peer: peer(MAX_PLAN_DELTAS),
    job: "j".repeat(MAX_JOB_ID_LENGTH),
    round: Number.MAX_SAFE_INTEGER,
    parent: cid(0),
    rank: MAX_LEADER_RANK,
    pass: MAX_PLAN_PASSES,
    deltas: Array.from({ length: MAX_PLAN_DELTAS }, (_, i) => ({
      peer: peer(i),
      delta: cid(i),
      tokens: Number.MAX_SAFE_INTEGER,
    })),
    sums: Array.from({ length: MAX_PLAN_SLICES }, (_, i) => cid(i)),
    groups: Array.from({ length: MAX_SUM_GROUPS }, (_, i) => cid(i)),
    extra: Array.from({ length: MAX_PLAN_SLICES }, (_, i) => i),
  };
  const size = new TextEncoder().encode(JSON.stringify(longest)).byteLength;
  strictEqual(size < MAX_PLAN_MESSAGE_BYTES, true, `${size} bytes`);
  strictEqual(size > MAX_MESSAGE_BYTES, true, `${size} bytes`);
  // One delta more is refused.
  const over = validateFields("plan", {
    ...PLAN,
    deltas: [...PLAN.deltas, ...PLAN.deltas].map((d, i) => ({
      ...d,
      peer: peer(i),
    })).concat(
      Array.from(
        { length: MAX_PLAN_DELTAS },
        (_, i) => ({ ...PLAN.deltas[0], peer: peer(i + 4) }),
      ),
    ),
  });
  strictEqual(over.ok ? "ok" : over.field, "deltas");
});
