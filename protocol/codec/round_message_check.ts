/**
 * The validators of the messages of a round's life: delta announcement,
 * manifest announcement, attestation, commit notice, audit failure
 * notice and its refutation, and a sharded round's slice plan and slice
 * announcements. Each also carries
 * `round` and `parent`.
 *
 * @module
 */
import {
  ADDRESS_PROBLEM,
  CID_PROBLEM,
  fail,
  isAddress,
  isCanonicalCid,
  isCount,
  isHex,
  isJobId,
  isLoss,
  isPeerId,
  JOB_ID_PROBLEM,
  LOSS_PROBLEM,
  PEER_ID_PROBLEM,
  SIGNATURE_PATTERN,
  TX_HASH_PATTERN,
  unknownField,
} from "../messages/message_fields.ts";
import {
  type AttestationMessage,
  AUDIT_CHECKS,
  type AuditCheck,
  type AuditFailureNotice,
  type CommitNotice,
  type DeltaAnnounce,
  type FieldCheck,
  type ManifestAnnounce,
  MAX_KERNEL_LENGTH,
  MAX_LEADER_RANK,
  MAX_PLAN_DELTAS,
  MAX_PLAN_PASSES,
  MAX_PLAN_SLICES,
  MAX_SUM_GROUPS,
  type PlanDelta,
  PROTOCOL_VERSION,
  type RefutationNotice,
  type RoundFields,
  type SliceAnnounce,
  type SliceFaultNotice,
  type SlicePlanAnnounce,
} from "../messages/messages.ts";
import { comparePeerIds } from "../peers/peer_table.ts";
import { sumGroupBounds } from "../aggregation/slice_screen.ts";
import { MAX_SEGMENTS } from "../audit/work_record.ts";

const ROUND_FIELDS = ["v", "type", "peer", "job", "round", "parent"];

const DELTA_FIELDS = new Set([
  ...ROUND_FIELDS,
  "delta",
  "tokens",
  "loss",
  "account",
  "work",
  "data",
  "trajectory",
  "kernel",
  "signature",
]);

const HASH_PATTERN = /^0x[0-9a-f]{64}$/;
const KERNEL_PATTERN = new RegExp(`^[a-z0-9-]{1,${MAX_KERNEL_LENGTH}}$`);

const MANIFEST_FIELDS = new Set([
  ...ROUND_FIELDS,
  "manifest",
  "checkpoint",
  "rank",
]);

const ATTEST_FIELDS = new Set([
  ...ROUND_FIELDS,
  "manifest",
  "checkpoint",
  "account",
  "signature",
]);

const COMMITTED_FIELDS = new Set([...ROUND_FIELDS, "checkpoint", "tx"]);

const AUDIT_FIELDS = new Set([
  ...ROUND_FIELDS,
  "accused",
  "accusedAccount",
  "segment",
  "check",
  "account",
  "signature",
]);

const REFUTE_FIELDS = new Set([
  ...ROUND_FIELDS,
  "accused",
  "accusedAccount",
  "accuser",
  "account",
  "signature",
]);

/**
 * Checks a parsed delta announcement. The caller has already checked `v`
 * and `type`.
 *
 * @example Accepting a delta announcement
 * ```ts
 * import { validateDeltaAnnounce } from "./round_message_check.ts";
 * const cid = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
 * const check = validateDeltaAnnounce({
 *   v: 1, type: "delta", peer: "12D3KooWabc", job: "bafyjob", round: 3,
 *   parent: cid, delta: cid, tokens: 8192, loss: 2.5,
 *   account: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
 *   work: cid, data: `0x${"ab".repeat(32)}`, trajectory: `0x${"cd".repeat(32)}`,
 *   kernel: "wasm-relaxed", signature: `0x${"11".repeat(65)}`,
 * });
 * if (!check.ok) throw new Error(check.problem);
 * ```
 */
export function validateDeltaAnnounce(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<DeltaAnnounce> {
  const common = checkRoundFields(obj, DELTA_FIELDS, "a delta announcement");
  if (!common.ok) return common;
  const { delta, tokens, loss, account, work, data, trajectory, kernel } = obj;
  if (!isCanonicalCid(delta)) return fail("delta", CID_PROBLEM);
  if (!isCount(tokens) || tokens < 1) {
    return fail("tokens", "must be a safe integer >= 1");
  }
  if (!isLoss(loss)) return fail("loss", LOSS_PROBLEM);
  if (!isAddress(account)) return fail("account", ADDRESS_PROBLEM);
  if (!isCanonicalCid(work)) return fail("work", CID_PROBLEM);
  for (const [field, value] of [["data", data], ["trajectory", trajectory]]) {
    if (!isHex(value, HASH_PATTERN)) {
      return fail(field as string, "must be 0x and 64 lowercase hex digits");
    }
  }
  if (typeof kernel !== "string" || !KERNEL_PATTERN.test(kernel)) {
    return fail("kernel", `must be 1-${MAX_KERNEL_LENGTH} of [a-z0-9-]`);
  }
  if (!isHex(obj.signature, SIGNATURE_PATTERN)) {
    return fail("signature", "must be 0x and 130 hex digits");
  }
  const message: DeltaAnnounce = {
    v: PROTOCOL_VERSION,
    type: "delta",
    ...common.message,
    delta,
    tokens: tokens + 0,
    loss: loss + 0,
    account,
    work,
    data: data as `0x${string}`,
    trajectory: trajectory as `0x${string}`,
    kernel,
    signature: obj.signature,
  };
  return { ok: true, message };
}

/**
 * Checks a parsed manifest announcement. The caller has already checked
 * `v` and `type`.
 */
export function validateManifestAnnounce(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<ManifestAnnounce> {
  const common = checkRoundFields(obj, MANIFEST_FIELDS, "a manifest");
  if (!common.ok) return common;
  const { manifest, checkpoint, rank } = obj;
  if (!isCanonicalCid(manifest)) return fail("manifest", CID_PROBLEM);
  if (!isCanonicalCid(checkpoint)) return fail("checkpoint", CID_PROBLEM);
  if (!isCount(rank) || rank > MAX_LEADER_RANK) {
    return fail("rank", `must be an integer in [0, ${MAX_LEADER_RANK}]`);
  }
  const message: ManifestAnnounce = {
    v: PROTOCOL_VERSION,
    type: "manifest",
    ...common.message,
    manifest,
    checkpoint,
    rank: rank + 0,
  };
  return { ok: true, message };
}

/**
 * Checks a parsed attestation. Only the signature's shape is checked here;
 * recovering its signer needs the EIP-712 domain, which is the chain
 * layer's business.
 */
export function validateAttestation(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<AttestationMessage> {
  const common = checkRoundFields(obj, ATTEST_FIELDS, "an attestation");
  if (!common.ok) return common;
  const { manifest, checkpoint, account, signature } = obj;
  if (!isCanonicalCid(manifest)) return fail("manifest", CID_PROBLEM);
  if (!isCanonicalCid(checkpoint)) return fail("checkpoint", CID_PROBLEM);
  if (!isAddress(account)) return fail("account", ADDRESS_PROBLEM);
  if (!isHex(signature, SIGNATURE_PATTERN)) {
    return fail("signature", "must be 0x and 130 hex digits (65 bytes)");
  }
  const message: AttestationMessage = {
    v: PROTOCOL_VERSION,
    type: "attest",
    ...common.message,
    manifest,
    checkpoint,
    account,
    signature,
  };
  return { ok: true, message };
}

/** Checks a parsed commit notice. */
export function validateCommitNotice(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<CommitNotice> {
  const common = checkRoundFields(obj, COMMITTED_FIELDS, "a commit notice");
  if (!common.ok) return common;
  const { checkpoint, tx } = obj;
  if (!isCanonicalCid(checkpoint)) return fail("checkpoint", CID_PROBLEM);
  if (!isHex(tx, TX_HASH_PATTERN)) {
    return fail("tx", "must be 0x and 64 hex digits (a transaction hash)");
  }
  const message: CommitNotice = {
    v: PROTOCOL_VERSION,
    type: "committed",
    ...common.message,
    checkpoint,
    tx,
  };
  return { ok: true, message };
}

/**
 * Checks a parsed audit failure notice. As for attestations, only the
 * signature's shape is checked here.
 */
export function validateAuditFailure(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<AuditFailureNotice> {
  const common = checkRoundFields(obj, AUDIT_FIELDS, "an audit failure");
  if (!common.ok) return common;
  const { accused, accusedAccount, segment, check, account, signature } = obj;
  if (!isPeerId(accused)) return fail("accused", PEER_ID_PROBLEM);
  if (accused === common.message.peer) {
    return fail("accused", "must not be the auditor itself");
  }
  if (!isAddress(accusedAccount)) {
    return fail("accusedAccount", ADDRESS_PROBLEM);
  }
  if (!isCount(segment) || segment >= MAX_SEGMENTS) {
    return fail("segment", `must be an integer in [0, ${MAX_SEGMENTS})`);
  }
  if (!AUDIT_CHECKS.includes(check as AuditCheck)) {
    return fail("check", `must be one of ${AUDIT_CHECKS.join(", ")}`);
  }
  if (!isAddress(account)) return fail("account", ADDRESS_PROBLEM);
  if (!isHex(signature, SIGNATURE_PATTERN)) {
    return fail("signature", "must be 0x and 130 hex digits (65 bytes)");
  }
  const message: AuditFailureNotice = {
    v: PROTOCOL_VERSION,
    type: "audit",
    ...common.message,
    accused,
    accusedAccount,
    segment: segment + 0,
    check: check as AuditCheck,
    account,
    signature,
  };
  return { ok: true, message };
}

/**
 * Checks a parsed refutation of an audit failure verdict. Only the
 * signature's shape is checked here.
 */
export function validateRefutation(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<RefutationNotice> {
  const common = checkRoundFields(obj, REFUTE_FIELDS, "a refutation");
  if (!common.ok) return common;
  const { accused, accusedAccount, accuser, account, signature } = obj;
  if (!isPeerId(accused)) return fail("accused", PEER_ID_PROBLEM);
  if (accused === common.message.peer) {
    return fail("accused", "must not be the refuting peer itself");
  }
  if (!isAddress(accusedAccount)) {
    return fail("accusedAccount", ADDRESS_PROBLEM);
  }
  if (!isAddress(accuser)) return fail("accuser", ADDRESS_PROBLEM);
  if (!isAddress(account)) return fail("account", ADDRESS_PROBLEM);
  if (!isHex(signature, SIGNATURE_PATTERN)) {
    return fail("signature", "must be 0x and 130 hex digits (65 bytes)");
  }
  const message: RefutationNotice = {
    v: PROTOCOL_VERSION,
    type: "refute",
    ...common.message,
    accused,
    accusedAccount,
    accuser,
    account,
    signature,
  };
  return { ok: true, message };
}

const PLAN_FIELDS = new Set([
  ...ROUND_FIELDS,
  "rank",
  "pass",
  "deltas",
  "sums",
  "groups",
  "extra",
]);

const SLICE_FIELDS = new Set([
  ...ROUND_FIELDS,
  "leader",
  "pass",
  "slice",
  "sums",
  "update",
]);

/**
 * Checks a parsed slice plan: at most {@linkcode MAX_PLAN_DELTAS} deltas,
 * sorted by peer id with no peer twice, at most
 * {@linkcode MAX_PLAN_SLICES} agreed sums, and ascending slices for backups.
 */
export function validateSlicePlan(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<SlicePlanAnnounce> {
  const common = checkRoundFields(obj, PLAN_FIELDS, "a slice plan");
  if (!common.ok) return common;
  const { rank, pass, deltas, sums } = obj;
  if (!isCount(rank) || rank > MAX_LEADER_RANK) {
    return fail("rank", `must be an integer in [0, ${MAX_LEADER_RANK}]`);
  }
  if (!isCount(pass) || pass < 1 || pass > MAX_PLAN_PASSES) {
    return fail("pass", `must be an integer in [1, ${MAX_PLAN_PASSES}]`);
  }
  if (
    !Array.isArray(deltas) || deltas.length < 1 ||
    deltas.length > MAX_PLAN_DELTAS
  ) {
    return fail("deltas", `must list 1 to ${MAX_PLAN_DELTAS} deltas`);
  }
  const listed: PlanDelta[] = [];
  for (const [i, d] of deltas.entries()) {
    const field = `deltas[${i}]`;
    if (typeof d !== "object" || d === null || Array.isArray(d)) {
      return fail(field, "must be an object");
    }
    const unknown = unknownField(d, DELTA_ENTRY_FIELDS);
    if (unknown !== undefined) return fail(`${field}.${unknown}`, "is unknown");
    const { peer, delta, tokens } = d as Record<string, unknown>;
    if (!isPeerId(peer)) return fail(`${field}.peer`, PEER_ID_PROBLEM);
    if (i > 0 && comparePeerIds(listed[i - 1].peer, peer) >= 0) {
      return fail(`${field}.peer`, "must sort after the one before it");
    }
    if (!isCanonicalCid(delta)) return fail(`${field}.delta`, CID_PROBLEM);
    if (!isCount(tokens) || tokens < 1) {
      return fail(`${field}.tokens`, "must be a safe integer >= 1");
    }
    listed.push({ peer, delta, tokens: tokens + 0 });
  }
  if (!Array.isArray(sums) || sums.length > MAX_PLAN_SLICES) {
    return fail("sums", `must list at most ${MAX_PLAN_SLICES} CIDs`);
  }
  for (const [i, cid] of sums.entries()) {
    if (!isCanonicalCid(cid)) return fail(`sums[${i}]`, CID_PROBLEM);
  }
  const { groups } = obj;
  const groupCount = sums.length === 0
    ? 0
    : sumGroupBounds(sums.length).length - 1;
  if (!Array.isArray(groups) || groups.length !== groupCount) {
    return fail(
      "groups",
      `must list ${groupCount} CIDs, one a group of the ${sums.length} slices' sums`,
    );
  }
  for (const [i, cid] of groups.entries()) {
    if (!isCanonicalCid(cid)) return fail(`groups[${i}]`, CID_PROBLEM);
  }
  const { extra } = obj;
  if (!Array.isArray(extra) || extra.length > MAX_PLAN_SLICES) {
    return fail("extra", `must list at most ${MAX_PLAN_SLICES} slices`);
  }
  for (const [i, j] of extra.entries()) {
    if (!isCount(j) || j >= MAX_PLAN_SLICES || (i > 0 && j <= extra[i - 1])) {
      return fail(
        `extra[${i}]`,
        `must be a slice below ${MAX_PLAN_SLICES}, after the one before it`,
      );
    }
  }
  const message: SlicePlanAnnounce = {
    v: PROTOCOL_VERSION,
    type: "plan",
    ...common.message,
    rank: rank + 0,
    pass: pass + 0,
    deltas: listed,
    sums: [...sums],
    groups: [...groups],
    extra: extra.map((j: number) => j + 0),
  };
  return { ok: true, message };
}

const DELTA_ENTRY_FIELDS = new Set(["peer", "delta", "tokens"]);

/** Checks a parsed slice announcement. */
export function validateSlice(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<SliceAnnounce> {
  const common = checkRoundFields(obj, SLICE_FIELDS, "a slice announcement");
  if (!common.ok) return common;
  const { leader, pass, slice, sums, update } = obj;
  if (!isPeerId(leader)) return fail("leader", PEER_ID_PROBLEM);
  if (!isCount(pass) || pass < 1 || pass > MAX_PLAN_PASSES) {
    return fail("pass", `must be an integer in [1, ${MAX_PLAN_PASSES}]`);
  }
  if (!isCount(slice) || slice >= MAX_PLAN_SLICES) {
    return fail("slice", `must be an integer in [0, ${MAX_PLAN_SLICES})`);
  }
  if (!isCanonicalCid(sums)) return fail("sums", CID_PROBLEM);
  if (update !== "" && !isCanonicalCid(update)) {
    return fail("update", `${CID_PROBLEM}, or empty`);
  }
  const message: SliceAnnounce = {
    v: PROTOCOL_VERSION,
    type: "slice",
    ...common.message,
    leader,
    pass: pass + 0,
    slice: slice + 0,
    sums,
    update,
  };
  return { ok: true, message };
}

const FAULT_FIELDS = new Set([...ROUND_FIELDS, "manifest", "slice"]);

/** Checks a parsed slice fault notice. */
export function validateSliceFault(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<SliceFaultNotice> {
  const common = checkRoundFields(obj, FAULT_FIELDS, "a slice fault notice");
  if (!common.ok) return common;
  const { manifest, slice } = obj;
  if (!isCanonicalCid(manifest)) return fail("manifest", CID_PROBLEM);
  const parts = MAX_PLAN_SLICES + MAX_SUM_GROUPS;
  if (!isCount(slice) || slice >= parts) {
    return fail("slice", `must be an integer in [0, ${parts})`);
  }
  const message: SliceFaultNotice = {
    v: PROTOCOL_VERSION,
    type: "fault",
    ...common.message,
    manifest,
    slice: slice + 0,
  };
  return { ok: true, message };
}

/**
 * Checks that `obj` has no field outside `known` and that the shared round
 * fields are valid; `kind` names the message type in the problem.
 */
function checkRoundFields(
  obj: Readonly<Record<string, unknown>>,
  known: ReadonlySet<string>,
  kind: string,
): FieldCheck<RoundFields> {
  const unknown = unknownField(obj, known);
  if (unknown !== undefined) return fail(unknown, `is not a field of ${kind}`);
  const { peer, job, round, parent } = obj;
  if (!isPeerId(peer)) return fail("peer", PEER_ID_PROBLEM);
  if (!isJobId(job)) return fail("job", JOB_ID_PROBLEM);
  if (!isCount(round)) return fail("round", "must be a safe integer >= 0");
  if (!isCanonicalCid(parent)) return fail("parent", CID_PROBLEM);
  return { ok: true, message: { peer, job, round: round + 0, parent } };
}
