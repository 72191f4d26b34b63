/**
 * The rounds a peer recorded, kept on disk so that a restart does not
 * forget them: `<state dir>/records.jsonl`, one {@linkcode RoundRecord}
 * per line, appended and synced as each round closes.
 *
 * A crash can leave the last line torn; loading drops it (and cuts it
 * from the file, so the next append starts a line of its own), skips any
 * other line that is not a record, and keeps the first record of a round.
 *
 * @module
 */
import type { RoundRecord } from "./ledger.ts";

/** The file in the state dir. */
export const RECORDS_FILE = "records.jsonl";

/** Records kept before a restart, and the log that keeps new ones. */
export interface KeptRecords {
  records: RoundRecord[];
  log: RoundRecordLog;
}

/** Appends round records to `<dir>/records.jsonl`, one write at a time. */
export class RoundRecordLog {
  readonly #path: string;
  readonly #dir: string;
  readonly #log: (line: string) => void;
  #writing: Promise<void> = Promise.resolve();

  private constructor(dir: string, log: (line: string) => void) {
    this.#dir = dir;
    this.#path = `${dir}/${RECORDS_FILE}`;
    this.#log = log;
  }

  /**
   * The records kept in `dir`, in round order, and a log to append to.
   *
   * @example
   * ```ts ignore
   * const kept = await RoundRecordLog.open(dir, console.log);
   * const ledger = new RoundLedger(spec, params, {
   *   records: kept.records,
   *   onRecord: (r) => kept.log.append(r),
   * });
   * ```
   */
  static async open(
    dir: string,
    log: (line: string) => void,
  ): Promise<KeptRecords> {
    const self = new RoundRecordLog(dir, log);
    return { records: await self.#load(), log: self };
  }

  /** Appends `record` (errors are logged: the record stays in memory). */
  append(record: RoundRecord): Promise<void> {
    const line = new TextEncoder().encode(JSON.stringify(record) + "\n");
    const write = this.#writing.then(async () => {
      await Deno.mkdir(this.#dir, { recursive: true });
      using file = await Deno.open(this.#path, {
        append: true,
        create: true,
        mode: 0o600,
      });
      for (let at = 0; at < line.length;) {
        at += await file.write(line.subarray(at));
      }
      await file.syncData();
    }).catch((err) => {
      this.#log(
        `round ${record.round}: its record was not saved to ${this.#path}: ${
          (err as Error).message
        }`,
      );
    });
    this.#writing = write;
    return write;
  }

  async #load(): Promise<RoundRecord[]> {
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(this.#path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return [];
      this.#log(
        `${this.#path} is unreadable (${
          (err as Error).message
        }): earlier rounds' records are lost`,
      );
      return [];
    }
    // Cut at a byte offset: damaged bytes decode to characters of another
    // length, and a cut by characters would land inside the next line.
    const whole = bytes.lastIndexOf(0x0a) + 1;
    if (whole < bytes.length) {
      await Deno.truncate(this.#path, whole).catch((err) =>
        this.#log(
          `${this.#path}: its torn last line could not be cut (${
            (err as Error).message
          })`,
        )
      );
    }
    const byRound = new Map<number, RoundRecord>();
    let skipped = 0;
    const text = new TextDecoder().decode(bytes.subarray(0, whole));
    for (const line of text.split("\n")) {
      if (line === "") continue;
      const record = parseRecord(line);
      if (record === null) skipped++;
      else if (!byRound.has(record.round)) byRound.set(record.round, record);
    }
    if (skipped > 0) {
      this.#log(`${this.#path}: ${skipped} damaged line(s) skipped`);
    }
    return [...byRound.values()].sort((a, b) => a.round - b.round);
  }
}

const NUMBERS = [
  "round",
  "contributors",
  "slices",
  "valLoss",
  "tokens",
  "bytesSent",
  "slicesComputed",
  "auditBytes",
  "dataParallelBytes",
  "trainMs",
  "busyMs",
  "wallMs",
] as const;

/** A record from one line, or null when the line is not one. */
function parseRecord(line: string): RoundRecord | null {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof r !== "object" || r === null || Array.isArray(r)) return null;
  // JSON writes a diverged round's NaN loss as null.
  if (r.valLoss === null) r.valLoss = NaN;
  // Records written before compute time was counted.
  r.busyMs ??= r.trainMs;
  // Records written before rounds were sharded, or led by slices.
  r.slices ??= 0;
  r.slicesComputed ??= 0;
  const ok = NUMBERS.every((k) => typeof r[k] === "number") &&
    Number.isSafeInteger(r.round) && (r.round as number) >= 0 &&
    typeof r.checkpoint === "string" &&
    typeof r.contributed === "boolean" && typeof r.early === "boolean" &&
    (r.leader === null || typeof r.leader === "string") &&
    (r.tx === null || typeof r.tx === "string") &&
    (r.trainLoss === null || typeof r.trainLoss === "number");
  return ok ? r as unknown as RoundRecord : null;
}
