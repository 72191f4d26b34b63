/**
 * `deno task bench scale`: what a round costs each peer, and how long it
 * takes, from 16 to 1000 peers, today (one leader; every peer fetches
 * every delta) and sharded (protocol/aggregation/shards.ts), in the
 * network model of ./scale_model.ts: links drawn from a mix of real
 * connections, 10% churn a round, message loss, Byzantine slice leaders.
 * Sizes default to a GPT-2-sized model (124M parameters) with sign deltas.
 *
 * @module
 */
import { encodedByteLength } from "../../protocol/aggregation/quantized_container.ts";
import {
  BITS_FOR_COMPRESSION,
  type Compression,
  COMPRESSIONS,
  DEFAULT_BLOCK_SIZE,
} from "../../protocol/aggregation/quantize.ts";
import { formatBytes } from "../../node/format_bytes.ts";
import {
  type Bench,
  choiceFlag,
  formatTable,
  median,
  numberFlag,
  UsageError,
} from "./_bench.ts";
import { modelSlices, simulate } from "./scale_model.ts";

interface Options {
  peers: number[];
  params: number;
  compression: Compression;
  aggregateBits: number;
  verify: number;
  producers: 1 | 2;
  rounds: number;
  churn: number;
  loss: number;
  byzantine: number;
  trainSeconds: number;
  seed: number;
}

/** One row: N peers, sharded or not. */
export interface ScaleRow {
  peers: number;
  sharded: boolean;
  shards: number;
  /** Median over rounds. */
  round_s: number;
  /** Round traffic: the most and the median any peer fetched, the most sent. */
  max_peer_download_bytes: number;
  median_peer_download_bytes: number;
  max_peer_upload_bytes: number;
  /** The same, in deltas. */
  max_download_deltas: number;
  max_upload_deltas: number;
  /** Catching up: what a joining peer fetched, what each peer sent joiners. */
  joiner_download_bytes: number;
  max_catch_up_upload_bytes: number;
  /** The slowest joiner's fetch of the checkpoint, median over rounds. */
  catch_up_s: number;
  /** Fraction of slices some verifier recomputed, median over rounds. */
  verified_fraction: number;
  /** Wrong aggregates published and caught, over all rounds. */
  wrong: number;
  caught: number;
}

/** What `scale` reports. */
export interface ScaleResult {
  params: number;
  compression: Compression;
  deltaBytes: number;
  checkpointBytes: number;
  aggregateBits: number;
  verifyPerPeer: number;
  producers: 1 | 2;
  rounds: number;
  churn: number;
  loss: number;
  byzantine: number;
  rows: ScaleRow[];
}

function parse(flags: Record<string, string>): Options {
  const peers = flags.peers.split(",").map((p) => Number(p.trim()));
  if (peers.some((n) => !Number.isInteger(n) || n < 2 || n > 5000)) {
    throw new UsageError(
      `Cannot use --peers as it must be integers in [2, 5000], comma-separated: current value is "${flags.peers}"`,
    );
  }
  return {
    peers,
    params: numberFlag(flags, "params", { min: 1e5, max: 1e11 }),
    compression: choiceFlag(flags, "compression", COMPRESSIONS),
    aggregateBits: numberFlag(flags, "aggregate-bits", { min: 1, max: 32 }),
    verify: numberFlag(flags, "verify", { min: 1, max: 16, integer: true }),
    producers: numberFlag(flags, "producers", {
      min: 1,
      max: 2,
      integer: true,
    }) as
      | 1
      | 2,
    rounds: numberFlag(flags, "rounds", { min: 1, max: 100, integer: true }),
    churn: numberFlag(flags, "churn", { min: 0, max: 0.5 }),
    loss: numberFlag(flags, "loss", { min: 0, max: 0.5 }),
    byzantine: numberFlag(flags, "byzantine", { min: 0, max: 0.5 }),
    trainSeconds: numberFlag(flags, "train-seconds", { min: 0, max: 1e5 }),
    seed: numberFlag(flags, "seed", { min: 0, max: 2 ** 31, integer: true }),
  };
}

// deno-lint-ignore require-await -- the Bench interface runs async
async function run(
  o: Options,
  log: (line: string) => void,
): Promise<ScaleResult> {
  const bits = BITS_FOR_COMPRESSION[o.compression];
  const deltaBytes = encodedByteLength(o.params, {
    bits,
    blockSize: DEFAULT_BLOCK_SIZE,
  });
  const checkpointBytes = 8 * o.params;
  const rows: ScaleRow[] = [];
  for (const peers of o.peers) {
    for (const sharded of [false, true]) {
      const rounds = simulate({
        peers,
        deltaBytes,
        checkpointBytes,
        params: o.params,
        sharded,
        aggregateBits: o.aggregateBits,
        verifyPerPeer: o.verify,
        producers: o.producers,
        trainSeconds: o.trainSeconds,
        churn: o.churn,
        loss: o.loss,
        byzantine: o.byzantine,
        rounds: o.rounds,
        seed: o.seed,
      });
      const all = (f: (r: typeof rounds[0]) => number[]) => rounds.flatMap(f);
      const maxDown = Math.max(...all((r) => r.download));
      const maxUp = Math.max(...all((r) => r.upload));
      const joiners = all((r) => r.catchUpDownload.filter((b) => b > 0));
      const row: ScaleRow = {
        peers,
        sharded,
        shards: sharded
          ? modelSlices(
            o.producers,
            peers - Math.round(o.churn * peers),
            o.params,
          )
          : 1,
        round_s: median(rounds.map((r) => r.seconds)),
        max_peer_download_bytes: maxDown,
        median_peer_download_bytes: median(all((r) => r.download)),
        max_peer_upload_bytes: maxUp,
        max_download_deltas: maxDown / deltaBytes,
        max_upload_deltas: maxUp / deltaBytes,
        joiner_download_bytes: joiners.length ? Math.max(...joiners) : 0,
        max_catch_up_upload_bytes: Math.max(...all((r) => r.catchUpUpload)),
        catch_up_s: median(rounds.map((r) => r.catchUpSeconds)),
        verified_fraction: median(rounds.map((r) => r.verifiedFraction)),
        wrong: rounds.reduce((n, r) => n + r.wrong, 0),
        caught: rounds.reduce((n, r) => n + r.caught, 0),
      };
      rows.push(row);
      log(
        `${peers} peers ${sharded ? "sharded" : "one leader"}: ${
          row.round_s.toFixed(1)
        } s, max download ${row.max_download_deltas.toFixed(2)} deltas`,
      );
    }
  }
  return {
    params: o.params,
    compression: o.compression,
    deltaBytes,
    checkpointBytes,
    aggregateBits: o.aggregateBits,
    verifyPerPeer: o.verify,
    producers: o.producers,
    rounds: o.rounds,
    churn: o.churn,
    loss: o.loss,
    byzantine: o.byzantine,
    rows,
  };
}

function table(r: ScaleResult): string {
  const rows = r.rows.map((x) => [
    String(x.peers),
    x.sharded ? "sharded" : "one leader",
    String(x.shards),
    x.round_s.toFixed(1),
    formatBytes(x.max_peer_download_bytes),
    formatBytes(x.median_peer_download_bytes),
    formatBytes(x.max_peer_upload_bytes),
    `${x.max_download_deltas.toFixed(2)} / ${x.max_upload_deltas.toFixed(2)}`,
    x.verified_fraction.toFixed(2),
    `${x.caught}/${x.wrong}`,
  ]);
  return [
    `a round at ${
      (r.params / 1e6).toFixed(0)
    }M parameters, ${r.compression} deltas of ${
      formatBytes(r.deltaBytes)
    }, aggregate ${r.aggregateBits} bit(s)/parameter, ${r.producers} producer(s) a slice, ${r.verifyPerPeer} slice(s) verified per peer; ${
      r.churn * 100
    }% churn, ${r.loss * 100}% loss, ${
      r.byzantine * 100
    }% Byzantine slice leaders (1 at least); median of ${r.rounds} rounds`,
    formatTable([
      "peers",
      "mode",
      "shards",
      "round s",
      "max down",
      "median down",
      "max up",
      "down/up deltas",
      "verified",
      "caught",
    ], rows),
    `catching up: a joiner fetches the checkpoint (${
      formatBytes(r.checkpointBytes)
    }) from every peer at once, in ${
      Math.max(...r.rows.map((x) => x.catch_up_s)).toFixed(0)
    } s at most (its own link); each peer sends joiners at most ${
      formatBytes(Math.max(...r.rows.map((x) => x.max_catch_up_upload_bytes)))
    } a round`,
  ].join("\n");
}

const scale: Bench<Options, ScaleResult> = {
  summary:
    "per-peer bytes and round time from 16 to 1000 peers, one leader vs sharded, in a network model",
  flags: {
    peers: { default: "16,64,256,1000", help: "peer counts, comma-separated" },
    params: { default: "124439808", help: "model parameters (GPT-2 124M)" },
    compression: { default: "sign", help: COMPRESSIONS.join(", ") },
    "aggregate-bits": {
      default: "1",
      help:
        "bits per parameter of a published aggregate slice (and a scale per slice)",
    },
    verify: { default: "1", help: "slices each peer verifies a round" },
    producers: {
      default: "1",
      help:
        "peers computing each slice: 1, a slice leader (the model); 2, the node's rounds led by slices",
    },
    rounds: { default: "3", help: "rounds simulated per row" },
    churn: { default: "0.1", help: "peers leaving (and joining) a round" },
    loss: { default: "0.01", help: "messages lost and sent again" },
    byzantine: {
      default: "0.01",
      help:
        "slice leaders publishing wrong aggregates, a fraction (at least 1)",
    },
    "train-seconds": { default: "60", help: "local training a round" },
    seed: { default: "1", help: "draws of links, churn and liars" },
  },
  parse,
  run,
  table,
};
export default scale;
