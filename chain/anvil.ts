/**
 * The embedded devnet chain: a real anvil (from the npm package
 * `@foundry-rs/anvil-linux-amd64`) on a free loopback port, its state
 * persisted in a folder so committed rounds survive restarts.
 *
 * @module
 */
// Imported so that Deno installs the package that carries the binary.
import anvilPackage from "@foundry-rs/anvil-linux-amd64/package.json" with {
  type: "json",
};
import { ChainError } from "./errors.ts";

/** A running anvil. */
export interface Anvil {
  /** Its JSON-RPC endpoint, e.g. `http://127.0.0.1:41235`. */
  rpcUrl: string;
  /** Its process id. */
  pid: number;
  /** Where its output goes. */
  log: string;
  /** Stops it with SIGINT (so it writes its state) and waits for the exit. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startAnvil}. */
export interface StartAnvilOptions {
  /**
   * Writes `<dir>/anvil.json` crash-safely (the node's `atomicWriteFile`):
   * a reader must see the old record or the new one, never a torn one.
   */
  writeFile(path: string, data: Uint8Array): Promise<void>;
}

/** What is recorded in `<dir>/anvil.json` while an anvil runs. */
interface AnvilRecord {
  pid: number;
  rpcUrl: string;
}

/** anvil could not be found, started or reached. */
export class AnvilError extends ChainError {
  constructor(message: string) {
    super(message, null);
    this.name = "AnvilError";
  }
}

const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;
/** Recent block states anvil keeps in memory. */
const KEPT_STATES = 64;
/** How often anvil also dumps its state while running, in seconds. */
const STATE_INTERVAL_S = 2;

/** The anvil version the npm package carries. */
export const ANVIL_VERSION: string = anvilPackage.version;

/**
 * Where the anvil binary is: `ZOO_ANVIL`, else the npm package beside this
 * module, else the package in Deno's npm cache (a bundled zoo-node runs
 * away from any node_modules), else `anvil` on the PATH.
 */
export function anvilBinary(): string {
  const fromEnv = Deno.env.get("ZOO_ANVIL");
  if (fromEnv) return fromEnv;
  const candidates: string[] = [];
  try {
    const pkg = import.meta.resolve(
      "@foundry-rs/anvil-linux-amd64/package.json",
    );
    if (pkg.startsWith("file:")) {
      candidates.push(new URL("bin/anvil", pkg).pathname);
    }
  } catch { /* not resolvable from a bundle */ }
  const denoDir = Deno.env.get("DENO_DIR") ??
    `${Deno.env.get("HOME") ?? ""}/.cache/deno`;
  candidates.push(
    `${denoDir}/npm/registry.npmjs.org/@foundry-rs/anvil-linux-amd64/${ANVIL_VERSION}/bin/anvil`,
  );
  return candidates.find(isFile) ?? "anvil";
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Starts anvil with its state in `dir` (`anvil-state.json`; loaded when
 * present) and its log in `dir/anvil.log`. Resolves once it listens.
 *
 * @example
 * ```ts ignore
 * const anvil = await startAnvil(`${dataDir}/chain`, { writeFile });
 * try {
 *   console.log(anvil.rpcUrl);
 * } finally {
 *   await anvil.stop();
 * }
 * ```
 */
export async function startAnvil(
  dir: string,
  options: StartAnvilOptions,
): Promise<Anvil> {
  await Deno.mkdir(dir, { recursive: true });
  const running = await runningAnvil(dir);
  if (running !== null) {
    throw new AnvilError(
      `Cannot start anvil in ${dir} as one already runs there (pid ${running.pid}, ${running.rpcUrl}): use it or stop it first`,
    );
  }
  const binary = anvilBinary();
  const log = `${dir}/anvil.log`;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(binary, {
      args: [
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--state",
        `${dir}/anvil-state.json`,
        "--state-interval",
        String(STATE_INTERVAL_S),
        // A bounded history, not none: with none, a call that anvil pins
        // to the latest block fails ("block height is 7 but requested was
        // 6") when a transaction is mined meanwhile, which many peers
        // sharing one devnet chain make common.
        "--prune-history",
        String(KEPT_STATES),
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    throw new AnvilError(
      `Cannot start anvil from ${binary}: ${
        (err as Error).message
      } (set ZOO_ANVIL to an anvil binary, or run "deno install")`,
    );
  }
  const logFile = await Deno.open(log, {
    create: true,
    append: true,
    write: true,
  });
  const copies = [copyTo(child.stderr, logFile)];
  let rpcUrl: string;
  try {
    rpcUrl = await readListenAddress(child, logFile);
    copies.push(copyTo(child.stdout, logFile));
  } catch (err) {
    child.kill("SIGKILL");
    await child.status;
    await child.stdout.cancel().catch(() => {});
    await Promise.all(copies);
    logFile.close();
    throw err;
  }
  try {
    await options.writeFile(
      `${dir}/anvil.json`,
      new TextEncoder().encode(
        JSON.stringify({ pid: child.pid, rpcUrl } satisfies AnvilRecord),
      ),
    );
  } catch (err) {
    // No record, no anvil: one nobody knows about must not run on.
    await stopChild(child, `${dir}/anvil.json`, logFile, copies);
    throw err;
  }
  let stopped: Promise<void> | null = null;
  return {
    rpcUrl,
    pid: child.pid,
    log,
    stop() {
      stopped ??= stopChild(child, `${dir}/anvil.json`, logFile, copies);
      return stopped;
    },
  };
}

/**
 * The anvil already running for `dir`, if its recorded process is alive
 * and answers; else null.
 */
export async function runningAnvil(dir: string): Promise<AnvilRecord | null> {
  let record: AnvilRecord;
  try {
    record = JSON.parse(await Deno.readTextFile(`${dir}/anvil.json`));
  } catch {
    return null;
  }
  if (typeof record.pid !== "number" || typeof record.rpcUrl !== "string") {
    return null;
  }
  try {
    Deno.kill(record.pid, "SIGCONT");
  } catch {
    return null;
  }
  return await answers(record.rpcUrl) ? record : null;
}

async function answers(rpcUrl: string): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
      signal: AbortSignal.timeout(1000),
    });
    const body = await res.json();
    return typeof body.result === "string";
  } catch {
    return false;
  }
}

/** Copies stdout to the log until anvil prints its address. */
async function readListenAddress(
  child: Deno.ChildProcess,
  logFile: Deno.FsFile,
): Promise<string> {
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  const timer = setTimeout(
    () => reader.cancel().catch(() => {}),
    READY_TIMEOUT_MS,
  );
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) {
        throw new AnvilError(
          `anvil exited or did not listen within ${READY_TIMEOUT_MS} ms; output:\n${
            seen.slice(-2000)
          }`,
        );
      }
      await logFile.write(value);
      seen += decoder.decode(value, { stream: true });
      const match = /Listening on (127\.0\.0\.1:\d+)/.exec(seen);
      if (match) {
        reader.releaseLock();
        return `http://${match[1]}`;
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Appends a process's output to its log in the background. */
async function copyTo(
  stream: ReadableStream<Uint8Array>,
  file: Deno.FsFile,
): Promise<void> {
  try {
    for await (const chunk of stream) await file.write(chunk);
  } catch {
    // The log is closed once the process has stopped.
  }
}

async function stopChild(
  child: Deno.ChildProcess,
  recordPath: string,
  logFile: Deno.FsFile,
  copies: Promise<void>[],
): Promise<void> {
  try {
    child.kill("SIGINT");
  } catch {
    // Already gone.
  }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }, STOP_TIMEOUT_MS);
  await child.status;
  clearTimeout(timer);
  await Promise.all(copies);
  await Deno.remove(recordPath).catch(() => {});
  logFile.close();
}
