/**
 * The deltas this peer announced, kept on disk so that a restart never
 * makes it announce a second, different delta for a round: that is
 * equivocation, which the registry slashes. A browser tab keeps them the
 * same way, in its IndexedDB, across a reload.
 *
 * Training is reproducible only from the same AdamW moments, and a
 * restart loses them, so a peer killed after announcing and restarted in
 * the same round would train again to another delta. Instead, each signed
 * announcement is written (atomically, before it is published) to
 * `announced.json` of the peer's state notes, the last {@linkcode KEEP_ROUNDS} rounds of
 * it; when the machine asks this peer to train a round it already
 * announced, the peer sends the same announcement again if the delta is
 * still in its blockstore, and sits the round out if not.
 *
 * @module
 */
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";
import type { StateNotes } from "../../store/state_notes.ts";
import type { RoundPublisher } from "../services/publisher.ts";

/** Rounds of announcements kept. */
export const KEEP_ROUNDS = 8;
/** The note in the state notes. */
export const ANNOUNCED_FILE = "announced.json";

/** What {@linkcode OwnDeltas} works with. */
export interface OwnDeltasOptions {
  /** Where the announcements are kept. */
  notes: StateNotes;
  /**
   * Whether this account was a member of the job before this start: if
   * its notes then hold no announcements at all, they may have been lost
   * (a wiped store, a browser's cleared storage), and the first round it
   * is asked to train is sat out, as it may have announced it already.
   */
  memberBefore?: boolean;
  publisher: Pick<RoundPublisher, "publish">;
  /** Whether a delta's blob is still stored here. */
  has(cid: string): Promise<boolean>;
  feed(event: RoundEvent): void;
  log(line: string): void;
}

/** This peer's own delta announcements, across restarts. */
export class OwnDeltas {
  readonly #o: OwnDeltasOptions;
  readonly #loaded: Promise<DeltaAnnounce[]>;
  /** Whether a round was asked of `resume` since this start. */
  #asked = false;
  /** Writes, one after another, so the file holds the latest list. */
  #writing: Promise<void> = Promise.resolve();

  constructor(o: OwnDeltasOptions) {
    this.#o = o;
    this.#loaded = this.#load();
  }

  /**
   * Records `msg` before it is published: once it may have left, a
   * restart must find it.
   */
  async record(msg: DeltaAnnounce): Promise<void> {
    const list = await this.#loaded;
    const kept = list.filter((m) =>
      m.round !== msg.round && m.round > msg.round - KEEP_ROUNDS
    );
    list.splice(0, list.length, ...kept, msg);
    const text = JSON.stringify(list) + "\n";
    const write = this.#writing.then(() =>
      this.#o.notes.replace(ANNOUNCED_FILE, text)
    );
    this.#writing = write.catch(() => {});
    await write;
  }

  /** This peer's announcement of `round`, if it kept one. */
  async announced(round: number): Promise<DeltaAnnounce | undefined> {
    return (await this.#loaded).find((m) => m.round === round);
  }

  /**
   * Handles a `train` of (`round`, `parent`) this peer already announced:
   * the same announcement is sent again (its delta is stored) or the round
   * is sat out (it is not). Returns false when nothing was announced, and
   * the peer should train.
   */
  async resume(round: number, parent: string): Promise<boolean> {
    const list = await this.#loaded;
    const forgotten = this.#o.memberBefore === true && !this.#asked &&
      list.length === 0;
    this.#asked = true;
    if (forgotten) {
      this.#o.log(
        `round ${round}: sitting it out: this peer was a member of the job before this start but keeps no announcements (its job state is new), so it may have announced this round already, and another delta would be equivocation`,
      );
      return true;
    }
    const mine = list.find((m) => m.round === round && m.parent === parent);
    if (!mine) return false;
    if (!(await this.#o.has(mine.delta))) {
      this.#o.log(
        `round ${round}: sitting it out: delta ${mine.delta}, announced before a restart, is no longer stored, and another would be equivocation`,
      );
      return true;
    }
    this.#o.log(
      `round ${round}: announcing again delta ${mine.delta}, announced before a restart`,
    );
    await this.#o.publisher.publish(mine, { repeat: true });
    this.#o.feed({ type: "trained", delta: mine });
    return true;
  }

  async #load(): Promise<DeltaAnnounce[]> {
    const { notes } = this.#o;
    try {
      const text = await notes.read(ANNOUNCED_FILE);
      if (text === null) return [];
      const json = JSON.parse(text);
      if (!Array.isArray(json)) throw new Error("not a list");
      return json.filter(looksAnnounced);
    } catch (err) {
      this.#o.log(
        `${notes.where}/${ANNOUNCED_FILE} is unreadable (${
          (err as Error).message
        }): this peer's earlier announcements are unknown`,
      );
      return [];
    }
  }
}

/** The fields {@linkcode OwnDeltas.resume} relies on, of the right types. */
function looksAnnounced(m: unknown): m is DeltaAnnounce {
  if (typeof m !== "object" || m === null) return false;
  const r = m as Record<string, unknown>;
  return r.type === "delta" && Number.isSafeInteger(r.round) &&
    typeof r.parent === "string" && typeof r.delta === "string" &&
    typeof r.signature === "string";
}
