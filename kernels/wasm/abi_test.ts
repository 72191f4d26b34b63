import { deepStrictEqual, equal, ok } from "node:assert";
import { KERNEL_NAMES, KERNELS } from "../backend.ts";
import { KERNEL_CASES } from "../../tests/kernel_cases.ts";
import { THREADED_KERNELS } from "./abi.ts";

/** The `extern "C"` functions of `src/lib.rs`: name to parameter names. */
async function rustExports(): Promise<Map<string, string[]>> {
  const source = await Deno.readTextFile(
    new URL("./src/lib.rs", import.meta.url),
  );
  const exports = new Map<string, string[]>();
  // Parameter types are pointers and numbers: no parenthesis inside.
  const fn = /pub (?:unsafe )?extern "C" fn (\w+)\(([^)]*)\)/g;
  for (const [, name, params] of source.matchAll(fn)) {
    exports.set(
      name,
      params.split(",").map((p) => p.split(":")[0].trim()).filter((p) => p),
    );
  }
  return exports;
}

const takesThreads = (params: readonly string[]) =>
  params.slice(-2).join() === "tid,nth";

Deno.test("abi: every kernel of the table is a Rust export, threaded as listed", async () => {
  const exports = await rustExports();
  for (const [name, binding] of Object.entries(KERNELS)) {
    const params = exports.get(binding.wasm);
    ok(params, `${name}: src/lib.rs exports no ${binding.wasm}`);
    equal(takesThreads(params), binding.threaded, `${name}: (tid, nth) last`);
  }
});

Deno.test("abi: every Rust export taking (tid, nth) is a threaded kernel", async () => {
  const threaded = [...await rustExports()]
    .filter(([, params]) => takesThreads(params))
    .map(([name]) => name);
  deepStrictEqual(threaded.toSorted(), [...THREADED_KERNELS].toSorted());
});

Deno.test("abi: every kernel check names a kernel of the table", () => {
  for (const name of Object.keys(KERNEL_CASES)) {
    ok(
      (KERNEL_NAMES as readonly string[]).includes(name),
      `KERNEL_CASES.${name} is no kernel`,
    );
  }
});
