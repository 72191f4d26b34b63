/** Runs the zoo-node CLI as a subprocess, for tests in any folder. */
import assert from "node:assert/strict";

/** The CLI entry point. */
export const MAIN = new URL("../main.ts", import.meta.url).href;

/** The test's environment without `ZOO_*` settings, and without colours. */
export function cleanEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  for (const name of Object.keys(env)) {
    if (name.startsWith("ZOO_")) delete env[name];
  }
  return { ...env, NO_COLOR: "1" };
}

/** How a script run by {@linkcode runScript} ended. */
export interface ScriptRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `deno run -A script args...` to completion, stdin closed; returns
 * its exit code and outputs. `env` replaces the environment when given;
 * `timeoutMs` kills it.
 */
export async function runScript(
  script: string | URL,
  args: string[],
  o: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ScriptRun> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", String(script), ...args],
    cwd: o.cwd,
    ...(o.env ? { env: o.env, clearEnv: true } : {}),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: o.timeoutMs === undefined
      ? undefined
      : AbortSignal.timeout(o.timeoutMs),
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/**
 * Runs `zoo-node args...` to completion (killed after 60 s, so a `--join`
 * that got past its checks cannot hang a test); returns its exit code and
 * outputs.
 */
export function zooNode(
  args: string[],
  env: Record<string, string> = {},
): Promise<ScriptRun> {
  return runScript(MAIN, args, {
    env: { ...cleanEnv(), ...env },
    timeoutMs: 60_000,
  });
}

/**
 * Asserts `zoo-node args...` exits 1 with nothing on stdout and stderr
 * matching `line`; returns stderr.
 */
export async function assertFailure(
  args: string[],
  line: RegExp,
  env: Record<string, string> = {},
): Promise<string> {
  const { code, stdout, stderr } = await zooNode(args, env);
  assert.equal(code, 1, stderr);
  assert.equal(stdout, "");
  assert.match(stderr, line);
  return stderr;
}

/**
 * Asserts `zoo-node args...` exits 2 with nothing on stdout and one
 * "zoo-node: ..." line on stderr holding each of `parts`.
 */
export async function assertUsageExit(
  args: string[],
  ...parts: string[]
): Promise<void> {
  const { code, stdout, stderr } = await zooNode(args);
  const what = `${args.join(" ")}: ${stderr}`;
  assert.equal(code, 2, what);
  assert.equal(stdout, "", what);
  const lines = stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, what);
  assert.ok(lines[0].startsWith("zoo-node: "), what);
  for (const part of parts) assert.ok(lines[0].includes(part), what);
}
