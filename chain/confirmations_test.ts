import assert from "node:assert/strict";
import {
  confirmationsNote,
  confirmedBlock,
  MAX_CONFIRMATIONS,
  REMOTE_CONFIRMATIONS,
  resolveConfirmations,
} from "./confirmations.ts";

Deno.test("confirmedBlock: latest − N, null while the chain is shorter", () => {
  assert.equal(confirmedBlock(10n, 0), 10n);
  assert.equal(confirmedBlock(10n, 3), 7n);
  assert.equal(confirmedBlock(3n, 3), 0n);
  assert.equal(confirmedBlock(2n, 3), null);
  for (const bad of [-1, 1.5, NaN]) {
    assert.throws(() => confirmedBlock(10n, bad), RangeError);
  }
});

Deno.test("resolveConfirmations: a setting wins; auto is 0 on anvil and hardhat, REMOTE elsewhere", () => {
  assert.equal(resolveConfirmations(null, 31337), 0);
  assert.equal(resolveConfirmations(null, 1337), 0);
  assert.equal(resolveConfirmations(null, 1), REMOTE_CONFIRMATIONS);
  assert.equal(resolveConfirmations(null, 11155111), REMOTE_CONFIRMATIONS);
  assert.equal(resolveConfirmations(0, 1), 0);
  assert.equal(resolveConfirmations(5, 31337), 5);
  assert.ok(REMOTE_CONFIRMATIONS <= MAX_CONFIRMATIONS);
});

Deno.test("confirmationsNote: silent at 0; on a dev chain it says blocks must be mined", () => {
  assert.equal(confirmationsNote(0, 31337), null);
  assert.equal(
    confirmationsNote(3, 1),
    "chain: a round's commit counts once 3 block(s) are mined on top of it",
  );
  assert.match(confirmationsNote(2, 31337)!, /--block-time 1/);
});
