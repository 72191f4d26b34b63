/**
 * The browser peer page's wording: the backend actually used, and a log
 * kept across a reload.
 */
import { deepStrictEqual, strictEqual } from "node:assert";
import { backendLine, KeptLog, MAX_LOG_LINES } from "./peer_view.ts";

Deno.test("peer view: the backend shown is the one the peer trains on", () => {
  const progress = { round: 0, step: 0, throughput: 0 };
  strictEqual(
    backendLine({ ...progress, backend: "webgpu", device: "Intel Xe" }),
    "webgpu (Intel Xe)",
  );
  strictEqual(
    backendLine({ ...progress, backend: "wasm", device: "wasm-relaxed x4" }),
    "wasm (wasm-relaxed x4)",
  );
  strictEqual(backendLine({ ...progress, backend: "none", device: "" }), "-");
});

Deno.test("peer view: the log outlives a reload, bounded, and survives a damaged copy", () => {
  const store = new Map<string, string>();
  const storage = {
    getItem: (k: string) => store.get(k) ?? null,
    setItem: (k: string, v: string) => void store.set(k, v),
  };
  const before = new KeptLog(storage);
  before.add("registered 0xaa");
  before.add("round 0: committed bafkrei…");
  // A reload: a new page over the same session storage.
  deepStrictEqual(new KeptLog(storage).lines, [
    "registered 0xaa",
    "round 0: committed bafkrei…",
  ]);
  const long = new KeptLog(storage);
  for (let i = 0; i < MAX_LOG_LINES + 5; i++) long.add(`line ${i}`);
  const reloaded = new KeptLog(storage).lines;
  strictEqual(reloaded.length, MAX_LOG_LINES);
  strictEqual(reloaded.at(-1), `line ${MAX_LOG_LINES + 4}`);
  store.set("zoo-peer-log", "{not json");
  deepStrictEqual(new KeptLog(storage).lines, []);
});
