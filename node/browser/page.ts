/// <reference lib="dom" />
/**
 * The browser peer's page (`/peer/`): keeps the tab's keys in its storage,
 * reads where to join from `config.json` (the address may change `job`,
 * `bootstrap` (repeatable) and `threads`: see `peer_config.ts`), starts
 * the peer worker and shows what it does.
 *
 * @module
 */
import { generateKeyPair, privateKeyToProtobuf } from "@libp2p/crypto/keys";
import { generatePrivateKey } from "viem/accounts";
import type { BrowserPeerConfig, PeerReport, StoredKeys } from "./messages.ts";
import { resolvePeerConfig } from "./peer_config.ts";
import { backendLine, KeptLog } from "./peer_view.ts";
import { claimsLine, creditLine, formatEther } from "../http/status_text.ts";

/**
 * Where the tab keeps its keys (never shown, never sent anywhere), and the
 * name of the lock a running tab holds on them.
 */
const KEYS_ITEM = "zoo-peer-keys";

/** The tab's keys: from its storage, else new ones stored there. */
async function loadKeys(storage: Storage): Promise<StoredKeys> {
  const kept = storage.getItem(KEYS_ITEM);
  if (kept !== null) {
    let keys: Partial<StoredKeys> = {};
    try {
      keys = JSON.parse(kept);
    } catch {
      // reported below
    }
    if (
      typeof keys.peerKey !== "string" ||
      !/^0x[0-9a-f]{64}$/i.test(keys.accountKey ?? "")
    ) {
      // Never replaced: the account may hold a stake.
      throw new Error(
        `Cannot read this browser's keys (${KEYS_ITEM} in the site's storage is malformed); they are left as they are`,
      );
    }
    return keys as StoredKeys;
  }
  const peerKey = privateKeyToProtobuf(await generateKeyPair("Ed25519"));
  const keys: StoredKeys = {
    peerKey: btoa(String.fromCharCode(...peerKey)),
    accountKey: generatePrivateKey(),
  };
  storage.setItem(KEYS_ITEM, JSON.stringify(keys));
  return keys;
}

/** How long to wait before asking the node again for its job, ms. */
const CONFIG_RETRY_MS = 2_000;

/**
 * The node's `config.json` with the address's overrides, checked; a node
 * that has no job yet (503) is asked again until it has.
 */
async function loadConfig(query: URLSearchParams): Promise<BrowserPeerConfig> {
  for (;;) {
    const res = await fetch("config.json", { cache: "no-store" });
    if (res.status === 503) {
      setState("waiting for the node's job");
      await new Promise((r) => setTimeout(r, CONFIG_RETRY_MS));
      continue;
    }
    const served = res.ok ? await res.json() : {};
    return resolvePeerConfig(
      served,
      query,
      navigator.hardwareConcurrency ?? 1,
    );
  }
}

/** ETH for wei, rounded up to a millionth: enough, never short. */
function ethCeil(wei: bigint): string {
  const micro = (wei + 10n ** 12n - 1n) / 10n ** 12n;
  return (Number(micro) / 1e6).toString();
}

/**
 * Set once the account has left the job (slashed): a status report must
 * not put "training" back while the worker keeps running.
 */
let standing: string | null = null;

function show(id: string, text: string): void {
  const el = document.getElementById(id);
  if (el) el.textContent = text;
}

function setState(state: string): void {
  document.body.dataset.state = state;
  show("state", state);
}

/** The log, kept across a reload of the tab; set by {@linkcode startPage}. */
let kept: KeptLog | null = null;

function showLog(): void {
  document.getElementById("log")!.replaceChildren(
    ...(kept?.lines ?? []).map((line) => {
      const item = document.createElement("li");
      item.textContent = line;
      return item;
    }),
  );
}

function addLog(line: string): void {
  kept?.add(`${new Date().toLocaleTimeString()} ${line}`);
  showLog();
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
          ethCeil(BigInt(r.needWei) - BigInt(r.haveWei))
        } ETH more to ${r.address} (it holds ${
          ethCeil(BigInt(r.haveWei))
        }, it needs ${ethCeil(BigInt(r.needWei))}) to stake and register`,
      );
      break;
    case "log":
      addLog(r.line);
      break;
    case "status": {
      const t = r.status.training;
      show("connections", String(r.status.connections));
      show("addresses", r.status.addresses.join(" ") || "none");
      show("live", String(r.status.livePeers));
      show("backend", backendLine(r.status.progress));
      if (t) {
        setState(standing ?? "training");
        show("fund", "");
        // Numbered from 0, as the status page, RPC and `status` do.
        show("round", `${t.round} / ${t.rounds}`);
        show("stage", t.stage);
        show("step", String(r.status.progress.step ?? "-"));
      }
      break;
    }
    case "chain":
      show("stake", formatEther(r.stake));
      show("credited", creditLine(r.contributions));
      show(
        "claimable",
        `${formatEther(r.contributions.claimable)}; ${
          claimsLine(r.contributions, Date.now())
        }`,
      );
      break;
    case "standing":
      standing = r.standing;
      setState(r.standing);
      show("error", r.line);
      addLog(r.line);
      break;
    case "error":
      setState("stopped");
      show("error", r.message);
      addLog(`error: ${r.message}`);
      break;
  }
}

/**
 * Starts the page: keys, config, then the peer worker. The tab holds a
 * lock on its keys while it runs: a second tab of the same browser would
 * be the same peer and account twice.
 */
export async function startPage(): Promise<void> {
  kept = new KeptLog(sessionStorage);
  showLog();
  setState("starting");
  try {
    if (!isSecureContext || !crossOriginIsolated) {
      throw new Error(
        "Cannot run the peer as this page is not cross-origin isolated: open it on localhost or over HTTPS, from a server that sends COOP and COEP (the node's /peer/ does)",
      );
    }
    const held = await new Promise<boolean>((resolve) => {
      navigator.locks.request(KEYS_ITEM, { ifAvailable: true }, (lock) => {
        resolve(lock !== null);
        // Held until the tab goes.
        return lock ? new Promise(() => {}) : undefined;
      });
    });
    if (!held) {
      throw new Error(
        "Another tab of this browser runs this peer already: close it, or use another browser profile for a second peer",
      );
    }
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
