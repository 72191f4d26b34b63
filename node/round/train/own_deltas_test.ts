import assert from "node:assert/strict";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";
import { withTempDir } from "../../../tests/_temp_dir.ts";
import { fileNotes } from "../../store/state_notes.ts";
import { DELTA } from "../../../protocol/codec/_message_fixtures.ts";
import { MemoryGossip } from "../services/_fakes.ts";
import { ANNOUNCED_FILE, KEEP_ROUNDS, OwnDeltas } from "./own_deltas.ts";
import { RoundPublisher } from "../services/publisher.ts";

/** A round's announcement: the shared fixture's, per round. */
const announcement = (round: number): DeltaAnnounce => ({
  ...DELTA,
  round,
  parent: `bafkreiparent${round}`,
  delta: `bafkreidelta${round}`,
});

/** A peer's OwnDeltas on `dir`, as after a (re)start. */
function peer(dir: string, stored: Set<string>, memberBefore = false) {
  const gossip = new MemoryGossip();
  const events: RoundEvent[] = [];
  const lines: string[] = [];
  const own = new OwnDeltas({
    notes: fileNotes(dir),
    publisher: new RoundPublisher({
      gossip,
      peerId: "12D3KooWAAAA",
      jobId: "bafkreijob",
      noteSent: () => {},
    }),
    has: (cid) => Promise.resolve(stored.has(cid)),
    memberBefore,
    feed: (e) => events.push(e),
    log: (l) => lines.push(l),
  });
  return { own, gossip, events, lines };
}

Deno.test("own deltas: after a restart, a round already announced is announced again, the same, not retrained", () =>
  withTempDir("own-deltas", async (dir) => {
    const stored = new Set(["bafkreidelta3"]);
    const before = peer(dir, stored);
    assert.equal(await before.own.resume(3, "bafkreiparent3"), false);
    await before.own.record(announcement(3));

    const after = peer(dir, stored);
    assert.equal(await after.own.resume(3, "bafkreiparent3"), true);
    assert.deepEqual(after.gossip.sent, [announcement(3)]);
    assert.deepEqual(after.events, [
      { type: "trained", delta: announcement(3) },
    ]);
    assert.match(after.lines[0], /announcing again delta bafkreidelta3/);
    // Another round, or the same round from another parent: train.
    assert.equal(await after.own.resume(4, "bafkreiparent4"), false);
    assert.equal(await after.own.resume(3, "bafkreiother"), false);
  }));

Deno.test("own deltas: a round whose delta is gone is sat out, never announced anew", () =>
  withTempDir("own-deltas", async (dir) => {
    await peer(dir, new Set()).own.record(announcement(5));
    const after = peer(dir, new Set());
    assert.equal(await after.own.resume(5, "bafkreiparent5"), true);
    assert.deepEqual(after.gossip.sent, []);
    assert.deepEqual(after.events, []);
    assert.match(after.lines[0], /sitting it out/);
  }));

Deno.test("own deltas: the last rounds are kept; a damaged file is reported, not fatal", () =>
  withTempDir("own-deltas", async (dir) => {
    const own = peer(dir, new Set()).own;
    for (let r = 0; r < KEEP_ROUNDS + 4; r++) await own.record(announcement(r));
    const kept = JSON.parse(
      await Deno.readTextFile(`${dir}/${ANNOUNCED_FILE}`),
    ) as DeltaAnnounce[];
    assert.deepEqual(
      kept.map((m) => m.round),
      Array.from({ length: KEEP_ROUNDS }, (_, i) => i + 4),
    );
    await Deno.writeTextFile(`${dir}/${ANNOUNCED_FILE}`, "[{oops");
    const damaged = peer(dir, new Set());
    assert.equal(await damaged.own.resume(11, "bafkreiparent11"), false);
    assert.match(damaged.lines[0], /announced\.json is unreadable/);
  }));

Deno.test("own deltas: a member before this start whose notes hold no announcement (a wiped store) sits out the first round asked, then trains", () =>
  withTempDir("own-deltas", async (dir) => {
    const wiped = peer(dir, new Set(), true);
    assert.equal(await wiped.own.resume(6, "bafkreiparent6"), true);
    assert.match(wiped.lines[0], /may have announced this round already/);
    assert.deepEqual(wiped.gossip.sent, []);
    assert.equal(await wiped.own.resume(7, "bafkreiparent7"), false);
    // A first start, or a member whose notes kept its announcements: train.
    assert.equal(
      await peer(dir, new Set()).own.resume(6, "bafkreiparent6"),
      false,
    );
    await peer(dir, new Set()).own.record(announcement(5));
    assert.equal(
      await peer(dir, new Set(), true).own.resume(6, "bafkreiparent6"),
      false,
    );
  }));
