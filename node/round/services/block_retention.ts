/**
 * Garbage collection of a job's blocks, so a long job's data dir stays
 * flat. Every block a peer's round work stores or fetches (its own deltas,
 * states and work records, other peers' deltas and records, manifests,
 * checkpoints) is noted with the round the peer was in; when round r
 * closes, the blocks last noted in round r − {@linkcode KEEP_BLOCK_ROUNDS}
 * or before are deleted.
 *
 * Eight rounds cover everything a peer still uses a block for: C(r) as the
 * parent of audits of round r (run in round r + 1), the delta an
 * announcement names (republished after a restart for the last 8 rounds,
 * `own_deltas.ts`), evidence submitted once a round has closed. The head
 * checkpoint is always recent. The job spec and dataset are fetched
 * outside round work and never collected.
 *
 * The notes are kept in `blocks.jsonl` of the peer's state notes (a Deno
 * node's state dir, a tab's IndexedDB; appended as blocks arrive,
 * rewritten atomically after each collection), so blocks noted before a
 * restart or a reload are collected too; a crash between a block's
 * arrival and its note leaves that one block for good.
 *
 * @module
 */
import {
  type CID,
  cidToString,
  parseCid,
} from "../../../protocol/content/cid.ts";
import type { StateNotes } from "../../store/state_notes.ts";
import type { RoundBlocks } from "./services.ts";

/** Rounds of blocks kept behind the round that just closed. */
export const KEEP_BLOCK_ROUNDS = 8;
/** The note in the state notes. */
export const BLOCKS_FILE = "blocks.jsonl";

/** What {@linkcode BlockRetention} works with. */
export interface BlockRetentionOptions {
  /** Where the notes live. */
  notes: StateNotes;
  /** The store collected blocks are deleted from. */
  blocks: Pick<RoundBlocks, "delete">;
  /** Where failures to write the notes or delete a block are told. */
  log(line: string): void;
}

/** The round each of a job's blocks was last used in, and their collection. */
export class BlockRetention {
  readonly #o: BlockRetentionOptions;
  /** Round last noted, by CID. */
  readonly #rounds = new Map<string, number>();
  #writing: Promise<void> = Promise.resolve();

  private constructor(o: BlockRetentionOptions) {
    this.#o = o;
  }

  /** The retention of `o.notes`, with the notes kept there. */
  static async open(o: BlockRetentionOptions): Promise<BlockRetention> {
    const self = new BlockRetention(o);
    let text = "";
    try {
      text = await o.notes.read(BLOCKS_FILE) ?? "";
    } catch (err) {
      o.log(`${self.#path} is unreadable: ${(err as Error).message}`);
    }
    for (const line of text.split("\n")) {
      const note = parseNote(line);
      if (note) self.#set(note.cid, note.round);
    }
    // A crash mid-append leaves a torn line that the next note would join
    // and be lost with: start from a clean copy.
    if (text !== "" && !text.endsWith("\n")) self.#rewrite();
    return self;
  }

  get #path(): string {
    return `${this.#o.notes.where}/${BLOCKS_FILE}`;
  }

  /** Blocks noted, for reports and tests. */
  get size(): number {
    return this.#rounds.size;
  }

  #set(cid: string, round: number): boolean {
    const known = this.#rounds.get(cid);
    if (known !== undefined && known >= round) return false;
    this.#rounds.set(cid, round);
    return true;
  }

  /** Notes that `cid` was stored or fetched in `round`. */
  note(cid: CID | string, round: number): void {
    const text = typeof cid === "string" ? cid : cidToString(cid);
    if (!this.#set(text, round)) return;
    const line = JSON.stringify({ round, cid: text }) + "\n";
    this.#queue(() => this.#o.notes.append(BLOCKS_FILE, line));
  }

  /**
   * Deletes the blocks last noted in `closed` − KEEP_BLOCK_ROUNDS or
   * before; resolves with how many once the notes are kept.
   */
  async collect(closed: number): Promise<number> {
    const cutoff = closed - KEEP_BLOCK_ROUNDS;
    const old = [...this.#rounds].filter(([, r]) => r <= cutoff);
    if (old.length === 0) {
      await this.#writing;
      return 0;
    }
    let deleted = 0;
    for (const [cid] of old) {
      // Noted again while earlier deletes ran: in use, so kept.
      if (this.#rounds.get(cid)! > cutoff) continue;
      try {
        await this.#o.blocks.delete(parseCid(cid));
        this.#rounds.delete(cid);
        deleted++;
      } catch (err) {
        this.#o.log(`block ${cid} not collected: ${(err as Error).message}`);
      }
    }
    this.#rewrite();
    await this.#writing;
    return deleted;
  }

  /** Replaces the kept notes with the ones held. */
  #rewrite(): void {
    const kept = [...this.#rounds]
      .map(([cid, round]) => JSON.stringify({ round, cid }) + "\n").join("");
    this.#queue(() => this.#o.notes.replace(BLOCKS_FILE, kept));
  }

  #queue(write: () => Promise<void>): void {
    this.#writing = this.#writing.then(write).catch((err) =>
      this.#o.log(`${this.#path}: ${(err as Error).message}`)
    );
  }
}

function parseNote(line: string): { round: number; cid: string } | null {
  try {
    const { round, cid } = JSON.parse(line);
    if (!Number.isSafeInteger(round) || typeof cid !== "string") return null;
    parseCid(cid);
    return { round, cid };
  } catch {
    return null;
  }
}
