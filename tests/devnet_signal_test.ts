/**
 * A devnet sent SIGINT or SIGTERM to its pid alone (as a script or a
 * supervisor does, unlike Ctrl-C, which signals the whole process group)
 * stops its peers and its chain and exits 0, whether it was running or
 * still starting them: no process it started is left.
 */
import assert from "node:assert/strict";
import { cleanEnv, MAIN } from "./_cli.ts";
import { withTempDir } from "./_temp_dir.ts";
import { processesMentioning } from "./_processes.ts";

/** Runs a mesh devnet in `dir`, signals its pid when `when` is printed. */
async function signalDevnet(
  dir: string,
  signal: Deno.Signal,
  when: RegExp,
  extra: string[] = [],
): Promise<{ code: number; out: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      MAIN,
      "devnet",
      "--nodes",
      "2",
      "--rounds",
      "0",
      "--data-dir",
      dir,
      ...extra,
    ],
    env: cleanEnv(),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let out = "";
  let sent = false;
  const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
    out += chunk;
    if (!sent && when.test(out)) {
      sent = true;
      Deno.kill(child.pid, signal);
    }
  }
  const { code } = await child.status;
  clearTimeout(timer);
  assert.ok(sent, `never saw ${when}:\n${out}\n${await stderr}`);
  return { code, out: out + (await stderr) };
}

for (
  const [signal, when, extra] of [
    ["SIGINT", /devnet: running; press Ctrl-C to stop/, ["--keep-running"]],
    ["SIGTERM", /devnet: starting 2 peers/, []],
  ] as const
) {
  Deno.test(
    `devnet: ${signal} to its pid alone stops every peer and the chain, exit 0`,
    { sanitizeOps: false, sanitizeResources: false },
    () =>
      withTempDir("devnet-signal", async (dir) => {
        const { code, out } = await signalDevnet(dir, signal, when, [...extra]);
        assert.equal(code, 0, out);
        assert.match(out, new RegExp(`devnet: ${signal}: stopping`));
        assert.match(out, /devnet: stopped\n/);
        assert.deepEqual(await processesMentioning(dir), [], out);
        assert.equal(
          await Deno.stat(`${dir}/chain/anvil.json`).catch(() => null),
          null,
          "the chain's record is gone: it was stopped, not orphaned",
        );
      }),
  );
}
