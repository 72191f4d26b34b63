/**
 * Fixtures shared by the verifier's tests: a round's delta announcements
 * and a witness that saw them all long before the manifest.
 *
 * @module
 */
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import { WORK_FIELDS } from "../../../protocol/codec/_message_fixtures.ts";
import { cidOf, JOB, TEST_ADDRESS } from "../services/_fakes.ts";
import type { Witness } from "./manifest_check.ts";

/** Round 0's delta announcements of `peers` after `parent`. */
export function announcements(
  peers: readonly string[],
  parent: string,
  tokens: number,
): Promise<DeltaAnnounce[]> {
  return Promise.all(peers.map(async (peer) => ({
    v: 1 as const,
    type: "delta" as const,
    peer,
    job: JOB,
    round: 0,
    parent,
    delta: await cidOf(`delta of ${peer}`),
    tokens,
    loss: 3,
    account: TEST_ADDRESS,
    ...WORK_FIELDS,
  })));
}

/** A witness that saw every one of `announced` long before, none in time to doubt. */
export function witnessOf(announced: readonly DeltaAnnounce[]): Witness {
  return {
    announced,
    expected: announced,
    preceding: announced,
    amendBy: 0,
    faultsBy: 0,
    steadySince: () => true,
    hasty: () => false,
    current: () => announced,
  };
}
