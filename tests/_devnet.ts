/**
 * A `zoo-node devnet` run by a test while it runs: its output read line by
 * line as it comes, waited on, and stopped with a signal.
 *
 * @module
 */
import { cleanEnv, MAIN } from "./_cli.ts";

/** A devnet child process and what it printed so far. */
export interface RunningDevnet {
  child: Deno.ChildProcess;
  /** Its stdout and stderr so far, interleaved as they came. */
  output(): string;
  /**
   * Resolves with the first match of `pattern` in the output, waiting up
   * to `timeoutMs`; rejects with the output when it exits or times out.
   */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Sends SIGINT and resolves with its exit code (SIGKILL after 30 s). */
  stop(): Promise<number>;
}

/** Starts `zoo-node devnet args...` with a clean environment. */
export function startDevnet(args: string[]): RunningDevnet {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "devnet", ...args],
    env: cleanEnv(),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  let exited = false;
  // Each stream read inline, with its own type: under the dom lib a
  // browser test references, a helper taking ReadableStream<Uint8Array>
  // cannot pipe it through a TextDecoderStream.
  const reading = Promise.all([
    (async () => {
      for await (const s of child.stdout.pipeThrough(new TextDecoderStream())) {
        out += s;
      }
    })(),
    (async () => {
      for await (const s of child.stderr.pipeThrough(new TextDecoderStream())) {
        out += s;
      }
    })(),
  ]);
  const status = child.status.then(async (s) => {
    exited = true;
    await reading;
    return s;
  });
  return {
    child,
    output: () => out,
    async waitFor(pattern, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = out.match(pattern);
        if (match) return match;
        if (exited || Date.now() > deadline) {
          throw new Error(
            `devnet ${
              exited ? "exited" : "timed out"
            } before ${pattern}:\n${out}`,
          );
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      if (!exited) child.kill("SIGINT");
      const timer = setTimeout(() => {
        if (!exited) child.kill("SIGKILL");
      }, 30_000);
      const { code } = await status;
      clearTimeout(timer);
      return code;
    },
  };
}
