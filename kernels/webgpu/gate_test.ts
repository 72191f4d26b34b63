/**
 * The WebGPU test gate itself (`_test_gpu.ts`), run on a real test module
 * in a subprocess whose runtime has no adapter: Deno is told to use a
 * graphics backend this OS does not have. Outside CI the tests are skipped
 * with a visible line; with CI=true they fail.
 */
import { equal, match, notEqual } from "node:assert";
import { fileURLToPath } from "node:url";

const MODULE = fileURLToPath(new URL("./reduce_test.ts", import.meta.url));
// A backend that exists on none of this OS's adapters.
const ABSENT = Deno.build.os === "darwin" ? "dx12" : "metal";

async function runWithoutAdapter(ci: boolean) {
  const env: Record<string, string> = {
    ...Deno.env.toObject(),
    DENO_WEBGPU_BACKEND: ABSENT,
    NO_COLOR: "1",
  };
  if (ci) env.CI = "true";
  else delete env.CI;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--no-check", MODULE],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr);
  return { code: out.code, text };
}

Deno.test("without an adapter WebGPU tests are skipped visibly outside CI", async () => {
  const { code, text } = await runWithoutAdapter(false);
  equal(code, 0, text);
  match(text, /WebGPU tests skipped: no WebGPU adapter/);
  match(text, /0 passed \| 0 failed \| 3 ignored/);
});

Deno.test("without an adapter WebGPU tests fail with CI=true", async () => {
  const { code, text } = await runWithoutAdapter(true);
  notEqual(code, 0, text);
  match(text, /CI=true but no WebGPU adapter was found/);
  match(text, /3 failed/);
});
