import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

async function bench(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return {
    code: out.code,
    stdout: decode(out.stdout),
    stderr: decode(out.stderr),
  };
}

function assertPositive(value: unknown, what: string) {
  assert.ok(
    typeof value === "number" && Number.isFinite(value) && value > 0,
    `${what} should be a positive number: got ${value}`,
  );
}

Deno.test("bench blob --json prints one JSON object with positive rates", async () => {
  const { code, stdout, stderr } = await bench("blob", "--json", "--size", "4");
  assert.equal(code, 0, stderr);
  const result = JSON.parse(stdout);
  assert.deepEqual(Object.keys(result).sort(), ["blob", "machine"]);
  assert.equal(typeof result.machine.deno, "string");
  assertPositive(result.machine.cpus, "machine.cpus");
  const blob = result.blob;
  assert.equal(blob.bytes, 4 * 2 ** 20);
  for (const path of ["libp2p", "tcp", "tcpWire"]) {
    assertPositive(blob[path].medianMBps, `${path}.medianMBps`);
    assertPositive(blob[path].bestMBps, `${path}.bestMBps`);
    assert.equal(blob[path].seconds.length, blob.reps);
  }
  assertPositive(blob.ratio, "ratio");
  assertPositive(blob.ratioWire, "ratioWire");
});

Deno.test("bench exits 2 with one stderr line on a bad command line", async () => {
  for (
    const args of [["nosuch"], ["blob", "--nosuch", "1"], [
      "blob",
      "--size",
      "x",
    ]]
  ) {
    const { code, stdout, stderr } = await bench(...args);
    assert.equal(code, 2, `${args.join(" ")}: ${stderr}`);
    assert.equal(stdout, "");
    assert.equal(stderr.trim().split("\n").length, 1, stderr);
  }
});
