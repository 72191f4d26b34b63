/**
 * The chain readings the status surfaces show, over a fake registry whose
 * figures move on: a peer's contribution read for a caller that asks once
 * in a while is the chain's now, not the one its last call started, and
 * this node's reward says when claims open.
 */
import { deepStrictEqual, strictEqual } from "node:assert";
import type { Registry } from "../../chain/registry.ts";
import { cidFromDigest, cidToString } from "../../protocol/content/cid.ts";
import type { MemberCache } from "../round/services/member_cache.ts";
import { JobChainView } from "./chain_view.ts";

const ACCOUNT = "0x00000000000000000000000000000000000000aa";
const PEER_ACCOUNT = "0x00000000000000000000000000000000000000bb";
const ZERO32 = `0x${"0".repeat(64)}`;

/** What the fake chain holds; tests change it between readings. */
interface FakeChain {
  contributions: Map<string, bigint>;
  nextRound: number;
  claimable: bigint;
}

function view(chain: FakeChain, ttlMs: number): JobChainView {
  const record = () => ({
    creator: ACCOUNT,
    rewardPool: 10n ** 18n,
    minStake: 0n,
    quorum: 2,
    rounds: 3,
    nextRound: chain.nextRound,
    cancelled: false,
    head: ZERO32,
    genesis: ZERO32,
    totalContribution: 500_000n,
    claimedContribution: 0n,
    paid: 0n,
  });
  const answers: Record<string, (args: readonly unknown[]) => unknown> = {
    getJob: record,
    contributionOf: ([, account]) =>
      chain.contributions.get((account as string).toLowerCase()) ?? 0n,
    claimable: () => chain.claimable,
    hasClaimed: () => false,
    getRound: ([, round]) => [{
      checkpoint: `0x${"11".repeat(32)}`,
      manifest: `0x${"22".repeat(32)}`,
      committer: ACCOUNT,
      signers: 2,
      // Round r committed at 1000 + r seconds.
      committedAt: 1000n + BigInt(round as number),
    }, ZERO32],
    challengeWindow: () => 3600n,
    CHALLENGE_WINDOW: () => 3600n,
  };
  const registry = {
    address: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
    client: {
      public: {
        readContract: (
          c: { functionName: string; args: readonly unknown[] },
        ) => Promise.resolve(answers[c.functionName](c.args)),
        getContractEvents: () => Promise.resolve([]),
      },
    },
  } as unknown as Registry;
  const members = {
    lookup: () => Promise.resolve({ account: PEER_ACCOUNT, member: true }),
  } as unknown as MemberCache;
  return new JobChainView({
    registry,
    jobId: cidToString(cidFromDigest(new Uint8Array(32).fill(7))),
    spec: {} as never,
    account: ACCOUNT,
    members,
    ttlMs,
  });
}

Deno.test("chain view: a peer's contribution read for the caller is the chain's now, not the last reading", async () => {
  const chain: FakeChain = {
    contributions: new Map([[PEER_ACCOUNT, 145_408n]]),
    nextRound: 1,
    claimable: 0n,
  };
  const v = view(chain, 20);
  strictEqual(await v.readPeerContribution("12D3KooWPeer"), "145408");
  // Rounds later the chain credits the peer more; nobody asked meanwhile.
  chain.contributions.set(PEER_ACCOUNT, 401_408n);
  await new Promise((r) => setTimeout(r, 40));
  // The page's reading is the last one taken (it starts a new one) ...
  strictEqual(v.peerContribution("12D3KooWPeer"), "145408");
  // ... zoo_peers' is the chain's.
  strictEqual(await v.readPeerContribution("12D3KooWPeer"), "401408");
});

Deno.test("chain view: this node's reward says when claims open, once the last round is in", async () => {
  const chain: FakeChain = {
    contributions: new Map([[ACCOUNT, 102_400n]]),
    nextRound: 2,
    claimable: 0n,
  };
  const running = await view(chain, 0).contributions();
  deepStrictEqual(
    [running.contribution, running.stage, running.claimsFrom],
    ["102400", "running", null],
  );
  chain.nextRound = 3;
  const finished = await view(chain, 0).contributions();
  // Round 2's commit (1002) plus the window (3600), as the contract has it.
  deepStrictEqual([finished.stage, finished.claimsFrom], ["window", 4602]);
  chain.claimable = 123n;
  const open = await view(chain, 0).contributions();
  deepStrictEqual([open.stage, open.claimable], ["claimable", "123"]);
});
