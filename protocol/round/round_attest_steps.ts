/**
 * The round machine's steps from a manifest to its commit: every
 * manifest announced for the round is verified once per announcing peer
 * and attested when it checks out; the peer that aggregated gathers the
 * attestations for its own manifest and commits once it has a quorum.
 * Part of round_machine.ts, which dispatches to them.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { MAX_AMENDMENTS } from "./censorship.ts";
import type {
  AttestationMessage,
  ManifestAnnounce,
} from "../messages/messages.ts";
import {
  log,
  type RoundAction,
  type RoundEvent,
  type RoundState,
  type Step,
} from "./round_state.ts";

/**
 * A manifest announced for the round: verify it, once per manifest, and
 * at most a first and {@linkcode MAX_AMENDMENTS} amendments per announcer.
 */
export function onManifest(
  state: RoundState,
  msg: ManifestAnnounce,
  now: number,
): Step {
  const sent = state.verifying.get(msg.peer) ?? [];
  if (
    msg.round !== state.round || msg.parent !== state.parent ||
    state.phase === "syncing" || state.phase === "finished" ||
    sent.includes(msg.manifest) || sent.length > MAX_AMENDMENTS
  ) {
    return { state, actions: [] };
  }
  // A leader amends a manifest that left out a delta its verifiers hold
  // (censorship.ts); one that announces more gets no more checked.
  const verifying = new Map(state.verifying).set(msg.peer, [
    ...sent,
    msg.manifest,
  ]);
  return {
    state: { ...state, verifying },
    actions: [{
      type: "verify",
      manifest: msg,
      announced: [...state.deltas.values()],
      seenAt: state.deltaSeenAt,
      arrivedAt: state.deltaArrivedAt,
      at: now,
    }],
  };
}

/** A verification finished: attest a manifest that checked out. */
export function onVerified(
  state: RoundState,
  e: Extract<RoundEvent, { type: "verified" }>,
): Step {
  if (e.msg.round !== state.round || e.msg.parent !== state.parent) {
    return { state, actions: [] };
  }
  if (!e.ok) {
    return {
      state,
      actions: [log(
        `round ${state.round}: manifest ${e.msg.manifest} from ${e.msg.peer} failed verification: ${e.reason}`,
      )],
    };
  }
  return { state, actions: [{ type: "attest", manifest: e.msg }] };
}

/** An attestation of this peer's own manifest: commit at quorum. */
export function onAttestation(
  state: RoundState,
  msg: AttestationMessage,
  now: number,
): Step {
  if (
    state.led === null || msg.round !== state.round ||
    msg.parent !== state.parent || msg.manifest !== state.led.manifest ||
    msg.checkpoint !== state.led.checkpoint
  ) {
    return { state, actions: [] };
  }
  const key = msg.account.toLowerCase();
  if (state.attestations.has(key)) return { state, actions: [] };
  const attestations = new Map(state.attestations).set(key, msg);
  return commitIfQuorum({ ...state, attestations }, [], now);
}

/**
 * Adds the `commit` action once the led manifest has a quorum and its
 * hold has passed (censorship.ts), unless it is being amended.
 */
export function commitIfQuorum(
  state: RoundState,
  actions: RoundAction[],
  now: number,
): Step {
  if (
    state.led === null || state.committing || state.aggregating ||
    now < state.led.commitFrom ||
    state.attestations.size < state.config.quorum
  ) {
    return { state, actions };
  }
  return {
    state: { ...state, committing: true, commitFailedAt: null },
    actions: [...actions, {
      type: "commit",
      round: state.round,
      manifest: state.led.manifest,
      checkpoint: state.led.checkpoint,
      attestations: [...state.attestations.values()],
    }],
  };
}
