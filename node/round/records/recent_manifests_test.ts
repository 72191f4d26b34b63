import assert from "node:assert/strict";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import { RecentManifests } from "./recent_manifests.ts";

const manifest = (round: number, checkpoint: string) =>
  ({ round, checkpoint }) as RoundManifest;

Deno.test("RecentManifests finds a manifest by CID or by the round it commits, and forgets the oldest", () => {
  const held = new RecentManifests(2);
  held.remember("m0", manifest(0, "c1"));
  held.remember("m1", manifest(1, "c2"));
  held.remember("m1b", manifest(1, "c2b"));
  assert.equal(held.get("m0"), undefined);
  assert.equal(held.committing(0, "c1"), undefined);
  assert.equal(held.get("m1")?.checkpoint, "c2");
  assert.equal(held.committing(1, "c2b"), held.get("m1b"));
  assert.equal(held.committing(1, "c9"), undefined);
});
