import assert from "node:assert/strict";
import { decodeAbiParameters } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { WORK_COMMITMENT_TYPES } from "../../chain/work_commitment.ts";
import { DELTA } from "../../protocol/_message_fixtures.ts";
import type { DeltaAnnounce } from "../../protocol/messages.ts";
import { MemoryChain, TEST_ADDRESS, TEST_KEY } from "./_fakes.ts";
import {
  CommitmentBook,
  deltaCommitment,
  signDelta,
  signedByAccount,
} from "./commitments.ts";

const H = 40;
const account = privateKeyToAccount(TEST_KEY);
const { domain } = new MemoryChain();
const job = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";

async function signed(
  over: Partial<DeltaAnnounce> = {},
): Promise<DeltaAnnounce> {
  const { signature: _, ...unsigned } = {
    ...DELTA,
    job,
    account: TEST_ADDRESS,
    ...over,
  } as DeltaAnnounce;
  return {
    ...unsigned,
    signature: await signDelta(account, domain, unsigned, H),
  };
}

Deno.test("a delta's commitment names its round, parent, data, delta, steps, tokens and trajectory", () => {
  const c = deltaCommitment(DELTA, H);
  assert.equal(c.round, DELTA.round);
  assert.equal(c.steps, H);
  assert.equal(c.segments, 16);
  assert.equal(c.tokens, BigInt(DELTA.tokens));
  assert.equal(c.data, DELTA.data);
  assert.equal(c.trajectory, DELTA.trajectory);
});

Deno.test("signedByAccount accepts the account's signature and nothing else", async () => {
  const msg = await signed();
  assert.ok(await signedByAccount(domain, msg, H));
  // Any field changed after signing, another H, another account, another domain.
  assert.ok(!(await signedByAccount(domain, { ...msg, tokens: 1e9 }, H)));
  assert.ok(!(await signedByAccount(domain, { ...msg, kernel: "webgpu" }, H)));
  assert.ok(!(await signedByAccount(domain, msg, H + 1)));
  assert.ok(
    !(await signedByAccount(domain, {
      ...msg,
      account: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    }, H)),
  );
  assert.ok(!(await signedByAccount({ ...domain, chainId: 1 }, msg, H)));
  assert.ok(
    !(await signedByAccount(domain, {
      ...msg,
      signature: `0x${"00".repeat(65)}`,
    }, H)),
  );
});

Deno.test("the book reports two different commitments of one round once, and nothing else", async () => {
  const book = new CommitmentBook(H);
  const first = await signed();
  assert.equal(book.note(first), null);
  assert.equal(book.note(first), null, "a repeat of the same announcement");
  assert.equal(book.note(await signed({ round: DELTA.round + 1 })), null);
  const twin = await signed({ trajectory: `0x${"ef".repeat(32)}` });
  const e = book.note(twin);
  assert.ok(e);
  assert.equal(e.round, DELTA.round);
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
    book.note(await signed({ trajectory: `0x${"aa".repeat(32)}` })),
    null,
    "reported once",
  );
  assert.equal(book.first(DELTA.round, DELTA.peer)?.signature, first.signature);
});
