/**
 * The layout's rules, checked over the source (tests and `_` helpers
 * aside): no import circles; `kernels/` imports no other folder of ours;
 * `protocol/` imports only `kernels/`; `chain/` does not import `node/`;
 * `kernels/` and `protocol/` do no I/O (no `Deno.` call, no `fetch`).
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const FOLDERS = ["protocol", "kernels", "chain", "node", "wasm"];
/** What each folder may import besides itself. */
const MAY_IMPORT: Record<string, string[]> = {
  kernels: [],
  protocol: ["kernels"],
  chain: ["protocol", "kernels"],
  wasm: ["kernels"],
  node: ["protocol", "kernels", "chain", "wasm"],
};

const isTest = (path: string) => /(_test|\/_[^/]*)\.ts$/.test(path);

/** Source files (tests aside) and their contents, by repo-relative path. */
async function sources(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory && entry.name !== "target") await walk(path);
      if (entry.isFile && path.endsWith(".ts") && !isTest(path)) {
        out.set(path, await Deno.readTextFile(new URL(path, ROOT)));
      }
    }
  };
  for (const folder of FOLDERS) await walk(folder);
  return out;
}

/** The repo-relative paths `path` imports or re-exports. */
function imports(path: string, text: string): string[] {
  const found = text.matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms);
  return [...found].map(([, spec]) =>
    new URL(spec, new URL(path, ROOT)).pathname.slice(ROOT.pathname.length)
  );
}

const files = await sources();
const graph = new Map(
  [...files].map(([path, text]) => [path, imports(path, text)]),
);

Deno.test("layout: no import circles", () => {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string) => {
    const at = path.indexOf(file);
    if (at >= 0) {
      assert.fail(`import circle: ${[...path.slice(at), file].join(" -> ")}`);
    }
    if (done.has(file) || !graph.has(file)) return;
    path.push(file);
    for (const dep of graph.get(file)!) visit(dep);
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
});

Deno.test("layout: folders import only in their direction", () => {
  const wrong: string[] = [];
  for (const [file, deps] of graph) {
    const from = file.split("/")[0];
    for (const dep of deps) {
      const to = dep.split("/")[0];
      if (to !== from && !MAY_IMPORT[from].includes(to)) {
        wrong.push(`${file} -> ${dep}`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("layout: kernels/ and protocol/ do no I/O", () => {
  const wrong = [...files]
    .filter(([path]) => /^(kernels|protocol)\//.test(path))
    .filter(([, text]) => /\bDeno\.|\bfetch\(/.test(text))
    .map(([path]) => path);
  assert.deepEqual(wrong, []);
});
