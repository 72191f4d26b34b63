import assert from "node:assert/strict";
import { sliceBounds } from "../../../protocol/aggregation/shards.ts";
import {
  groupsOf,
  plannedSlices,
  sliceProducers,
  sumGroupMembers,
} from "../../../protocol/round/slice_plan.ts";
import { sumGroupBounds } from "../../../protocol/aggregation/slice_screen.ts";
import { cidForBytes, cidToString } from "../../../protocol/content/cid.ts";
import type {
  ManifestAnnounce,
  SliceFaultNotice,
} from "../../../protocol/messages/messages.ts";
import {
  MANIFEST_VERSION,
  type RoundManifest,
} from "../../../protocol/round/round_manifest.ts";
import { cidOf, JOB, TEST_ADDRESS } from "../services/_fakes.ts";
import { ManifestRefused, ManifestVerifier } from "./manifest_check.ts";
import { fourPieceJob, publishSharded, witnessOf } from "./_verify_fixtures.ts";
import { SliceFaults } from "./slice_faults.ts";

const PEERS = Array.from({ length: 8 }, (_, i) => `12D3KooWPeer${i}`);
const PARENT = await cidOf("C(0)");
const TOKENS = 32;
const {
  spec,
  genesis: GENESIS,
  params: P,
  deltas: DELTAS,
  announced: ANNOUNCED,
} = await fourPieceJob(PEERS, PARENT, TOKENS, "slice-faults");
const K = plannedSlices(PEERS.length, P);
const PRODUCERS = sliceProducers(PARENT, PEERS[0], K, PEERS);

/**
 * PEERS[0]'s manifest of the round, update slice `tampered` changed (the
 * checkpoint built from it), and the blocks it names.
 */
async function round(tampered: number | null) {
  const deltas = PEERS.map((peer) => ({
    peer,
    tokens: TOKENS,
    delta: DELTAS.get(peer)!,
  }));
  const { shards, blocks, checkpoint } = await publishSharded(
    spec,
    { ckpt: GENESIS, cid: PARENT },
    deltas,
    (update) => {
      if (tampered !== null) update[tampered][3] += 1e-2;
    },
  );
  const m: RoundManifest = {
    v: MANIFEST_VERSION,
    job: JOB,
    round: 0,
    parent: PARENT,
    leader: PEERS[0],
    rule: spec.aggregation,
    contributions: ANNOUNCED.map((d) => ({
      peer: d.peer,
      account: TEST_ADDRESS,
      delta: d.delta,
      tokens: TOKENS,
      loss: 3,
    })),
    excluded: [],
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
    manifest: await cidOf(`manifest ${tampered}`),
    checkpoint: m.checkpoint,
    rank: 0,
  };
  return { m, announce, blocks };
}

/**
 * A verifier that produced `own` slices of the plan (honest CIDs, so it
 * draws no others), with `faults` the notices it holds.
 */
function verifier(
  r: Awaited<ReturnType<typeof round>> | Awaited<ReturnType<typeof round>>[],
  honest: RoundManifest,
  own: readonly number[],
  faults: SliceFaults,
  noted: string[],
  sent: number[] = [],
  self = PEERS[7],
) {
  const bounds = sliceBounds(P, K);
  const rounds = Array.isArray(r) ? r : [r];
  return new ManifestVerifier({
    jobId: JOB,
    spec,
    self,
    delta: () => Promise.resolve(new Float32Array(P)),
    root: () => Promise.resolve([]),
    slice: (d, _, k, j) => {
      assert.equal(k, K);
      return Promise.resolve(
        DELTAS.get(d.peer)!.slice(bounds[j], bounds[j + 1]),
      );
    },
    produced: () =>
      new Map(own.map((j) => [j, {
        sums: honest.shards!.sums[j],
        update: honest.shards!.update[j],
      }])),
    faults: (cid) => faults.of(cid),
    fault: (_, j) => {
      sent.push(j);
      return Promise.resolve();
    },
    falseFault: (_, j, peer) => noted.push(`${peer} ${j}`),
    block: (cid) => {
      const bytes = rounds.find((x) => x.blocks.has(cid))?.blocks.get(cid);
      return bytes ? Promise.resolve(bytes) : Promise.reject(new Error(cid));
    },
    manifest: (a) =>
      Promise.resolve(
        rounds.find((x) => x.announce.manifest === a.manifest)!.m,
      ),
    held: (cid) => ({ cid, ckpt: GENESIS }),
    store: () => Promise.resolve(),
    noteDelta: () => {},
  });
}

const WITNESS = witnessOf(ANNOUNCED);

function notice(
  m: ManifestAnnounce,
  peer: string,
  j: number,
): SliceFaultNotice {
  return {
    v: 1,
    type: "fault",
    peer,
    job: JOB,
    round: 0,
    parent: PARENT,
    manifest: m.manifest,
    slice: j,
  };
}

Deno.test("a tampered slice no verifier drew is refused by every verifier once one of its producers says so", async () => {
  assert.ok(K >= 3, `${K} slices`);
  const honest = await round(null);
  const bad = await round(2);
  const own = [0, 1];
  // Drawing nothing past its own two slices, a verifier misses slice 2.
  const none = new SliceFaults();
  const passed = await verifier(bad, honest.m, own, none, []).check(
    bad.announce,
    WITNESS,
  );
  assert.equal(passed.checkpoint, bad.m.checkpoint);
  // A producer of slice 2 says it differs: the verifier recomputes it.
  const faults = new SliceFaults();
  faults.take(notice(bad.announce, PRODUCERS[2][0], 2));
  const err = await verifier(bad, honest.m, own, faults, []).check(
    bad.announce,
    WITNESS,
  ).then(() => null, (e) => e);
  assert.ok(err instanceof ManifestRefused, String(err));
  assert.equal(err.code, "slice-mismatch");
  assert.match(err.message, new RegExp(`as ${PRODUCERS[2][0]} said`));
});

Deno.test("a producer that finds its slice tampered sends a fault notice as it refuses", async () => {
  const honest = await round(null);
  const bad = await round(2);
  const sent: number[] = [];
  const err = await verifier(bad, honest.m, [0, 2], new SliceFaults(), [], sent)
    .check(bad.announce, WITNESS).then(() => null, (e) => e);
  assert.ok(err instanceof ManifestRefused, String(err));
  assert.equal(err.code, "slice-mismatch");
  assert.deepEqual(sent, [2]);
});

Deno.test("a fault notice about a slice found as the manifest names it counts against its sender, who is not heard again", async () => {
  const honest = await round(null);
  const bad = await round(3);
  const outsider = PEERS.find((p) =>
    !PRODUCERS[2].includes(p) && !PRODUCERS[3].includes(p)
  )!;
  const faults = new SliceFaults();
  faults.take(notice(honest.announce, PRODUCERS[2][1], 2));
  faults.take(notice(honest.announce, outsider, 2));
  const noted: string[] = [];
  const v = verifier([honest, bad], honest.m, [0, 1], faults, noted);
  const back = await v.check(honest.announce, WITNESS);
  assert.equal(back.checkpoint, honest.m.checkpoint);
  assert.deepEqual(
    noted.sort(),
    [`${PRODUCERS[2][1]} 2`, `${outsider} 2`].sort(),
  );
  // The outsider now says, of a manifest whose slice 3 is tampered, that
  // it is: it is not heard, and the verifier draws nothing past its own.
  faults.take(notice(bad.announce, outsider, 3));
  const passed = await v.check(bad.announce, WITNESS);
  assert.equal(passed.checkpoint, bad.m.checkpoint);
});

Deno.test("a verifier that drew a tampered slice sends a fault notice, and any peer's first notice a manifest is heard", async () => {
  const honest = await round(null);
  const bad = await round(3);
  const outsider = PEERS.find((p) =>
    !PRODUCERS[0].includes(p) && !PRODUCERS[3].includes(p)
  )!;
  const faults = new SliceFaults();
  // Its first notice, about an honest slice, is heard and found false; its
  // second, about the tampered one, is not heard (one a manifest).
  faults.take(notice(bad.announce, outsider, 0));
  faults.take(notice(bad.announce, outsider, 3));
  const noted: string[] = [];
  assert.equal(
    (await verifier(bad, honest.m, [1, 2], faults, noted).check(
      bad.announce,
      WITNESS,
    )).checkpoint,
    bad.m.checkpoint,
  );
  assert.deepEqual(noted, [`${outsider} 0`]);
  // A verifier that produced nothing draws two slices; one that draws
  // slice 3 refuses and says so.
  for (let tries = 0;; tries++) {
    const sent: number[] = [];
    const err = await verifier(bad, honest.m, [], new SliceFaults(), [], sent)
      .check(bad.announce, WITNESS).then(() => null, (e) => e);
    if (err === null) {
      assert.ok(tries < 50, "slice 3 never drawn");
      continue;
    }
    assert.equal(err.code, "slice-mismatch");
    assert.deepEqual(sent, [3]);
    break;
  }
});

Deno.test("a notice about a slice the verifier checked already counts against its sender, without a fetch", async () => {
  const honest = await round(null);
  const faults = new SliceFaults();
  // Slice 0 is this verifier's own, checked against what it computed.
  faults.take(notice(honest.announce, PRODUCERS[0][0], 0));
  const noted: string[] = [];
  const back = await verifier(honest, honest.m, [0, 1], faults, noted).check(
    honest.announce,
    WITNESS,
  );
  assert.equal(back.checkpoint, honest.m.checkpoint);
  assert.deepEqual(noted, [`${PRODUCERS[0][0]} 0`]);
});

Deno.test("a verifier waits for fault notices until faultsBy, and takes one that comes meanwhile", async () => {
  const honest = await round(null);
  const bad = await round(2);
  const faults = new SliceFaults();
  setTimeout(
    () => faults.take(notice(bad.announce, PRODUCERS[2][0], 2)),
    150,
  );
  const err = await verifier(bad, honest.m, [0, 1], faults, []).check(
    bad.announce,
    { ...WITNESS, faultsBy: Date.now() + 600 },
  ).then(() => null, (e) => e);
  assert.ok(err instanceof ManifestRefused, String(err));
  assert.equal(err.code, "slice-mismatch");
});

/**
 * PEERS[0]'s honest manifest with group `i`'s total of the sums changed
 * (the median's Σc², +1%): the slices and the checkpoint are as honest.
 */
async function groupTampered(i: number) {
  const r = await round(null);
  const bytes = r.blocks.get(r.m.shards!.groups[i])!.slice();
  const view = new DataView(bytes.buffer);
  view.setFloat64(8, view.getFloat64(8, true) * 1.01, true);
  const cid = cidToString(await cidForBytes(bytes));
  r.blocks.set(cid, bytes);
  const groups = [...r.m.shards!.groups];
  groups[i] = cid;
  const m: RoundManifest = { ...r.m, shards: { ...r.m.shards!, groups } };
  return {
    m,
    blocks: r.blocks,
    announce: { ...r.announce, manifest: await cidOf(`group ${i}`) },
  };
}

Deno.test("a group's total of the sums that is not its slices' is refused by its members, who say so, and by any verifier a notice reaches", async () => {
  const groups = sumGroupMembers(PRODUCERS);
  assert.ok(groups.length >= 2, `${groups.length} groups`);
  // A verifier in one group of two.
  const self = PEERS.find((p) => groupsOf(PRODUCERS, p).length === 1)!;
  const mine = groupsOf(PRODUCERS, self);
  const other = groups.findIndex((_, i) => !mine.includes(i));
  const honest = await round(null);
  const check = (
    r: Awaited<ReturnType<typeof round>>,
    faults = new SliceFaults(),
    noted: string[] = [],
    sent: number[] = [],
  ) =>
    verifier(r, honest.m, [], faults, noted, sent, self)
      .check(r.announce, WITNESS).then(() => null, (e) => e);
  // A member of the group adds its slices' sums and refuses at once.
  const bad = await groupTampered(mine[0]);
  const sent: number[] = [];
  const err = await check(bad, new SliceFaults(), [], sent);
  assert.ok(err instanceof ManifestRefused, String(err));
  assert.equal(err.code, "slice-mismatch");
  assert.match(err.message, new RegExp(`group ${mine[0]}'s sums`));
  assert.deepEqual(sent, [K + mine[0]]);
  // Another group's: missed alone, refused once a member says so.
  const far = await groupTampered(other);
  // Its draws check slices, not the groups it is not in: it misses the
  // other group's lie alone...
  assert.equal(await check(far), null);
  // ...and refuses it once a member says so.
  const faults = new SliceFaults();
  const member = groups[other].find((p) => p !== self)!;
  faults.take(notice(far.announce, member, K + other));
  const told = await check(far, faults);
  assert.ok(told instanceof ManifestRefused, String(told));
  assert.match(told.message, new RegExp(`as ${member} said`));
  // A member's notice about an honest group counts against it.
  const noted: string[] = [];
  const lies = new SliceFaults();
  lies.take(notice(honest.announce, member, K + other));
  assert.equal(await check(honest, lies, noted), null);
  assert.deepEqual(noted, [`${member} ${K + other}`]);
});

Deno.test("a verifier fetches each group's total and its own groups' slices' sums, not every slice's sums", async () => {
  const honest = await round(null);
  const fetched: string[] = [];
  const counting = {
    ...honest,
    blocks: new Proxy(honest.blocks, {
      get(target, key) {
        if (key === "get") {
          return (cid: string) => {
            fetched.push(cid);
            return target.get(cid);
          };
        }
        const v = Reflect.get(target, key);
        return typeof v === "function" ? v.bind(target) : v;
      },
    }),
  };
  // A peer in one group, its own slices 0 and 1: nothing drawn past them.
  const self = PEERS.find((p) => groupsOf(PRODUCERS, p).length === 1)!;
  await verifier(counting, honest.m, [0, 1], new SliceFaults(), [], [], self)
    .check(honest.announce, WITNESS);
  const shards = honest.m.shards!;
  const bounds = sumGroupBounds(K);
  const ownSums = groupsOf(PRODUCERS, self).flatMap((i) =>
    shards.sums.slice(bounds[i], bounds[i + 1])
  );
  const sums = new Set(fetched.filter((c) => shards.sums.includes(c)));
  assert.deepEqual([...sums].sort(), [...new Set(ownSums)].sort());
  assert.ok(sums.size < K, `${sums.size} of ${K} slices' sums fetched`);
  for (const g of shards.groups) assert.ok(fetched.includes(g));
});

Deno.test("SliceFaults keeps each sender's notices once, a few a manifest", () => {
  const faults = new SliceFaults();
  const m = { manifest: "bafkreim" } as ManifestAnnounce;
  for (let j = 0; j < 20; j++) faults.take(notice(m, "a", j));
  faults.take(notice(m, "a", 0));
  faults.take(notice(m, "b", 0));
  const of = faults.of("bafkreim");
  assert.equal(of.size, 8);
  assert.deepEqual(of.get(0), ["a", "b"]);
  assert.equal(faults.of("bafkreiother").size, 0);
});
