/**
 * The life of a node's stake and rewards from the command line: `stake
 * add|exit|withdraw`, `rewards` and `rewards claim`. Each prints what the
 * chain recorded; the contract's refusals (withdrawing before the
 * unbonding delay, nothing to claim, a claim in the challenge window) come
 * back as one line from the CLI's error boundary.
 *
 * @module
 */
import { RAW_CODEC } from "../../protocol/content/cid.ts";
import { formatEther } from "viem";
import { type Bytes32, bytes32ToCid } from "../../chain/attestation.ts";
import { ChainError } from "../../chain/errors.ts";
import {
  addStake,
  beginExit,
  claimReward,
  listJobs,
  readNode,
  readRewardStatus,
  type RewardStatus,
  type SeatEarnings,
  withdrawableFrom,
  withdrawStake,
} from "../../chain/registry.ts";
import { sessionRegistry } from "../chain_session.ts";
import { claimPay, marketOf } from "../../chain/market.ts";
import { priceText } from "../job/seat.ts";
import { seatStatus } from "../http/contributions.ts";
import type { Config } from "../config.ts";
import { parseJobId, withSession } from "./chain.ts";
import type { ChainCommand } from "./parse_chain.ts";

type StakeCommand = Extract<
  ChainCommand,
  { kind: "stake-add" | "stake-exit" | "stake-withdraw" }
>;

/** `zoo-node stake add <ETH> | exit | withdraw`. */
export function stakeCommand(
  config: Config,
  command: StakeCommand,
): Promise<number> {
  return withSession(config, async (session, identity) => {
    const reg = await sessionRegistry(session, config);
    const account = identity.address;
    switch (command.kind) {
      case "stake-add": {
        const tx = await addStake(reg, { amount: command.amount });
        const node = await readNode(reg, account);
        console.log(
          `added ${formatEther(command.amount)} ETH: stake ${
            formatEther(node.stake)
          } ETH (tx ${tx.hash})`,
        );
        return 0;
      }
      case "stake-exit": {
        const tx = await beginExit(reg);
        const node = await readNode(reg, account);
        console.log(
          `leaving: ${account} no longer counts for any job; its stake of ${
            formatEther(node.stake)
          } ETH can be withdrawn from ${
            isoTime(withdrawableFrom(node))
          } with "zoo-node stake withdraw" (tx ${tx.hash})`,
        );
        return 0;
      }
      case "stake-withdraw": {
        const { stake } = await readNode(reg, account);
        const tx = await withdrawStake(reg);
        console.log(
          `withdrew ${
            formatEther(stake)
          } ETH; ${account} is no longer registered (tx ${tx.hash})`,
        );
        return 0;
      }
    }
  });
}

/** `zoo-node rewards [--job J] [--json]`: the account's rewards by job. */
export function rewardsCommand(
  config: Config,
  command: Extract<ChainCommand, { kind: "rewards" }>,
): Promise<number> {
  return withSession(config, async (session, identity) => {
    const reg = await sessionRegistry(session, config);
    const jobs = command.job === null
      ? await listJobs(reg)
      : [parseJobId(command.job)];
    const all = await Promise.all(
      jobs.map((job) => readRewardStatus(reg, job, identity.address)),
    );
    // Every job when asked for one; else those the account trained in.
    const shown = command.job === null
      ? all.filter((s) =>
        s.stage !== "none" || (s.seat !== null && s.seat.stage !== "none")
      )
      : all;
    if (command.json) {
      console.log(JSON.stringify({
        account: identity.address,
        jobs: shown.map(rewardJson),
      }));
      return 0;
    }
    if (shown.length === 0) {
      console.log(`${identity.address} has contributed to no job`);
      return 0;
    }
    for (const s of shown) {
      console.log(`${bytes32ToCid(s.job, RAW_CODEC)}  ${describe(s)}`);
    }
    return 0;
  });
}

/**
 * `zoo-node rewards claim [--job J]`: claims one job's reward, or every
 * reward claimable now; fails when there is none.
 */
export function rewardsClaim(
  config: Config,
  command: Extract<ChainCommand, { kind: "rewards-claim" }>,
): Promise<number> {
  return withSession(config, async (session, identity) => {
    const reg = await sessionRegistry(session, config);
    let jobs: Bytes32[];
    if (command.job !== null) {
      // The contract says why not: unknown job, still running, challenge
      // window, nothing to claim, already claimed.
      jobs = [parseJobId(command.job)];
    } else {
      const all = await Promise.all(
        (await listJobs(reg)).map((job) =>
          readRewardStatus(reg, job, identity.address)
        ),
      );
      jobs = all.filter((s) => s.stage === "claimable").map((s) => s.job);
      if (jobs.length === 0) {
        throw new ChainError(
          `Cannot claim: ${identity.address} has no reward to claim now (see "zoo-node rewards")`,
          "NothingToClaim",
        );
      }
    }
    for (const job of jobs) {
      const id = bytes32ToCid(job, RAW_CODEC);
      const status = await readRewardStatus(reg, job, identity.address);
      if (status.seat === null) {
        const tx = await claimReward(reg, { job });
        console.log(
          `claimed ${
            formatEther(tx.amount)
          } ETH from job ${id} (tx ${tx.hash})`,
        );
        continue;
      }
      const tx = await claimPay(await marketOf(reg), { job });
      console.log(
        `claimed ${formatEther(tx.amount)} ETH for job ${id}: ${
          formatEther(tx.amount + tx.fee)
        } ETH earned, ${formatEther(tx.fee)} ETH network fee (tx ${tx.hash})`,
      );
      // Slashed stake shared out to a priced job's honest seats.
      if (status.claimable > 0n) {
        const share = await claimReward(reg, { job });
        console.log(
          `claimed ${
            formatEther(share.amount)
          } ETH of stake slashed in job ${id} (tx ${share.hash})`,
        );
      }
    }
    return 0;
  });
}

function describe(s: RewardStatus): string {
  if (s.seat) return describeSeat(s, s.seat);
  const { record: j } = s;
  const share = `, ${s.contribution} of ${j.totalContribution} tokens`;
  const progress = `round ${j.nextRound}/${j.rounds}${
    j.cancelled ? " (cancelled)" : ""
  }, pool ${formatEther(j.rewardPool)} ETH`;
  switch (s.stage) {
    case "none":
      return `${progress}: no contribution from this account`;
    case "running":
      return `${progress}${share}: claims open once the job ends`;
    case "window":
      return `${progress}${share}: in its challenge window, claims open at ${
        isoTime(s.claimsOpenAt ?? 0n)
      }`;
    case "claimable":
      return `${progress}${share}: ${
        formatEther(s.claimable)
      } ETH claimable ("zoo-node rewards claim")`;
    case "claimed":
      return `${progress}: claimed`;
  }
}

/** A priced job's line: the seat's bid, class, credit, pay and standing. */
function describeSeat(s: RewardStatus, seat: SeatEarnings): string {
  const j = s.record;
  const head = `round ${j.nextRound}/${j.rounds}${
    j.cancelled ? " (cancelled)" : ""
  }, priced: bid ${priceText(seat.price)}, ${seat.stage}${
    seat.capabilityClass > 0
      ? `, class ${seat.capabilityClass} (${seat.tokensPerSecond} tokens/s)`
      : ""
  }`;
  const earned =
    `${seat.roundsCredited} rounds credited, ${seat.tokens} tokens verified, ${
      formatEther(seat.net)
    } ETH earned after the ${formatEther(seat.fee)} ETH fee`;
  const slashed = seat.slashed > 0n
    ? `; ${formatEther(seat.slashed)} ETH of stake slashed`
    : "";
  switch (s.stage) {
    case "none":
      return `${head}: nothing credited${slashed}`;
    case "running":
      return `${head}; ${earned}${slashed}: paid once the job ends`;
    case "window":
      return `${head}; ${earned}${slashed}: in its challenge window, paid from ${
        isoTime(s.claimsOpenAt ?? 0n)
      }`;
    case "claimable":
      return `${head}; ${earned}${slashed}: ${
        formatEther(seat.claimable)
      } ETH claimable ("zoo-node rewards claim")`;
    case "claimed":
      return `${head}; ${earned}${slashed}: paid ${formatEther(seat.paid)} ETH`;
  }
}

function rewardJson(s: RewardStatus) {
  return {
    job: bytes32ToCid(s.job, RAW_CODEC),
    stage: s.stage,
    contribution: String(s.contribution),
    totalContribution: String(s.record.totalContribution),
    rewardPool: String(s.record.rewardPool),
    claimable: String(s.claimable),
    claimsOpenAt: s.claimsOpenAt === null ? null : isoTime(s.claimsOpenAt),
    roundsCommitted: s.record.nextRound,
    rounds: s.record.rounds,
    cancelled: s.record.cancelled,
    seat: s.seat === null ? null : seatStatus(s.seat),
  };
}

function isoTime(seconds: bigint): string {
  return new Date(Number(seconds) * 1000).toISOString();
}
