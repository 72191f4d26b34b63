/**
 * What the store crash test and the writer it kills share.
 *
 * @module
 */
import type { RoundRecord } from "../node/round/records/ledger.ts";

/** The state file the writer replaces atomically. */
export const STATE_FILE = "state.json";

/** The record the writer appends for `round`. */
export function crashRecord(round: number): RoundRecord {
  return {
    round,
    checkpoint: `bafkreic${round}`,
    leader: null,
    tx: null,
    contributors: 3,
    slices: 0,
    trainLoss: null,
    valLoss: 4 - round / 1000,
    contributed: true,
    tokens: 1024,
    early: false,
    bytesSent: round * 1000,
    slicesComputed: 0,
    auditBytes: 0,
    dataParallelBytes: 0,
    trainMs: 10,
    busyMs: 12,
    wallMs: 20,
  };
}
