import assert from "node:assert/strict";

const HELPER = new URL("./gpu_env.ts", import.meta.url).href;
const NOISE = /XDG_RUNTIME_DIR is invalid/;

/** stderr of a fresh Deno, without XDG_RUNTIME_DIR, that asks for an adapter. */
async function probe(quiet: boolean, tmp: string): Promise<string> {
  const code = `${
    quiet
      ? `import { giveGpuProbeARuntimeDir } from "${HELPER}"; giveGpuProbeARuntimeDir();`
      : ""
  } await navigator.gpu?.requestAdapter();`;
  const env: Record<string, string> = { ...Deno.env.toObject(), TMPDIR: tmp };
  delete env.XDG_RUNTIME_DIR;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", code],
    env,
    clearEnv: true,
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stderr);
}

Deno.test({
  name:
    "gpu env: with no XDG_RUNTIME_DIR, the adapter probe prints no driver noise once given a private runtime dir",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const tmp = await Deno.makeTempDir({ prefix: "zoo-gpu-env-" });
    try {
      // Where the drivers make the noise, it is gone; elsewhere there is
      // none to begin with.
      const loud = await probe(false, tmp);
      const quiet = await probe(true, tmp);
      assert.doesNotMatch(quiet, NOISE, quiet);
      if (NOISE.test(loud)) assert.notEqual(quiet, loud);
      const info = await Deno.stat(`${tmp}/zoo-runtime-${Deno.uid()}`);
      assert.equal((info.mode ?? 0) & 0o777, 0o700);
    } finally {
      await Deno.remove(tmp, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "gpu env: a runtime dir others may enter is not used, and a set XDG_RUNTIME_DIR is kept",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const { giveGpuProbeARuntimeDir } = await import("./gpu_env.ts");
    const tmp = await Deno.makeTempDir({ prefix: "zoo-gpu-env-" });
    const saved = {
      xdg: Deno.env.get("XDG_RUNTIME_DIR"),
      tmp: Deno.env.get("TMPDIR"),
    };
    try {
      Deno.env.set("XDG_RUNTIME_DIR", "/somewhere");
      assert.equal(giveGpuProbeARuntimeDir(), null);
      assert.equal(Deno.env.get("XDG_RUNTIME_DIR"), "/somewhere");
      Deno.env.delete("XDG_RUNTIME_DIR");
      Deno.env.set("TMPDIR", tmp);
      const dir = `${tmp}/zoo-runtime-${Deno.uid()}`;
      await Deno.mkdir(dir, { mode: 0o755 });
      await Deno.chmod(dir, 0o755);
      assert.equal(giveGpuProbeARuntimeDir(), null);
      assert.equal(Deno.env.get("XDG_RUNTIME_DIR"), undefined);
      await Deno.chmod(dir, 0o700);
      assert.equal(giveGpuProbeARuntimeDir(), dir);
      assert.equal(Deno.env.get("XDG_RUNTIME_DIR"), dir);
    } finally {
      for (
        const [k, v] of [["XDG_RUNTIME_DIR", saved.xdg], ["TMPDIR", saved.tmp]]
      ) {
        if (v === undefined) Deno.env.delete(k!);
        else Deno.env.set(k!, v);
      }
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
