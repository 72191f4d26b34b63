/**
 * Test-only in-process simulation of many round machines, for the round
 * machine's simulation tests.
 *
 * @module
 */
import assert from "node:assert/strict";
import type {
  AttestationMessage,
  DeltaAnnounce,
  ManifestAnnounce,
} from "../messages/messages.ts";
import {
  initialState,
  type RoundAction,
  type RoundConfig,
  type RoundEvent,
  type RoundState,
} from "./round_state.ts";
import { settleWaitMs } from "./leader_rules.ts";
import { step } from "./round_machine.ts";
import { delta, GENESIS } from "./_round_machine_fixtures.ts";

// ---------------------------------------------------------------------------
// In-process simulation: many machines, a network that delivers next tick,
// and a chain that accepts the first valid commit of each round.

export interface SimOptions {
  peers: number;
  rounds: number;
  quorum: number;
  /** Tick length, ms. */
  tick?: number;
  /** Training time of peer i, ms. */
  trainMs?: (i: number) => number;
  /** Called on each action; return false to drop it (a crash, a stall). */
  onAction?: (sim: Sim, peer: string, action: RoundAction) => boolean;
  /** Peers that join only once the chain reaches this round. */
  lateJoiners?: Map<string, number>;
  /** Whether `from` can reach `to` now (partitions). */
  reach?: (sim: Sim, from: string, to: string) => boolean;
  /** Peers train the next round while theirs is aggregated. */
  overlap?: boolean;
}

export interface Commit {
  round: number;
  checkpoint: string;
  by: string;
  contributors: string[];
}

export interface Sim {
  now: number;
  ids: string[];
  alive: Set<string>;
  states: Map<string, RoundState>;
  chain: { nextRound: number; head: string; commits: Commit[] };
  finished: Set<string>;
  manifests: Map<string, string[]>;
  /** Dead peers still listed live until their heartbeats time out. */
  ghosts: Map<string, number>;
}

/** Heartbeat timeout: a dead peer stays "live" this long, ms. */
const PEER_TTL_MS = 10_000;

export function kill(sim: Sim, peer: string) {
  sim.alive.delete(peer);
  sim.ghosts.set(peer, sim.now + PEER_TTL_MS);
}

export function simulate(o: SimOptions): Sim {
  const tick = o.tick ?? 100;
  const ids = Array.from(
    { length: o.peers },
    (_, i) => `p${String(i).padStart(3, "0")}`,
  );
  const sim: Sim = {
    now: 0,
    ids,
    alive: new Set(),
    states: new Map(),
    chain: { nextRound: 0, head: GENESIS, commits: [] },
    finished: new Set(),
    manifests: new Map(),
    ghosts: new Map(),
  };
  const pending: { at: number; to: string; event: RoundEvent; from: string }[] =
    [];
  const reach = (from: string, to: string) => o.reach?.(sim, from, to) ?? true;
  /** When each peer started training ahead. */
  const ahead = new Map<string, number>();
  const send = (from: string, to: string, event: RoundEvent, delay = tick) => {
    pending.push({ at: sim.now + delay, to, event, from });
  };
  const join = (id: string) => {
    sim.alive.add(id);
    const cfg: RoundConfig = {
      job: "job",
      self: id,
      quorum: o.quorum,
      minPeers: 1,
      rounds: o.rounds,
      roundDeadlineMs: 4000,
      overlap: o.overlap ?? false,
    };
    sim.states.set(id, initialState(cfg, sim.now));
    send(id, id, {
      type: "chainHead",
      nextRound: sim.chain.nextRound,
      head: sim.chain.head,
    }, 0);
  };
  /** `id` finishes training `round` in `after` ms and gossips its delta. */
  const deliver = (
    id: string,
    round: number,
    parent: string,
    after: number,
  ) => {
    const msg: DeltaAnnounce = { ...delta(id, round, parent) };
    send(id, id, { type: "trained", delta: msg }, after);
    pending.push({
      at: sim.now + after,
      to: "*",
      event: { type: "delta", msg },
      from: id,
    });
  };
  const act = (id: string, a: RoundAction) => {
    if (o.onAction && !o.onAction(sim, id, a)) return;
    const index = ids.indexOf(id);
    const ms = o.trainMs?.(index) ?? 1000;
    switch (a.type) {
      case "train":
        deliver(id, a.round, a.parent, ms);
        break;
      case "aggregate": {
        const contributors = a.contributions.map((d) => d.peer).sort();
        const manifest = `bafkreim${a.round}${id}`;
        const checkpoint = `bafkreic${a.round + 1}x${contributors.join("")}`;
        sim.manifests.set(manifest, contributors);
        // As the node's leader: its latest delta settles, then 200 ms to
        // build and publish.
        const { deltaSeenAt, config } = sim.states.get(id)!;
        const publishIn = 200 +
          Math.max(0, settleWaitMs(contributors, deltaSeenAt, config, sim.now));
        send(
          id,
          id,
          { type: "aggregated", manifest, checkpoint, rank: a.rank },
          publishIn,
        );
        const msg: ManifestAnnounce = {
          v: 1,
          type: "manifest",
          peer: id,
          job: "job",
          round: a.round,
          parent: a.parent,
          manifest,
          checkpoint,
          rank: a.rank,
        };
        pending.push({
          at: sim.now + publishIn,
          to: "*",
          event: { type: "manifest", msg },
          from: id,
        });
        break;
      }
      case "verify": {
        const listed = sim.manifests.get(a.manifest.manifest) ?? [];
        const seen = new Set(a.announced.map((d) => d.peer));
        const ok = listed.every((p) => seen.has(p) || p === id);
        send(id, id, { type: "verified", msg: a.manifest, ok }, 100);
        break;
      }
      case "attest": {
        const msg: AttestationMessage = {
          v: 1,
          type: "attest",
          peer: id,
          job: "job",
          round: a.manifest.round,
          parent: a.manifest.parent,
          manifest: a.manifest.manifest,
          checkpoint: a.manifest.checkpoint,
          account: `0x${id.padStart(40, "0")}`,
          signature: `0x${"11".repeat(65)}`,
        };
        // The announcer gets it (others ignore it); so does the attester
        // itself when it is the aggregator.
        send(id, a.manifest.peer, { type: "attestation", msg });
        break;
      }
      case "commit": {
        const c = sim.chain;
        const listed = sim.manifests.get(a.manifest)!;
        if (
          a.round === c.nextRound && a.attestations.length >= o.quorum &&
          a.checkpoint.startsWith(`bafkreic${a.round + 1}x`)
        ) {
          c.nextRound++;
          c.head = a.checkpoint;
          c.commits.push({
            round: a.round,
            checkpoint: a.checkpoint,
            by: id,
            contributors: listed,
          });
        } else {
          send(id, id, { type: "commitFailed", reason: "WrongRound" }, 50);
        }
        break;
      }
      case "trainAhead":
        ahead.set(id, sim.now);
        break;
      case "rebase": {
        // The steps started at trainAhead, but as the node does, at most a
        // tenth of them run before the base is known.
        const started = Math.max(ahead.get(id)!, sim.now - 0.1 * ms);
        deliver(id, a.round, a.parent, started + ms - sim.now);
        break;
      }
      case "advance":
        send(
          id,
          id,
          { type: "enter", round: a.round, parent: a.checkpoint },
          100,
        );
        break;
      case "finish":
        sim.finished.add(id);
        break;
    }
  };
  for (const id of ids) if (!o.lateJoiners?.has(id)) join(id);
  const limit = 200_000;
  let lastSeenRound = 0;
  while (sim.now < limit) {
    for (const [id, at] of o.lateJoiners ?? []) {
      if (
        !sim.alive.has(id) && !sim.states.has(id) && sim.chain.nextRound >= at
      ) join(id);
    }
    // Deliver what is due.
    const due = pending.filter((p) => p.at <= sim.now);
    for (const p of due) pending.splice(pending.indexOf(p), 1);
    for (const p of due) {
      const targets = p.to === "*"
        ? [...sim.alive].filter((t) => t !== p.from)
        : [p.to];
      for (const to of targets) {
        if (!sim.alive.has(to) || (to !== p.from && !reach(p.from, to))) {
          continue;
        }
        const r = step(sim.states.get(to)!, p.event, { now: sim.now });
        sim.states.set(to, r.state);
        for (const a of r.actions) act(to, a);
      }
    }
    // The chain, as each peer polls it, and time passing.
    if (sim.chain.nextRound !== lastSeenRound) {
      lastSeenRound = sim.chain.nextRound;
      for (const id of sim.alive) {
        send(id, id, {
          type: "chainHead",
          nextRound: sim.chain.nextRound,
          head: sim.chain.head,
        }, tick);
      }
    }
    for (const id of sim.alive) {
      const ghosts = [...sim.ghosts].filter(([, until]) => until > sim.now)
        .map(([p]) => p);
      const live = [...sim.alive, ...ghosts].filter((p) =>
        p === id || reach(id, p)
      );
      const r = step(sim.states.get(id)!, { type: "tick", live }, {
        now: sim.now,
      });
      sim.states.set(id, r.state);
      for (const a of r.actions) act(id, a);
    }
    if ([...sim.alive].every((id) => sim.finished.has(id))) break;
    sim.now += tick;
  }
  return sim;
}

export function assertAllFinished(sim: Sim, rounds: number) {
  assert.equal(
    sim.chain.nextRound,
    rounds,
    `committed ${sim.chain.nextRound} rounds`,
  );
  for (const id of sim.alive) {
    assert.ok(sim.finished.has(id), `${id} did not finish`);
    assert.equal(
      sim.states.get(id)!.parent,
      sim.chain.head,
      `${id} is not on the head`,
    );
  }
}
