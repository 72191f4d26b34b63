import assert from "node:assert/strict";
import { mayTrainAhead, onCommit, onPreview } from "./ahead_rules.ts";

const idle = { ahead: null, running: false, machineRound: 4 };

Deno.test("ahead rules: a preview of C(r) starts round r early, moves steps ahead onto it, or does nothing", () => {
  assert.equal(onPreview(idle, 5), "start");
  // The machine has left round r − 1 (a preview finished late).
  assert.equal(onPreview({ ...idle, machineRound: 5 }, 5), "ignore");
  // Steps ahead of round 5 without their base move onto it; with one, or
  // of another round, nothing starts beside them.
  const ahead = { round: 5, based: false };
  assert.equal(onPreview({ ...idle, ahead }, 5), "move");
  assert.equal(
    onPreview({ ...idle, ahead: { ...ahead, based: true } }, 5),
    "ignore",
  );
  assert.equal(
    onPreview({ ...idle, ahead: { round: 6, based: false } }, 5),
    "ignore",
  );
  assert.equal(onPreview({ ...idle, running: true }, 5), "ignore");
});

Deno.test("ahead rules: only an idle peer that can go on from its round r − 1 trains ahead", () => {
  assert.ok(mayTrainAhead(idle, true));
  assert.ok(!mayTrainAhead(idle, false));
  assert.ok(!mayTrainAhead({ ...idle, running: true }, true));
  assert.ok(
    !mayTrainAhead({ ...idle, ahead: { round: 5, based: false } }, true),
  );
});

Deno.test("ahead rules: steps stand only on the very checkpoint committed, from a start chosen in time that stands", () => {
  assert.deepEqual(onCommit(5, "c5", "c5", true, true), { kind: "keep" });
  const other = onCommit(5, "c5", "c5x", true, true);
  assert.deepEqual(other, {
    kind: "retrain",
    reason: "round 5 starts from c5x, not the previewed c5",
    keepStart: true,
  });
  const unlisted = onCommit(5, "c5", "c5", true, false);
  assert.deepEqual(unlisted, {
    kind: "retrain",
    reason: "round 4's delta is not listed by the manifest of c5",
    keepStart: false,
  });
  const unchosen = onCommit(5, "c5", "c5", false, true);
  assert.deepEqual(unchosen, {
    kind: "retrain",
    reason: "round 5 was committed before its early start was chosen",
    keepStart: false,
  });
});
