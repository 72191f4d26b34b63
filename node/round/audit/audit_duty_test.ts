import { FULL_TIER } from "../../../tests/_tier.ts";
/**
 * The audit protocol around the auditor (whose verdicts on real
 * trajectories audit_test.ts checks; here they are scripted): the plan
 * seeded by C(r + 1) decides who audits what, a failure is signed and
 * gossiped, a member's failure notice makes the others re-run the
 * segment, and only a quorum of checked verdicts, this peer's among them,
 * goes on chain as kind-2 evidence.
 */
import assert from "node:assert/strict";
import { decodeAbiParameters } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  AUDIT_FAILURE_TYPES,
  EVIDENCE_FAILED_AUDIT,
  EVIDENCE_FALSE_VERDICT,
} from "../../../chain/audit_verdict.ts";
import {
  WORK_COMMITMENT_TYPES,
  workCommitmentDigest,
} from "../../../chain/work_commitment.ts";
import { cidToBytes32 } from "../../../chain/attestation.ts";
import { deltaCommitment } from "../services/commitments.ts";
import {
  EVIDENCE_SILENCE,
  recoverAuditSilenceSigner,
} from "../../../chain/silence_verdict.ts";
import { BlobFetchError } from "../../p2p/blob_fetch.ts";
import { planAudits } from "../../../protocol/audit/audit_plan.ts";
import type {
  AuditFailureNotice,
  RefutationNotice,
} from "../../../protocol/messages/messages.ts";
import { segmentCount } from "../../../protocol/audit/work_record.ts";
import {
  cidOf,
  manifestFixture,
  MemoryChain,
  MemoryGossip,
  PEERS,
  signedDelta,
  SPEC,
  TEST_ADDRESS,
} from "../services/_fakes.ts";
import type { ExclusionReason } from "../../../protocol/round/round_manifest.ts";
import type { SegmentAudit } from "./audit.ts";
import type { AuditVerdict } from "../services/audit_verdict.ts";
import { StateUnserved } from "./audit_errors.ts";
import { AuditDuty, type AuditDutyOptions } from "./audit_duty.ts";
import { WorkReader, WorkRecordUnserved } from "./work_reader.ts";
import { BlobGetter } from "../services/blob_getter.ts";
import { KEEP_STATE_ROUNDS } from "../trainer/state_window.ts";
import { RoundLedger } from "../records/ledger.ts";
import { RoundPublisher } from "../services/publisher.ts";

const H = SPEC.innerSteps;
const JOB = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
/** Anvil's third and fourth test keys: two auditors. */
const KEYS = [
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
] as const;
const NEXT = await cidOf("C(1)");

/** PEERS[0]'s signed delta for round 0 (under TEST_ADDRESS). */
const work = await signedDelta({ peer: PEERS[0], job: JOB, round: 0 }, SPEC);

/** A manifest of round 0 whose contributors are all three peers. */
async function manifest() {
  const base = await manifestFixture({ job: JOB });
  return {
    ...base,
    contributions: PEERS.map((peer, i) => ({
      ...base.contributions[0],
      peer,
      account: i === 0
        ? TEST_ADDRESS
        : privateKeyToAccount(KEYS[i - 1]).address,
      delta: i === 0 ? work.delta : base.contributions[0].delta,
    })),
  };
}

/** {@linkcode manifest} with PEERS[0]'s delta left out for `reason`. */
async function leavingOut(reason: ExclusionReason) {
  const m = await manifest();
  return {
    ...m,
    contributions: m.contributions.slice(1),
    excluded: [{ peer: PEERS[0], delta: work.delta, reason, evidence: "" }],
  };
}

/** An AuditDuty for `self` (PEERS[1] or PEERS[2]) whose auditor answers `verdict`. */
function duty(
  self: 1 | 2,
  verdict: AuditVerdict,
  over: Partial<AuditDutyOptions> = {},
) {
  const account = privateKeyToAccount(KEYS[self - 1]);
  const chain = new MemoryChain();
  const gossip = new MemoryGossip();
  const ledger = new RoundLedger(SPEC, 10);
  const audited: SegmentAudit[] = [];
  const forgotten: string[] = [];
  const convicted: string[] = [];
  const d = new AuditDuty({
    jobId: JOB,
    spec: { ...SPEC, quorum: 2 },
    self: PEERS[self],
    account,
    chain,
    auditor: {
      audit: (a) => {
        audited.push(a);
        return Promise.resolve(verdict);
      },
    },
    commitment: (round, acct) =>
      round === 0 && acct.toLowerCase() === TEST_ADDRESS.toLowerCase()
        ? work
        : undefined,
    announced: (round, peer, delta) =>
      round === 0 && peer === work.peer && delta === work.delta
        ? work
        : undefined,
    record: () =>
      Promise.resolve({
        peers: PEERS,
        weights: {},
        states: [],
        shifted: 0,
        from: "",
      }),
    parent: () => Promise.resolve(new Float32Array(1)),
    publisher: new RoundPublisher({
      gossip,
      peerId: PEERS[self],
      jobId: JOB,
      noteSent: () => {},
    }),
    members: {
      isMemberAccount: (peer, acct) =>
        Promise.resolve(
          PEERS.includes(peer) &&
            KEYS.some((k) =>
              privateKeyToAccount(k).address.toLowerCase() ===
                acct.toLowerCase()
            ),
        ),
      forgetAccount: (a) => forgotten.push(a),
    },
    ledger,
    round: () => 1,
    heard: () => null,
    convict: (a) => convicted.push(a),
    stopped: () => false,
    log: () => {},
    ...over,
  });
  const notices = () => gossip.sent as AuditFailureNotice[];
  return { d, chain, ledger, audited, forgotten, convicted, notices, account };
}

const FAIL: AuditVerdict = {
  passed: false,
  check: "replay",
  reason: "steps 0-2 do not reproduce its state",
};
const PASS: AuditVerdict = {
  passed: true,
  exact: true,
  drift: 0,
  loss: { before: 3.1, after: 2.9 },
};

/** The plan every peer draws for round 0 of {@linkcode manifest}. */
function plan() {
  return planAudits({
    seed: NEXT,
    contributors: PEERS,
    members: PEERS,
    segments: segmentCount(H),
    rate: 1,
    auditors: 1,
  });
}

Deno.test("AuditDuty runs the audits the plan draws for this peer, and only those", async () => {
  const m = await manifest();
  for (const self of [1, 2] as const) {
    const t = duty(self, PASS);
    await t.d.roundClosed(m, NEXT);
    const mine = plan().filter((a) => a.auditors.includes(PEERS[self]));
    // Only PEERS[0]'s delta is known here; others are logged and skipped.
    const expected = mine.filter((a) => a.peer === PEERS[0]);
    assert.deepEqual(
      t.audited.map((a) => [a.msg.peer, a.segment]),
      expected.map((a) => [a.peer, a.segment]),
    );
    assert.deepEqual(
      t.ledger.audits.map((a) => [a.peer, a.passed, a.loss]),
      expected.map((a) => [a.peer, true, PASS.passed && PASS.loss]),
    );
    assert.deepEqual(t.notices(), [], "a passed audit is not announced");
    assert.deepEqual(t.chain.slashes, []);
  }
});

Deno.test("the job spec's audit rate is the plan's: at a tiny rate no one is drawn", async () => {
  const m = await manifest();
  for (const self of [1, 2] as const) {
    const t = duty(self, PASS, {
      spec: { ...SPEC, quorum: 2, audit: { rate: 1e-9 } },
    });
    await t.d.roundClosed(m, NEXT);
    assert.deepEqual(t.audited, []);
  }
});

Deno.test("a delta the leader screened out is audited like an aggregated one, on every segment: its author is a suspect", async () => {
  const screened = await leavingOut("misaligned");
  const one = duty(1, PASS), two = duty(2, PASS);
  await one.d.roundClosed(screened, NEXT);
  await two.d.roundClosed(screened, NEXT);
  const segments = (t: typeof one) => t.audited.map((a) => a.segment);
  assert.deepEqual(
    [...segments(one), ...segments(two)].sort((a, b) => a - b),
    Array.from({ length: segmentCount(H) }, (_, k) => k),
  );
  assert.ok(
    [...one.audited, ...two.audited].every((a) => a.msg.peer === PEERS[0]),
  );
  // Failed on each, the replays are signed and gossiped.
  const failing = duty(1, FAIL);
  await failing.d.roundClosed(screened, NEXT);
  assert.equal(failing.notices().length, segments(one).length);
  assert.ok(failing.notices().every((n) => n.accused === PEERS[0]));
});

Deno.test("a delta left out unserved is not audited: nothing of it was used, and its author may have crashed with it", async () => {
  const unserved = await leavingOut("unserved");
  const one = duty(1, FAIL), two = duty(2, FAIL);
  await one.d.roundClosed(unserved, NEXT);
  await two.d.roundClosed(unserved, NEXT);
  assert.deepEqual(
    [...one.audited, ...two.audited].filter((a) => a.msg.peer === PEERS[0]),
    [],
  );
  assert.deepEqual([...one.notices(), ...two.notices()], []);
});

/** The peer among PEERS[1], PEERS[2] drawn to audit PEERS[0], and the other. */
function auditors(): { drawn: 1 | 2; other: 1 | 2; segment: number } {
  const a = plan().find((x) => x.peer === PEERS[0])!;
  const drawn = PEERS.indexOf(a.auditors[0]) as 1 | 2;
  return { drawn, other: drawn === 1 ? 2 : 1, segment: a.segment };
}

Deno.test("a failure is signed and gossiped; the other member re-runs it and a quorum is slashed once", async () => {
  const { drawn, other, segment } = auditors();
  const first = duty(drawn, FAIL);
  await first.d.roundClosed(await manifest(), NEXT);
  const [notice] = first.notices();
  assert.equal(notice.type, "audit");
  assert.equal(notice.accused, PEERS[0]);
  assert.equal(notice.segment, segment);
  assert.equal(notice.check, "replay");
  assert.deepEqual(first.chain.slashes, [], "one verdict is short of quorum");

  const second = duty(other, FAIL);
  // The notice may come before this peer has drawn the plan: it waits.
  await second.d.noticed(notice);
  assert.equal(second.audited.length, 0);
  await second.d.roundClosed(await manifest(), NEXT);
  assert.deepEqual(
    second.audited.map((a) => [a.msg.peer, a.segment]),
    [[PEERS[0], segment]],
    "the notice makes the other member re-run that very segment",
  );
  // Convicted at once, slashed once the round under way (1) has closed:
  // its manifest may list the contributor.
  assert.deepEqual(second.convicted, [TEST_ADDRESS]);
  await second.d.submitDue(0);
  assert.equal(second.chain.slashes.length, 0);
  await second.d.submitDue(1);
  assert.equal(second.chain.slashes.length, 1);
  const [account, kind, evidence] = second.chain.slashes[0];
  assert.equal(account, TEST_ADDRESS);
  assert.equal(kind, EVIDENCE_FAILED_AUDIT);
  const [, signature, verdicts] = decodeAbiParameters(
    [
      { type: "tuple", components: WORK_COMMITMENT_TYPES.WorkCommitment },
      { type: "bytes" },
      { type: "bytes[]" },
    ],
    evidence,
  );
  assert.equal(signature, work.signature);
  assert.equal(verdicts.length, 2);
  assert.deepEqual(second.forgotten, [TEST_ADDRESS]);
  assert.deepEqual(second.ledger.slashes.map((s) => s.kind), [2]);

  // Its own notice reaches the first auditor, which now holds a quorum too
  // (its submission is refused on chain when the other landed first).
  await first.d.noticed(second.notices()[0]);
  await first.d.submitDue(1);
  assert.equal(first.chain.slashes.length, 1);
  await first.d.noticed(second.notices()[0]);
  await second.d.noticed(notice);
  await first.d.submitDue(2);
  await second.d.submitDue(2);
  assert.equal(first.chain.slashes.length, 1, "submitted once");
  assert.equal(second.chain.slashes.length, 1, "submitted once");
  assert.equal(second.audited.length, 1, "re-run once");
});

Deno.test("evidence whose signers in good standing fall short of the quorum waits, and goes on chain once they stand again", async () => {
  const { drawn, other } = auditors();
  const first = duty(drawn, FAIL);
  await first.d.roundClosed(await manifest(), NEXT);
  const second = duty(other, FAIL);
  await second.d.roundClosed(await manifest(), NEXT);
  await second.d.noticed(first.notices()[0]);
  // The first auditor left before the evidence landed: one verdict stands.
  second.chain.outOfStanding.add(first.account.address.toLowerCase());
  await second.d.submitDue(1);
  assert.deepEqual(second.chain.slashes, [], "short of the quorum");
  assert.deepEqual(second.forgotten, [], "not settled");
  // It stands again (or another verdict came): the next close submits.
  second.chain.outOfStanding.clear();
  await second.d.submitDue(2);
  assert.equal(second.chain.slashes.length, 1);
  assert.deepEqual(second.forgotten, [TEST_ADDRESS]);
  await second.d.submitDue(3);
  assert.equal(second.chain.slashes.length, 1, "once");
});

Deno.test("a member whose replay passed refutes a computation failure verdict, and a quorum of refutations goes on chain against the accuser", async () => {
  const { drawn, other } = auditors();
  const liar = duty(drawn, FAIL);
  await liar.d.roundClosed(await manifest(), NEXT);
  const [accusation] = liar.notices();
  // A job of quorum 1, so that one honest refutation is a quorum here.
  const honest = duty(other, PASS, { spec: { ...SPEC, quorum: 1 } });
  await honest.d.roundClosed(await manifest(), NEXT);
  await honest.d.noticed(accusation);
  const refutation = honest.notices().find((n) =>
    (n as unknown as RefutationNotice).type === "refute"
  ) as unknown as RefutationNotice;
  assert.ok(refutation, "a refutation is gossiped");
  assert.equal(
    refutation.accuser.toLowerCase(),
    liar.account.address.toLowerCase(),
  );
  assert.equal(refutation.accused, PEERS[0]);
  assert.equal(honest.chain.slashes.length, 1);
  const [accuser, kind, evidence] = honest.chain.slashes[0];
  assert.equal(accuser.toLowerCase(), liar.account.address.toLowerCase());
  assert.equal(kind, EVIDENCE_FALSE_VERDICT);
  const [failure, signature, refutations] = decodeAbiParameters(
    [
      { type: "tuple", components: AUDIT_FAILURE_TYPES.AuditFailure },
      { type: "bytes" },
      { type: "bytes[]" },
    ],
    evidence,
  );
  assert.equal(failure.peer, TEST_ADDRESS);
  assert.equal(signature, accusation.signature);
  assert.deepEqual(refutations, [refutation.signature]);
  // A failure of the record check (unserved to its auditor) is not refuted.
  const quiet = duty(other, PASS, { spec: { ...SPEC, quorum: 1 } });
  await quiet.d.roundClosed(await manifest(), NEXT);
  await quiet.d.noticed({ ...accusation, check: "record" });
  assert.deepEqual(quiet.notices().map((n) => n.type), []);
  assert.deepEqual(quiet.chain.slashes, []);
});

Deno.test("one lying auditor cannot slash an honest peer: the others' replays pass", async () => {
  const { drawn, other } = auditors();
  const liar = duty(drawn, FAIL);
  await liar.d.roundClosed(await manifest(), NEXT);
  const honest = duty(other, PASS);
  await honest.d.roundClosed(await manifest(), NEXT);
  await honest.d.noticed(liar.notices()[0]);
  assert.equal(honest.audited.length, 1);
  assert.deepEqual(
    honest.notices().map((n) => n.type),
    ["refute"],
    "no failure of its own; the liar's refuted",
  );
  await honest.d.submitDue(9);
  await liar.d.submitDue(9);
  assert.deepEqual([...honest.chain.slashes, ...liar.chain.slashes], []);
  assert.deepEqual([...honest.convicted, ...liar.convicted], []);
  assert.deepEqual(honest.ledger.audits.map((a) => a.passed), [true]);
});

Deno.test("a failure notice on another segment than the drawn one neither counts nor steers the replay", async () => {
  const { drawn, other, segment } = auditors();
  const first = duty(drawn, FAIL);
  await first.d.roundClosed(await manifest(), NEXT);
  const notice = first.notices()[0];
  const t = duty(other, FAIL);
  await t.d.roundClosed(await manifest(), NEXT);
  // Re-signing is not needed: the book drops it on the segment alone.
  await t.d.noticed({ ...notice, segment: (segment + 1) % 16 });
  assert.equal(t.audited.length, 0);
  assert.equal(t.notices().length, 0);
  await t.d.noticed(notice);
  assert.deepEqual(t.audited.map((a) => a.segment), [segment]);
});

Deno.test("a failure notice is ignored unless a member signed it over the work seen here", async () => {
  const { drawn, other } = auditors();
  const first = duty(drawn, FAIL);
  await first.d.roundClosed(await manifest(), NEXT);
  const notice = first.notices()[0];
  const cases: [string, AuditFailureNotice][] = [
    ["signed by another key", {
      ...notice,
      signature: `${notice.signature.slice(0, -2)}${
        notice.signature.endsWith("1b") ? "1c" : "1b"
      }` as `0x${string}`,
    }],
    ["from a stranger's account", {
      ...notice,
      account: "0x000000000000000000000000000000000000dEaD",
    }],
    ["about work not seen here", { ...notice, round: 1 }],
    ["about another peer's id", { ...notice, accused: PEERS[2] }],
  ];
  for (const [what, n] of cases) {
    const t = duty(other, FAIL);
    await t.d.noticed(n);
    assert.deepEqual(t.audited, [], what);
    assert.deepEqual(t.notices(), [], what);
  }
});

Deno.test("a peer shutting down draws no verdict from its own failed fetches", async () => {
  const { drawn } = auditors();
  const t = duty(drawn, PASS, {
    record: (msg) =>
      Promise.reject(
        new WorkRecordUnserved(msg.work, new Error("aborted"), false),
      ),
    stopped: () => true,
  });
  await t.d.roundClosed(await manifest(), NEXT);
  assert.equal(t.ledger.audits.length, 0);
  assert.equal(t.notices().length, 0);
});

Deno.test("a work record whose committed bytes are no record fails the audit at once, with no retries", async () => {
  const { drawn } = auditors();
  // Held locally (blocks are verified against their CID on arrival), so
  // these are the very bytes its peer committed to.
  const garbage = new TextEncoder().encode("{not a work record");
  const blobs = new BlobGetter(
    {
      size: () => Promise.resolve(garbage.length),
      get: () => Promise.resolve(garbage),
    },
    { fetch: () => Promise.reject(new Error("no network here")) },
    new AbortController().signal,
  );
  const reader = new WorkReader(
    blobs,
    { delete: () => Promise.resolve() },
    SPEC,
    8,
    () => {},
  );
  let tries = 0;
  const t = duty(drawn, PASS, {
    record: (msg) => {
      tries++;
      return reader.record(msg);
    },
    serveWindowMs: 3_000,
  });
  await t.d.roundClosed(await manifest(), NEXT);
  assert.deepEqual(
    t.ledger.audits.map((a) => [a.passed, a.check]),
    [[false, "record"]],
  );
  assert.equal(tries, 1);
  assert.equal(t.notices()[0].check, "record");
});

Deno.test("a work record its peer says it lacks past the serve window fails the audit on its record check", async () => {
  const { drawn } = auditors();
  const t = duty(drawn, PASS, {
    record: (msg) =>
      Promise.reject(
        new WorkRecordUnserved(msg.work, new Error("not found"), true),
      ),
    serveWindowMs: 0,
  });
  await t.d.roundClosed(await manifest(), NEXT);
  assert.deepEqual(t.audited, [], "nothing to replay");
  assert.deepEqual(
    t.ledger.audits.map((a) => [a.passed, a.check]),
    [[false, "record"]],
  );
  assert.equal(t.notices()[0].check, "record");
});

Deno.test("a work record its peer lost and declared lost on chain, giving back the round's credit, draws no verdict; a declaration short of the credit does not count", async () => {
  const m = await manifest();
  const credited = m.contributions[0].tokens;
  for (const [declared, failed] of [[credited, false], [credited - 1, true]]) {
    const { drawn } = auditors();
    const t = duty(drawn, PASS, {
      record: (msg) =>
        Promise.reject(
          new WorkRecordUnserved(msg.work, new Error("not found"), true),
        ),
      serveWindowMs: 0,
    });
    t.chain.lost.set(`${TEST_ADDRESS.toLowerCase()}/0`, BigInt(declared));
    await t.d.roundClosed(m, NEXT);
    assert.deepEqual(
      t.ledger.audits.map((a) => [a.passed, a.check]),
      failed ? [[false, "record"]] : [],
      `declared ${declared} of ${credited}`,
    );
    assert.equal(t.notices().length, failed ? 1 : 0);
  }
});

Deno.test("a contributor that serves its work again within the window (a restart) passes, with no verdict signed", async () => {
  const { drawn } = auditors();
  let asked = 0;
  const t = duty(drawn, PASS, {
    record: (msg) =>
      ++asked < 3
        ? Promise.reject(
          new WorkRecordUnserved(
            msg.work,
            new Error("connection refused"),
            false,
          ),
        )
        : Promise.resolve({
          peers: PEERS,
          weights: {},
          states: [],
          shifted: 0,
          from: "",
        }),
    serveWindowMs: 2_000,
  });
  await t.d.roundClosed(await manifest(), NEXT);
  assert.equal(asked, 3);
  assert.deepEqual(t.ledger.audits.map((a) => a.passed), [true]);
  assert.deepEqual(t.notices(), []);
});

Deno.test("a state withheld for the whole serve window fails the start check", async () => {
  const { drawn } = auditors();
  let tries = 0;
  const started = performance.now();
  const t = duty(drawn, PASS, {
    auditor: {
      audit: () => {
        tries++;
        return Promise.reject(
          new StateUnserved("its state 3", new Error("not found"), true),
        );
      },
    },
    serveWindowMs: 400,
  });
  await t.d.roundClosed(await manifest(), NEXT);
  assert.ok(performance.now() - started >= 400);
  assert.ok(tries >= 3, `${tries} tries`);
  assert.deepEqual(
    t.ledger.audits.map((a) => [a.passed, a.check]),
    [[false, "start"]],
  );
  assert.equal(t.notices()[0].check, "start");
});

Deno.test("a peer that cannot be reached for the whole serve window (a partition) draws no verdict", async () => {
  const { drawn } = auditors();
  const lines: string[] = [];
  const t = duty(drawn, PASS, {
    record: (msg) =>
      Promise.reject(
        new WorkRecordUnserved(msg.work, new Error("dial timed out"), false),
      ),
    serveWindowMs: 300,
    log: (line) => lines.push(line),
  });
  await t.d.roundClosed(await manifest(), NEXT);
  assert.deepEqual(t.ledger.audits, []);
  assert.deepEqual(t.notices(), []);
  assert.match(lines.join("\n"), /not judged: it could not be reached/);
});

/** A fetch of `cid` from `peer` that took the request and answered nothing. */
function unanswered(cid: string, peer: string): BlobFetchError {
  return new BlobFetchError(cid, {
    cid,
    size: 0,
    bytesFrom: {},
    bad: [],
    failed: { [peer]: "took the request and answered nothing in 10000 ms" },
    silent: [peer],
    local: false,
  });
}

Deno.test("a live peer that takes the audit's requests and answers none draws a silence verdict; a quorum of them goes on chain as kind 4, with no conviction", async () => {
  const { drawn, other, segment } = auditors();
  const silentRecord = (msg: { work: string; peer: string }) =>
    Promise.reject(
      new WorkRecordUnserved(msg.work, unanswered(msg.work, msg.peer), false),
    );
  const lines: string[] = [];
  const live = { heard: () => Date.now(), serveWindowMs: 300 };
  const first = duty(drawn, PASS, {
    record: silentRecord,
    ...live,
    log: (line) => lines.push(line),
  });
  await first.d.roundClosed(await manifest(), NEXT);
  const [notice] = first.notices();
  assert.equal(notice.check, "unanswered");
  assert.equal(notice.segment, segment);
  assert.equal(
    await recoverAuditSilenceSigner(
      first.chain.domain,
      {
        job: cidToBytes32(JOB),
        round: 0,
        peer: work.account,
        commitment: workCommitmentDigest(
          first.chain.domain,
          deltaCommitment(work, SPEC),
        ),
      },
      notice.signature,
    ),
    first.account.address,
  );
  assert.match(lines.join("\n"), /FAILED its unanswered check/);
  assert.deepEqual(first.ledger.audits.map((a) => a.check), ["unanswered"]);
  // The other member, told, tries the segment itself: unanswered there too.
  const second = duty(other, PASS, { record: silentRecord, ...live });
  await second.d.roundClosed(await manifest(), NEXT);
  await second.d.noticed(notice);
  assert.equal(second.notices()[0].check, "unanswered");
  await first.d.noticed(second.notices()[0]);
  assert.deepEqual(first.convicted, [], "silence convicts no one");
  await first.d.submitDue(0);
  assert.equal(first.chain.slashes.length, 0);
  await first.d.submitDue(1);
  assert.deepEqual(
    first.chain.slashes.map(([account, kind]) => [account, kind]),
    [[TEST_ADDRESS, EVIDENCE_SILENCE]],
  );
  assert.deepEqual(first.ledger.slashes.map((s) => s.kind), [4]);
  // Its membership stays cached: no peer reads it afresh mid-round.
  assert.deepEqual(first.forgotten, []);
  await first.d.submitDue(2);
  assert.equal(first.chain.slashes.length, 1, "submitted once");
});

Deno.test("a peer that took the requests but is no longer heard (cut off), or whose dial fails, draws no silence verdict", async () => {
  const { drawn } = auditors();
  for (
    const o of [
      { heard: () => null, error: unanswered },
      { heard: () => Date.now() - 60_000, error: unanswered },
      {
        heard: () => Date.now(),
        error: () => new Error("dial timed out"),
      },
    ]
  ) {
    const lines: string[] = [];
    const t = duty(drawn, PASS, {
      record: (msg) =>
        Promise.reject(
          new WorkRecordUnserved(msg.work, o.error(msg.work, msg.peer), false),
        ),
      heard: o.heard,
      serveWindowMs: 300,
      log: (line) => lines.push(line),
    });
    await t.d.roundClosed(await manifest(), NEXT);
    assert.deepEqual(t.notices(), []);
    assert.match(lines.join("\n"), /not judged: it could not be reached/);
  }
});

Deno.test("an audit that comes after the audited states' keep window draws no verdict, even from a refusal", async () => {
  const { drawn } = auditors();
  const lines: string[] = [];
  const t = duty(drawn, PASS, {
    auditor: {
      audit: () =>
        Promise.reject(
          new StateUnserved("its state 3", new Error("not found"), true),
        ),
    },
    // Round 0's work audited while round KEEP_STATE_ROUNDS - 1 runs.
    round: () => KEEP_STATE_ROUNDS - 1,
    serveWindowMs: 10_000,
    log: (line) => lines.push(line),
  });
  await t.d.roundClosed(await manifest(), NEXT);
  assert.deepEqual(t.ledger.audits, []);
  assert.deepEqual(t.notices(), []);
  assert.match(lines.join("\n"), /not judged: too late/);
});

Deno.test(
  "a refusal made while the states must be held fails the audit even when the rounds outrun the serve window",
  FULL_TIER,
  async () => {
    const { drawn } = auditors();
    let round = 1;
    let tries = 0;
    const t = duty(drawn, PASS, {
      auditor: {
        audit: () => {
          // Short rounds: the job moves on while the auditor asks again.
          if (tries++ > 0) round++;
          return Promise.reject(
            new StateUnserved("its state 3", new Error("not found"), true),
          );
        },
      },
      round: () => round,
      serveWindowMs: 10_000,
    });
    await t.d.roundClosed(await manifest(), NEXT);
    assert.deepEqual(
      t.ledger.audits.map((a) => [a.passed, a.check]),
      [[false, "start"]],
    );
    assert.equal(t.notices()[0].check, "start");
  },
);
