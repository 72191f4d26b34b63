/**
 * The refusal rules a verifier applies to a round manifest, as pure
 * functions over what it holds: the manifest must be what its leader
 * announced, under the job's rule, listing only deltas their authors
 * announced as listed ({@linkcode fitRefusal}); it must leave out none
 * that this peer got well before it and can read, and owes an amendment
 * for one it got shortly before ({@linkcode missingVerdict}); it must
 * screen out exactly what this peer screens out ({@linkcode
 * screenRefusal}); and where an amendment is owed, a later manifest of
 * the same leader must list what is owed ({@linkcode isAmended}), or the
 * manifest is refused when the wait is over ({@linkcode
 * unamendedRefusal}). The timing behind "well before" and "shortly
 * before" is `censorship.ts`'s. The node's verifier
 * (`node/round/settle/manifest_check.ts`) fetches, waits and recomputes,
 * and asks these rules.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { canonicalJson } from "../content/canonical_json.ts";
import type { DeltaAnnounce, ManifestAnnounce } from "../messages/messages.ts";
import type { JobSpec } from "../spec/job_spec.ts";
import { manifestContribution } from "./contribution.ts";
import type { RoundManifest } from "./round_manifest.ts";

/** A verifier's reason not to attest a manifest. */
export interface ManifestRefusal {
  /** The reason, e.g. "censored" (see {@linkcode NO_BLAME}). */
  readonly code: string;
  readonly message: string;
}

/**
 * Refusal codes that blame no one: a delta, or a block a sharded round's
 * leader published, this peer could not fetch (as for the manifest
 * itself: the network may be at fault), an exclusion or a wait it could
 * not judge, and a manifest its leader amended (not refused, not
 * attested: the amendment is checked instead). Every other refusal blames
 * the leader and costs it the round.
 */
export const NO_BLAME: readonly string[] = [
  "invalid-delta",
  "unserved-slice",
  "cannot-check",
  "superseded",
];

/** Why an amendment is owed for a delta: "late" or "unserved". */
export type Owed = ReadonlyMap<string, "late" | "unserved">;

/**
 * Whether `manifest` is what `m` announced for job `jobId` under `spec`'s
 * rule, every contribution as its author announced it (signed on gossip)
 * and every exclusion naming a delta its peer announced: a leader can
 * neither invent nor alter deltas. The refusal, or null.
 */
export function fitRefusal(
  jobId: string,
  spec: JobSpec,
  m: ManifestAnnounce,
  manifest: RoundManifest,
  announced: readonly DeltaAnnounce[],
): ManifestRefusal | null {
  if (
    manifest.job !== jobId || manifest.round !== m.round ||
    manifest.parent !== m.parent || manifest.leader !== m.peer ||
    manifest.checkpoint !== m.checkpoint
  ) {
    return {
      code: "mismatch",
      message: "manifest does not match its announcement",
    };
  }
  if (canonicalJson(manifest.rule) !== canonicalJson(spec.aggregation)) {
    return { code: "rule", message: "manifest uses another aggregation rule" };
  }
  const byPeer = new Map(announced.map((d) => [d.peer, d]));
  for (const c of manifest.contributions) {
    const d = byPeer.get(c.peer);
    const want = d && manifestContribution(spec, d);
    if (
      !want || want.delta !== c.delta || want.loss !== c.loss ||
      want.account.toLowerCase() !== c.account.toLowerCase() ||
      want.tokens !== c.tokens
    ) {
      return {
        code: "not-announced",
        message: `contribution of ${c.peer} was not announced as listed`,
      };
    }
  }
  for (const e of manifest.excluded) {
    if (byPeer.get(e.peer)?.delta !== e.delta) {
      return {
        code: "not-announced",
        message: `exclusion of ${e.peer} names a delta it did not announce`,
      };
    }
  }
  return null;
}

/**
 * What the deltas a manifest leaves out (`readable`: those this peer can
 * read) mean: one it got well before the manifest (`expected`) is
 * `censored`; one it got shortly before (`preceding`) is `late`, owed an
 * amendment; one it cannot read was rightly left out.
 */
export function missingVerdict(
  readable: readonly string[],
  expected: ReadonlySet<string>,
  preceding: ReadonlySet<string>,
): { censored: string[]; late: string[] } {
  return {
    censored: readable.filter((p) => expected.has(p)),
    late: readable.filter((p) => !expected.has(p) && preceding.has(p)),
  };
}

/** The refusal for deltas left out that this peer got well before it. */
export function censoredRefusal(censored: readonly string[]): ManifestRefusal {
  return {
    code: "censored",
    message: `manifest leaves out the delta of ${
      censored.join(", ")
    }, announced well before the manifest and readable`,
  };
}

/**
 * Whether the manifest's screened-out deltas (`screened`, in its order)
 * are exactly those this peer screens out (`excluded`); the refusal, or
 * null.
 */
export function screenRefusal(
  screened: readonly { peer: string; reason: string }[],
  excluded: readonly { peer: string; reason: string }[],
): ManifestRefusal | null {
  const theirs = screened.map((e) => ({ peer: e.peer, reason: e.reason }));
  const ours = excluded.map((e) => ({ peer: e.peer, reason: e.reason }));
  if (canonicalJson(theirs) === canonicalJson(ours)) return null;
  return {
    code: "screen-mismatch",
    message: `manifest screens out ${
      canonicalJson(theirs.map((e) => [e.peer, e.reason]))
    }, this peer ${canonicalJson(ours.map((e) => [e.peer, e.reason]))}`,
  };
}

/**
 * Whether one of `leads`, the manifests a leader announced for the round,
 * lists every `owed` delta: aggregated, or excluded (an `unserved` one
 * otherwise than as unserved again).
 */
export function isAmended(
  leads: readonly RoundManifest[],
  owed: Owed,
): boolean {
  return leads.some((other) =>
    [...owed].every(([peer, why]) =>
      other.contributions.some((c) => c.peer === peer) ||
      other.excluded.some((e) =>
        e.peer === peer && (why === "late" || e.reason !== "unserved")
      )
    )
  );
}

/** The refusal of a manifest whose amendment came (it is checked instead). */
export function supersededRefusal(owed: Owed): ManifestRefusal {
  return {
    code: "superseded",
    message: `its leader amended it with the delta of ${
      [...owed.keys()].join(", ")
    }`,
  };
}

/**
 * The refusal of a manifest whose owed amendment did not come by its due
 * time: censorship for a `late` delta, an unjustified exclusion for an
 * `unserved` one this peer held; no one is blamed when this peer's event
 * loop did not keep time meanwhile (`steady` false), as it may have missed
 * the amendment.
 */
export function unamendedRefusal(owed: Owed, steady: boolean): ManifestRefusal {
  const peers = [...owed.keys()].join(", ");
  if (!steady) {
    return {
      code: "cannot-check",
      message:
        `this peer's event loop stalled while it waited for an amendment with the delta of ${peers}`,
    };
  }
  const late = [...owed].filter(([, why]) => why === "late");
  if (late.length > 0) {
    return {
      code: "censored",
      message: `manifest leaves out the delta of ${
        late.map(([p]) => p).join(", ")
      }, which reached this peer before it, and its leader did not amend it`,
    };
  }
  return {
    code: "unjustified-exclusion",
    message:
      `manifest excludes the delta of ${peers} as unserved, which this peer held when it came, and its leader did not amend it`,
  };
}
