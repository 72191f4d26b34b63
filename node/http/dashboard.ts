/**
 * One frame of the status page's event stream: the node's status and
 * peers, contributions, and the step losses and round records the page
 * has not seen yet (a cursor per viewer keeps frames small however long
 * the run).
 *
 * @module
 */
import type {
  Contributions,
  JobInfo,
  NodeStatus,
  PeerSummary,
  RoundRecord,
  StepLoss,
} from "./types.ts";
import type { NodeInfoSource } from "./types.ts";

/** What a viewer has been sent: the last step's seq and the rounds count. */
export interface DashboardCursor {
  step: number;
  rounds: number;
}

/** One frame of `GET /events`. */
export interface Dashboard {
  /** True for a viewer's first frame: replace what you hold. */
  full: boolean;
  status: NodeStatus;
  peers: PeerSummary[];
  /** Step losses newer than the viewer's cursor, oldest first. */
  steps: StepLoss[];
  /** Round records from index `roundsFrom` on. */
  rounds: RoundRecord[];
  roundsFrom: number;
  contributions: Contributions | null;
  /** What cheating a round risks (zoo_job's `deterrence`), once read. */
  deterrence: JobInfo["deterrence"] | null;
}

/**
 * The frame for a viewer at `cursor` (null: a new viewer) and the cursor
 * to pass next time.
 */
export function dashboard(
  source: NodeInfoSource,
  cursor: DashboardCursor | null,
): { frame: Dashboard; cursor: DashboardCursor } {
  const job = source.job();
  const from = cursor ?? { step: -1, rounds: 0 };
  const records = job?.training().committed ?? [];
  const steps = job?.steps(from.step) ?? [];
  // A shorter record list means another job (or a restart): start over.
  const roundsFrom = records.length < from.rounds ? 0 : from.rounds;
  return {
    frame: {
      full: cursor === null,
      status: source.status(),
      peers: source.peers(),
      steps,
      rounds: records.slice(roundsFrom),
      roundsFrom,
      contributions: job?.cachedContributions() ?? null,
      deterrence: job?.cachedDeterrence() ?? null,
    },
    cursor: {
      step: steps.at(-1)?.seq ?? from.step,
      rounds: records.length,
    },
  };
}
