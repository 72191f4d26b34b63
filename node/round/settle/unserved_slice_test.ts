import assert from "node:assert/strict";
import { sliceBounds } from "../../../protocol/aggregation/shards.ts";
import { plannedSlices } from "../../../protocol/round/slice_plan.ts";
import { sumGroupBounds } from "../../../protocol/aggregation/slice_screen.ts";
import type { ManifestAnnounce } from "../../../protocol/messages/messages.ts";
import {
  MANIFEST_VERSION,
  type RoundManifest,
  unservedEvidence,
} from "../../../protocol/round/round_manifest.ts";
import { cidOf, JOB, TEST_ADDRESS } from "../services/_fakes.ts";
import { ManifestRefused, ManifestVerifier } from "./manifest_check.ts";
import { fourPieceJob, publishSharded, witnessOf } from "./_verify_fixtures.ts";
import { SliceFaults } from "./slice_faults.ts";

// Nine peers, one left out as unserved: the eight listed are led by slices.
const PEERS = Array.from({ length: 9 }, (_, i) => `12D3KooWPeer${i}`);
const LISTED = PEERS.slice(0, 8);
const WITHHELD = PEERS[8];
const PARENT = await cidOf("C(0)");
const TOKENS = 32;
const {
  spec,
  genesis: GENESIS,
  params: P,
  deltas: DELTAS,
  announced: ANNOUNCED,
} = await fourPieceJob(PEERS, PARENT, TOKENS, "unserved-slice");
const K = plannedSlices(LISTED.length, P);
// The slice the leader says it could not read, of the plan of all nine.
const PLAN_K = plannedSlices(PEERS.length, P);
const NAMED = 1;
const WITNESS = witnessOf(ANNOUNCED);

/** PEERS[0]'s manifest of the eight, WITHHELD left out as unserved. */
async function round() {
  const { shards, blocks, checkpoint } = await publishSharded(
    spec,
    { ckpt: GENESIS, cid: PARENT },
    LISTED.map((peer) => ({ peer, tokens: TOKENS, delta: DELTAS.get(peer)! })),
  );
  const m: RoundManifest = {
    v: MANIFEST_VERSION,
    job: JOB,
    round: 0,
    parent: PARENT,
    leader: PEERS[0],
    rule: spec.aggregation,
    contributions: ANNOUNCED.slice(0, 8).map((d) => ({
      peer: d.peer,
      account: TEST_ADDRESS,
      delta: d.delta,
      tokens: TOKENS,
      loss: 3,
    })),
    excluded: [{
      peer: WITHHELD,
      delta: ANNOUNCED[8].delta,
      reason: "unserved",
      evidence: unservedEvidence(PLAN_K, NAMED),
    }],
    checkpoint,
    shards,
  };
  const announce: ManifestAnnounce = {
    v: 1,
    type: "manifest",
    peer: PEERS[0],
    job: JOB,
    round: 0,
    parent: PARENT,
    manifest: await cidOf("manifest unserved"),
    checkpoint: m.checkpoint,
    rank: 0,
  };
  return { m, announce, blocks };
}

/**
 * PEERS[7] verifying: `read` whether it read the named slice as a
 * producer, `serving` the peers that serve WITHHELD's slices.
 */
function verifier(
  r: Awaited<ReturnType<typeof round>>,
  o: {
    read?: boolean;
    serving?: readonly string[];
    faults?: SliceFaults;
  } = {},
) {
  const bounds = (k: number) => sliceBounds(P, k);
  return new ManifestVerifier({
    jobId: JOB,
    spec,
    self: PEERS[7],
    delta: () => Promise.reject(new Error("not held")),
    root: () => Promise.resolve([]),
    slice: (d, providers, k, j) => {
      if (
        d.peer === WITHHELD &&
        !providers.some((p) => o.serving?.includes(p))
      ) {
        return Promise.reject(new Error(`${d.peer} served no one`));
      }
      const b = bounds(k);
      return Promise.resolve(DELTAS.get(d.peer)!.slice(b[j], b[j + 1]));
    },
    produced: () => new Map(),
    readSliceOf: (round, parent, leader, k, j, peer) =>
      (o.read ?? false) && round === 0 && parent === PARENT &&
      leader === PEERS[0] && k === PLAN_K && j === NAMED && peer === WITHHELD,
    faults: (cid) => (o.faults ?? new SliceFaults()).of(cid),
    fault: () => Promise.resolve(),
    block: (cid) => {
      const bytes = r.blocks.get(cid);
      return bytes ? Promise.resolve(bytes) : Promise.reject(new Error(cid));
    },
    manifest: () => Promise.resolve(r.m),
    held: (cid) => ({ cid, ckpt: GENESIS }),
    store: () => Promise.resolve(),
    noteDelta: () => {},
  });
}

/** Its verdict, given until the leader's amendment is due. */
const check = (v: ManifestVerifier, r: Awaited<ReturnType<typeof round>>) =>
  v.check(r.announce, { ...WITNESS, amendBy: Date.now() + 200 })
    .then(() => null, (e) => e);

Deno.test("an unserved exclusion names the slice its leader could not read; a producer that read it is owed an amendment", async () => {
  assert.ok(K >= 2 && PLAN_K > NAMED, `${K}, ${PLAN_K}`);
  const r = await round();
  // A verifier that did not read the slice has nothing to hold against it.
  assert.equal(await check(verifier(r), r), null);
  // One that read it, as a producer, would have served it.
  const err = await check(verifier(r, { read: true }), r);
  assert.ok(err instanceof ManifestRefused, String(err));
  assert.equal(err.blames, true);
  assert.match(err.message, new RegExp(WITHHELD));
});

Deno.test("a slice served to a verifier after the manifest is not held against the leader: a withholder serving all but the leader cannot have it refused", async () => {
  const r = await round();
  // The withholder serves everyone now, late, and says in a notice that it
  // read the slice named (the part after the slices and their groups, as
  // an exclusion's notice was once numbered): it is not heard.
  const faults = new SliceFaults();
  faults.take({
    v: 1,
    type: "fault",
    peer: WITHHELD,
    job: JOB,
    round: 0,
    parent: PARENT,
    manifest: r.announce.manifest,
    slice: K + sumGroupBounds(K).length - 1,
  });
  assert.equal(
    await check(verifier(r, { serving: PEERS, faults }), r),
    null,
  );
});
