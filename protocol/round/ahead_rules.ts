/**
 * The rules of training before a round's checkpoint is committed: which
 * steps a peer starts early, and what becomes of them when the chain
 * commits. A round is started early from a previewed C(r) (once every
 * live member's delta of round r − 1 is in), or trained ahead from the
 * eager estimate Ĉ(r) and moved onto C(r) when it is known; either way its
 * delta waits for the chain. The steps stand only when the chain commits
 * the very checkpoint they were moved onto and the moments they began
 * with still stand (`stands`: the manifest behind that checkpoint lists
 * the peer's round r − 1 delta when they went on from its moments); else
 * the round is trained again from the committed checkpoint. The node's
 * training (`node/round/train/train.ts`) runs the steps and asks these
 * rules at each turn.
 *
 * Pure: no I/O.
 *
 * @module
 */

/** What a peer does when a preview of C(`round`) comes. */
export type PreviewMove =
  /** Move the steps trained ahead onto it. */
  | "move"
  /** Start the round early from it. */
  | "start"
  /** Nothing: another round trains, or the machine left round − 1. */
  | "ignore";

/** What is training when a preview of C(`round`) comes. */
export interface TrainingNow {
  /** The round trained ahead, and whether it has its base already. */
  readonly ahead: { readonly round: number; readonly based: boolean } | null;
  /** Whether a round is being trained from its checkpoint. */
  readonly running: boolean;
  /** The round the machine is in. */
  readonly machineRound: number;
}

/** The move on a preview of C(`round`) (see {@linkcode PreviewMove}). */
export function onPreview(now: TrainingNow, round: number): PreviewMove {
  if (now.ahead?.round === round && !now.ahead.based) return "move";
  if (now.running || now.ahead || now.machineRound !== round - 1) {
    return "ignore";
  }
  return "start";
}

/**
 * Whether a peer trains `round` ahead of its checkpoint: not while other
 * steps run, and only when it can go on from its round r − 1's moments
 * (`continues`), as audits check such a start against that round.
 */
export function mayTrainAhead(now: TrainingNow, continues: boolean): boolean {
  return !now.ahead && !now.running && continues;
}

/** What becomes of steps taken before the chain committed C(round). */
export type OnCommit =
  /** They stand: their delta goes out. */
  | { readonly kind: "keep" }
  /**
   * They are dropped for `reason` and the round trained again from the
   * committed checkpoint, from the moments they began with when
   * `keepStart`, else from a start chosen afresh.
   */
  | {
    readonly kind: "retrain";
    readonly reason: string;
    readonly keepStart: boolean;
  };

/**
 * The fate of round `round`'s steps, started from or moved onto the
 * previewed `previewed`, when the chain commits `committed`; `chosen`:
 * whether their start (which moments they go on from) was chosen before
 * the commit; `stands`: whether that start stands under the committed
 * manifest.
 */
export function onCommit(
  round: number,
  previewed: string,
  committed: string,
  chosen: boolean,
  stands: boolean,
): OnCommit {
  const same = previewed === committed;
  if (same && chosen && stands) return { kind: "keep" };
  const reason = !same && (stands || !chosen)
    ? `round ${round} starts from ${committed}, not the previewed ${previewed}`
    : !chosen
    ? `round ${round} was committed before its early start was chosen`
    : `round ${
      round - 1
    }'s delta is not listed by the manifest of ${committed}`;
  return { kind: "retrain", reason, keepStart: chosen && stands };
}
