/** Runs the zoo-node CLI as a subprocess, for tests in any folder. */

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

/**
 * Runs `zoo-node args...` to completion (killed after 60 s, so a `--join`
 * that got past its checks cannot hang a test); returns its exit code and
 * outputs.
 */
export async function zooNode(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    env: { ...cleanEnv(), ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}
