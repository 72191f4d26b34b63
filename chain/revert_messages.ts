/**
 * The registry's custom errors turned into messages a person can act on:
 * {@linkcode toChainError} wraps whatever a registry call threw.
 *
 * @module
 */
import {
  BaseError,
  ContractFunctionRevertedError,
  formatEther,
  InsufficientFundsError,
} from "viem";
import { ChainError } from "./errors.ts";

type Describe = (args: readonly unknown[]) => string;

const eth = (v: unknown) => `${formatEther(v as bigint)} ETH`;

/** One sentence per registry error: what went wrong and what to do. */
const MESSAGES: Record<string, Describe> = {
  AlreadyRegistered: ([a]) => `account ${a} is already registered`,
  NotRegistered: ([a]) =>
    `account ${a} is not a registered node: run "zoo-node chain register"`,
  StakeTooLow: ([have, need]) =>
    `stake ${eth(have)} is below the minimum ${eth(need)}: pass --stake`,
  BadPeerId: () => "the peer id is empty or longer than 64 bytes",
  PeerIdTaken: ([owner]) => `this peer id is already bound to account ${owner}`,
  NodeExiting: ([a]) => `node ${a} is leaving (unbonding) and cannot act`,
  NotExiting: ([a]) =>
    `node ${a} has not started leaving: call beginExit first`,
  StillUnbonding: ([until]) =>
    `the stake is still unbonding until ${
      new Date(Number(until) * 1000).toISOString()
    }`,
  StillSlashable: ([until]) =>
    `the stake stays slashable until ${
      new Date(Number(until) * 1000).toISOString()
    }, the end of the challenge window of its last credited round`,
  TransferFailed: () => "the payout transfer failed",
  JobExists: ([job]) => `job ${job} already exists`,
  UnknownJob: ([job]) => `job ${job} does not exist on this registry`,
  BadArgument: ([reason]) => `bad argument: ${reason}`,
  TooManySignatures: ([n, max]) => `${n} signatures is more than ${max}`,
  AlreadyMember: ([, a]) => `account ${a} is already a member of this job`,
  WrongRound: ([expected, got]) =>
    `round ${got} is not the next round of this job, which is ${expected}`,
  WrongParent: ([expected, got]) =>
    `parent checkpoint ${got} is not the job's last committed checkpoint ${expected}`,
  JobFinished: ([job]) =>
    `job ${job} has ended (all its rounds committed, or cancelled)`,
  NotCreator: ([job, a]) =>
    `account ${a} did not create job ${job}; only its creator may cancel it`,
  JobNotFinished: ([job]) =>
    `job ${job} has rounds left; rewards are paid once it finishes`,
  ChallengeWindowOpen: ([job, from]) =>
    `job ${job} is in its challenge window (audits of its last round may still slash); claims open at ${
      new Date(Number(from) * 1000).toISOString()
    }`,
  BadContributions: ([reason]) => `bad contributions: ${reason}`,
  InvalidSignature: ([i]) =>
    `signature ${i} is malformed (length, v or high s)`,
  UnknownSigner: ([a]) =>
    `signer ${a} is not a registered member of this job (a bad signature, or one for another round, chain or contract, recovers to a stranger)`,
  DuplicateSigner: ([a]) => `signer ${a} signed more than once`,
  SignersNotSorted: ([i]) =>
    `signature ${i} is out of order: sort signatures by signer address`,
  InsufficientStake: ([a, have, need]) =>
    `node ${a} has stake ${eth(have)}, below the job's minimum ${eth(need)}`,
  BelowQuorum: ([have, need]) =>
    `${have} attestations are below the job's quorum of ${need}`,
  AlreadyClaimed: ([, a]) => `account ${a} has already claimed this job`,
  NothingToClaim: ([, a]) =>
    `account ${a} has no credited contributions in this job`,
  EvidenceNotSupported: ([kind]) =>
    `slashing evidence of kind ${kind} is not supported: 1 is equivocation, 2 a failed audit, 3 a false verdict, 4 an audit left unanswered while live`,
  BadEvidence: ([reason]) => `the evidence proves no offence: ${reason}`,
  NotMember: ([, a]) => `account ${a} is not a member of this job`,
  AlreadyPunished: () => "this offence has already been punished",
  AlreadyDeclared: ([, a, round]) =>
    `account ${a} has already declared its work of round ${round} lost`,
  SeatsByBid: ([job]) =>
    `job ${job} is priced: its seats are won by bids ("zoo-node market bid"), not joined`,
  NotMarket: ([a]) => `only the registry's market may do this, not ${a}`,
  NotRegistry: () => "only the registry sends the market value",
  UnknownMarket: ([job]) => `job ${job} is not a priced job of this market`,
  BudgetShort: ([budget, needed]) =>
    `a budget of ${
      eth(budget)
    } cannot pay the job's rounds at its maximum price, which cost ${
      eth(needed)
    }: raise --budget or lower --max-price, --seats or --rounds`,
  BidAboveMax: ([price, max]) =>
    `a bid of ${price} wei a token is not within the job's maximum price of ${max} wei a token (and above 0)`,
  NotStaked: ([, a]) =>
    `account ${a} is not a node staked for this job (registered, not leaving, staked the job's minimum): run "zoo-node chain register" or "zoo-node stake add"`,
  TooManyBids: ([job]) => `job ${job} has taken as many bids as it can`,
  BidClosed: ([, a]) =>
    `account ${a} cannot bid now: the job has ended, or its bid was seated or left, or the new price is not lower`,
  NoBid: ([, a]) => `account ${a} has no bid whose benchmark is running`,
  BenchmarkTooSoon: ([block]) =>
    `the benchmark's seed comes from the bid's block ${block}: prove it in a later block`,
  BenchmarkExpired: ([block]) =>
    `the bid's block ${block} is more than 256 blocks old, so its seed is gone: bid again`,
  BiddingOpen: ([, until]) =>
    `bidding is open until ${new Date(Number(until) * 1000).toISOString()}`,
  SeatActive: ([, a]) =>
    `account ${a}'s seat is held: it is in good standing and was credited within the last 2 rounds (or it holds no seat)`,
  ClaimsClosed: ([job, from]) =>
    Number(from) === 0
      ? `job ${job} has rounds left; it pays once it ends`
      : `job ${job} is in its challenge window; it pays from ${
        new Date(Number(from) * 1000).toISOString()
      }`,
  AlreadyPaid: ([, a]) => `account ${a} has already been paid for this job`,
  AlreadySettled: ([job]) => `job ${job}'s refund has already been settled`,
  BadTerms: ([reason]) => `bad job terms: ${reason}`,
  BadBenchmark: ([reason]) => `bad benchmark: ${reason}`,
  BadVerdict: ([reason]) => `bad benchmark verdict: ${reason}`,
};

/**
 * Wraps any error from a registry call as a {@linkcode ChainError} whose
 * message names the contract error and what to do about it.
 */
export function toChainError(err: unknown, action: string): ChainError {
  if (err instanceof ChainError) return err;
  if (err instanceof BaseError) {
    const reverted = err.walk((e) =>
      e instanceof ContractFunctionRevertedError
    );
    if (reverted instanceof ContractFunctionRevertedError && reverted.data) {
      const name = reverted.data.errorName;
      const args = reverted.data.args ?? [];
      const describe = MESSAGES[name];
      const text = describe ? describe(args) : `${name}(${args.join(", ")})`;
      return new ChainError(`Cannot ${action}: ${text}`, name, args, {
        cause: err,
      });
    }
    if (err.walk((e) => e instanceof InsufficientFundsError)) {
      return new ChainError(
        `Cannot ${action}: the account cannot pay for gas and value; fund it first`,
        null,
        [],
        { cause: err },
      );
    }
    return new ChainError(`Cannot ${action}: ${err.shortMessage}`, null, [], {
      cause: err,
    });
  }
  return new ChainError(
    `Cannot ${action}: ${(err as Error)?.message ?? String(err)}`,
    null,
    [],
    { cause: err },
  );
}
