/**
 * A devnet's rewards can be claimed while it runs: its registry has a
 * short challenge window, its end says when claims open and prints the
 * command that claims, which is refused inside the window and pays once
 * the devnet says claims are open.
 */
import assert from "node:assert/strict";
import { startDevnet } from "./_devnet.ts";
import { withTempDir } from "./_temp_dir.ts";

/** Seconds: room to run the command once inside the window. */
const WINDOW = 20;

Deno.test(
  "devnet --keep-running: the printed claim command is refused in the challenge window and pays once the devnet says claims are open",
  { sanitizeOps: false, sanitizeResources: false },
  () =>
    withTempDir("devnet-claim", async (dir) => {
      const devnet = startDevnet([
        "--nodes",
        "2",
        "--rounds",
        "1",
        "--keep-running",
        "--challenge-window",
        String(WINDOW),
        "--data-dir",
        dir,
      ]);
      try {
        const [, command] = await devnet.waitFor(
          /claim node-1's .*:\n\s+(\S.*rewards claim .*)\n/,
          240_000,
        );
        const window = await devnet.waitFor(
          new RegExp(`the registry's ${WINDOW} s challenge window`),
          1_000,
        );
        assert.ok(window);
        assert.ok(
          command.includes(`--data-dir ${dir}/node-1`),
          command,
        );
        const run = async () => {
          const [cmd, ...args] = command.split(" ");
          const out = await new Deno.Command(cmd, {
            args,
            stdin: "null",
            stdout: "piped",
            stderr: "piped",
          }).output();
          const text = (b: Uint8Array) => new TextDecoder().decode(b);
          return {
            code: out.code,
            stdout: text(out.stdout),
            stderr: text(out.stderr),
          };
        };
        const early = await run();
        assert.equal(early.code, 1, early.stdout + early.stderr);
        assert.match(early.stderr, /is in its challenge window/);

        const started = performance.now();
        await devnet.waitFor(/devnet: claims are open/, (WINDOW + 30) * 1000);
        const waited = (performance.now() - started) / 1000;
        assert.ok(waited < WINDOW + 10, `waited ${waited} s`);
        const paid = await run();
        assert.equal(paid.code, 0, paid.stdout + paid.stderr);
        assert.match(paid.stdout, /^claimed 0\.\d+ ETH from job bafkrei/);
      } finally {
        const code = await devnet.stop();
        assert.equal(code, 0, devnet.output());
      }
      assert.match(devnet.output(), /devnet: stopped\n/);
    }),
);
