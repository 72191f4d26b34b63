import assert from "node:assert/strict";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import type { ManifestAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";
import {
  cidOf,
  JOB,
  manifestFixture,
  PEERS,
  SPEC,
  stateIn,
} from "../services/_fakes.ts";
import { RoundLedger } from "../records/ledger.ts";
import { ManifestRefused, type Witness } from "./manifest_check.ts";
import { verifyManifest } from "./verify.ts";
import { DELTA } from "../../../protocol/codec/_message_fixtures.ts";

const PARENT = await cidOf("C(0)");
/** A delta of PEERS[0]'s for the round. */
const DELTA_A = { ...DELTA, peer: PEERS[0], round: 0, parent: PARENT };
const MANIFEST = await manifestFixture({ parent: PARENT, contributions: [] });
const ANNOUNCE: ManifestAnnounce = {
  v: 1,
  type: "manifest",
  peer: PEERS[1],
  job: JOB,
  round: 0,
  parent: PARENT,
  manifest: await cidOf("manifest"),
  checkpoint: MANIFEST.checkpoint,
  rank: 0,
};

function run(
  check: (w: Witness) => Promise<RoundManifest>,
  steady = true,
  /** How long before the manifest the delta first arrived, ms. */
  arrivedBefore = 0,
  /** How long this peer had been watching when the manifest came, ms. */
  watchingFor = 60_000,
) {
  const events: RoundEvent[] = [];
  const remembered: string[] = [];
  const ledger = new RoundLedger(SPEC, 10);
  const witnesses: Witness[] = [];
  const now = Date.now();
  const done = verifyManifest({
    verifier: {
      check: (_m, w) => {
        witnesses.push(w);
        return check(w);
      },
    },
    loop: { steady: () => steady, since: now - watchingFor },
    state: () => stateIn(0, PARENT),
    ledger,
    feed: (e) => events.push(e),
    remember: (cid) => remembered.push(cid),
  }, {
    type: "verify",
    manifest: ANNOUNCE,
    announced: [DELTA_A],
    // A delta that came with the manifest: hasty, on a steady loop.
    seenAt: new Map([[PEERS[0], now]]),
    arrivedAt: new Map([[PEERS[0], now - arrivedBefore]]),
    at: now,
  });
  return { done, events, remembered, ledger, witnesses };
}

Deno.test("verifyManifest keeps a manifest that checks out and says so", async () => {
  const r = run(() => Promise.resolve(MANIFEST));
  await r.done;
  assert.deepEqual(r.remembered, [ANNOUNCE.manifest]);
  assert.deepEqual(r.events, [{ type: "verified", msg: ANNOUNCE, ok: true }]);
  assert.equal(r.ledger.refusals.length, 0);
});

Deno.test("verifyManifest counts a refusal under its code and feeds it back", async () => {
  const r = run(() =>
    Promise.reject(new ManifestRefused("censored", "left out a delta"))
  );
  await r.done;
  assert.deepEqual(r.remembered, []);
  assert.deepEqual(r.events, [{
    type: "verified",
    msg: ANNOUNCE,
    ok: false,
    reason: "left out a delta",
  }]);
  assert.deepEqual(r.ledger.refusals.map((x) => [x.what, x.reason]), [[
    "manifest",
    "censored",
  ]]);
});

Deno.test("verifyManifest counts a manifest it cannot read as unreadable", async () => {
  const r = run(() => Promise.reject(new Error("fetch timed out")));
  await r.done;
  assert.equal(r.ledger.refusals[0].reason, "unreadable");
});

Deno.test("verifyManifest passes no timing verdict across a stall of its own loop", async () => {
  const steady = run(() => Promise.resolve(MANIFEST));
  await steady.done;
  assert.equal(steady.witnesses[0].hasty([PEERS[0]]), true);
  const stalled = run(() => Promise.resolve(MANIFEST), false);
  await stalled.done;
  assert.equal(stalled.witnesses[0].hasty([PEERS[0]]), false);
});

Deno.test("verifyManifest judges haste from when a delta first arrived, before its round began here", async () => {
  // Seen as the round began (with the manifest), but it had arrived 5 s
  // earlier: the leader may have had it as long.
  const r = run(() => Promise.resolve(MANIFEST), true, 5_000);
  await r.done;
  assert.equal(r.witnesses[0].hasty([PEERS[0]]), false);
  // Still expected in the manifest only from when the round began here.
  assert.deepEqual(r.witnesses[0].expected, []);
});

Deno.test("verifyManifest passes no haste verdict on deltas heard while it was catching up after a (re)start", async () => {
  // Started 1 s before: a delta heard now may have been out long before,
  // and was only sent again.
  const restarted = run(() => Promise.resolve(MANIFEST), true, 0, 1_000);
  await restarted.done;
  assert.equal(restarted.witnesses[0].hasty([PEERS[0]]), false);
  const watching = run(() => Promise.resolve(MANIFEST), true, 0, 30_000);
  await watching.done;
  assert.equal(watching.witnesses[0].hasty([PEERS[0]]), true);
});

Deno.test("verifyManifest does not count a manifest its leader amended as refused", async () => {
  const r = run(() =>
    Promise.reject(new ManifestRefused("superseded", "its leader amended it"))
  );
  await r.done;
  assert.deepEqual(r.remembered, []);
  assert.equal(r.events.length, 1);
  assert.equal((r.events[0] as { ok: boolean }).ok, false);
  assert.deepEqual(r.ledger.refusals, []);
});

Deno.test("verifyManifest owes an amendment for any delta that came before the manifest", async () => {
  const r = run(() => Promise.resolve(MANIFEST));
  await r.done;
  const w = r.witnesses[0];
  // The delta came with the manifest: not well before it, but before.
  assert.deepEqual(w.expected, []);
  assert.deepEqual(w.preceding, [DELTA_A]);
  assert.ok(w.amendBy > Date.now());
  assert.equal(w.steadySince(), true);
});

Deno.test("verifyManifest checks again what it could not fetch, within the round, and never a refusal that blames", async () => {
  let calls = 0;
  const flaky = run(() =>
    ++calls === 1
      ? Promise.reject(new Error("Cannot fetch blob: no provider delivered it"))
      : Promise.resolve(MANIFEST)
  );
  await flaky.done;
  assert.equal(calls, 2);
  assert.deepEqual(flaky.events, [{
    type: "verified",
    msg: ANNOUNCE,
    ok: true,
  }]);
  assert.equal(flaky.ledger.refusals.length, 0);
  let refusals = 0;
  const refused = run(() => {
    refusals++;
    return Promise.reject(new ManifestRefused("slice-mismatch", "differs"));
  });
  await refused.done;
  assert.equal(refusals, 1);
});
