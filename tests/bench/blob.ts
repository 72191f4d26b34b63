/**
 * Blob transfer on loopback: libp2p (`/zoo/blob/1.0.0` over TCP + noise +
 * yamux, via BlobService) against raw TCP, measured in the same run.
 *
 * Three paths, interleaved rep by rep so drift hits them alike:
 *   libp2p    B fetches the blob from A end to end: dial the protocol,
 *             stream, write the part file, fsync, re-read and sha256-verify,
 *             rename into the store. The block is deleted between reps.
 *   tcp       one TCP connection, 256 KiB writes from memory; the receiver
 *             writes a file, fsyncs it, re-reads and sha256-verifies it:
 *             the disk and hash work of the libp2p receiver.
 *   tcpWire   the same connection, bytes read and dropped.
 *
 * @module
 */
import { generateKeyPair } from "@libp2p/crypto/keys";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { BlobService } from "../../node/p2p/blob_service.ts";
import { Blockstore, hashFile } from "../../node/store/blockstore.ts";
import { CHUNK_SIZE } from "../../node/store/block_storage.ts";
import { writeFully } from "../../node/store/atomic_write.ts";
import { createHost, type Host } from "../../node/p2p/host.ts";
import type { CID } from "../../protocol/content/cid.ts";
import { runSwarm, type SwarmResult } from "./blob_swarm.ts";
import {
  type Bench,
  formatTable,
  numberFlag,
  type Rate,
  rate,
} from "./_bench.ts";

/** What `blob` reports. */
export interface BlobResult {
  /** Blob size in bytes. */
  bytes: number;
  reps: number;
  /** Write size of the raw TCP sender (the blockstore's read chunk). */
  chunkBytes: number;
  libp2p: Rate;
  /** Raw TCP doing the receiver's disk and hash work. */
  tcp: Rate;
  /** Raw TCP, bytes only. */
  tcpWire: Rate;
  /** libp2p / tcp, median over median. */
  ratio: number;
  /** libp2p / tcpWire, median over median. */
  ratioWire: number;
  /** With `--providers N`: one file from 1 vs N capped lab hosts. */
  swarm?: SwarmResult;
}

/** One libp2p node of the benchmark: host, store and blob service. */
interface Peer {
  host: Host;
  store: Blockstore;
  blobs: BlobService;
}

const LOOPBACK = "127.0.0.1";

async function startPeer(
  stack: AsyncDisposableStack,
  maxBlobBytes: number,
): Promise<Peer> {
  const dir = await Deno.makeTempDir({ prefix: "zoo-bench-blob-" });
  stack.defer(() => Deno.remove(dir, { recursive: true }));
  const store = await Blockstore.open(dir);
  const host = await createHost({
    privateKey: await generateKeyPair("Ed25519"),
    listen: [`/ip4/${LOOPBACK}/tcp/0`],
    bootstrap: [],
    mdns: false,
  });
  stack.defer(() => host.stop());
  const blobs = new BlobService(host, store, { maxBlobBytes });
  await blobs.start();
  stack.defer(() => blobs.stop());
  return { host, store, blobs };
}

/** B fetches `cid` from A; returns seconds and leaves B without the block. */
async function fetchOnce(a: Peer, b: Peer, cid: CID, bytes: number) {
  const start = performance.now();
  const report = await b.blobs.fetch(cid, [a.host.peerId.toString()]);
  const seconds = (performance.now() - start) / 1000;
  if (report.local || report.size !== bytes || !(await b.store.has(cid))) {
    throw new Error(
      `Cannot time the libp2p fetch as it did not transfer ${bytes} bytes: report ${
        JSON.stringify(report)
      }`,
    );
  }
  await b.store.delete(cid);
  return seconds;
}

/** Where the raw TCP receiver puts the bytes, and what they must hash to. */
interface DiskTarget {
  path: string;
  sha256: string;
}

/** Reads `conn` to its end; into `disk` (fsync, re-read, verify) if given. */
async function receive(
  conn: Deno.Conn,
  bytes: number,
  disk?: DiskTarget,
): Promise<void> {
  const buffer = new Uint8Array(CHUNK_SIZE);
  using file = disk
    ? await Deno.open(disk.path, { write: true, create: true, truncate: true })
    : undefined;
  let total = 0;
  for (let n; (n = await conn.read(buffer)) !== null;) {
    if (file) await writeFully(file, buffer.subarray(0, n));
    total += n;
  }
  if (total !== bytes) {
    throw new Error(`Raw TCP receiver got ${total} of ${bytes} bytes`);
  }
  if (!file || !disk) return;
  await file.sync();
  const actual = await hashFile(disk.path);
  if (actual !== disk.sha256) {
    throw new Error(
      `Raw TCP file does not hash to the blob: expected ${disk.sha256}, actual ${actual}`,
    );
  }
}

/** Sends `blob` over one loopback connection; returns the seconds taken. */
async function tcpOnce(blob: Uint8Array, disk?: DiskTarget): Promise<number> {
  using listener = Deno.listen({ hostname: LOOPBACK, port: 0 });
  const start = performance.now();
  const received = listener.accept().then(async (conn) => {
    try {
      await receive(conn, blob.length, disk);
    } finally {
      conn.close();
    }
  });
  const conn = await Deno.connect({
    hostname: LOOPBACK,
    port: listener.addr.port,
  });
  try {
    for (let off = 0; off < blob.length; off += CHUNK_SIZE) {
      await writeFully(conn, blob.subarray(off, off + CHUNK_SIZE));
    }
    await conn.closeWrite();
    await received;
  } finally {
    conn.close();
  }
  const seconds = (performance.now() - start) / 1000;
  if (disk) await Deno.remove(disk.path);
  return seconds;
}

/** `bytes` of random data (getRandomValues fills 64 KiB per call). */
function randomBytes(bytes: number): Uint8Array {
  const blob = new Uint8Array(bytes);
  for (let off = 0; off < bytes; off += 65_536) {
    crypto.getRandomValues(blob.subarray(off, off + 65_536));
  }
  return blob;
}

/** `--size` (MiB), `--reps`, `--providers` and `--uplink`. */
export interface BlobOptions {
  mib: number;
  reps: number;
  /** Lab hosts the swarm case fetches from; 0 skips it. */
  providers: number;
  /** Their links' cap in Mbit/s. */
  uplinkMbit: number;
}

function parse(flags: Record<string, string>): BlobOptions {
  return {
    mib: numberFlag(flags, "size", { min: 0.0625, max: 1024 }),
    reps: numberFlag(flags, "reps", { min: 1, max: 50, integer: true }),
    providers: numberFlag(flags, "providers", {
      min: 0,
      max: 32,
      integer: true,
    }),
    uplinkMbit: numberFlag(flags, "uplink", { min: 1, max: 10_000 }),
  };
}

async function run(
  { mib, reps, providers, uplinkMbit }: BlobOptions,
  log: (line: string) => void,
): Promise<BlobResult> {
  const bytes = Math.round(mib * 2 ** 20);
  const blob = randomBytes(bytes);
  const sha256 = createHash("sha256").update(blob).digest("hex");

  await using stack = new AsyncDisposableStack();
  const a = await startPeer(stack, bytes);
  const b = await startPeer(stack, bytes);
  const tcpDir = await Deno.makeTempDir({ prefix: "zoo-bench-tcp-" });
  stack.defer(() => Deno.remove(tcpDir, { recursive: true }));
  const disk = { path: join(tcpDir, "blob"), sha256 };
  const cid = await a.store.put(blob);
  await b.host.dial(a.host.getMultiaddrs());
  log(`${mib} MiB blob, ${reps} reps, hosts connected`);

  const times: Record<"libp2p" | "tcp" | "wire", number[]> = {
    libp2p: [],
    tcp: [],
    wire: [],
  };
  const mbps = (s: number) => (bytes / 1e6 / s).toFixed(0);
  for (let rep = 1; rep <= reps; rep++) {
    const p2p = await fetchOnce(a, b, cid, bytes);
    const tcp = await tcpOnce(blob, disk);
    const wire = await tcpOnce(blob);
    times.libp2p.push(p2p);
    times.tcp.push(tcp);
    times.wire.push(wire);
    log(
      `rep ${rep}/${reps}: libp2p ${mbps(p2p)} MB/s, raw TCP ${
        mbps(tcp)
      } MB/s, wire only ${mbps(wire)} MB/s`,
    );
  }
  const libp2p = rate(bytes, times.libp2p);
  const tcp = rate(bytes, times.tcp);
  const tcpWire = rate(bytes, times.wire);
  const swarm = providers > 0
    ? await runSwarm(blob, providers, `${uplinkMbit}mbit`, reps, log)
    : undefined;
  return {
    ...(swarm ? { swarm } : {}),
    bytes,
    reps,
    chunkBytes: CHUNK_SIZE,
    libp2p,
    tcp,
    tcpWire,
    ratio: libp2p.medianMBps / tcp.medianMBps,
    ratioWire: libp2p.medianMBps / tcpWire.medianMBps,
  };
}

function table(r: BlobResult): string {
  const row = (name: string, x: Rate) => [
    name,
    x.medianMBps.toFixed(1),
    x.bestMBps.toFixed(1),
    (r.bytes / 1e6 / x.medianMBps).toFixed(3),
  ];
  return [
    `blob transfer on loopback: ${
      r.bytes / 2 ** 20
    } MiB, ${r.reps} reps (MB = 1e6 bytes)`,
    formatTable(["path", "median MB/s", "best MB/s", "median s"], [
      row("libp2p fetch (noise+yamux, disk+sha256)", r.libp2p),
      row("raw TCP (disk+sha256)", r.tcp),
      row("raw TCP (wire only)", r.tcpWire),
    ]),
    `libp2p / raw TCP (same work): ${r.ratio.toFixed(2)}`,
    `libp2p / raw TCP (wire only): ${r.ratioWire.toFixed(2)}`,
    ...(r.swarm ? ["", swarmTable(r.swarm)] : []),
  ].join("\n");
}

function swarmTable(s: SwarmResult): string {
  const row = (name: string, x: Rate) => [
    name,
    x.medianMBps.toFixed(1),
    x.bestMBps.toFixed(1),
  ];
  return [
    `swarm fetch from lab hosts capped at ${s.uplink} each way:`,
    formatTable(["providers", "median MB/s", "best MB/s"], [
      row("1", s.one),
      row(String(s.providers), s.many),
    ]),
    `${s.providers} providers / 1: ${s.speedup.toFixed(2)}x; MiB from each: ${
      s.shares.map((b) => (b / 2 ** 20).toFixed(0)).join(", ")
    }`,
  ].join("\n");
}

const blob: Bench<BlobOptions, BlobResult> = {
  summary:
    "blob transfer MB/s: libp2p BlobService vs raw TCP on loopback; with --providers, a swarm fetch from capped wan-lab hosts",
  flags: {
    size: { default: "64", help: "blob size in MiB" },
    reps: { default: "5", help: "repetitions per path" },
    providers: {
      default: "0",
      help:
        "also fetch from 1 vs N providers on wan-lab hosts (needs root); 0: skip",
    },
    uplink: { default: "20", help: "the providers' cap, Mbit/s each way" },
  },
  parse,
  run,
  table,
};
export default blob;
