import assert from "node:assert/strict";
import { decodeAbiParameters } from "viem";
import { WORK_COMMITMENT_TYPES } from "../../../chain/work_commitment.ts";
import { DELTA } from "../../../protocol/codec/_message_fixtures.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import { MemoryChain, signedDelta, TEST_ADDRESS } from "./_fakes.ts";
import {
  CommitmentBook,
  deltaCommitment,
  signedByAccount,
} from "./commitments.ts";

// A step trains on 256 tokens: the fixture's 8192 are 32 steps of 40.
const SHAPE = { innerSteps: 40, batchSize: 4, contextLength: 64 };
const { domain } = new MemoryChain();
const signed = (over: Partial<DeltaAnnounce> = {}) => signedDelta(over, SHAPE);

Deno.test("a delta's commitment names its round, parent, data, delta, steps, tokens and trajectory", () => {
  const c = deltaCommitment(DELTA, SHAPE);
  assert.equal(c.round, DELTA.round);
  assert.equal(c.steps, 32);
  // 32 steps keep the 13 bounds of 40's 16 segments below 32, then 32.
  assert.equal(c.segments, 13);
  assert.equal(c.tokens, BigInt(DELTA.tokens));
  assert.equal(c.data, DELTA.data);
  assert.equal(c.trajectory, DELTA.trajectory);
});

Deno.test("signedByAccount accepts the account's signature and nothing else", async () => {
  const msg = await signed();
  assert.ok(await signedByAccount(domain, msg, SHAPE));
  // Any field changed after signing, another step count for its tokens,
  // another account, another domain.
  assert.ok(!(await signedByAccount(domain, { ...msg, tokens: 1e9 }, SHAPE)));
  assert.ok(
    !(await signedByAccount(domain, { ...msg, kernel: "webgpu" }, SHAPE)),
  );
  assert.ok(
    !(await signedByAccount(domain, msg, { ...SHAPE, batchSize: 8 })),
  );
  assert.ok(
    !(await signedByAccount(domain, {
      ...msg,
      account: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    }, SHAPE)),
  );
  assert.ok(!(await signedByAccount({ ...domain, chainId: 1 }, msg, SHAPE)));
  assert.ok(
    !(await signedByAccount(domain, {
      ...msg,
      signature: `0x${"00".repeat(65)}`,
    }, SHAPE)),
  );
});

const NOW = DELTA.round;

Deno.test("the book reports two different commitments of one round once, and nothing else", async () => {
  const book = new CommitmentBook(SHAPE);
  const first = await signed();
  assert.ok(!book.isFirst(first));
  assert.equal(book.note(first, NOW), null);
  assert.ok(book.isFirst(first), "a repeat needs no second recovery");
  assert.equal(
    book.note(first, NOW),
    null,
    "a repeat of the same announcement",
  );
  assert.equal(book.note(await signed({ round: NOW + 1 }), NOW), null);
  const twin = await signed({ trajectory: `0x${"ef".repeat(32)}` });
  assert.ok(!book.isFirst(twin));
  const e = book.note(twin, NOW);
  assert.ok(e);
  assert.equal(e.round, NOW);
  assert.equal(e.account, TEST_ADDRESS);
  const tuple = {
    type: "tuple",
    components: WORK_COMMITMENT_TYPES.WorkCommitment,
  } as const;
  const [a, sigA, b, sigB] = decodeAbiParameters(
    [tuple, { type: "bytes" }, tuple, { type: "bytes" }],
    e.evidence,
  );
  assert.equal(a.trajectory, first.trajectory);
  assert.equal(b.trajectory, twin.trajectory);
  assert.equal(sigA, first.signature);
  assert.equal(sigB, twin.signature);
  assert.equal(
    book.note(await signed({ trajectory: `0x${"aa".repeat(32)}` }), NOW),
    null,
    "reported once",
  );
});

Deno.test("the book forgets rounds by the machine's round, not by what a message claims", async () => {
  const book = new CommitmentBook(SHAPE);
  const first = await signed();
  book.note(first, NOW);
  // A far-future round from the sender leaves the current round's record.
  book.note(await signed({ round: NOW + 1_000_000 }), NOW);
  assert.ok(book.isFirst(first));
  assert.ok(book.note(await signed({ tokens: 1 }), NOW), "still caught");
  // Once the machine is far past the round, it is forgotten.
  book.note(await signed({ round: NOW + 100 }), NOW + 100);
  assert.ok(!book.isFirst(first));
});
