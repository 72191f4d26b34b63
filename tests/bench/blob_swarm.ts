/**
 * `bench blob --providers N`: a fetcher in this process pulls one file
 * from providers in wan-lab hosts whose links are capped (`--uplink`), so
 * the network and not this machine's cores is the limit: from one
 * provider, then from all N at once (the swarm fetch,
 * node/p2p/file_fetch.ts), interleaved rep by rep.
 *
 * @module
 */
import { generateKeyPair } from "@libp2p/crypto/keys";
import { multiaddr } from "@multiformats/multiaddr";
import { BlobService } from "../../node/p2p/blob_service.ts";
import { createHost } from "../../node/p2p/host.ts";
import { Blockstore } from "../../node/store/blockstore.ts";
import type { CID } from "../../protocol/content/cid.ts";
import { lines } from "./_lines.ts";
import { hostAddress, inHost, wanLabMissing, withWanLab } from "../wan/lab.ts";
import { type Rate, rate } from "./_bench.ts";

/** What the swarm case reports. */
export interface SwarmResult {
  providers: number;
  /** Each provider host's cap, both ways (tc syntax). */
  uplink: string;
  /** From one provider. */
  one: Rate;
  /** From every provider at once. */
  many: Rate;
  /** many / one, median over median. */
  speedup: number;
  /** Bytes each provider sent in the last swarm fetch, by host. */
  shares: number[];
}

const PROVIDER = new URL("./blob_provider.ts", import.meta.url).pathname;

/** A provider process in a lab host. */
interface Provider {
  peerId: string;
  addrs: string[];
  stop(): Promise<void>;
}

async function startProvider(host: number, dir: string): Promise<Provider> {
  const [cmd, ...wrap] = inHost(host);
  const child = new Deno.Command(cmd, {
    args: [
      ...wrap,
      Deno.execPath(),
      "run",
      "-A",
      PROVIDER,
      dir,
      hostAddress(host),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const first = await lines(child.stdout).next();
  if (first.done) throw new Error(`provider in host ${host} did not start`);
  const { peerId, addrs } = JSON.parse(first.value);
  return {
    peerId,
    addrs,
    stop: async () => {
      await child.stdin.close().catch(() => {});
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await child.status;
      clearTimeout(timer);
    },
  };
}

/**
 * Times fetches of `blob` from 1 and from `providers` lab hosts capped at
 * `uplink`, `reps` times each.
 */
export async function runSwarm(
  blob: Uint8Array,
  providers: number,
  uplink: string,
  reps: number,
  log: (line: string) => void,
): Promise<SwarmResult> {
  const missing = await wanLabMissing();
  if (missing) throw new Error(`Cannot run the swarm case here: ${missing}`);
  await using stack = new AsyncDisposableStack();
  const dirs: string[] = [];
  let cid: CID | undefined;
  for (let i = 0; i < providers; i++) {
    const dir = await Deno.makeTempDir({ prefix: "zoo-bench-swarm-" });
    stack.defer(() => Deno.remove(dir, { recursive: true }));
    cid = await (await Blockstore.open(dir)).put(blob);
    dirs.push(dir);
  }
  return await withWanLab(providers, uplink, async () => {
    const started: Provider[] = [];
    try {
      for (const [i, dir] of dirs.entries()) {
        started.push(await startProvider(i + 1, dir));
      }
      const dir = await Deno.makeTempDir({ prefix: "zoo-bench-swarm-" });
      stack.defer(() => Deno.remove(dir, { recursive: true }));
      const store = await Blockstore.open(dir);
      const host = await createHost({
        privateKey: await generateKeyPair("Ed25519"),
        listen: ["/ip4/127.0.0.1/tcp/0"],
        bootstrap: [],
        mdns: false,
      });
      stack.defer(() => host.stop());
      const blobs = new BlobService(host, store, { maxBlobBytes: 2 ** 31 });
      for (const p of started) {
        await host.dial(p.addrs.map((a) => multiaddr(a)));
      }
      log(
        `${providers} providers on lab hosts capped at ${uplink}, connected`,
      );
      const fetchFrom = async (ids: string[]) => {
        const t = performance.now();
        const report = await blobs.fetch(cid!, ids);
        const seconds = (performance.now() - t) / 1000;
        await store.delete(cid!);
        return { seconds, report };
      };
      const times = { one: [] as number[], many: [] as number[] };
      let shares: number[] = [];
      for (let rep = 1; rep <= reps; rep++) {
        const one = await fetchFrom([started[0].peerId]);
        const many = await fetchFrom(started.map((p) => p.peerId));
        times.one.push(one.seconds);
        times.many.push(many.seconds);
        shares = started.map((p) => many.report.bytesFrom[p.peerId] ?? 0);
        const mbps = (s: number) => (blob.length / 1e6 / s).toFixed(1);
        log(
          `rep ${rep}/${reps}: 1 provider ${
            mbps(one.seconds)
          } MB/s, ${providers} providers ${mbps(many.seconds)} MB/s`,
        );
      }
      const one = rate(blob.length, times.one);
      const many = rate(blob.length, times.many);
      return {
        providers,
        uplink,
        one,
        many,
        speedup: many.medianMBps / one.medianMBps,
        shares,
      };
    } finally {
      for (const p of started) await p.stop();
    }
  });
}
