/**
 * A devnet sent SIGINT or SIGTERM to its pid alone (as a script or a
 * supervisor does, unlike Ctrl-C, which signals the whole process group)
 * stops its peers and its chain and exits 0, whether it was running or
 * still starting them: no process it started is left.
 */
import assert from "node:assert/strict";
import { withTempDir } from "./_temp_dir.ts";
import { processesMentioning, signalWhen } from "./_processes.ts";

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
        const { code, out, sent } = await signalWhen(
          [
            "devnet",
            "--nodes",
            "2",
            "--rounds",
            "0",
            "--data-dir",
            dir,
            ...extra,
          ],
          signal,
          (out) => when.test(out),
        );
        assert.ok(sent, `never saw ${when}:\n${out}`);
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
