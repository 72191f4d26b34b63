/**
 * The attack suite: for each attack, a devnet of real peers with attackers
 * among them (tests/attack/), next to a clean run with the same keys, job
 * and leader of round 0. Reported per attack: whether honest peers caught
 * it and how soon, tokens the chain credited to attackers in the rounds
 * they attacked, whether they were slashed on chain, the final held-out
 * loss against the clean run's, and every honest peer wronged (false
 * positives); for the clean run, the audits its peers ran and their cost
 * in re-run steps over trained steps.
 *
 * @module
 */
import {
  AGGREGATION_RULES,
  type AggregationRuleName,
  DEFAULT_AGGREGATION,
} from "../../protocol/aggregation/aggregation_rule.ts";
import {
  DEFAULT_COMPRESSION,
  type JobSpec,
  MOMENTS,
  type Moments,
  type Sharding,
  SHARDINGS,
} from "../../protocol/spec/job_spec.ts";
import {
  type Compression,
  COMPRESSIONS,
} from "../../protocol/aggregation/quantize.ts";
import { benchSpec } from "../_job_cluster.ts";
import {
  type AttackRunResult,
  leavingPeers,
  runAttack,
} from "../attack/attack_run.ts";
import {
  type AttackName,
  ATTACKS,
  SLASHED_ATTACKS,
} from "../attack/behaviours.ts";
import {
  type Bench,
  choiceFlag,
  formatTable,
  numberFlag,
  UsageError,
} from "./_bench.ts";

interface Options {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: "default" | "tiny";
  rule: AggregationRuleName;
  compression: Compression;
  /** Where rounds' inner optimizer starts (the spec's `moments`). */
  moments: Moments;
  /** How rounds are combined (the spec's `sharding`). */
  sharding: Sharding;
  only: AttackName[];
  /** Where the peers' keys live; null for a fresh temp dir. */
  keys: string | null;
}

/** One attack's line in the report. */
export interface AttackFigures {
  name: AttackName;
  peers: number;
  attackers: number;
  /** An honest peer refused, dropped or flagged an attacker. */
  detected: boolean;
  /** Attacked rounds up to and including the first detection; null if none. */
  roundsToDetect: number | null;
  attackedRounds: number[];
  detectedRounds: number[];
  creditedToAttackers: number;
  /** Every attacker was slashed on chain (NodeSlashed in the job). */
  slashed: boolean;
  heldoutLoss: number;
  lossRatioVsClean: number;
  falsePositives: number;
  /**
   * Honest peers' credited rounds over their clean-run rounds (as shares
   * of the rounds each could be credited, so an exiting signer's and the
   * attackers' seats do not count).
   */
  honestCreditShare: number;
  /** Steps re-run in audits over steps trained (see AttackRunResult). */
  auditOverhead: number;
  /** `auditOverhead` over the clean run's. */
  auditOverheadVsClean: number;
}

/** What `attacks` reports. */
export interface AttacksResult {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: string;
  rule: string;
  /** The delta format (the job spec's compression). */
  compression: Compression;
  /** The spec's `moments`: reset has audits replay from C(r). */
  moments: Moments;
  /** The spec's `sharding`. */
  sharding: Sharding;
  clean: {
    heldoutLoss: number;
    falsePositives: number;
    /** Audits honest peers ran: passed, failed. */
    audits: { passed: number; failed: number };
    /** Steps re-run in audits over steps trained (see AttackRunResult). */
    auditOverhead: number;
  };
  attacks: AttackFigures[];
  /**
   * The extra compute of auditing, from the clean run: steps honest peers
   * re-ran in audits over the steps they trained.
   */
  auditOverhead: number;
  /** Honest peers wronged over all runs, the clean one included. */
  falsePositives: number;
}

/**
 * The job of a run. A slashed attacker stops being a member once the
 * round it attacked has closed, so a slashed attack's job needs only the
 * honest peers (one fewer) to go on; otherwise every peer is needed.
 */
function specFor(o: Options, attack: AttackName | null = null): JobSpec {
  const slashed = attack !== null && SLASHED_ATTACKS.includes(attack);
  return benchSpec({ name: "bench-attacks", ...o }, {
    // The devnet's deadline: backups take over a refused leader in 15 s.
    roundDeadlineMs: 20_000,
    aggregation: { rule: o.rule },
    compression: { format: o.compression },
    moments: o.moments,
    sharding: o.sharding,
    ...(slashed ? { minPeers: o.peers - leavingPeers(attack, o.peers) } : {}),
  });
}

const share = (c: { credited: number; of: number }) => c.credited / c.of;

function figures(r: AttackRunResult, clean: AttackRunResult): AttackFigures {
  const first = r.detectedRounds[0];
  return {
    name: r.attack!,
    peers: r.peers,
    attackers: r.attackers.length,
    detected: r.detectedRounds.length > 0,
    roundsToDetect: first === undefined
      ? null
      : r.attackedRounds.indexOf(first) + 1,
    attackedRounds: r.attackedRounds,
    detectedRounds: r.detectedRounds,
    creditedToAttackers: r.creditedToAttackers,
    slashed: r.slashed,
    heldoutLoss: r.heldoutLoss,
    lossRatioVsClean: r.heldoutLoss / clean.heldoutLoss,
    falsePositives: r.falsePositives.length,
    honestCreditShare: share(r.honestCredit) / share(clean.honestCredit),
    auditOverhead: r.auditOverhead,
    auditOverheadVsClean: r.auditOverhead / clean.auditOverhead,
  };
}

const bench: Bench<Options, AttacksResult> = {
  summary:
    "attacker peers against honest ones: detection, tokens credited to attackers, loss vs a clean run, false positives",
  flags: {
    peers: { default: "3", help: "peers per devnet, attackers included, 3-8" },
    rounds: { default: "4", help: "rounds, 2-50" },
    "inner-steps": { default: "50", help: "inner steps per round H" },
    model: {
      default: "default",
      help: "default (2 layers, d_model 128) or tiny (1 layer, d_model 32)",
    },
    rule: {
      default: DEFAULT_AGGREGATION.rule,
      help: `aggregation rule: ${AGGREGATION_RULES.join(", ")}`,
    },
    compression: {
      default: DEFAULT_COMPRESSION,
      help: `delta format: ${COMPRESSIONS.join(", ")}`,
    },
    moments: {
      default: "carry",
      help:
        "carry | reset (rounds from zero moments, audits replay from C(r), as job create makes jobs)",
    },
    sharding: {
      default: "whole",
      help:
        "whole | slices (deltas as pieces, the update published by slice, verifiers recompute slices)",
    },
    keys: {
      default: "",
      help:
        "directory of the peers' keys (node-1/keys, ...; made on first use), to compare runs on the same peers; default a fresh temp dir",
    },
    only: {
      default: ATTACKS.join(","),
      help: `comma-separated attacks: ${ATTACKS.join(", ")}`,
    },
  },
  parse(flags) {
    if (flags.model !== "default" && flags.model !== "tiny") {
      throw new UsageError(
        `Cannot use --model as it must be default or tiny: current value is "${flags.model}"`,
      );
    }
    if (!(AGGREGATION_RULES as readonly string[]).includes(flags.rule)) {
      throw new UsageError(
        `Cannot use --rule as it must be one of ${
          AGGREGATION_RULES.join(", ")
        }: current value is "${flags.rule}"`,
      );
    }
    const only = flags.only.split(",").map((s) => s.trim());
    const unknown = only.find((a) =>
      !(ATTACKS as readonly string[]).includes(a)
    );
    if (unknown !== undefined || only.length === 0) {
      throw new UsageError(
        `Cannot use --only as each attack must be one of ${
          ATTACKS.join(", ")
        }: current value is "${unknown ?? ""}"`,
      );
    }
    return {
      peers: numberFlag(flags, "peers", { min: 3, max: 8, integer: true }),
      rounds: numberFlag(flags, "rounds", { min: 2, max: 50, integer: true }),
      innerSteps: numberFlag(flags, "inner-steps", {
        min: 1,
        max: 10_000,
        integer: true,
      }),
      model: flags.model,
      rule: flags.rule as AggregationRuleName,
      compression: choiceFlag(flags, "compression", COMPRESSIONS),
      moments: choiceFlag(flags, "moments", MOMENTS),
      sharding: choiceFlag(flags, "sharding", SHARDINGS),
      only: only as AttackName[],
      keys: flags.keys === "" ? null : flags.keys,
    };
  },
  async run(o, log) {
    const spec = specFor(o);
    const keys = o.keys ??
      await Deno.makeTempDir({ prefix: "zoo-attack-keys-" });
    try {
      const run = (attack: AttackName | null) =>
        runAttack({
          attack,
          peers: o.peers,
          spec: specFor(o, attack),
          keys,
          log,
        });
      const clean = await run(null);
      if (clean.auditOverhead === 0 || clean.honestCredit.credited === 0) {
        throw new Error(
          "the clean run audited or credited nothing: no baseline to compare with",
        );
      }
      log(`clean: held-out loss ${clean.heldoutLoss.toFixed(4)}`);
      const attacks: AttackFigures[] = [];
      for (const name of o.only) {
        const r = await run(name);
        for (const fp of r.falsePositives) {
          log(
            `${name}: false positive: ${fp.peer} in round ${fp.round}: ${fp.why}`,
          );
        }
        const f = figures(r, clean);
        log(
          `${name}: detected ${f.detectedRounds.length}/${f.attackedRounds.length} attacked rounds, credited ${f.creditedToAttackers}${
            f.slashed ? ", slashed" : ""
          }, loss ratio ${f.lossRatioVsClean.toFixed(4)}, honest credit ${
            f.honestCreditShare.toFixed(2)
          }, audit work ${f.auditOverheadVsClean.toFixed(2)}x clean`,
        );
        attacks.push(f);
      }
      return {
        peers: o.peers,
        rounds: o.rounds,
        innerSteps: o.innerSteps,
        model: o.model,
        rule: JSON.stringify(spec.aggregation),
        compression: spec.compression.format,
        moments: spec.moments ?? "carry",
        sharding: spec.sharding ?? "whole",
        clean: {
          heldoutLoss: clean.heldoutLoss,
          falsePositives: clean.falsePositives.length,
          audits: clean.audits,
          auditOverhead: clean.auditOverhead,
        },
        attacks,
        auditOverhead: clean.auditOverhead,
        falsePositives: clean.falsePositives.length +
          attacks.reduce((s, a) => s + a.falsePositives, 0),
      };
    } finally {
      if (o.keys === null) {
        await Deno.remove(keys, { recursive: true }).catch(() => {});
      }
    }
  },
  table(r) {
    return [
      `${r.peers} peers x ${r.rounds} rounds x ${r.innerSteps} steps (${r.model} model, ${r.compression} deltas, sharding ${r.sharding}), rule ${r.rule}`,
      `clean run: held-out loss ${
        r.clean.heldoutLoss.toFixed(4)
      }, audits ${r.clean.audits.passed} passed / ${r.clean.audits.failed} failed, audit overhead ${
        (100 * r.clean.auditOverhead).toFixed(1)
      }% of training steps`,
      formatTable(
        [
          "attack",
          "attackers",
          "detected",
          "rounds attacked",
          "caught in",
          "credited",
          "slashed",
          "held-out loss",
          "vs clean",
          "honest credit",
          "audit work vs clean",
          "false pos.",
        ],
        r.attacks.map((a) => [
          a.name,
          String(a.attackers),
          a.detected ? `yes (round ${a.roundsToDetect})` : "no",
          a.attackedRounds.join(" "),
          a.detectedRounds.join(" "),
          String(a.creditedToAttackers),
          a.slashed ? "yes" : "no",
          a.heldoutLoss.toFixed(4),
          a.lossRatioVsClean.toFixed(4),
          a.honestCreditShare.toFixed(2),
          `${a.auditOverheadVsClean.toFixed(2)}x`,
          String(a.falsePositives),
        ]),
      ),
      `false positives over all runs: ${r.falsePositives}`,
    ].join("\n");
  },
};

export default bench;
