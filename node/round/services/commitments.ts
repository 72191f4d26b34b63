/**
 * The work commitments that ride on delta announcements: the EIP-712
 * {@linkcode WorkCommitment} an announcement's fields make, its signature
 * checked against the announcing account, and a book of the first
 * commitment each peer signed per round, so a second, different one is
 * equivocation evidence the registry slashes on its own.
 *
 * @module
 */
import { type Address, cidToBytes32 } from "../../../chain/attestation.ts";
import type { RegistryDomain } from "../../../chain/attestation.ts";
import {
  equivocationEvidence,
  kernelId,
  recoverWorkSigner,
  signWorkCommitment,
  type WorkCommitment,
} from "../../../chain/work_commitment.ts";
import {
  claimedSteps,
  type StepShape,
} from "../../../protocol/audit/inner_steps.ts";
import { KEEP_EVIDENCE_ROUNDS } from "../../../protocol/audit/audit_book.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import { segmentCount } from "../../../protocol/audit/work_record.ts";
import type { Account } from "viem";
import type { UnsignedDelta } from "./behaviour.ts";

/** Rounds of commitments a {@linkcode CommitmentBook} keeps. */
const KEEP_ROUNDS = KEEP_EVIDENCE_ROUNDS;

/**
 * The commitment an announcement makes in a job of `shape`: its header,
 * delta and tokens with the work fields it carries, over the steps its
 * tokens stand for (`claimedSteps`).
 */
export function deltaCommitment(
  msg: UnsignedDelta,
  shape: StepShape,
): WorkCommitment {
  const steps = claimedSteps(shape, msg.tokens);
  return {
    job: cidToBytes32(msg.job),
    round: msg.round,
    parent: cidToBytes32(msg.parent),
    data: msg.data,
    delta: cidToBytes32(msg.delta),
    steps,
    tokens: BigInt(msg.tokens),
    segments: segmentCount(steps, shape.innerSteps),
    trajectory: msg.trajectory,
    kernel: kernelId(msg.kernel),
  };
}

/** Signs `msg`'s commitment with `account`. */
export function signDelta(
  account: Account,
  domain: RegistryDomain,
  msg: UnsignedDelta,
  shape: StepShape,
): Promise<`0x${string}`> {
  return signWorkCommitment(
    account,
    domain,
    deltaCommitment(msg, shape),
  );
}

/** Whether `msg`'s signature is its account's, over its commitment. */
export async function signedByAccount(
  domain: RegistryDomain,
  msg: DeltaAnnounce,
  shape: StepShape,
): Promise<boolean> {
  try {
    const signer = await recoverWorkSigner(
      domain,
      deltaCommitment(msg, shape),
      msg.signature,
    );
    return signer.toLowerCase() === msg.account.toLowerCase();
  } catch {
    return false;
  }
}

/** Two commitments one account signed for one round. */
export interface Equivocation {
  account: Address;
  round: number;
  /** The evidence bytes for `slash(account, job, 1, …)`. */
  evidence: `0x${string}`;
}

/**
 * The first signed commitment of each account in each recent round. Hand
 * it only announcements whose signature checked out (`signedByAccount`).
 */
export class CommitmentBook {
  readonly #shape: StepShape;
  readonly #first = new Map<string, DeltaAnnounce>();
  readonly #reported = new Set<string>();

  /** A book for a job of `shape` (its spec). */
  constructor(shape: StepShape) {
    this.#shape = shape;
  }

  /**
   * Whether `msg` repeats the first commitment its account signed in its
   * round, signature and all: already checked, so gossip's repeats cost no
   * signature recovery.
   */
  isFirst(msg: DeltaAnnounce): boolean {
    const first = this.#first.get(keyOf(msg));
    return first !== undefined && first.signature === msg.signature &&
      this.#same(first, msg);
  }

  /** The first commitment `account` signed for `round`, if still kept. */
  first(round: number, account: string): DeltaAnnounce | undefined {
    return this.#first.get(`${round}/${account.toLowerCase()}`);
  }

  /** The first commitment `peer` signed for `round` naming `delta`, if kept. */
  announced(
    round: number,
    peer: string,
    delta: string,
  ): DeltaAnnounce | undefined {
    for (const msg of this.#first.values()) {
      if (msg.round === round && msg.peer === peer && msg.delta === delta) {
        return msg;
      }
    }
    return undefined;
  }

  /**
   * Records `msg`; the equivocation it proves (a different commitment by
   * the same account in the same round, reported once), or null. Rounds
   * more than a few before `current` (the machine's round) are forgotten.
   */
  note(msg: DeltaAnnounce, current: number): Equivocation | null {
    this.#prune(current);
    const key = keyOf(msg);
    const first = this.#first.get(key);
    if (!first) {
      this.#first.set(key, msg);
      return null;
    }
    if (this.#reported.has(key) || this.#same(first, msg)) return null;
    this.#reported.add(key);
    return {
      account: msg.account,
      round: msg.round,
      evidence: equivocationEvidence(
        deltaCommitment(first, this.#shape),
        first.signature,
        deltaCommitment(msg, this.#shape),
        msg.signature,
      ),
    };
  }

  /**
   * Whether two announcements make the same commitment (not when one
   * makes none, e.g. naming a parent that is no raw CID).
   */
  #same(a: DeltaAnnounce, b: DeltaAnnounce): boolean {
    try {
      const x = deltaCommitment(a, this.#shape);
      const y = deltaCommitment(b, this.#shape);
      return (Object.keys(x) as (keyof WorkCommitment)[])
        .every((k) => x[k] === y[k]);
    } catch {
      return false;
    }
  }

  #prune(current: number): void {
    for (const [key, msg] of this.#first) {
      if (msg.round + KEEP_ROUNDS < current) {
        this.#first.delete(key);
        this.#reported.delete(key);
      }
    }
  }
}

function keyOf(msg: DeltaAnnounce): string {
  return `${msg.round}/${msg.account.toLowerCase()}`;
}
