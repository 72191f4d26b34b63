/**
 * The layout's rules, checked over the shipped source (every file that a
 * non-test file imports, `_` helpers included; test-only files aside): no
 * import circles; `kernels/` imports no other folder of ours; `protocol/`
 * imports only `kernels/`; `chain/` does not import `node/`; `kernels/` and
 * `protocol/` name neither `Deno` nor `fetch` outside comments (no I/O);
 * the rooms of `node/`, `node/round/` and `protocol/` import only rooms on
 * lower floors ({@linkcode NODE_FLOORS}, {@linkcode ROUND_FLOORS},
 * {@linkcode PROTOCOL_FLOORS}).
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

/**
 * The rooms of `node/`, lowest floor first. A room imports only rooms on
 * lower floors: never one beside it or above it, so no two rooms import
 * each other. `node/`'s own modules (the node, its config, identity and
 * errors) are not rooms: they compose the rooms or are shared by them.
 */
const NODE_FLOORS: string[][] = [
  ["store"],
  ["p2p", "train"],
  ["round"],
  ["http"],
  ["job"],
  ["browser", "devnet"],
  ["cli"],
];

/**
 * The rooms of `node/round/`, lowest floor first: the records a peer
 * keeps, the services its phases are handed (and the conduct they follow),
 * the trainer, then the three phases, which never import one another.
 * `work.ts` and `driver.ts`, beside the rooms, are the only modules that
 * wire phases together.
 */
const ROUND_FLOORS: string[][] = [
  ["records"],
  ["services"],
  ["trainer"],
  ["train", "settle", "audit"],
];
const ROUND_WIRING = ["node/round/work.ts", "node/round/driver.ts"];

/**
 * The rooms of `protocol/`, lowest floor first: content addressing and
 * hashes; the message types; the live peers, their order and shards; the
 * numbers of an update (rules, screens, quantization, the outer step); the
 * job spec; the round (its machine, manifest, checkpoint, credit); the
 * audits (work records, plans, the book of verdicts); the market (a
 * priced job's admission benchmark); and on top the codecs that decode and
 * check what arrives. `errors.ts` sits beside them.
 */
const PROTOCOL_FLOORS: string[][] = [
  ["content"],
  ["messages"],
  ["peers"],
  ["aggregation"],
  ["spec"],
  ["round"],
  ["audit"],
  ["market"],
  ["codec"],
];

/**
 * The imports of `graph` from one room of `root` (e.g. "node/") to another
 * that is not on a lower floor of `floors`, or to one of `wiring` (the
 * modules beside the rooms that wire them), as "from -> to" lines.
 */
export function floorBreaches(
  graph: ReadonlyMap<string, readonly string[]>,
  root: string,
  floors: readonly (readonly string[])[],
  wiring: readonly string[] = [],
): string[] {
  const floorOf = (path: string): [string, number] | null => {
    if (!path.startsWith(root)) return null;
    const parts = path.slice(root.length).split("/");
    if (parts.length < 2) return null;
    const floor = floors.findIndex((f) => f.includes(parts[0]));
    return [parts[0], floor];
  };
  const wrong: string[] = [];
  for (const [file, deps] of graph) {
    const from = floorOf(file);
    if (!from) continue;
    for (const dep of deps) {
      if (wiring.includes(dep)) {
        wrong.push(`${file} -> ${dep}`);
        continue;
      }
      const to = floorOf(dep);
      if (!to || to[0] === from[0]) continue;
      if (from[1] < 0 || to[1] < 0 || to[1] >= from[1]) {
        wrong.push(`${file} -> ${dep}`);
      }
    }
  }
  return wrong;
}

/** Every .ts file of the folders and its contents, by repo-relative path. */
async function allSources(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory && entry.name !== "target") await walk(path);
      if (entry.isFile && path.endsWith(".ts")) {
        out.set(path, await Deno.readTextFile(new URL(path, ROOT)));
      }
    }
  };
  for (const folder of FOLDERS) await walk(folder);
  return out;
}

/**
 * The repo-relative paths `path` imports or re-exports: static imports
 * (with or without bindings), `export … from` and dynamic `import()`.
 */
function imports(path: string, text: string): string[] {
  const found = text.matchAll(
    /^(?:import|export)\b[^;]*?["'](\.[^"']+)["']|\bimport\(\s*["'](\.[^"']+)["']/gm,
  );
  return [...found].map(([, a, b]) =>
    new URL(a ?? b, new URL(path, ROOT)).pathname.slice(ROOT.pathname.length)
  );
}

/** `text` without its comments, for the I/O check. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

const all = await allSources();
const allGraph = new Map(
  [...all].map(([path, text]) => [path, imports(path, text)]),
);
/**
 * Shipped files: those not named as tests or `_` helpers, and everything
 * they import, so a `_` module the product uses is checked too.
 */
const shipped = new Set<string>();
const ship = (file: string) => {
  if (shipped.has(file) || !all.has(file)) return;
  shipped.add(file);
  for (const dep of allGraph.get(file)!) ship(dep);
};
for (const path of all.keys()) {
  if (!/(_test|\/_[^/]*)\.ts$/.test(path)) ship(path);
}
const files = new Map([...all].filter(([path]) => shipped.has(path)));
const graph = new Map([...files].map(([path]) => [path, allGraph.get(path)!]));

Deno.test("layout: every folder has shipped source to check", () => {
  for (const folder of FOLDERS) {
    assert.ok(
      [...files.keys()].some((p) => p.startsWith(`${folder}/`)),
      `no source found in ${folder}/`,
    );
  }
  // A `_` module that the product imports is checked like any other.
  assert.ok(files.has("protocol/spec/_spec_fields.ts"));
});

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

Deno.test("layout: the rooms of node/ import only rooms on lower floors", () => {
  assert.deepEqual(floorBreaches(graph, "node/", NODE_FLOORS), []);
  // Every room has a floor.
  const rooms = new Set(
    [...graph.keys()].filter((p) =>
      p.split("/").length > 2 && p.startsWith("node/")
    )
      .map((p) => p.split("/")[1]),
  );
  assert.deepEqual(
    [...rooms].filter((r) => !NODE_FLOORS.flat().includes(r)),
    [],
  );
});

Deno.test("layout: the rooms of node/round/ import only rooms on lower floors", () => {
  assert.deepEqual(
    floorBreaches(graph, "node/round/", ROUND_FLOORS, ROUND_WIRING),
    [],
  );
  const rooms = new Set(
    [...graph.keys()].filter((p) =>
      p.startsWith("node/round/") && p.split("/").length > 3
    ).map((p) => p.split("/")[2]),
  );
  assert.deepEqual(
    [...rooms].filter((r) => !ROUND_FLOORS.flat().includes(r)),
    [],
  );
  // Only the wiring sits beside the rooms.
  assert.deepEqual(
    [...graph.keys()].filter((p) => /^node\/round\/[^/]+\.ts$/.test(p)).sort(),
    [...ROUND_WIRING].sort(),
  );
});

Deno.test("layout: the rooms of protocol/ import only rooms on lower floors", () => {
  assert.deepEqual(floorBreaches(graph, "protocol/", PROTOCOL_FLOORS), []);
  const rooms = new Set(
    [...all.keys()].filter((p) =>
      p.startsWith("protocol/") && p.split("/").length > 2
    ).map((p) => p.split("/")[1]),
  );
  assert.deepEqual(
    [...rooms].filter((r) => !PROTOCOL_FLOORS.flat().includes(r)),
    [],
  );
  // Only the shared errors sit beside the rooms.
  assert.deepEqual(
    [...all.keys()].filter((p) => /^protocol\/[^/]+\.ts$/.test(p)),
    ["protocol/errors.ts"],
  );
});

Deno.test("layout: the floor check catches a sideways or upward import", () => {
  const planted = new Map([
    ["node/store/blockstore.ts", ["node/round/ledger.ts"]],
    ["node/p2p/host.ts", ["node/train/compute.ts"]],
    ["node/round/work.ts", ["node/store/blockstore.ts", "node/errors.ts"]],
    ["node/node.ts", ["node/cli/run.ts"]],
  ]);
  assert.deepEqual(floorBreaches(planted, "node/", NODE_FLOORS), [
    "node/store/blockstore.ts -> node/round/ledger.ts",
    "node/p2p/host.ts -> node/train/compute.ts",
  ]);
  // One phase importing another is caught, as is a room importing the
  // wiring above it.
  const phases = new Map([
    ["node/round/train/peer_training.ts", ["node/round/settle/sync.ts"]],
    ["node/round/audit/audit.ts", ["node/round/trainer/inner_loop.ts"]],
    ["node/round/settle/commit.ts", ["node/round/records/ledger.ts"]],
    ["node/round/services/services.ts", ["node/round/work.ts"]],
  ]);
  assert.deepEqual(
    floorBreaches(phases, "node/round/", ROUND_FLOORS, ROUND_WIRING),
    [
      "node/round/train/peer_training.ts -> node/round/settle/sync.ts",
      "node/round/services/services.ts -> node/round/work.ts",
    ],
  );
  const rules = new Map([
    ["protocol/aggregation/aggregate.ts", ["protocol/spec/job_spec.ts"]],
    ["protocol/round/censorship.ts", ["protocol/round/round_state.ts"]],
    ["protocol/audit/audit_plan.ts", ["protocol/codec/codec.ts"]],
    ["protocol/codec/codec.ts", ["protocol/messages/messages.ts"]],
  ]);
  assert.deepEqual(floorBreaches(rules, "protocol/", PROTOCOL_FLOORS), [
    "protocol/aggregation/aggregate.ts -> protocol/spec/job_spec.ts",
    "protocol/audit/audit_plan.ts -> protocol/codec/codec.ts",
  ]);
});

Deno.test("layout: kernels/ and protocol/ do no I/O", () => {
  const wrong = [...files]
    .filter(([path]) => /^(kernels|protocol)\//.test(path))
    .filter(([, text]) => /\bDeno\b|\bfetch\b/.test(code(text)))
    .map(([path]) => path);
  assert.deepEqual(wrong, []);
});
