/**
 * The work commitments that ride on delta announcements: the EIP-712
 * {@linkcode WorkCommitment} an announcement's fields make, its signature
 * checked against the announcing account, and a book of the first
 * commitment each peer signed per round, so a second, different one is
 * equivocation evidence the registry slashes on its own.
 *
 * @module
 */
import { type Address, cidToBytes32 } from "../../chain/attestation.ts";
import type { RegistryDomain } from "../../chain/attestation.ts";
import {
  equivocationEvidence,
  kernelId,
  recoverWorkSigner,
  signWorkCommitment,
  type WorkCommitment,
} from "../../chain/work_commitment.ts";
import type { DeltaAnnounce } from "../../protocol/messages.ts";
import { segmentCount } from "../../protocol/work_record.ts";
import type { Account } from "viem";
import type { UnsignedDelta } from "./behaviour.ts";

/** Rounds of commitments a {@linkcode CommitmentBook} keeps. */
const KEEP_ROUNDS = 8;

/**
 * The commitment an announcement of a round of `innerSteps` steps makes:
 * its header, delta and tokens with the work fields it carries.
 */
export function deltaCommitment(
  msg: UnsignedDelta,
  innerSteps: number,
): WorkCommitment {
  return {
    job: cidToBytes32(msg.job),
    round: msg.round,
    parent: cidToBytes32(msg.parent),
    data: msg.data,
    delta: cidToBytes32(msg.delta),
    steps: innerSteps,
    tokens: BigInt(msg.tokens),
    segments: segmentCount(innerSteps),
    trajectory: msg.trajectory,
    kernel: kernelId(msg.kernel),
  };
}

/** Signs `msg`'s commitment with `account`. */
export function signDelta(
  account: Account,
  domain: RegistryDomain,
  msg: UnsignedDelta,
  innerSteps: number,
): Promise<`0x${string}`> {
  return signWorkCommitment(
    account,
    domain,
    deltaCommitment(msg, innerSteps),
  );
}

/** Whether `msg`'s signature is its account's, over its commitment. */
export async function signedByAccount(
  domain: RegistryDomain,
  msg: DeltaAnnounce,
  innerSteps: number,
): Promise<boolean> {
  try {
    const signer = await recoverWorkSigner(
      domain,
      deltaCommitment(msg, innerSteps),
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
 * The first signed commitment of each peer in each recent round. Hand it
 * only announcements whose signature checked out (`signedByAccount`).
 */
export class CommitmentBook {
  readonly #innerSteps: number;
  readonly #first = new Map<string, DeltaAnnounce>();
  readonly #reported = new Set<string>();

  constructor(innerSteps: number) {
    this.#innerSteps = innerSteps;
  }

  /**
   * Records `msg`; the equivocation it proves (a different commitment by
   * the same account in the same round, reported once), or null.
   */
  note(msg: DeltaAnnounce): Equivocation | null {
    const key = `${msg.round}/${msg.account.toLowerCase()}`;
    const first = this.#first.get(key);
    if (!first) {
      this.#first.set(key, msg);
      this.#prune(msg.round);
      return null;
    }
    if (first.signature === msg.signature || this.#reported.has(key)) {
      return null;
    }
    const a = deltaCommitment(first, this.#innerSteps);
    const b = deltaCommitment(msg, this.#innerSteps);
    if (JSON.stringify(a, bigints) === JSON.stringify(b, bigints)) return null;
    this.#reported.add(key);
    return {
      account: msg.account,
      round: msg.round,
      evidence: equivocationEvidence(a, first.signature, b, msg.signature),
    };
  }

  /** The first commitment `peer` announced in `round`, if seen. */
  first(round: number, peer: string): DeltaAnnounce | undefined {
    for (const msg of this.#first.values()) {
      if (msg.round === round && msg.peer === peer) return msg;
    }
    return undefined;
  }

  #prune(round: number): void {
    for (const [key, msg] of this.#first) {
      if (msg.round + KEEP_ROUNDS < round) {
        this.#first.delete(key);
        this.#reported.delete(key);
      }
    }
  }
}

function bigints(_: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}
