import assert from "node:assert/strict";
import { JOB_TEST } from "./_job_cluster.ts";
import { liveMarket } from "./bench/market.ts";

/**
 * A priced job run end to end by real `zoo-node --join --bid` processes on
 * a devnet chain (`bench market`): the floors, checked.
 */
Deno.test({
  name:
    "market e2e: the lowest admitted bids take the seats, the slow bidder is refused with its figure, a silent seat passes to the next bid within 2 rounds, every wei is accounted for",
  ...JOB_TEST,
  fn: async () => {
    const r = await liveMarket(6, () => {});
    const by = Object.fromEntries(r.providers.map((p) => [p.name, p]));

    // The cheapest bid trained too slowly for the bar: refused, its
    // measured figure in the line its --join exited with.
    assert.equal(by["node-5"].stage, "refused");
    assert.ok(by["node-5"].tokensPerSecond < r.admissionBar);
    assert.match(
      by["node-5"].refusal ?? "",
      new RegExp(
        `benchmark measured ${
          by["node-5"].tokensPerSecond
        } tokens/s .* below the job's bar of ${r.admissionBar} tokens/s`,
      ),
    );
    // Seats: the three lowest admitted bids.
    assert.deepEqual(r.firstSeats, ["node-1", "node-2", "node-3"]);
    for (const name of ["node-1", "node-2", "node-3", "node-4"]) {
      assert.ok(by[name].capabilityClass >= 1, name);
    }
    // The killed holder's seat reopened after at most 2 rounds without
    // its credit, to the next bid, which was credited from then on.
    assert.equal(by[r.silent].stage, "left");
    assert.ok(r.reopenedAtRound - r.silentLastCredited <= 3);
    assert.equal(by[r.takenBy].stage, "seated");
    assert.ok(BigInt(by[r.takenBy].tokens) > 0n);
    // Each is paid its bid for its credited tokens, less 5%.
    for (const p of r.providers) {
      const gross = BigInt(p.price) * BigInt(p.tokens);
      assert.equal(BigInt(p.paid), gross - (gross * 500n) / 10_000n, p.name);
    }
    // `zoo-node rewards` showed each seat as the chain has it: its bid,
    // class, credit, what it claimed, and a round's earnings per round.
    for (const p of r.providers) {
      const seat = p.shown!;
      assert.equal(seat.price, p.price, p.name);
      assert.equal(seat.stage, p.stage, p.name);
      assert.equal(seat.capabilityClass, p.capabilityClass, p.name);
      assert.equal(seat.tokens, p.tokens, p.name);
      assert.equal(seat.claimable, p.paid, p.name);
      assert.equal(seat.net, p.paid, p.name);
      const earned = seat.rounds.reduce((t, x) => t + BigInt(x.earned), 0n);
      assert.equal(earned, BigInt(p.price) * BigInt(p.tokens), p.name);
      assert.equal(seat.roundsCredited, seat.rounds.length, p.name);
    }
    // node-1's status page and zoo_contributions showed its seat: its bid,
    // and each credited round's earnings at it.
    const seat = r.statusSeat!;
    assert.equal(seat.price, by["node-1"].price);
    assert.equal(seat.stage, "seated");
    assert.ok(seat.rounds.length >= 1);
    for (const round of seat.rounds) {
      assert.equal(
        BigInt(round.earned),
        BigInt(round.tokens) * BigInt(seat.price),
      );
    }
    // paid + fees + refund = budget, from the events; the market keeps 0.
    const [accounted, of] = r.accountedFor.split(" of ");
    assert.equal(accounted, of);
    assert.equal(of, r.budget);
    assert.equal(r.marketBalanceAfter, "0");
    assert.equal(r.commitGas.length, r.rounds);
    // The members replayed each other's benchmarks, and every one held.
    assert.ok(r.replaysPassed >= 3, `${r.replaysPassed} replays`);
    assert.equal(r.replaysFailed, 0);
    // Seat holders say their class in their heartbeats: the chain's.
    assert.ok(r.heartbeatClasses.length >= 2, `${r.heartbeatClasses}`);
    for (const c of r.heartbeatClasses) {
      assert.ok(r.providers.some((p) => p.capabilityClass === c));
    }
  },
});
