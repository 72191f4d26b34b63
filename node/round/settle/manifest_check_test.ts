import { FULL_TIER } from "../../../tests/_tier.ts";
import assert from "node:assert/strict";
import { Rng } from "../../../kernels/data/rng.ts";
import { cidToString } from "../../../protocol/content/cid.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import { sliceBounds } from "../../../protocol/aggregation/shards.ts";
import { type SliceScreenSums } from "../../../protocol/aggregation/slice_screen.ts";
import {
  cidOf,
  JOB,
  MODEL,
  PEERS,
  SPEC,
  TEST_ADDRESS,
} from "../services/_fakes.ts";
import type { ManifestAnnounce } from "../../../protocol/messages/messages.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
  roundCheckpointCid,
} from "../../../protocol/round/round_checkpoint.ts";
import {
  MANIFEST_VERSION,
  type RoundManifest,
} from "../../../protocol/round/round_manifest.ts";
import { nextCheckpoint } from "../../../protocol/round/round_update.ts";
import { ManifestRefused, ManifestVerifier } from "./manifest_check.ts";
import {
  announcements,
  publishSharded,
  witnessOf,
} from "./_verify_fixtures.ts";
import { NotHeldError } from "../services/failures.ts";

const PARENT = await cidOf("C(0)");
const GENESIS = genesisCheckpoint(JOB, MODEL, 0);
const ACCOUNT = TEST_ADDRESS;
const TOKENS = 32;

/** Honest deltas: one shared direction plus a little of each peer's own. */
const rng = new Rng("manifest-verifier");
const common = Float32Array.from(GENESIS.params, () => rng.normal());
const DELTAS = new Map(PEERS.map((peer) => [
  peer,
  Float32Array.from(common, (v) => 1e-3 * (v + 0.2 * rng.normal())),
]));
const ANNOUNCED = await announcements(PEERS, PARENT, TOKENS);

/** The manifest `leader` would build over `peers`, excluding `excluded`. */
async function manifestOf(
  leader: string,
  peers: string[],
  excluded: RoundManifest["excluded"] = [],
): Promise<RoundManifest> {
  const next = nextCheckpoint({
    spec: SPEC,
    parent: GENESIS,
    parentCid: PARENT,
    deltas: peers.map((peer) => ({
      peer,
      tokens: TOKENS,
      delta: DELTAS.get(peer)!,
    })),
  });
  return {
    v: MANIFEST_VERSION,
    job: JOB,
    round: 0,
    parent: PARENT,
    leader,
    rule: SPEC.aggregation,
    contributions: peers.map((peer) => ({
      peer,
      account: ACCOUNT,
      delta: ANNOUNCED.find((d) => d.peer === peer)!.delta,
      tokens: TOKENS,
      loss: 3,
    })),
    excluded,
    checkpoint: cidToString(
      await roundCheckpointCid(encodeRoundCheckpoint(next)),
    ),
  };
}

/**
 * A verifier whose blobs are `manifests` by CID and the honest deltas, of
 * which it holds those of `held` before fetching any.
 */
function verifier(
  manifests: Map<string, RoundManifest>,
  held: readonly string[] = PEERS,
  sharded?: {
    spec: JobSpec;
    blocks: Map<string, Uint8Array>;
    /** Whose roots it holds (all when absent). */
    roots?: readonly string[];
    /** Whose deltas can be fetched whole (all when absent). */
    served?: readonly string[];
    /** The slices this peer produced, by slice. */
    produced?: ReadonlyMap<number, { sums: string; update: string }>;
    /** Counts the slices of deltas read. */
    reads?: { n: number };
  },
) {
  const bounds = (k: number) => sliceBounds(GENESIS.params.length, k);
  const has = (peers: readonly string[] | undefined, peer: string) =>
    peers === undefined || peers.includes(peer);
  return new ManifestVerifier({
    jobId: JOB,
    spec: sharded?.spec ?? SPEC,
    self: "12D3KooVerifier",
    delta: (d, providers) =>
      (providers.length === 0
          ? !held.includes(d.peer)
          : !has(sharded?.served, d.peer))
        ? Promise.reject(new NotHeldError("delta", d.delta))
        : Promise.resolve(DELTAS.get(d.peer)!),
    root: (d, providers) =>
      providers.length === 0 && !has(sharded?.roots, d.peer)
        ? Promise.reject(new NotHeldError("delta", d.delta))
        : Promise.resolve([]),
    slice: (d, _, k, j) => {
      if (sharded?.reads) sharded.reads.n++;
      return Promise.resolve(
        DELTAS.get(d.peer)!.slice(bounds(k)[j], bounds(k)[j + 1]),
      );
    },
    produced: () => sharded?.produced ?? new Map(),
    block: (cid) => {
      const bytes = sharded?.blocks.get(cid);
      return bytes ? Promise.resolve(bytes) : Promise.reject(new Error(cid));
    },
    manifest: (m) => {
      const found = manifests.get(m.manifest);
      return found
        ? Promise.resolve(found)
        : Promise.reject(new Error("not found"));
    },
    held: (cid) => ({ cid, ckpt: GENESIS }),
    store: () => Promise.resolve(),
    noteDelta: () => {},
  });
}

function announce(manifestCid: string, m: RoundManifest): ManifestAnnounce {
  return {
    v: 1,
    type: "manifest",
    peer: m.leader,
    job: JOB,
    round: 0,
    parent: PARENT,
    manifest: manifestCid,
    checkpoint: m.checkpoint,
    rank: 0,
  };
}

/** A witness that saw every delta long before, none in time to doubt. */
const WITNESS = witnessOf(ANNOUNCED);

/** How long the tests below give a leader to amend, ms. */
const AMEND_MS = 300;

async function refusal(task: Promise<unknown>): Promise<ManifestRefused> {
  const err = await task.then(() => null, (e) => e);
  assert.ok(err instanceof ManifestRefused, `not refused: ${err}`);
  return err;
}

Deno.test("ManifestVerifier: an honest manifest checks out", async () => {
  const m = await manifestOf(PEERS[0], PEERS);
  const v = verifier(new Map([["bafkreihonest", m]]));
  const back = await v.check(announce("bafkreihonest", m), WITNESS);
  assert.equal(back.checkpoint, m.checkpoint);
});

/** PEERS' deltas as a sharded round's leader publishes them. */
async function shardedRound(
  tamper: (update: Float32Array[], sums: SliceScreenSums[]) => void = () => {},
  contributors: readonly string[] = PEERS,
  excluded: RoundManifest["excluded"] = [],
) {
  const spec: JobSpec = { ...SPEC, sharding: "slices" };
  const deltas = contributors.map((peer) => ({
    peer,
    tokens: TOKENS,
    delta: DELTAS.get(peer)!,
  }));
  const { shards, blocks, checkpoint } = await publishSharded(
    spec,
    { ckpt: GENESIS, cid: PARENT },
    deltas,
    tamper,
  );
  const m: RoundManifest = {
    ...await manifestOf(PEERS[0], [...contributors], excluded),
    checkpoint,
    shards,
  };
  const v = verifier(new Map([["bafkreisharded", m]]), PEERS, {
    spec,
    blocks,
  });
  return {
    m,
    blocks,
    spec,
    check: () => v.check(announce("bafkreisharded", m), WITNESS),
    /**
     * A verifier holding `held`'s deltas whole and `roots`' roots as the
     * manifest comes, `served`'s fetchable after.
     */
    checkAs: (
      held: readonly string[],
      roots: readonly string[],
      served: readonly string[],
    ) =>
      verifier(new Map([["bafkreisharded", m]]), held, {
        spec,
        blocks,
        roots,
        served,
      }).check(announce("bafkreisharded", m), {
        ...WITNESS,
        amendBy: Date.now() + AMEND_MS,
      }),
  };
}

Deno.test("ManifestVerifier: in a sharded round an unserved delta is owed only when this peer held it whole as the manifest came, not for a root or a late fetch", async () => {
  const unserved = {
    peer: PEERS[1],
    delta: ANNOUNCED[1].delta,
    reason: "unserved" as const,
    evidence: "",
  };
  const { checkAs } = await shardedRound(
    () => {},
    [PEERS[0], PEERS[2]],
    [unserved],
  );
  // Its author served no one in time: the withholder's loss.
  await checkAs([], [PEERS[0], PEERS[2]], PEERS);
  // Its root served, its pieces only after the manifest (a withholder
  // serving all but the leader, late): no leader could have had them, and
  // none is refused for it.
  await checkAs([], PEERS, PEERS);
  // Held whole as the manifest came: the leader could have had it from
  // this peer, and must amend.
  const err = await refusal(checkAs([PEERS[1]], PEERS, PEERS));
  assert.equal(err.code, "unjustified-exclusion");
  assert.equal(err.blames, true);
});

Deno.test("ManifestVerifier: a sharded round's manifest checks out from its published slices", async () => {
  const { m, check } = await shardedRound();
  assert.equal((await check()).checkpoint, m.checkpoint);
});

Deno.test("ManifestVerifier: a sharded round's update slice or sums changed by its leader are caught where recomputed", async () => {
  const bumped = await shardedRound((update) => update[0][5] += 1e-3);
  assert.equal((await refusal(bumped.check())).code, "slice-mismatch");
  const summed = await shardedRound((_, sums) =>
    sums[0] = { ...sums[0], centerNorm2: sums[0].centerNorm2 * 1.01 }
  );
  assert.equal((await refusal(summed.check())).code, "slice-mismatch");
});

Deno.test("ManifestVerifier: a slice this peer produced is checked against what it computed, without a fetch", async () => {
  const honest = await shardedRound();
  const tampered = await shardedRound((update) => update[0][5] += 1e-3);
  // What this peer computed as slice 0's producer: the honest slice.
  const produced = new Map([[0, {
    sums: honest.m.shards!.sums[0],
    update: honest.m.shards!.update[0],
  }]]);
  const checkAs = (r: typeof honest) => {
    const reads = { n: 0 };
    const v = verifier(new Map([["bafkreisharded", r.m]]), PEERS, {
      spec: r.spec,
      blocks: r.blocks,
      produced,
      reads,
    });
    return { reads, check: v.check(announce("bafkreisharded", r.m), WITNESS) };
  };
  const ok = checkAs(honest);
  assert.equal((await ok.check).checkpoint, honest.m.checkpoint);
  // One slice, its own: nothing more to draw.
  assert.equal(honest.m.shards!.slices, 1);
  assert.equal(ok.reads.n, 0);
  const bad = checkAs(tampered);
  const err = await refusal(bad.check);
  assert.equal(err.code, "slice-mismatch");
  assert.match(err.message, /as its producer/);
  assert.equal(bad.reads.n, 0);
});

Deno.test("ManifestVerifier: slices named outside a sharded job, or none in one, are refused", async () => {
  const { m } = await shardedRound();
  const v = verifier(new Map([["bafkreislices", m]]));
  const err = await refusal(v.check(announce("bafkreislices", m), WITNESS));
  assert.equal(err.code, "shards-mismatch");
  const { shards: _, ...plain } = m;
  const w = verifier(new Map([["bafkreiplain", plain]]), PEERS, {
    spec: { ...SPEC, sharding: "slices" },
    blocks: new Map(),
  });
  const err2 = await refusal(w.check(announce("bafkreiplain", plain), WITNESS));
  assert.equal(err2.code, "shards-mismatch");
});

Deno.test("ManifestVerifier: leaving out a delta seen well before is censorship", async () => {
  const m = await manifestOf(PEERS[0], [PEERS[0], PEERS[2]]);
  const v = verifier(new Map([["bafkreicensor", m]]));
  const err = await refusal(v.check(announce("bafkreicensor", m), WITNESS));
  assert.equal(err.code, "censored");
  assert.equal(v.evidenceAgainst(0, PEERS[0]), "bafkreicensor");
});

Deno.test("ManifestVerifier: a delta seen just before the manifest must be listed by it or by an amendment", async () => {
  const m = await manifestOf(PEERS[0], [PEERS[0], PEERS[2]]);
  const amended = await manifestOf(PEERS[0], PEERS);
  const manifests = new Map([
    ["bafkreifirst", m],
    ["bafkreiamended", amended],
  ]);
  // Seen only just before the manifest: the leader may have got it just
  // after it published, so this peer waits for its amendment.
  const justBefore = () => ({
    ...WITNESS,
    expected: ANNOUNCED.filter((d) => d.peer !== PEERS[1]),
    amendBy: Date.now() + AMEND_MS,
  });
  const silent = verifier(manifests);
  const t0 = Date.now();
  const err = await refusal(
    silent.check(announce("bafkreifirst", m), justBefore()),
  );
  assert.ok(Date.now() - t0 >= AMEND_MS - 10, "it waited for an amendment");
  assert.equal(err.code, "censored");
  assert.equal(err.blames, true);
  // The leader amends: the first manifest is neither attested nor blamed,
  // and the amendment checks out on its own.
  const v = verifier(manifests);
  const first = refusal(v.check(announce("bafkreifirst", m), justBefore()));
  await new Promise((r) => setTimeout(r, AMEND_MS / 3));
  await v.check(announce("bafkreiamended", amended), WITNESS);
  const superseded = await first;
  assert.equal(superseded.code, "superseded");
  assert.equal(superseded.blames, false);
  assert.equal(v.evidenceAgainst(0, PEERS[0]), undefined);
  // A peer whose event loop stalled while it waited blames no one.
  const stalled = await refusal(
    verifier(manifests).check(announce("bafkreifirst", m), {
      ...justBefore(),
      steadySince: () => false,
    }),
  );
  assert.equal(stalled.code, "cannot-check");
  // One seen only after the manifest was late for it: not owed.
  await verifier(manifests).check(announce("bafkreifirst", m), {
    ...justBefore(),
    preceding: ANNOUNCED.filter((d) => d.peer !== PEERS[1]),
  });
});

Deno.test("ManifestVerifier: an unserved delta is accepted when this peer did not hold it either as the manifest came", async () => {
  const unserved = {
    peer: PEERS[1],
    delta: ANNOUNCED[1].delta,
    reason: "unserved" as const,
    evidence: "",
  };
  const m = await manifestOf(PEERS[0], [PEERS[0], PEERS[2]], [unserved]);
  const amended = await manifestOf(PEERS[0], PEERS);
  const manifests = new Map([
    ["bafkreiunserved", m],
    ["bafkreiamended", amended],
  ]);
  const now = () => ({ ...WITNESS, amendBy: Date.now() + AMEND_MS });
  // Not held here when it came (its author served no one in time): the
  // withholder's loss, whatever this peer could fetch afterwards.
  const without = [PEERS[0], PEERS[2]];
  const back = await verifier(manifests, without).check(
    announce("bafkreiunserved", m),
    now(),
  );
  assert.deepEqual(back.excluded, [unserved]);
  // Held here when it came: the leader could have had it from this peer,
  // and must amend.
  const err = await refusal(
    verifier(manifests).check(announce("bafkreiunserved", m), now()),
  );
  assert.equal(err.code, "unjustified-exclusion");
  assert.equal(err.blames, true);
  const v = verifier(manifests);
  const first = refusal(v.check(announce("bafkreiunserved", m), now()));
  await v.check(announce("bafkreiamended", amended), WITNESS);
  assert.equal((await first).code, "superseded");
});

Deno.test("ManifestVerifier: a hasty manifest is refused", async () => {
  const m = await manifestOf(PEERS[0], PEERS);
  const v = verifier(new Map([["bafkreihasty", m]]));
  const err = await refusal(
    v.check(announce("bafkreihasty", m), { ...WITNESS, hasty: () => true }),
  );
  assert.equal(err.code, "hasty");
});

Deno.test(
  "ManifestVerifier: a leader is excluded only for a manifest this peer refused itself",
  FULL_TIER,
  async () => {
    // A refused a tampered manifest of B's: B's backup manifest may exclude
    // B, citing it.
    const honest = await manifestOf(PEERS[1], PEERS);
    const tampered = { ...honest, checkpoint: PARENT };
    const backup = await manifestOf(PEERS[2], [PEERS[0], PEERS[2]], [{
      peer: PEERS[1],
      delta: ANNOUNCED[1].delta,
      reason: "refused-manifest",
      evidence: "bafkreitampered",
    }]);
    const manifests = new Map([
      ["bafkreitampered", tampered],
      ["bafkreibackup", backup],
    ]);
    const v = verifier(manifests);
    const err = await refusal(
      v.check(announce("bafkreitampered", tampered), WITNESS),
    );
    assert.equal(err.code, "checkpoint-mismatch");
    await v.check(announce("bafkreibackup", backup), WITNESS);

    // A forged exclusion: C excludes A and B citing a manifest this peer
    // never saw announced (here, the honest one). It is not taken on trust.
    const forged = await manifestOf(PEERS[2], [PEERS[2]], [
      {
        peer: PEERS[0],
        delta: ANNOUNCED[0].delta,
        reason: "refused-manifest",
        evidence: "bafkreihonest",
      },
      {
        peer: PEERS[1],
        delta: ANNOUNCED[1].delta,
        reason: "refused-manifest",
        evidence: "bafkreihonest",
      },
    ]);
    manifests.set("bafkreihonest", honest).set("bafkreiforged", forged);
    const other = verifier(manifests);
    const refused = await refusal(
      other.check(announce("bafkreiforged", forged), WITNESS),
    );
    assert.equal(refused.code, "cannot-check");
    assert.equal(refused.blames, false);
    // Refused, blaming C, when this peer checked the cited manifest of B's
    // and found it honest.
    const forgedB = { ...forged, excluded: forged.excluded.slice(1) };
    manifests.set("bafkreiforgedb", forgedB);
    const seen = verifier(manifests);
    await seen.check(announce("bafkreihonest", honest), WITNESS);
    const unjustified = await refusal(
      seen.check(announce("bafkreiforgedb", forgedB), WITNESS),
    );
    assert.equal(unjustified.code, "unjustified-exclusion");
    assert.equal(unjustified.blames, true);
  },
);
