/**
 * `bench rounds` over a wide-area network: each peer on its own wan-lab
 * host (tests/wan/lab.ts), capped at `--rate` Mbit/s in each direction,
 * behind a delay relay that adds half of `--rtt` each way, the chain
 * behind one too. Reports what `rounds` reports (DiLoCo against
 * data-parallel training and one peer alone, bytes, utilization) plus the
 * link's rate and round-trip time. Needs root and network namespaces; it
 * says so and exits 1 where they are missing.
 *
 * @module
 */
import { jobPeerArgs } from "../../node/devnet/job.ts";
import { type LocalPeer, spawnPeer } from "../../node/devnet/local_peer.ts";
import { MAIN } from "../_cli.ts";
import type { JobCluster } from "../_job_cluster.ts";
import { startDelayRelay } from "../wan/delay_relay.ts";
import {
  hostAddress,
  inHost,
  ROOT_ADDRESS,
  wanLabMissing,
  withWanLab,
} from "../wan/lab.ts";
import rounds, {
  measureRounds,
  peerArgs,
  type RoundsOptions,
  type RoundsResult,
} from "./rounds.ts";
import { type Bench, numberFlag } from "./_bench.ts";

const RELAY = new URL("../wan/delay_relay.ts", import.meta.url).pathname;
/** Where a peer listens inside its host, and its relay outside. */
const PEER_PORT = 4001;
const RELAY_PORT = 4101;

interface WanOptions extends RoundsOptions {
  rateMbit: number;
  rttMs: number;
}

/** What `wan` reports: `rounds`'s figures under the link's limits. */
export interface WanResult extends RoundsResult {
  rateMbit: number;
  rttMs: number;
}

/**
 * Starts a delay relay in every host and the cluster's peers behind them,
 * the first alone and the rest bootstrapping from it; returns the peers
 * and a function that stops the relays.
 */
async function startWanPeers(
  c: JobCluster,
  o: WanOptions,
  stops: (() => void)[],
): Promise<LocalPeer[]> {
  const delay = String(o.rttMs / 2);
  const anvil = new URL(c.chain.rpcUrl);
  const chainRelay = startDelayRelay({
    listen: { hostname: ROOT_ADDRESS, port: 0 },
    target: { hostname: anvil.hostname, port: Number(anvil.port) },
    delayMs: o.rttMs / 2,
  });
  stops.push(() => chainRelay.close());
  const rpcUrl = `http://${ROOT_ADDRESS}:${
    (chainRelay.addr as Deno.NetAddr).port
  }`;
  const peers: LocalPeer[] = [];
  for (const [k, slot] of c.slots.slice(0, o.peers).entries()) {
    const host = k + 1;
    const relay = new Deno.Command(inHost(host)[0], {
      args: [
        ...inHost(host).slice(1),
        Deno.execPath(),
        "run",
        "-A",
        RELAY,
        `${hostAddress(host)}:${RELAY_PORT}`,
        `127.0.0.1:${PEER_PORT}`,
        delay,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    stops.push(() => {
      try {
        relay.kill("SIGKILL");
      } catch { /* exited */ }
    });
    const peer = await spawnPeer(slot.name, slot.dataDir, {
      entry: MAIN,
      wrap: inHost(host),
      listen: `/ip4/127.0.0.1/tcp/${PEER_PORT}`,
      http: `${hostAddress(host)}:7070`,
      bootstrap: peers.length === 0 ? [] : [
        `/ip4/${hostAddress(1)}/tcp/${RELAY_PORT}/p2p/${peers[0].info.peerId}`,
      ],
      args: [
        ...jobPeerArgs({ ...c.chain, rpcUrl }, c.job.id),
        "--announce",
        `/ip4/${hostAddress(host)}/tcp/${RELAY_PORT}`,
        ...peerArgs(o, k),
      ],
      timeoutMs: 60_000,
    });
    peers.push(peer);
    c.peers.push(peer);
  }
  return peers;
}

const bench: Bench<WanOptions, WanResult> = {
  summary:
    "bench rounds with each peer on its own network host: capped bandwidth, added round-trip time",
  flags: {
    ...rounds.flags,
    rate: { default: "100", help: "each host's cap, Mbit/s each way, 1-10000" },
    rtt: { default: "100", help: "round-trip time added between hosts, ms" },
  },
  parse(flags) {
    return {
      ...rounds.parse(flags),
      rateMbit: numberFlag(flags, "rate", { min: 1, max: 10_000 }),
      rttMs: numberFlag(flags, "rtt", { min: 0, max: 10_000 }),
    };
  },
  async run(o, log) {
    const missing = await wanLabMissing();
    if (missing) {
      throw new Error(`Cannot run the WAN benchmark here: ${missing}`);
    }
    const stops: (() => void)[] = [];
    try {
      const result = await withWanLab(
        o.peers,
        `${o.rateMbit}mbit`,
        () => measureRounds(o, log, (c) => startWanPeers(c, o, stops)),
      );
      return { ...result, rateMbit: o.rateMbit, rttMs: o.rttMs };
    } finally {
      for (const stop of stops) stop();
    }
  },
  table(r) {
    return [
      `over ${r.rateMbit} Mbit/s links with ${r.rttMs} ms round trips:`,
      rounds.table(r),
    ].join("\n");
  },
};

export default bench;
