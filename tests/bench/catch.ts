/**
 * How soon audits catch a `partial-work` peer, one that made up the last
 * fraction q of its 16 segments every round (trained the first part,
 * extrapolated the rest): the real audit plan (`protocol/audit_plan.ts`)
 * drawn over many simulated rounds with fresh seeds, at several sampling
 * rates, against the formula 1 − (1 − rate·q)^n for being caught within n
 * rounds. A faked segment fails its replay whenever it is drawn (the
 * attack suite shows that end to end), so here being drawn is being
 * caught.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { planAudits } from "../../protocol/audit_plan.ts";
import { MAX_SEGMENTS } from "../../protocol/work_record.ts";
import { type Bench, formatTable, numberFlag } from "./_bench.ts";

interface Options {
  trials: number;
  peers: number;
  rounds: number;
  faked: number;
}

/** One sampling rate's figures. */
export interface RateFigures {
  rate: number;
  /** Measured P(caught within n rounds), n = 1..rounds. */
  measured: number[];
  /** 1 − (1 − rate·q)^n for the same n. */
  formula: number[];
}

/** What `catch` reports. */
export interface CatchResult {
  trials: number;
  peers: number;
  /** Segments a round is cut into. */
  segments: number;
  /** Fraction of its segments the cheater made up. */
  faked: number;
  rates: RateFigures[];
}

const RATES = [0.05, 0.1, 0.25, 0.5, 1];

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
      return {
        rate,
        measured: ns.map(within),
        formula: ns.map((n) => 1 - (1 - rate * q) ** n),
      };
    });
    return Promise.resolve({
      trials: o.trials,
      peers: o.peers,
      segments: MAX_SEGMENTS,
      faked: q,
      rates,
    });
  },
  table(r) {
    const ns = r.rates[0].measured.map((_, i) => i + 1);
    return [
      `a peer that made up ${
        Math.round(r.faked * r.segments)
      } of its ${r.segments} segments every round, among ${r.peers} contributors; ${r.trials} simulated jobs per rate`,
      "P(caught within n rounds): measured (formula 1 - (1 - rate*q)^n)",
      formatTable(
        ["rate", ...ns.map((n) => `n=${n}`)],
        r.rates.map((x) => [
          String(x.rate),
          ...x.measured.map((m, i) =>
            `${m.toFixed(3)} (${x.formula[i].toFixed(3)})`
          ),
        ]),
      ),
    ].join("\n");
  },
};

export default bench;
