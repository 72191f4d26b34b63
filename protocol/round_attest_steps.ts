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
import type { AttestationMessage, ManifestAnnounce } from "./messages.ts";
import {
  log,
  type RoundAction,
  type RoundEvent,
  type RoundState,
  type Step,
} from "./round_state.ts";

/** A manifest announced for the round: verify it, once per announcer. */
export function onManifest(
  state: RoundState,
  msg: ManifestAnnounce,
  now: number,
): Step {
  if (
    msg.round !== state.round || msg.parent !== state.parent ||
    state.phase === "syncing" || state.phase === "finished" ||
    state.verifying.has(msg.peer)
  ) {
    return { state, actions: [] };
  }
  // One verification per announcing peer: a leader that announces two
  // different manifests for a round gets only its first one checked.
  const verifying = new Map(state.verifying).set(msg.peer, msg.manifest);
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
  _now: number,
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
  return commitIfQuorum({ ...state, attestations }, []);
}

/** Adds the `commit` action once the led manifest has a quorum. */
export function commitIfQuorum(
  state: RoundState,
  actions: RoundAction[],
): Step {
  if (
    state.led === null || state.committing ||
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
