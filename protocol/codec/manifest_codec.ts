/**
 * A round manifest's bytes: canonical JSON out, and in, a strict parse
 * that names the first bad field (`ManifestError`) and bounds every list
 * and string before anything is kept.
 *
 * @module
 */
import {
  AGGREGATION_RULES,
  AGGREGATION_SETTINGS,
  type AggregationRule,
  type AggregationSettingName,
  checkAggregationRule,
} from "../aggregation/aggregation_rule.ts";
import { canonicalJson } from "../content/canonical_json.ts";
import {
  MAX_CID_LENGTH,
  MAX_JOB_ID_LENGTH,
  MAX_LOSS,
  MAX_PEER_ID_LENGTH,
} from "../messages/messages.ts";
import {
  isAddress,
  isCanonicalCid,
  isJobId,
  isLoss,
  isPeerId,
} from "../messages/message_fields.ts";
import { comparePeerIds } from "../peers/peer_table.ts";
import { MAX_PIECES } from "../aggregation/shards.ts";
import { sumGroupBounds } from "../aggregation/slice_screen.ts";
import { describe } from "../spec/_spec_fields.ts";
import {
  EXCLUSION_REASONS,
  ExclusionReason,
  MANIFEST_VERSION,
  ManifestContribution,
  ManifestError,
  ManifestExclusion,
  ManifestShards,
  MAX_CONTRIBUTIONS,
  MAX_MANIFEST_BYTES,
  RoundManifest,
  SliceBackup,
  unservedSlice,
} from "../round/round_manifest.ts";

const TOP_KEYS = [
  "v",
  "job",
  "round",
  "parent",
  "leader",
  "rule",
  "contributions",
  "excluded",
  "checkpoint",
  "shards",
];

const SHARDS_KEYS = ["slices", "sums", "groups", "update", "backups"];

const RULE_KEYS = ["rule", ...AGGREGATION_SETTINGS.map(([name]) => name)];

const CONTRIBUTION_KEYS = ["peer", "account", "delta", "tokens", "loss"];

const EXCLUSION_KEYS = ["peer", "delta", "reason", "evidence"];

const CID_PROBLEM =
  `must be a CIDv1 (sha2-256) in base32, at most ${MAX_CID_LENGTH} chars`;

const utf8Encoder = new TextEncoder();

// fatal: invalid UTF-8 is refused, not patched with U+FFFD.
const utf8Decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Checks an untrusted value (parsed JSON, or an object built in code) and
 * returns the manifest rebuilt from its checked fields only. Throws a
 * {@linkcode ManifestError} naming the first bad field.
 */
export function parseManifest(value: unknown): RoundManifest {
  const top = objectWith(value, "", TOP_KEYS);
  if (top.v !== MANIFEST_VERSION) {
    throw new ManifestError(
      "v",
      `must be ${MANIFEST_VERSION}`,
      describe(top.v),
    );
  }
  const job = check(top.job, "job", isJobId, JOB_PROBLEM);
  const round = check(top.round, "round", isCount, COUNT_PROBLEM);
  const parent = check(top.parent, "parent", isCanonicalCid, CID_PROBLEM);
  const leader = check(top.leader, "leader", isPeerId, PEER_PROBLEM);
  const rule = parseRule(top.rule);
  const contributions = parseContributions(top.contributions);
  const excluded = parseExcluded(top.excluded, contributions);
  const checkpoint = check(
    top.checkpoint,
    "checkpoint",
    isCanonicalCid,
    CID_PROBLEM,
  );
  // Absent unless the job is sharded, so other manifests keep their CIDs.
  const shards = top.shards === undefined
    ? {}
    : { shards: parseShards(top.shards) };
  return {
    v: MANIFEST_VERSION,
    job,
    // Adding 0 turns -0 into 0, which is what re-encoding it would give.
    round: round + 0,
    parent,
    leader,
    rule,
    contributions,
    excluded,
    checkpoint,
    ...shards,
  };
}

function parseShards(value: unknown): ManifestShards {
  const obj = objectWith(value, "shards", SHARDS_KEYS);
  const slices = check(
    obj.slices,
    "shards.slices",
    (v): v is number => isCount(v) && v >= 1 && v <= MAX_PIECES,
    `must be an integer in [1, ${MAX_PIECES}]`,
  );
  const groups = sumGroupBounds(slices).length - 1;
  const cids = (field: "sums" | "groups" | "update") => {
    const list = obj[field];
    const [count, each] = field === "groups"
      ? [groups, "group of slices"]
      : [slices, "slice"];
    if (!Array.isArray(list) || list.length !== count) {
      throw new ManifestError(
        `shards.${field}`,
        `must be an array of ${count} CIDs, one a ${each}`,
        Array.isArray(list)
          ? `current length is ${list.length}`
          : describe(list),
      );
    }
    return list.map((cid, j) =>
      check(cid, `shards.${field}[${j}]`, isCanonicalCid, CID_PROBLEM)
    );
  };
  const list = obj.backups;
  if (!Array.isArray(list) || list.length > slices) {
    throw new ManifestError(
      "shards.backups",
      `must be an array of at most ${slices} backups, one a slice`,
      Array.isArray(list) ? `current length is ${list.length}` : describe(list),
    );
  }
  const backups: SliceBackup[] = [];
  for (const [i, value] of list.entries()) {
    const path = `shards.backups[${i}]`;
    const entry = objectWith(value, path, ["slice", "peer", "replaces"]);
    const slice = check(
      entry.slice,
      `${path}.slice`,
      (v): v is number =>
        isCount(v) && v < slices && (i === 0 || v > backups[i - 1].slice),
      `must be a slice below ${slices}, after the one before it`,
    );
    const peer = check(entry.peer, `${path}.peer`, isPeerId, PEER_PROBLEM);
    const replaces = check(
      entry.replaces,
      `${path}.replaces`,
      isPeerId,
      PEER_PROBLEM,
    );
    backups.push({ slice: slice + 0, peer, replaces });
  }
  return {
    slices: slices + 0,
    sums: cids("sums"),
    groups: cids("groups"),
    update: cids("update"),
    backups,
  };
}

/**
 * The canonical bytes of `manifest` (UTF-8 JSON, keys sorted, no
 * whitespace), after checking it with {@linkcode parseManifest}, so a
 * leader never publishes what verifiers would refuse.
 *
 * @example Round trip
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeManifest, encodeManifest } from "./manifest_codec.ts";
 * import { DEFAULT_AGGREGATION } from "../aggregation/aggregation_rule.ts";
 *
 * const cid = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
 * const manifest = {
 *   v: 2, job: "bafyjob", round: 0, parent: cid, leader: "12D3KooWabc",
 *   rule: DEFAULT_AGGREGATION, checkpoint: cid,
 *   contributions: [{
 *     peer: "12D3KooWabc", account: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
 *     delta: cid, tokens: 1024, loss: 5.5,
 *   }],
 *   excluded: [],
 * } as const;
 * const back = decodeManifest(encodeManifest(manifest));
 * assert(back.contributions[0].tokens === 1024);
 * ```
 */
export function encodeManifest(manifest: RoundManifest): Uint8Array {
  return utf8Encoder.encode(canonicalJson(parseManifest(manifest)));
}

/**
 * Reads a manifest from bytes: at most {@linkcode MAX_MANIFEST_BYTES},
 * UTF-8, JSON, every field valid, and in canonical form (so bytes fetched
 * by CID re-encode to that CID). Throws a {@linkcode ManifestError}.
 */
export function decodeManifest(bytes: Uint8Array): RoundManifest {
  if (!(bytes instanceof Uint8Array)) {
    throw new ManifestError("", "must be a Uint8Array");
  }
  if (bytes.length > MAX_MANIFEST_BYTES) {
    throw new ManifestError(
      "",
      `must be at most ${MAX_MANIFEST_BYTES} bytes`,
      `current size is ${bytes.length} bytes`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(utf8Decoder.decode(bytes));
  } catch (error) {
    throw new ManifestError("", "must be UTF-8 JSON", String(error));
  }
  const manifest = parseManifest(value);
  const canonical = encodeManifest(manifest);
  if (
    canonical.length !== bytes.length ||
    !canonical.every((byte, i) => byte === bytes[i])
  ) {
    throw new ManifestError(
      "",
      "must be in canonical form (keys sorted, no whitespace): encode it with encodeManifest",
    );
  }
  return manifest;
}

const PEER_PROBLEM =
  `must be a peer id of 1-${MAX_PEER_ID_LENGTH} alphanumerics`;

const JOB_PROBLEM = `must be 1-${MAX_JOB_ID_LENGTH} chars of [A-Za-z0-9._:-]`;

const COUNT_PROBLEM = "must be a safe integer >= 0";

function parseRule(value: unknown): AggregationRule {
  const obj = objectWith(value, "rule", RULE_KEYS);
  const rule = {
    rule: check(
      obj.rule,
      "rule.rule",
      (v): v is AggregationRule["rule"] =>
        (AGGREGATION_RULES as readonly unknown[]).includes(v),
      `must be one of ${AGGREGATION_RULES.join(", ")}`,
    ),
    // In table order, so the first bad field is the one named; adding 0
    // turns -0 into 0, which is what re-encoding it would give.
    ...Object.fromEntries(
      AGGREGATION_SETTINGS.map(([name]) => [
        name,
        check(obj[name], `rule.${name}`, isNumber) + 0,
      ]),
    ) as Record<AggregationSettingName, number>,
  };
  // The ranges are aggregate()'s own, so a manifest never passes here and
  // fails there.
  try {
    checkAggregationRule(rule);
  } catch (error) {
    throw new ManifestError(
      "rule",
      `must be a rule aggregate() accepts (${(error as Error).message})`,
    );
  }
  return rule;
}

function parseContributions(value: unknown): ManifestContribution[] {
  if (
    !Array.isArray(value) || value.length < 1 ||
    value.length > MAX_CONTRIBUTIONS
  ) {
    throw new ManifestError(
      "contributions",
      `must be an array of 1-${MAX_CONTRIBUTIONS} contributions`,
      Array.isArray(value)
        ? `current length is ${value.length}`
        : describe(value),
    );
  }
  const out: ManifestContribution[] = [];
  for (const [i, item] of value.entries()) {
    const path = `contributions[${i}]`;
    const obj = objectWith(item, path, CONTRIBUTION_KEYS);
    const peer = peerAfter(obj.peer, path, out[i - 1]?.peer);
    const account = check(
      obj.account,
      `${path}.account`,
      isAddress,
      "must be 0x and 40 hex digits (an address)",
    );
    const delta = check(
      obj.delta,
      `${path}.delta`,
      isCanonicalCid,
      CID_PROBLEM,
    );
    const tokens = check(
      obj.tokens,
      `${path}.tokens`,
      (v): v is number => isCount(v) && v >= 1,
      "must be a safe integer >= 1",
    );
    const loss = check(
      obj.loss,
      `${path}.loss`,
      isLoss,
      `must be a number in [0, ${MAX_LOSS}]`,
    );
    out.push({ peer, account, delta, tokens: tokens + 0, loss: loss + 0 });
  }
  return out;
}

function parseExcluded(
  value: unknown,
  contributions: readonly ManifestContribution[],
): ManifestExclusion[] {
  const room = MAX_CONTRIBUTIONS - contributions.length;
  if (!Array.isArray(value) || value.length > room) {
    throw new ManifestError(
      "excluded",
      `must be an array of at most ${MAX_CONTRIBUTIONS} contributions and exclusions together`,
      Array.isArray(value)
        ? `current length is ${value.length}`
        : describe(value),
    );
  }
  const listed = new Set(contributions.map((c) => c.peer));
  const out: ManifestExclusion[] = [];
  for (const [i, item] of value.entries()) {
    const path = `excluded[${i}]`;
    const obj = objectWith(item, path, EXCLUSION_KEYS);
    const peer = peerAfter(obj.peer, path, out[i - 1]?.peer);
    if (listed.has(peer)) {
      throw new ManifestError(
        `${path}.peer`,
        "must not also be a contribution",
        describe(peer),
      );
    }
    const delta = check(
      obj.delta,
      `${path}.delta`,
      isCanonicalCid,
      CID_PROBLEM,
    );
    const reason = check(
      obj.reason,
      `${path}.reason`,
      (v): v is ExclusionReason =>
        (EXCLUSION_REASONS as readonly unknown[]).includes(v),
      `must be one of ${EXCLUSION_REASONS.join(", ")}`,
    );
    const evidence = reason === "refused-manifest"
      ? check(obj.evidence, `${path}.evidence`, isCanonicalCid, CID_PROBLEM)
      : reason === "unserved"
      ? check(
        obj.evidence,
        `${path}.evidence`,
        (v): v is string =>
          v === "" || (typeof v === "string" && unservedSlice(v) !== null),
        `must be "" or the slice not read, "<k>/<j>", for reason unserved`,
      )
      : check(
        obj.evidence,
        `${path}.evidence`,
        (v): v is string => v === "",
        `must be "" for reason ${reason}`,
      );
    out.push({ peer, delta, reason, evidence });
  }
  return out;
}

/** The peer of list item `path`, checked to sort after `before`'s. */
function peerAfter(
  value: unknown,
  path: string,
  before: string | undefined,
): string {
  const peer = check(value, `${path}.peer`, isPeerId, PEER_PROBLEM);
  // Strictly increasing order gives one encoding and no duplicates, and
  // lets a verifier look a peer up without trusting a count.
  if (before !== undefined && comparePeerIds(before, peer) >= 0) {
    throw new ManifestError(
      `${path}.peer`,
      `must sort after ${before} (sorted by peer id, each once)`,
      describe(peer),
    );
  }
  return peer;
}

/** `value` as an object, after checking that it has no keys but `keys`. */
function objectWith(
  value: unknown,
  path: string,
  keys: readonly string[],
): Readonly<Record<string, unknown>> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ManifestError(path, "must be a JSON object", describe(value));
  }
  // Own keys only: nothing may come from a prototype.
  const obj = Object.fromEntries(Object.entries(value));
  const unknown = Object.keys(obj).find((key) => !keys.includes(key));
  if (unknown !== undefined) {
    throw new ManifestError(
      path === "" ? unknown : `${path}.${unknown}`,
      `is not a field of ${path || "a manifest"}: remove it (fields are ${
        keys.join(", ")
      })`,
    );
  }
  return obj;
}

/** `value` if `test` holds, else a {@linkcode ManifestError} for `field`. */
export function check<T>(
  value: unknown,
  field: string,
  test: (value: unknown) => value is T,
  problem = "must be a finite number",
): T {
  if (!test(value)) throw new ManifestError(field, problem, describe(value));
  return value;
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}
