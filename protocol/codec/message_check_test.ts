import { deepStrictEqual, strictEqual } from "node:assert";
import {
  type GossipMessage,
  MAX_CID_LENGTH,
  MAX_JOB_ID_LENGTH,
  MAX_LEADER_RANK,
  MAX_MESSAGE_BYTES,
  MAX_PEER_ID_LENGTH,
  type MessageType,
} from "../messages/messages.ts";
import { isCanonicalCid } from "../messages/message_fields.ts";
import { isMessageType, validateFields } from "./message_check.ts";
import { HEARTBEAT, ROUND_MESSAGES } from "./_message_fixtures.ts";

Deno.test("isMessageType() knows every union member and nothing inherited", () => {
  for (
    const type of [
      "heartbeat",
      "delta",
      "manifest",
      "attest",
      "committed",
      "audit",
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
