/**
 * A verifier's phase: the manifest another peer announced is checked
 * (`manifest_check.ts`) against what this peer saw of the round and when,
 * and the verdict goes back to the machine; a refusal is counted, but not
 * a manifest its leader amended (the amendment is checked instead).
 *
 * @module
 */
import {
  expectedDeltas,
  isHasty,
  precedingDeltas,
} from "../../../protocol/round/censorship.ts";
import {
  amendMs,
  censorGraceMs,
  faultWaitMs,
  REANNOUNCE_MS,
} from "../../../protocol/round/round_timing.ts";
import type {
  RoundAction,
  RoundEvent,
  RoundState,
} from "../../../protocol/round/round_state.ts";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { LoopWatch } from "../services/loop_watch.ts";
import {
  ManifestRefused,
  type ManifestVerifier,
  type Witness,
} from "./manifest_check.ts";

/** What verifying a manifest uses. */
export interface VerifyOptions {
  verifier: Pick<ManifestVerifier, "check">;
  /** When the event loop stalled: no timing judgement across a stall. */
  loop: Pick<LoopWatch, "steady" | "since">;
  /** The machine's current state. */
  state(): RoundState;
  ledger: Pick<RoundLedger, "noteRefusal">;
  /** Hands an event back to the machine. */
  feed(event: RoundEvent): void;
  /** Keeps a manifest that checked out, for attesting and closing. */
  remember(cid: string, manifest: RoundManifest): void;
}

/** Checks of one manifest at most, when what it needs cannot be fetched. */
const VERIFY_TRIES = 3;
/** The pause before the second check, ms; twice that before the third. */
const VERIFY_RETRY_MS = 1_000;

/** Whether a failed check failed for want of bytes, which may yet come. */
function transient(err: unknown): boolean {
  return !(err instanceof ManifestRefused) || err.code === "invalid-delta" ||
    err.code === "unserved-slice";
}

/** Checks the manifest of action `a` and feeds back the verdict. */
export async function verifyManifest(
  o: VerifyOptions,
  a: Extract<RoundAction, { type: "verify" }>,
): Promise<void> {
  const m = a.manifest;
  let manifest: RoundManifest;
  const config = o.state().config;
  // Times noted across a stall of this peer's event loop are not the
  // times things arrived: no judgement rests on them.
  const grace = censorGraceMs(config);
  const steady = (since: number) => o.loop.steady(since, a.at, grace);
  // A peer that (re)started mid-round hears the deltas sent before it came
  // only when they are sent again: their arrival here says nothing of
  // when the leader had them.
  const watchedBefore = (arrived: number) =>
    o.loop.since !== null && arrived - o.loop.since >= REANNOUNCE_MS + grace;
  const witness: Witness = {
    announced: a.announced,
    expected: expectedDeltas(a.announced, a.seenAt, a.at, config)
      .filter((d) => steady(a.seenAt.get(d.peer)!)),
    preceding: precedingDeltas(a.announced, a.seenAt, a.at),
    amendBy: a.at + amendMs(config),
    faultsBy: a.at + faultWaitMs(config),
    steadySince: () => o.loop.steady(a.at, Date.now(), grace),
    // From when each delta first reached this peer: one that came before
    // the round began here may have reached the leader as early.
    hasty: (listed) => {
      const latest = Math.max(
        ...listed.map((p) => a.arrivedAt.get(p) ?? a.at),
      );
      return isHasty(listed, a.arrivedAt, a.at, config) && steady(latest) &&
        watchedBefore(latest);
    },
    current: () => {
      const state = o.state();
      return state.round === m.round && state.parent === m.parent
        ? [...state.deltas.values()]
        : a.announced;
    },
  };
  const inRound = () => {
    const state = o.state();
    return state.round === m.round && state.parent === m.parent;
  };
  try {
    for (let tries = 1;; tries++) {
      try {
        manifest = await o.verifier.check(m, witness);
        break;
      } catch (err) {
        // What could not be fetched may come a moment later (a leader
        // serving its whole round at once): the same check, as this peer
        // saw the round when the manifest came, is run again.
        if (tries === VERIFY_TRIES || !transient(err) || !inRound()) throw err;
        await new Promise((r) => setTimeout(r, VERIFY_RETRY_MS * tries));
      }
    }
  } catch (err) {
    const code = err instanceof ManifestRefused ? err.code : "unreadable";
    if (code !== "superseded") {
      o.ledger.noteRefusal({
        round: m.round,
        peer: m.peer,
        what: "manifest",
        reason: code,
      });
    }
    o.feed({
      type: "verified",
      msg: m,
      ok: false,
      reason: (err as Error).message,
    });
    return;
  }
  o.remember(m.manifest, manifest);
  o.feed({ type: "verified", msg: m, ok: true });
}
