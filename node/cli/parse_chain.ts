import { parseEther } from "viem";
import { BID_EXPECTED, type PartialConfig, weiText } from "../config.ts";
import {
  DATA_DIR,
  type Parsed,
  parseFlags,
  settings,
  type Spec,
  UsageError,
} from "./flags.ts";

/** `zoo-node chain ...` and `zoo-node job ...` commands. */
export type ChainCommand =
  | {
    kind: "chain-deploy";
    minStake: bigint | null;
    unbondingDelay: bigint | null;
    challengeWindow: bigint | null;
    /** The market's fee, basis points; null: DEFAULT_FEE_BPS. */
    feeBps: number | null;
    /** Where the fee goes; null: the deploying account. */
    treasury: `0x${string}` | null;
    flags: PartialConfig;
  }
  | { kind: "chain-status"; flags: PartialConfig }
  | { kind: "chain-register"; stake: bigint | null; flags: PartialConfig }
  | {
    kind: "chain-rounds";
    job: string;
    from: number;
    limit: number;
    json: boolean;
    flags: PartialConfig;
  }
  | {
    kind: "job-create";
    spec: string;
    reward: bigint;
    minStake: bigint;
    /** A text file or directory to train on, instead of the spec's dataset. */
    data: string | null;
    /** A priced job's terms; null for a reward pool job. */
    priced: PricedTerms | null;
    flags: PartialConfig;
  }
  | { kind: "job-cancel"; job: string; flags: PartialConfig }
  | { kind: "job-market"; job: string; json: boolean; flags: PartialConfig }
  | { kind: "stake-add"; amount: bigint; flags: PartialConfig }
  | { kind: "stake-exit"; flags: PartialConfig }
  | { kind: "stake-withdraw"; flags: PartialConfig }
  | {
    kind: "rewards";
    job: string | null;
    json: boolean;
    flags: PartialConfig;
  }
  | { kind: "rewards-claim"; job: string | null; flags: PartialConfig };

/** What `job create --max-price ...` asks of the market. */
export interface PricedTerms {
  /** Wei per verified token. */
  maxPrice: bigint;
  /** Wei; null: exactly what the rounds cost at the maximum price. */
  budget: bigint | null;
  /** Null: the spec's minPeers. */
  seats: number | null;
  /** Seconds bids gather before seats fill. */
  biddingWindow: number;
  /** Null: the speed that trains a seat's round within the deadline. */
  minTokensPerSecond: number | null;
}

/** Flags of every command that talks to the chain. */
export const CHAIN_FLAGS: Spec = {
  ...DATA_DIR,
  "rpc-url": { type: "string" },
  registry: { type: "string" },
};

/** Parses `chain <action> ...` (argv after "chain"). */
export function parseChain(argv: string[]): ChainCommand {
  const action = argv[0];
  const rest = argv.slice(1);
  switch (action) {
    case "deploy": {
      const p = parseFlags(rest, {
        ...CHAIN_FLAGS,
        "min-stake": { type: "string" },
        "unbonding-delay": { type: "string" },
        "challenge-window": { type: "string" },
        "fee-bps": { type: "string" },
        treasury: { type: "string" },
      }, 0);
      const treasury = p.values.treasury;
      if (
        treasury !== undefined &&
        (typeof treasury !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(treasury))
      ) {
        throw new UsageError(
          `--treasury must be a 0x-prefixed 20-byte address: current value is ${
            JSON.stringify(treasury)
          }`,
        );
      }
      return {
        kind: "chain-deploy",
        minStake: optionalEther(p, "min-stake"),
        unbondingDelay: p.values["unbonding-delay"] === undefined
          ? null
          : BigInt(integer(p, "unbonding-delay", 0, 10 * 365 * 86400)),
        challengeWindow: p.values["challenge-window"] === undefined
          ? null
          : BigInt(integer(p, "challenge-window", 0, 10 * 365 * 86400)),
        feeBps: p.values["fee-bps"] === undefined
          ? null
          : integer(p, "fee-bps", 0, 10_000),
        treasury: (treasury as `0x${string}` | undefined) ?? null,
        flags: settings(p),
      };
    }
    case "status": {
      const p = parseFlags(rest, CHAIN_FLAGS, 0);
      return { kind: "chain-status", flags: settings(p) };
    }
    case "register": {
      const p = parseFlags(rest, {
        ...CHAIN_FLAGS,
        stake: { type: "string" },
      }, 0);
      return {
        kind: "chain-register",
        stake: optionalEther(p, "stake"),
        flags: settings(p),
      };
    }
    case "rounds": {
      const p = parseFlags(rest, {
        ...CHAIN_FLAGS,
        job: { type: "string" },
        from: { type: "string" },
        limit: { type: "string" },
        json: { type: "boolean" },
      }, 0);
      const job = p.values.job;
      if (typeof job !== "string" || job === "") {
        throw new UsageError(
          `"chain rounds" needs --job <job id> (the job spec's CID)`,
        );
      }
      return {
        kind: "chain-rounds",
        job,
        from: p.values.from === undefined ? 0 : integer(p, "from", 0, 2 ** 32),
        limit: p.values.limit === undefined
          ? 100
          : integer(p, "limit", 1, 10_000),
        json: p.values.json === true,
        flags: settings(withoutJob(p)),
      };
    }
    default:
      throw new UsageError(
        `"chain" needs deploy, status, register or rounds: current value is ${
          JSON.stringify(action ?? "")
        }`,
      );
  }
}

/** Parses `job <action> ...` (argv after "job"). */
export function parseJob(argv: string[]): ChainCommand {
  if (argv[0] === "cancel") {
    const p = parseFlags(argv.slice(1), CHAIN_FLAGS, 1);
    return { kind: "job-cancel", job: p.positionals[0], flags: settings(p) };
  }
  if (argv[0] === "market") {
    const p = parseFlags(argv.slice(1), {
      ...CHAIN_FLAGS,
      json: { type: "boolean" },
    }, 1);
    return {
      kind: "job-market",
      job: p.positionals[0],
      json: p.values.json === true,
      flags: settings(p),
    };
  }
  if (argv[0] !== "create") {
    throw new UsageError(
      `"job" needs "create <spec.json>", "cancel <job id>" or "market <job id>": current value is ${
        JSON.stringify(argv[0] ?? "")
      }`,
    );
  }
  const p = parseFlags(argv.slice(1), {
    ...CHAIN_FLAGS,
    reward: { type: "string" },
    "min-stake": { type: "string" },
    data: { type: "string" },
    "max-price": { type: "string" },
    budget: { type: "string" },
    seats: { type: "string" },
    "bidding-window": { type: "string" },
    "min-tokens-per-second": { type: "string" },
  }, 1);
  const data = p.values.data;
  if (data !== undefined && (typeof data !== "string" || data === "")) {
    throw new UsageError("--data needs a text file or a directory of them");
  }
  return {
    kind: "job-create",
    spec: p.positionals[0],
    reward: optionalEther(p, "reward") ?? parseEther("1"),
    minStake: optionalEther(p, "min-stake") ?? 0n,
    data: data ?? null,
    priced: pricedTerms(p),
    flags: settings(p),
  };
}

const MARKET_FLAGS = [
  "max-price",
  "budget",
  "seats",
  "bidding-window",
  "min-tokens-per-second",
];

/** The market flags of `job create`, or null when none is given. */
function pricedTerms(p: Parsed): PricedTerms | null {
  const given = MARKET_FLAGS.filter((f) => p.values[f] !== undefined);
  if (given.length === 0) return null;
  if (p.values.reward !== undefined) {
    throw new UsageError(
      `--reward funds a pool job, --${given[0]} a priced one: keep one`,
    );
  }
  const text = p.values["max-price"];
  const maxPrice = typeof text === "string" ? weiText(text) : null;
  if (maxPrice === null || BigInt(maxPrice) === 0n) {
    throw new UsageError(
      `a priced job needs --max-price, ${BID_EXPECTED}: current value is ${
        JSON.stringify(text ?? "")
      }`,
    );
  }
  const has = (f: string) => p.values[f] !== undefined;
  return {
    maxPrice: BigInt(maxPrice),
    budget: optionalEther(p, "budget"),
    seats: has("seats") ? integer(p, "seats", 1, 64) : null,
    biddingWindow: has("bidding-window")
      ? integer(p, "bidding-window", 0, 30 * 24 * 3600)
      : 60,
    minTokensPerSecond: has("min-tokens-per-second")
      ? integer(p, "min-tokens-per-second", 1, 1e12)
      : null,
  };
}

/** Parses `stake <action> ...` (argv after "stake"). */
export function parseStake(argv: string[]): ChainCommand {
  const action = argv[0];
  switch (action) {
    case "add": {
      const p = parseFlags(argv.slice(1), CHAIN_FLAGS, 1);
      const amount = ether(p.positionals[0], "the amount");
      if (amount === 0n) {
        throw new UsageError(
          `"stake add" needs an amount above 0 ETH: current value is "${
            p.positionals[0]
          }"`,
        );
      }
      return { kind: "stake-add", amount, flags: settings(p) };
    }
    case "exit":
    case "withdraw": {
      const p = parseFlags(argv.slice(1), CHAIN_FLAGS, 0);
      return action === "exit"
        ? { kind: "stake-exit", flags: settings(p) }
        : { kind: "stake-withdraw", flags: settings(p) };
    }
    default:
      throw new UsageError(
        `"stake" needs "add <ETH>", "exit" or "withdraw": current value is ${
          JSON.stringify(action ?? "")
        }`,
      );
  }
}

/** Parses `rewards [claim] ...` (argv after "rewards"). */
export function parseRewards(argv: string[]): ChainCommand {
  const claim = argv[0] === "claim";
  const p = parseFlags(claim ? argv.slice(1) : argv, {
    ...CHAIN_FLAGS,
    job: { type: "string" },
    ...(claim ? {} : { json: { type: "boolean" } }),
  }, 0);
  const job = p.values.job;
  if (job !== undefined && (typeof job !== "string" || job === "")) {
    throw new UsageError(`--job needs a job id (the job spec's CID)`);
  }
  const flags = settings(withoutJob(p));
  return claim ? { kind: "rewards-claim", job: job ?? null, flags } : {
    kind: "rewards",
    job: job ?? null,
    json: p.values.json === true,
    flags,
  };
}

/** `--job` here names a chain job id, not the gossip setting of the same name. */
function withoutJob(p: Parsed): Parsed {
  const { job: _job, ...values } = p.values;
  return { ...p, values };
}

function optionalEther(p: Parsed, flag: string): bigint | null {
  const text = p.values[flag];
  return text === undefined ? null : ether(text, `--${flag}`);
}

function ether(text: unknown, what: string): bigint {
  if (typeof text !== "string" || !/^\d{1,12}(\.\d{1,18})?$/.test(text)) {
    throw new UsageError(
      `${what} must be an amount of ETH such as 1 or 0.5: current value is ${
        JSON.stringify(text)
      }`,
    );
  }
  return parseEther(text);
}

function integer(p: Parsed, flag: string, min: number, max: number): number {
  const text = String(p.values[flag]);
  const n = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `--${flag} must be an integer from ${min} to ${max}: current value is ${
        JSON.stringify(text)
      }`,
    );
  }
  return n;
}
