/**
 * In-memory stand-ins for the services a round phase uses, for the phase
 * files' unit tests (the real libp2p and anvil run in tests/).
 *
 * @module
 */
import type { StepShape } from "../../../protocol/audit/inner_steps.ts";
import type { GptConfig } from "../../../kernels/gpt.ts";
import {
  type CID,
  cidForBytes,
  cidToString,
} from "../../../protocol/content/cid.ts";
import { defaultJobSpec } from "../../../protocol/spec/job_spec.ts";
import { privateKeyToAccount } from "viem/accounts";
import { DELTA } from "../../../protocol/codec/_message_fixtures.ts";
import type {
  DeltaAnnounce,
  GossipMessage,
} from "../../../protocol/messages/messages.ts";
import { signDelta } from "./commitments.ts";
import {
  initialState,
  type RoundState,
} from "../../../protocol/round/round_state.ts";
import {
  MANIFEST_VERSION,
  type RoundManifest,
} from "../../../protocol/round/round_manifest.ts";
import type {
  BlobFetcher,
  LandedTx,
  RoundBlocks,
  RoundChain,
  RoundGossip,
  RoundServices,
} from "./services.ts";

export const MODEL: GptConfig = {
  vocabSize: 256,
  contextLength: 8,
  dModel: 16,
  heads: 2,
  layers: 1,
};
export const SPEC = defaultJobSpec({
  dataset: {
    cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  },
  model: MODEL,
  innerSteps: 2,
  batchSize: 2,
  minPeers: 3,
});
export const JOB = "bafkreijob";
export const PEERS = ["12D3KooWAAAA", "12D3KooWBBBB", "12D3KooWCCCC"];

/** A round machine state in `round` on `parent`, with `self` = PEERS[0]. */
export function stateIn(round: number, parent: string): RoundState {
  const s = initialState({
    job: JOB,
    self: PEERS[0],
    quorum: 2,
    minPeers: 3,
    rounds: 4,
    roundDeadlineMs: 4_000,
    overlap: false,
  }, Date.now());
  return { ...s, phase: "training", round, parent, live: [...PEERS] };
}

/** A blockstore in a map. */
export class MemoryBlocks implements RoundBlocks {
  readonly blocks = new Map<string, Uint8Array>();

  size(cid: CID): Promise<number | null> {
    return Promise.resolve(this.blocks.get(cidToString(cid))?.length ?? null);
  }

  get(cid: CID): Promise<Uint8Array> {
    const bytes = this.blocks.get(cidToString(cid));
    return bytes
      ? Promise.resolve(bytes)
      : Promise.reject(new Error(`no block ${cidToString(cid)}`));
  }

  async put(bytes: Uint8Array, codec?: number): Promise<CID> {
    const cid = await cidForBytes(bytes, codec);
    this.blocks.set(cidToString(cid), bytes);
    return cid;
  }

  delete(cid: CID): Promise<void> {
    this.blocks.delete(cidToString(cid));
    return Promise.resolve();
  }
}

/**
 * Peers' blobs in `remote`, copied into `local` when fetched; every call
 * is recorded. A blob no peer has waits for the signal, like a fetch that
 * finds no provider in time.
 */
export class MemoryFetcher implements BlobFetcher {
  readonly calls: { cid: string; providers?: string[]; maxBytes: number }[] =
    [];
  /**
   * A blob nobody holds: false waits for the abort (a fetch still asking),
   * true fails at once (every provider said not-found).
   */
  failMissing = false;
  constructor(readonly local: MemoryBlocks, readonly remote: MemoryBlocks) {}

  fetch(
    cid: string,
    providers: string[] | undefined,
    options: { signal: AbortSignal; timeoutMs?: number; maxBytes: number },
  ): Promise<unknown> {
    this.calls.push({ cid, providers, maxBytes: options.maxBytes });
    // As the blob service does: the caller's time limit ends the fetch.
    const signal = options.timeoutMs === undefined
      ? options.signal
      : AbortSignal.any([
        options.signal,
        AbortSignal.timeout(options.timeoutMs),
      ]);
    const bytes = this.remote.blocks.get(cid);
    if (!bytes && this.failMissing) {
      return Promise.reject(new Error(`${cid}: not found`));
    }
    if (!bytes) {
      return new Promise((_, reject) => {
        const fail = () => reject(signal.reason);
        if (signal.aborted) fail();
        signal.addEventListener("abort", fail, { once: true });
      });
    }
    if (bytes.length > options.maxBytes) {
      return Promise.reject(new RangeError(`${cid} is too large`));
    }
    this.local.blocks.set(cid, bytes);
    return Promise.resolve();
  }
}

/** Gossip that keeps what is published; each message "costs" 100 bytes. */
export class MemoryGossip implements RoundGossip {
  readonly sent: GossipMessage[] = [];
  constructor(readonly peers = 2) {}

  publish(msg: GossipMessage): Promise<number> {
    this.sent.push(msg);
    return Promise.resolve(100);
  }

  fanout(): number {
    return this.peers;
  }

  throughput(): number {
    return 0;
  }

  lastHeard(): number | null {
    return null;
  }
}

/** A registry that takes every commit and remembers manifests by round. */
export class MemoryChain implements RoundChain {
  readonly domain = {
    chainId: 31337,
    registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  } as const;
  readonly commits: Parameters<RoundChain["commit"]>[] = [];
  readonly manifests = new Map<number, `0x${string}`>();

  commit(...args: Parameters<RoundChain["commit"]>): Promise<LandedTx> {
    this.commits.push(args);
    return Promise.resolve({ hash: `0x${"ab".repeat(32)}`, gasUsed: 21000n });
  }

  committedManifest(round: number): Promise<`0x${string}` | null> {
    return Promise.resolve(this.manifests.get(round) ?? null);
  }

  /** Accounts no longer in good standing (left, or slashed). */
  readonly outOfStanding = new Set<string>();

  inGoodStanding(account: `0x${string}`): Promise<boolean> {
    return Promise.resolve(!this.outOfStanding.has(account.toLowerCase()));
  }

  /** Credit by round and lower-cased account, as commits would leave it. */
  readonly credited = new Map<number, Map<string, bigint>>();

  credits(
    account: `0x${string}`,
    fromRound: number,
  ): Promise<Map<number, bigint>> {
    const out = new Map<number, bigint>();
    for (const [round, c] of this.credited) {
      const tokens = c.get(account.toLowerCase());
      if (round >= fromRound && tokens !== undefined) out.set(round, tokens);
    }
    return Promise.resolve(out);
  }

  /** Declared losses, by `account/round` (lower-cased account). */
  readonly lost = new Map<string, bigint>();

  lostTokens(account: `0x${string}`, round: number): Promise<bigint> {
    return Promise.resolve(
      this.lost.get(`${account.toLowerCase()}/${round}`) ?? 0n,
    );
  }

  /** The account `declareLost` sends from. */
  account: `0x${string}` = "0x0000000000000000000000000000000000000000";

  declareLost(round: number, tokens: bigint): Promise<LandedTx> {
    this.lost.set(`${this.account.toLowerCase()}/${round}`, tokens);
    return Promise.resolve({ hash: `0x${"ef".repeat(32)}`, gasUsed: 40000n });
  }

  readonly slashes: Parameters<RoundChain["slash"]>[] = [];

  slash(...args: Parameters<RoundChain["slash"]>): Promise<LandedTx> {
    this.slashes.push(args);
    return Promise.resolve({ hash: `0x${"cd".repeat(32)}`, gasUsed: 50000n });
  }
}

/** Anvil's second well-known test key and its address. */
export const TEST_KEY =
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
export const TEST_ADDRESS = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

/**
 * The fixture delta announcement of a real job id under TEST_ADDRESS,
 * then `over`, its commitment signed with TEST_KEY in MemoryChain's domain
 * for a job of `shape`.
 */
export async function signedDelta(
  over: Partial<DeltaAnnounce>,
  shape: StepShape,
): Promise<DeltaAnnounce> {
  const { signature: _, ...unsigned } = {
    ...DELTA,
    job: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
    account: TEST_ADDRESS,
    ...over,
  } as DeltaAnnounce;
  const signature = await signDelta(
    privateKeyToAccount(TEST_KEY),
    new MemoryChain().domain,
    unsigned,
    shape,
  );
  return { ...unsigned, signature };
}

/** The CID of `text`'s bytes, for blobs a test need not hold. */
export async function cidOf(text: string): Promise<string> {
  return cidToString(await cidForBytes(new TextEncoder().encode(text)));
}

/**
 * A manifest of round 0 led by PEERS[1], with PEERS[0]'s one contribution
 * of 32 tokens, then `over`.
 */
export async function manifestFixture(
  over: Partial<RoundManifest> = {},
): Promise<RoundManifest> {
  return {
    v: MANIFEST_VERSION,
    job: JOB,
    round: 0,
    parent: await cidOf("C(0)"),
    leader: PEERS[1],
    rule: SPEC.aggregation,
    contributions: [{
      peer: PEERS[0],
      account: TEST_ADDRESS,
      delta: await cidOf("delta"),
      tokens: 32,
      loss: 3,
    }],
    excluded: [],
    checkpoint: await cidOf("C(1)"),
    ...over,
  };
}

/** Round services on the in-memory stand-ins above, nothing fetched. */
export function memoryServices(blocks = new MemoryBlocks()) {
  const services = {
    blocks,
    fetcher: new MemoryFetcher(blocks, new MemoryBlocks()),
    gossip: new MemoryGossip(),
    chain: new MemoryChain(),
    progress: () => {},
    servedBytes: () => 0,
    deltaWaits: { offer: () => Promise.resolve(), follow: () => {} },
  };
  return services satisfies RoundServices;
}

/** Members lookups by which every peer is a member, under `account`. */
export function everyoneMember(account: `0x${string}` = TEST_ADDRESS) {
  return {
    refresh: () => {},
    members: (peers: readonly string[]) => [...peers],
    lookup: () => Promise.resolve({ account, member: true }),
    confirm: () => Promise.resolve({ account, member: true }),
    isMemberAccount: () => Promise.resolve(true),
    forgetAccount: () => {},
  };
}
