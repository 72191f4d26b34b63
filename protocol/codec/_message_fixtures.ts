/**
 * Test-only fixtures for the gossip message tests: one valid message of each
 * type, the CIDs they carry, and helpers that edit a field and say which one
 * failed.
 *
 * @module
 */
import { base58btc } from "multiformats/bases/base58";
import { CID, cidForBytes, cidToString } from "../content/cid.ts";
import type {
  AttestationMessage,
  AuditFailureNotice,
  CommitNotice,
  DeltaAnnounce,
  GossipMessage,
  Heartbeat,
  ManifestAnnounce,
  RefutationNotice,
  SliceAnnounce,
  SliceFaultNotice,
  SlicePlanAnnounce,
} from "../messages/messages.ts";
import { validateFields } from "./message_check.ts";

export const HEARTBEAT: Heartbeat = {
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

export const PEER = HEARTBEAT.peer;
export const JOB = HEARTBEAT.job;
const cidOf = async (text: string) =>
  cidToString(await cidForBytes(new TextEncoder().encode(text)));
export const PARENT = await cidOf("C(3)");
export const DELTA_CID = await cidOf("delta");
export const MANIFEST_CID = await cidOf("manifest");
export const CHECKPOINT = await cidOf("C(4)");
export const ACCOUNT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

/** The fields every round message below shares. */
const ROUND = { peer: PEER, job: JOB, round: 3, parent: PARENT };

/** Work-commitment fields of a delta announcement, for fixtures. */
export const WORK_FIELDS = {
  work: await cidOf("work"),
  data: `0x${"ab".repeat(32)}`,
  trajectory: `0x${"cd".repeat(32)}`,
  kernel: "wasm-relaxed",
  signature: `0x${"11".repeat(65)}`,
} as const;

export const DELTA: DeltaAnnounce = {
  v: 1,
  type: "delta",
  ...ROUND,
  delta: DELTA_CID,
  tokens: 8192,
  loss: 2.75,
  account: ACCOUNT,
  ...WORK_FIELDS,
};
export const MANIFEST: ManifestAnnounce = {
  v: 1,
  type: "manifest",
  ...ROUND,
  manifest: MANIFEST_CID,
  checkpoint: CHECKPOINT,
  rank: 0,
};
export const ATTEST: AttestationMessage = {
  v: 1,
  type: "attest",
  ...ROUND,
  manifest: MANIFEST_CID,
  checkpoint: CHECKPOINT,
  account: ACCOUNT,
  signature: `0x${"ab".repeat(64)}1c`,
};
export const COMMITTED: CommitNotice = {
  v: 1,
  type: "committed",
  ...ROUND,
  checkpoint: CHECKPOINT,
  tx: `0x${"0f".repeat(32)}`,
};
export const AUDIT: AuditFailureNotice = {
  v: 1,
  type: "audit",
  ...ROUND,
  accused: "12D3KooWRBhwfeP2Y4TCx1SM6s9rUoHhR5STiGwxBhgFRcw3UERE",
  accusedAccount: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
  segment: 7,
  check: "replay",
  account: ACCOUNT,
  signature: `0x${"cd".repeat(64)}1b`,
};
export const REFUTE: RefutationNotice = {
  v: 1,
  type: "refute",
  ...ROUND,
  accused: AUDIT.accused,
  accusedAccount: AUDIT.accusedAccount,
  accuser: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
  account: ACCOUNT,
  signature: `0x${"ef".repeat(64)}1c`,
};
export const PLAN: SlicePlanAnnounce = {
  v: 1,
  type: "plan",
  ...ROUND,
  rank: 0,
  pass: 1,
  deltas: [
    { peer: "12D3KooWAAAA", delta: DELTA_CID, tokens: 1024 },
    { peer: PEER, delta: MANIFEST_CID, tokens: 512 },
  ],
  sums: [CHECKPOINT],
  groups: [CHECKPOINT],
  extra: [1],
};
export const SLICE: SliceAnnounce = {
  v: 1,
  type: "slice",
  ...ROUND,
  leader: "12D3KooWAAAA",
  pass: 1,
  slice: 3,
  sums: DELTA_CID,
  update: CHECKPOINT,
};
export const FAULT: SliceFaultNotice = {
  v: 1,
  type: "fault",
  ...ROUND,
  manifest: MANIFEST_CID,
  slice: 3,
};
export const ROUND_MESSAGES: readonly GossipMessage[] = [
  DELTA,
  MANIFEST,
  ATTEST,
  COMMITTED,
  AUDIT,
  REFUTE,
  PLAN,
  SLICE,
  FAULT,
];

/** The field of `base` (edited by `edit`) that fails, or "ok". */
export function failedRoundField(
  base: GossipMessage,
  edit: Record<string, unknown>,
): string {
  const check = validateFields(base.type, { ...base, ...edit });
  return check.ok ? "ok" : check.field;
}

/** The same CID in base58btc: valid, but not the canonical spelling. */
export function base58Of(cid: string): string {
  return CID.parse(cid).toString(base58btc);
}
