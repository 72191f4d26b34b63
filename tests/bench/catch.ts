/**
 * How soon audits catch a `partial-work` peer, one that made up the last
 * fraction q of its 16 segments every round (trained the first part,
 * extrapolated the rest): the real audit plan (`protocol/audit/audit_plan.ts`)
 * drawn over many simulated rounds with fresh seeds, at several sampling
 * rates, against the formula 1 − (1 − rate·q)^n for being caught within n
 * rounds. A faked segment fails its replay whenever it is drawn (the
 * attack suite shows that end to end), so here being drawn is being
 * caught.
 *
 * Beside each rate, the bet the cheater makes per cheated round: what it
 * expects to lose, P(caught in that round) × its stake (the slash; its
 * unclaimed credit goes too, not counted here), against what the work it
 * skipped would have earned, q × its reward for a round. With one segment
 * drawn per contributor the ratio is rate × stake / reward for any q: a
 * peer that skips less is caught less often in proportion.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { planAudits } from "../../protocol/audit/audit_plan.ts";
import { CATCH_FLOOR_RATE } from "../../protocol/audit/deterrence.ts";
import { MAX_SEGMENTS } from "../../protocol/audit/work_record.ts";
import { type Bench, formatTable, numberFlag } from "./_bench.ts";

interface Options {
  trials: number;
  peers: number;
  rounds: number;
  faked: number;
  /** The stake a slash takes, ETH. */
  stake: number;
  /** What one peer is credited for one round, ETH. */
  reward: number;
}

/** One sampling rate's figures. */
export interface RateFigures {
  rate: number;
  /** Measured P(caught within n rounds), n = 1..rounds. */
  measured: number[];
  /** 1 − (1 − rate·q)^n for the same n. */
  formula: number[];
  /** Measured P(caught in one cheated round), over every round simulated. */
  perRound: number;
  /** Stake it expects to lose per cheated round: perRound × stake, ETH. */
  expectedLoss: number;
  /** `expectedLoss` over what its skipped work would earn in a round. */
  deterrence: number;
}

/** What `catch` reports. */
export interface CatchResult {
  trials: number;
  peers: number;
  /** Segments a round is cut into. */
  segments: number;
  /** Fraction of its segments the cheater made up. */
  faked: number;
  /** The stake a slash takes, ETH. */
  stake: number;
  /** What one peer is credited for one round, ETH. */
  reward: number;
  /** What the skipped work would earn per round: faked × reward, ETH. */
  skippedEarnings: number;
  rates: RateFigures[];
}

// The least rate `job create` chooses among them (0.14).
const RATES = [0.05, 0.1, CATCH_FLOOR_RATE, 0.25, 0.5, 1];

function seedOf(...parts: (string | number)[]): string {
  return createHash("sha256").update(parts.join("/")).digest("hex");
}

/** The first round (1-based) the cheater is caught in, or Infinity. */
function roundCaught(
  o: Options,
  rate: number,
  trial: number,
  peers: string[],
  faked: Set<number>,
): number {
  const cheater = peers[0];
  for (let r = 0; r < o.rounds; r++) {
    const plan = planAudits({
      seed: seedOf("catch", rate, trial, r),
      contributors: peers,
      members: peers,
      segments: MAX_SEGMENTS,
      rate,
      auditors: 1,
    });
    const mine = plan.find((a) => a.peer === cheater);
    if (mine && faked.has(mine.segment)) return r + 1;
  }
  return Infinity;
}

const bench: Bench<Options, CatchResult> = {
  summary:
    "audit plan: rounds to catch a partial-work peer at each sampling rate, simulated, against 1 - (1 - rate*q)^n",
  flags: {
    trials: { default: "4000", help: "simulated jobs per rate" },
    peers: { default: "8", help: "contributors per round, cheater included" },
    rounds: { default: "8", help: "rounds per simulated job" },
    faked: {
      default: "0.5",
      help: "fraction of its 16 segments the cheater made up, in (0, 1]",
    },
    stake: { default: "1", help: "stake a slash takes, ETH" },
    reward: {
      default: "0.01",
      help: "what one peer is credited for one round, ETH",
    },
  },
  parse(flags) {
    return {
      trials: numberFlag(flags, "trials", {
        min: 10,
        max: 1_000_000,
        integer: true,
      }),
      peers: numberFlag(flags, "peers", { min: 2, max: 256, integer: true }),
      rounds: numberFlag(flags, "rounds", { min: 1, max: 100, integer: true }),
      faked: numberFlag(flags, "faked", { min: 1 / MAX_SEGMENTS, max: 1 }),
      stake: numberFlag(flags, "stake", { min: 0, max: 1e9 }),
      reward: numberFlag(flags, "reward", { min: 1e-18, max: 1e9 }),
    };
  },
  run(o, log) {
    const count = Math.round(o.faked * MAX_SEGMENTS);
    const q = count / MAX_SEGMENTS;
    // It trained the first segments and made up the rest.
    const faked = new Set(
      Array.from({ length: count }, (_, i) => MAX_SEGMENTS - 1 - i),
    );
    const peers = Array.from({ length: o.peers }, (_, i) => `12D3KooWPeer${i}`);
    const rates = RATES.map((rate) => {
      const caught = Array.from(
        { length: o.trials },
        (_, t) => roundCaught(o, rate, t, peers, faked),
      );
      const within = (n: number) =>
        caught.filter((r) => r <= n).length / o.trials;
      const ns = Array.from({ length: o.rounds }, (_, i) => i + 1);
      log(`rate ${rate}: caught within ${o.rounds} rounds ${within(o.rounds)}`);
      // Each round until caught is a cheated round; the one it is caught
      // in counts too.
      const cheated = caught.reduce((s, r) => s + Math.min(r, o.rounds), 0);
      const perRound = caught.filter((r) => r <= o.rounds).length / cheated;
      const expectedLoss = perRound * o.stake;
      return {
        rate,
        measured: ns.map(within),
        formula: ns.map((n) => 1 - (1 - rate * q) ** n),
        perRound,
        expectedLoss,
        deterrence: expectedLoss / (q * o.reward),
      };
    });
    return Promise.resolve({
      trials: o.trials,
      peers: o.peers,
      segments: MAX_SEGMENTS,
      faked: q,
      stake: o.stake,
      reward: o.reward,
      skippedEarnings: q * o.reward,
      rates,
    });
  },
  table(r) {
    // At most 8 columns of n, the last always shown.
    const all = r.rates[0].measured.map((_, i) => i + 1);
    const step = Math.ceil(all.length / 8);
    const ns = all.filter((n) => n % step === 0 || n === all.length);
    return [
      `a peer that made up ${
        Math.round(r.faked * r.segments)
      } of its ${r.segments} segments every round, among ${r.peers} contributors; ${r.trials} simulated jobs per rate`,
      "P(caught within n rounds): measured (formula 1 - (1 - rate*q)^n)",
      formatTable(
        ["rate", ...ns.map((n) => `n=${n}`)],
        r.rates.map((x) => [
          String(x.rate),
          ...ns.map((n) =>
            `${x.measured[n - 1].toFixed(3)} (${x.formula[n - 1].toFixed(3)})`
          ),
        ]),
      ),
      `per cheated round: stake ${r.stake} ETH at risk against ${
        r.skippedEarnings.toPrecision(3)
      } ETH its skipped work would earn (${r.faked} x ${r.reward} ETH a round)`,
      formatTable(
        [
          "rate",
          "P(caught) a round",
          "formula rate*q",
          "expected stake lost",
          "loss / skipped earnings",
        ],
        r.rates.map((x) => [
          String(x.rate),
          x.perRound.toFixed(4),
          (x.rate * r.faked).toFixed(4),
          `${x.expectedLoss.toPrecision(3)} ETH`,
          `${x.deterrence.toFixed(1)}x`,
        ]),
      ),
    ].join("\n");
  },
};

export default bench;
