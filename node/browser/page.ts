/// <reference lib="dom" />
/**
 * The browser peer's page (`/peer/`): keeps the tab's keys in its storage,
 * reads where to join from `config.json` (each field can be overridden in
 * the query: `job`, `bootstrap` (repeatable), `rpc`, `registry`,
 * `threads`), starts the peer worker and shows what it does.
 *
 * @module
 */
import { generateKeyPair, privateKeyToProtobuf } from "@libp2p/crypto/keys";
import { generatePrivateKey } from "viem/accounts";
import type { BrowserPeerConfig, PeerReport, StoredKeys } from "./messages.ts";

/** Where the tab keeps its keys (never shown, never sent anywhere). */
const KEYS_ITEM = "zoo-peer-keys";
/** Log lines the page keeps. */
const MAX_LOG_LINES = 200;

/** The tab's keys: from its storage, else new ones stored there. */
async function loadKeys(storage: Storage): Promise<StoredKeys> {
  const kept = storage.getItem(KEYS_ITEM);
  if (kept) {
    const keys = JSON.parse(kept) as StoredKeys;
    if (
      typeof keys.peerKey === "string" && /^0x[0-9a-f]{64}$/i.test(
        keys.accountKey,
      )
    ) return keys;
  }
  const peerKey = privateKeyToProtobuf(await generateKeyPair("Ed25519"));
  const keys: StoredKeys = {
    peerKey: btoa(String.fromCharCode(...peerKey)),
    accountKey: generatePrivateKey(),
  };
  storage.setItem(KEYS_ITEM, JSON.stringify(keys));
  return keys;
}

/** The node's `config.json` with the query's overrides. */
async function loadConfig(query: URLSearchParams): Promise<BrowserPeerConfig> {
  const res = await fetch("config.json", { cache: "no-store" });
  const served = res.ok ? await res.json() : {};
  const config = {
    threads: Math.max(1, Math.min(4, navigator.hardwareConcurrency ?? 1)),
    maxBlobBytes: 256 * 1024 * 1024,
    ...served,
  } as Partial<BrowserPeerConfig>;
  if (query.get("job")) config.job = query.get("job")!;
  if (query.getAll("bootstrap").length) {
    config.bootstrap = query.getAll("bootstrap");
  }
  if (query.get("rpc")) config.rpcUrl = query.get("rpc")!;
  if (query.get("registry")) {
    config.registry = query.get("registry") as `0x${string}`;
  }
  if (query.get("threads")) config.threads = Number(query.get("threads"));
  for (const field of ["job", "bootstrap", "rpcUrl", "registry"] as const) {
    if (!config[field]) {
      throw new Error(
        `Cannot join as ${field} is not known: the node did not serve it, so give it in the page's address`,
      );
    }
  }
  return config as BrowserPeerConfig;
}

function show(id: string, text: string): void {
  const el = document.getElementById(id);
  if (el) el.textContent = text;
}

function setState(state: string): void {
  document.body.dataset.state = state;
  show("state", state);
}

function addLog(line: string): void {
  const log = document.getElementById("log")!;
  const item = document.createElement("li");
  item.textContent = `${new Date().toLocaleTimeString()} ${line}`;
  log.append(item);
  while (log.childElementCount > MAX_LOG_LINES) log.firstElementChild!.remove();
}

function onReport(r: PeerReport): void {
  switch (r.type) {
    case "identity":
      show("peer-id", r.peerId);
      show("address", r.address);
      break;
    case "fund":
      setState("waiting for funds");
      show(
        "fund",
        `send at least ${
          Number(BigInt(r.needWei) / 10n ** 12n) / 1e6
        } ETH to ${r.address} (it holds ${
          Number(BigInt(r.haveWei) / 10n ** 12n) / 1e6
        }) to stake and register`,
      );
      break;
    case "log":
      addLog(r.line);
      break;
    case "status": {
      const t = r.status.training;
      setState(t ? "training" : "starting");
      show("fund", "");
      show("connections", String(r.status.connections));
      show("addresses", r.status.addresses.join(" ") || "none");
      show("live", String(r.status.livePeers));
      if (t) {
        show("round", `${t.round} of ${t.rounds}`);
        show("stage", t.stage);
        show("step", String(r.status.progress.step ?? "-"));
      }
      break;
    }
    case "error":
      setState("stopped");
      show("error", r.message);
      addLog(`error: ${r.message}`);
      break;
  }
}

/** Starts the page: keys, config, then the peer worker. */
export async function startPage(): Promise<void> {
  setState("starting");
  try {
    const keys = await loadKeys(localStorage);
    const config = await loadConfig(new URLSearchParams(location.search));
    show("job", config.job);
    const worker = new Worker("peer_worker.js", { type: "module" });
    worker.addEventListener(
      "message",
      (e: MessageEvent<PeerReport>) => onReport(e.data),
    );
    worker.addEventListener("error", (e) => {
      onReport({ type: "error", message: e.message || "the worker failed" });
    });
    worker.postMessage({ type: "start", config, keys });
  } catch (err) {
    onReport({
      type: "error",
      message: err instanceof Error ? err.message : String(err),
    });
  }
}
