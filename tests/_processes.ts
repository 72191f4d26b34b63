/**
 * Processes a test starts and signals, and what is left running after
 * them: processes seen in /proc.
 *
 * @module
 */
import { cleanEnv, MAIN } from "./_cli.ts";

/** Pids of live processes whose command line mentions `text`. */
export async function processesMentioning(text: string): Promise<number[]> {
  const found: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`)
      .catch(() => "");
    const state = await Deno.readTextFile(`/proc/${entry.name}/stat`)
      .catch(() => "");
    // A zombie has exited: only its parent's wait is missing.
    if (cmdline.includes(text) && !/^\d+ \(.*\) Z/.test(state)) {
      found.push(Number(entry.name));
    }
  }
  return found;
}

/** How a {@linkcode signalWhen} run ended. */
export interface SignalledRun {
  code: number;
  /** Its stdout, then its stderr. */
  out: string;
  /** Whether `ready` held before it exited and the signal was sent. */
  sent: boolean;
}

/**
 * Runs `zoo-node args` and sends `signal` to its pid alone (as a script or
 * a supervisor does, unlike Ctrl-C, which signals the whole process group)
 * once `ready` holds for what it printed so far, polled every 100 ms. It
 * is SIGKILLed if it is still running after `timeoutMs`.
 */
export async function signalWhen(
  args: string[],
  signal: Deno.Signal,
  ready: (out: string) => boolean | Promise<boolean>,
  timeoutMs = 120_000,
): Promise<SignalledRun> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    env: cleanEnv(),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let out = "";
  const reading = (async () => {
    for await (const s of child.stdout.pipeThrough(new TextDecoderStream())) {
      out += s;
    }
  })();
  let exited = false;
  child.status.then(() => exited = true);
  const deadline = Date.now() + timeoutMs;
  let sent = false;
  while (!sent && !exited && Date.now() < deadline) {
    if (await ready(out)) {
      Deno.kill(child.pid, signal);
      sent = true;
    } else await new Promise((r) => setTimeout(r, 100));
  }
  const timer = setTimeout(
    () => child.kill("SIGKILL"),
    Math.max(0, deadline - Date.now()),
  );
  const { code } = await child.status;
  clearTimeout(timer);
  await reading;
  return { code, out: out + await stderr, sent };
}
