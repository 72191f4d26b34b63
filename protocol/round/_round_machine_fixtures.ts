/**
 * Test-only fixtures for the round machine's tests: a config, delta and
 * manifest announcements, and a driver that runs events through one machine.
 *
 * @module
 */
import type { DeltaAnnounce, ManifestAnnounce } from "../messages/messages.ts";
import type {
  RoundAction,
  RoundConfig,
  RoundEvent,
  RoundState,
} from "./round_state.ts";
import { step } from "./round_machine.ts";
import { WORK_FIELDS } from "../codec/_message_fixtures.ts";

export const GENESIS = "bafkreigenesis";

export function config(
  self: string,
  over: Partial<RoundConfig> = {},
): RoundConfig {
  return {
    job: "job",
    self,
    quorum: 2,
    minPeers: 2,
    rounds: 3,
    roundDeadlineMs: 4000,
    overlap: false,
    ...over,
  };
}

export function delta(
  peer: string,
  round = 0,
  parent = GENESIS,
): DeltaAnnounce {
  return {
    v: 1,
    type: "delta",
    peer,
    job: "job",
    round,
    parent,
    delta: `bafkreidelta${peer}${round}`,
    tokens: 100,
    loss: 3,
    account: `0x${peer.padStart(40, "0")}`,
    ...WORK_FIELDS,
  };
}

export function manifestFrom(peer: string): ManifestAnnounce {
  return {
    v: 1,
    type: "manifest",
    peer,
    job: "job",
    round: 0,
    parent: GENESIS,
    manifest: "bafkreimanifest",
    checkpoint: "bafkreicheckpoint",
    rank: 0,
  };
}

/** Runs events through one machine, collecting every action. */
export function run(
  state: RoundState,
  events: [number, RoundEvent][],
): { state: RoundState; actions: RoundAction[] } {
  const actions: RoundAction[] = [];
  for (const [now, event] of events) {
    const r = step(state, event, { now });
    state = r.state;
    actions.push(...r.actions);
  }
  return { state, actions };
}

export const types = (actions: RoundAction[]) =>
  actions.filter((a) => a.type !== "log").map((a) => a.type);
