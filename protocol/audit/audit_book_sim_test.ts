/**
 * The audit protocol in process, at a scale the e2e tests cannot reach:
 * 60 peers, each with its own AuditBook, drawing the real audit plan each
 * round and passing every failure verdict to every other peer. Planted
 * among them: cheaters (one that trained on the wrong data fails any
 * segment; one that made up 15 of its 16 segments fails those) and lying
 * auditors that fail whatever they audit and, beside that, tell everyone
 * a cheater's honest segment failed, to steer the replays away from the
 * drawn one. Every cheater must be convicted
 * by every honest peer and slashed once; no honest peer may be convicted
 * or slashed, whatever the liars sign.
 */
import assert from "node:assert/strict";
import { type AuditAction, AuditBook } from "./audit_book.ts";
import { planAudits } from "./audit_plan.ts";
import { MAX_SEGMENTS } from "./work_record.ts";

interface Sim {
  peers: number;
  quorum: number;
  rounds: number;
  /** Accounts whose work fails on these segments. */
  cheaters: Map<string, (segment: number) => boolean>;
  /** Accounts that fail whatever they replay. */
  liars: Set<string>;
}

interface Outcome {
  /** Per account: the honest peers that convicted it. */
  convictedBy: Map<string, Set<string>>;
  /** Evidence submitted, by accused: the submitters and round. */
  submitted: Map<string, { by: string; round: number; signers: string[] }[]>;
  /** The first round each cheater was convicted in, by any honest peer. */
  firstConviction: Map<string, number>;
  /** Replays each honest peer ran, over its planned ones. */
  replays: number;
  planned: number;
}

const name = (i: number) => `0xpeer${String(i).padStart(3, "0")}`;

function simulate(s: Sim): Outcome {
  const accounts = Array.from({ length: s.peers }, (_, i) => name(i));
  const books = new Map(accounts.map((a) => [a, new AuditBook(a, s.quorum)]));
  const honest = (a: string) => !s.cheaters.has(a) && !s.liars.has(a);
  const out: Outcome = {
    convictedBy: new Map(),
    submitted: new Map(),
    firstConviction: new Map(),
    replays: 0,
    planned: 0,
  };
  // Gossip: every verdict reaches every other peer, in order.
  const queue: { to: string; run: () => AuditAction[] }[] = [];
  let current = 0;
  const act = (self: string, actions: AuditAction[]) => {
    for (const a of actions) {
      switch (a.type) {
        case "replay": {
          if (honest(self)) out.replays++;
          const fails = s.liars.has(self) ||
            (s.cheaters.get(a.account)?.(a.segment) ?? false);
          act(
            self,
            books.get(self)!.judged(
              a.round,
              a.account,
              a.segment,
              fails ? { passed: false, check: "replay" } : { passed: true },
              current,
            ),
          );
          break;
        }
        case "sign":
          for (const to of accounts) {
            if (to === self) continue;
            queue.push({
              to,
              run: () =>
                books.get(to)!.failed(
                  a.round,
                  a.account,
                  a.segment,
                  self,
                  current,
                ),
            });
          }
          break;
        case "convict":
          if (honest(self)) {
            const by = out.convictedBy.get(a.account) ?? new Set();
            by.add(self);
            out.convictedBy.set(a.account, by);
            if (!out.firstConviction.has(a.account)) {
              out.firstConviction.set(a.account, a.round);
            }
          }
          break;
        case "submit": {
          const list = out.submitted.get(a.account) ?? [];
          list.push({ by: self, round: a.round, signers: a.signers });
          out.submitted.set(a.account, list);
          break;
        }
      }
    }
  };
  for (let round = 0; round < s.rounds; round++) {
    current = round + 1;
    // A convicted account's deltas are ignored: honest peers leave it out.
    const contributors = accounts.filter((a) =>
      ![...out.convictedBy.keys()].includes(a)
    );
    const plan = planAudits({
      seed: `C(${round + 1})`,
      contributors,
      members: contributors,
      segments: MAX_SEGMENTS,
      rate: 1,
      auditors: 1,
    });
    // The liars, before anyone has the plan, tell everyone each cheater's
    // first segment failed: the one the partial worker trained honestly.
    for (const liar of s.liars) {
      for (const cheater of s.cheaters.keys()) {
        for (const to of accounts) {
          if (to === liar) continue;
          act(to, books.get(to)!.failed(round, cheater, 0, liar, current));
        }
      }
    }
    // Every peer draws the whole plan; the drawn auditors replay at once.
    for (const audit of plan) {
      for (const self of accounts) {
        const mine = audit.auditors.includes(self);
        if (mine && honest(self)) out.planned++;
        act(
          self,
          books.get(self)!.planned(
            round,
            audit.peer,
            [{ segment: audit.segment, mine }],
            current,
          ),
        );
      }
    }
    while (queue.length > 0) {
      const { to, run } = queue.shift()!;
      act(to, run());
    }
    for (const a of accounts) act(a, books.get(a)!.closed(round + 1));
  }
  return out;
}

Deno.test("audit sim: 60 peers convict and slash every planted cheater, and no honest peer, whatever 2 liars sign", () => {
  const wrongShard = name(7), partial = name(33);
  const liars = new Set([name(12), name(50)]);
  const s: Sim = {
    peers: 60,
    quorum: 40,
    rounds: 6,
    cheaters: new Map([
      [wrongShard, () => true],
      // Trained its first segment only; the rest are made up.
      [partial, (segment: number) => segment > 0],
    ]),
    liars,
  };
  const r = simulate(s);
  const honestPeers = 60 - 2 - 2;
  for (const cheater of [wrongShard, partial]) {
    assert.equal(
      r.convictedBy.get(cheater)?.size,
      honestPeers,
      `${cheater}: every honest peer convicts it`,
    );
    assert.ok(
      r.firstConviction.get(cheater)! <= 2,
      `${cheater} convicted in round ${r.firstConviction.get(cheater)}`,
    );
    // Every honest peer holds evidence with its own verdict; the chain
    // takes the first, the others revert.
    const subs = r.submitted.get(cheater)!;
    assert.ok(subs.length >= 1);
    for (const sub of subs) {
      assert.ok(sub.signers.length >= s.quorum);
      assert.ok(sub.signers.includes(sub.by), "its own verdict among them");
    }
  }
  for (const [accused, by] of r.convictedBy) {
    assert.ok(
      s.cheaters.has(accused),
      `honest ${accused} convicted by ${by.size}`,
    );
  }
  for (const accused of r.submitted.keys()) {
    assert.ok(s.cheaters.has(accused), `evidence against honest ${accused}`);
  }
  // Liars' notices make honest peers re-run honest work: the cost of a
  // liar is bounded by one replay per peer per notice it sends.
  assert.ok(r.replays > r.planned, `${r.replays} replays, ${r.planned} drawn`);
});

Deno.test("audit sim: a quorum of liars is what it takes to convict an honest peer (the registry's trust assumption)", () => {
  const liars = new Set([name(1), name(2), name(3)]);
  const r = simulate({
    peers: 10,
    quorum: 3,
    rounds: 3,
    cheaters: new Map(),
    liars,
  });
  // Liars are drawn to audit honest peers and fail them; with 3 of them
  // signing, a quorum of 3 convicts: honest peers' own replays pass, so
  // they never sign, but they cannot outvote a quorum.
  assert.ok(r.convictedBy.size > 0);
  const fewer = simulate({
    peers: 10,
    quorum: 4,
    rounds: 3,
    cheaters: new Map(),
    liars,
  });
  assert.equal(fewer.convictedBy.size, 0);
  assert.equal(fewer.submitted.size, 0);
});
