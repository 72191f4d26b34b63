import { fileURLToPath } from "node:url";
import { NodeError } from "../errors.ts";
import { readRuntimeInfo, type RuntimeInfo } from "../node.ts";

/** A `zoo-node --join` child process on this machine. */
export interface LocalPeer {
  name: string;
  dataDir: string;
  /** File holding the child's stdout and stderr. */
  log: string;
  child: Deno.ChildProcess;
  /** What the child wrote to `<dataDir>/node.json` once it was up. */
  info: RuntimeInfo;
}

/** How a local peer is started. */
export interface SpawnPeerOptions {
  /** Multiaddrs to bootstrap from. */
  bootstrap?: string[];
  /** More `--join` flags. */
  args?: string[];
  /** Module to run under deno; defaults to the running program's. */
  entry?: string;
  /** How long to wait for the peer to come up. */
  timeoutMs?: number;
  /** Its libp2p listen address (default: loopback, an ephemeral port). */
  listen?: string;
  /** Its `--http` (default: loopback, an ephemeral port). */
  http?: string;
  /**
   * A command that runs the peer's command line, such as `ip netns exec
   * NAME` (default: none). It must exec the peer, so the pid is the peer's.
   */
  wrap?: string[];
}

/** The child exited before it was up. */
export class PeerExitedError extends NodeError {
  constructor(name: string, code: number, log: string, lastLine = "") {
    super(
      `${name} exited with code ${code}${
        lastLine ? `: ${lastLine}` : ""
      }; see ${log}`,
    );
    this.name = "PeerExitedError";
  }
}

/**
 * Starts `zoo-node --join` as a child process listening on loopback with an
 * ephemeral HTTP port, and resolves once it has written its runtime info.
 */
export async function spawnPeer(
  name: string,
  dataDir: string,
  options: SpawnPeerOptions = {},
): Promise<LocalPeer> {
  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
  await Deno.remove(`${dataDir}/node.json`).catch(() => {});
  const log = `${dataDir}/node.log`;
  const [cmd, ...base] = zooNodeCommand(options.entry);
  // The shell hands the log file to the child as its stdout and stderr,
  // then execs it: the log is written by the child alone, survives this
  // process, and the pid is the peer's.
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      'exec "$@" >"$LOG" 2>&1',
      "sh",
      ...(options.wrap ?? []),
      cmd,
      ...base,
      "--join",
      "--data-dir",
      dataDir,
      "--listen",
      options.listen ?? "/ip4/127.0.0.1/tcp/0",
      "--http",
      options.http ?? "127.0.0.1:0",
      ...(options.bootstrap ?? []).flatMap((b) => ["--bootstrap", b]),
      ...(options.args ?? []),
    ],
    env: { LOG: log },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let exited: Deno.CommandStatus | null = null;
  child.status.then((s) => exited = s);
  const info = await waitFor(
    async () => {
      if (exited) {
        const text = await Deno.readTextFile(log).catch(() => "");
        const last = text.trimEnd().split("\n").at(-1) ?? "";
        throw new PeerExitedError(name, exited.code, log, last);
      }
      return await readRuntimeInfo(dataDir).catch(() => null);
    },
    options.timeoutMs ?? 20_000,
    `${name} did not start`,
  );
  return { name, dataDir, log, child, info };
}

/** Stops a peer with `signal`, escalating to SIGKILL after 5 s. */
export async function stopPeer(
  peer: LocalPeer,
  signal: Deno.Signal = "SIGINT",
): Promise<Deno.CommandStatus> {
  try {
    peer.child.kill(signal);
  } catch { /* already exited */ }
  const timer = setTimeout(() => {
    try {
      peer.child.kill("SIGKILL");
    } catch { /* exited meanwhile */ }
  }, 5_000);
  const status = await peer.child.status;
  clearTimeout(timer);
  return status;
}

/** The peer's loopback multiaddr, ending in `/p2p/<id>`. */
export function loopbackAddr(info: RuntimeInfo): string {
  const addr = info.addresses.find((a) => a.startsWith("/ip4/127.0.0.1/"));
  if (!addr) throw new Error(`peer ${info.peerId} has no loopback address`);
  return addr.includes("/p2p/") ? addr : `${addr}/p2p/${info.peerId}`;
}

/**
 * Polls `probe` every 100 ms until it returns non-null. A
 * {@linkcode PeerExitedError} or an abort of `signal` ends the wait at
 * once; other errors count as "not yet" and the last one is reported on
 * timeout.
 */
export async function waitFor<T>(
  probe: () => Promise<T | null>,
  timeoutMs: number,
  what: string,
  signal?: AbortSignal,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  while (performance.now() < deadline) {
    signal?.throwIfAborted();
    try {
      const value = await probe();
      if (value !== null) return value;
    } catch (err) {
      if (err instanceof PeerExitedError) throw err;
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const why = last instanceof Error ? `: ${last.message}` : "";
  throw new Error(`${what} within ${timeoutMs / 1000} s${why}`);
}

/**
 * How to start a zoo-node, whether it runs under deno or was compiled: the
 * command line before its arguments, running `entry` (default: the running
 * program's main module, as a path when it is a file).
 */
export function zooNodeCommand(entry: string = Deno.mainModule): string[] {
  const exe = Deno.execPath();
  const isDeno = /(^|\/)deno(\.exe)?$/.test(exe);
  const module = entry.startsWith("file:") ? fileURLToPath(entry) : entry;
  return isDeno ? [exe, "run", "-A", module] : [exe];
}
