/**
 * Plain-data node and job sources for the HTTP tests: the app only reads
 * its source, so these stand in for a running node without a port.
 */
import { ChainError } from "../../chain/errors.ts";
import { Histogram } from "../round/records/histogram.ts";
import { StepLog } from "../round/records/step_log.ts";
import type {
  Contributions,
  JobSource,
  NodeInfoSource,
  NodeStatus,
  PeerSummary,
  RoundRecord,
  SeatStatus,
  TrainingStatus,
  WaitingStatus,
} from "./types.ts";

/** A node's status with some of every counter. */
export const STATUS: NodeStatus = {
  training: null,
  peerId: "12D3KooWSelf",
  addresses: ["/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWSelf"],
  version: "0.1.0",
  uptimeSeconds: 93,
  livePeers: 1,
  connections: 2,
  drops: { malformed: 3, oversized: 1 },
  blobs: {
    served: 2,
    servedBytes: 1024,
    refused: { "bad-request": 1, "not-found": 0, busy: 0, "too-large": 0 },
    badStreams: 0,
    corruptLocal: 0,
    fetched: 1,
    fetchedBytes: 512,
  },
  deltaWaits: {
    served: 1,
    servedBytes: 256,
    refused: { "bad-request": 0, busy: 0, none: 0 },
    received: 1,
    receivedBytes: 256,
    taken: 1,
    failed: 0,
  },
  bytes: {
    gossip: { sent: 300, received: 200 },
    blob: { sent: 1024, received: 512 },
  },
  progress: {
    round: 1,
    step: 4,
    backend: "wasm",
    device: "wasm-relaxed x1",
    throughput: 812.5,
  },
};

/** Two peers: one live and connected, one known only by connection. */
export const PEERS: PeerSummary[] = [
  {
    peerId: "12D3KooWA",
    connected: true,
    lastSeenMs: 1200,
    round: 4,
    step: 17,
    backend: "webgpu",
    device: "NVIDIA H100 (vulkan)",
    throughput: 5321.5,
    capabilityClass: null,
    version: "0.1.0",
    contribution: "10240",
  },
  {
    peerId: "12D3KooWB",
    connected: false,
    lastSeenMs: null,
    round: null,
    step: null,
    backend: null,
    device: null,
    throughput: null,
    capabilityClass: null,
    version: null,
    contribution: null,
  },
];

/** A job stalled for members: one slashed, one exited, one not read yet. */
export const WAITING: WaitingStatus = {
  live: 2,
  needed: 5,
  left: [
    {
      peer: "12D3KooWB",
      account: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
      why: "slashed",
    },
    {
      peer: "12D3KooWC",
      account: "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
      why: "exited",
    },
    { peer: "12D3KooWD", account: null, why: null },
  ],
};

/** A round record with the given number. */
export function record(round: number): RoundRecord {
  return {
    round,
    checkpoint: `bafkreickpt${round}`,
    leader: "12D3KooWA",
    tx: `0x${String(round).padStart(64, "0")}`,
    contributors: 2,
    slices: 0,
    trainLoss: 5 - round / 10,
    valLoss: 5.1 - round / 10,
    contributed: true,
    tokens: 16384,
    early: false,
    bytesSent: 1000,
    slicesComputed: 0,
    auditBytes: 600,
    dataParallelBytes: 90000,
    trainMs: 40,
    busyMs: 55,
    wallMs: 900,
  };
}

/** A seat of a priced job: 0.5 gwei a token, two rounds credited. */
export const SEAT: SeatStatus = {
  price: "500000000",
  stage: "seated",
  capabilityClass: 3,
  tokensPerSecond: "5120",
  roundsCredited: 2,
  tokens: "10240",
  earned: "5120000000000",
  fee: "256000000000",
  net: "4864000000000",
  paid: "0",
  claimable: "0",
  slashed: "0",
  rounds: [
    { round: 0, tokens: "5120", earned: "2560000000000" },
    { round: 1, tokens: "5120", earned: "2560000000000" },
  ],
};

/** A job with `rounds` closed and 3 steps noted per round; calls are logged. */
export function fakeJob(rounds = 2): JobSource & {
  steps_: StepLog;
  records: RoundRecord[];
  leaves: number;
  exits: number;
  claims: number;
} {
  const steps = new StepLog();
  const records = Array.from({ length: rounds }, (_, r) => record(r));
  for (let r = 0; r < rounds; r++) {
    for (let h = 1; h <= 3; h++) steps.note(r, h, 5.5 - r / 10 - h / 100);
  }
  const latency = new Histogram([0.1, 1]);
  latency.observe(0.05);
  const contributions: Contributions = {
    job: "bafkreijob",
    account: "0x00000000000000000000000000000000000000aa",
    contribution: "20480",
    totalContribution: "40960",
    rewardPool: "1000000000000000000",
    claimable: "0",
    stage: "running",
    claimsFrom: null,
    roundsCommitted: rounds,
    rounds: 3,
    contributedRounds: records.map((r) => r.round),
    seat: null,
    readAt: 0,
  };
  const job = {
    steps_: steps,
    records,
    leaves: 0,
    exits: 0,
    claims: 0,
    training: (): TrainingStatus => ({
      job: "bafkreijob",
      round: rounds,
      phase: job.leaves > 0 ? "left" : "training",
      stage: job.leaves > 0 ? "left" : "training",
      standing: "member",
      parent: "bafkreiparent",
      rounds: 3,
      innerSteps: 3,
      memory: {
        peerBytes: 25_000_000,
        what: 'one buffer (activation "logits")',
        needBytes: 4_200_000,
        limitBytes: 134_217_728,
        limit: "maxStorageBufferBindingSize",
      },
      leader: "12D3KooWA",
      live: 2,
      waiting: null,
      deltas: 1,
      aggregating: false,
      refused: { "delta:zero": 1 },
      auditCounts: { passed: 3, failed: 1 },
      audits: [{
        round: 1,
        peer: "12D3KooWLyingPeer",
        segment: 4,
        passed: false,
        check: "replay",
        steps: 3,
        ms: 820,
      }],
      slashes: [{
        round: 1,
        account: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
        kind: 2,
        tx: `0x${"cd".repeat(32)}`,
      }],
      lost: [{ round: 0, tokens: 5120, tx: `0x${"ef".repeat(32)}` }],
      refusals: [{
        round: 1,
        peer: "12D3KooWB",
        what: "delta",
        reason: "zero",
      }],
      committed: records,
    }),
    steps: (after: number) => steps.since(after),
    stepsTotal: () => steps.total,
    commitLatency: () => latency.snapshot(),
    cachedContributions: () => contributions,
    cachedDeterrence: () => ({
      rate: 0.14,
      floor: 10,
      meetsFloor: true,
      pCaught: 0.14,
      expectedLoss: "140000000000000000",
      rewardPerRound: "8333333333333333",
      ratio: 16.8,
      caughtWithin: 0.9511,
    }),
    peerContribution: () => "10240",
    readPeerContribution: () => Promise.resolve("10240"),
    contributions: () => Promise.resolve(contributions),
    info: () => Promise.reject(new Error("not used")),
    round: (n: number) =>
      Promise.resolve(
        n < records.length
          ? {
            round: n,
            record: records[n],
            audits: [],
            chain: {
              parent: "bafkreiparent",
              checkpoint: records[n].checkpoint,
              manifest: "bafkreimanifest",
              committer: "0x00000000000000000000000000000000000000aa",
              signers: 2,
              committedAt: 1_700_000_000,
              tx: records[n].tx,
            },
          }
          : null,
      ),
    leave() {
      job.leaves++;
      return { job: "bafkreijob", round: rounds, left: job.leaves === 1 };
    },
    exitStake() {
      job.exits++;
      // As the contract: a node leaves once.
      return job.exits > 1
        ? Promise.reject(
          new ChainError(
            "Cannot start leaving: node 0xaa is leaving (unbonding) and cannot act",
            "NodeExiting",
          ),
        )
        : Promise.resolve({
          unbondingEnds: "2026-11-26T13:00:00.000Z",
          tx: `0x${"ef".repeat(32)}`,
        });
    },
    chainEndpoint: () => ({
      rpcUrl: "http://127.0.0.1:8545",
      registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3" as const,
    }),
    claimReward() {
      // As the contract: one claim per account.
      if (job.claims++ > 0) {
        return Promise.reject(
          new ChainError(
            "Cannot claim the reward: account 0xaa has already claimed this job",
            "AlreadyClaimed",
          ),
        );
      }
      return Promise.resolve({
        job: "bafkreijob",
        amount: "500000000000000000",
        tx: `0x${"ab".repeat(32)}`,
      });
    },
  };
  return job;
}

/** A node source over {@linkcode STATUS} and {@linkcode PEERS}. */
export function fakeSource(
  over: Partial<NodeInfoSource> = {},
): NodeInfoSource {
  return {
    status: () => STATUS,
    peers: () => PEERS,
    job: () => null,
    checkpoint: () => Promise.resolve(null),
    fetchBlob: () => Promise.reject(new Error("not used")),
    ...over,
  };
}
