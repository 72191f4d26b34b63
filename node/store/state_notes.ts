/**
 * Where a peer keeps the small notes about a job that must outlive a
 * restart (its announcements, the rounds its blocks were used in): files
 * in a Deno node's state dir ({@linkcode fileNotes}), a browser tab's
 * IndexedDB (`node/browser/idb_store.ts`), or memory for tests
 * ({@linkcode memoryNotes}). The round code writes through this one
 * interface and never asks which it is.
 *
 * @module
 */
import { atomicWriteFile } from "./atomic_write.ts";

/** Named text notes, each replaced or appended to as one atomic write. */
export interface StateNotes {
  /** Where the notes are kept, for messages: a directory or a database. */
  readonly where: string;
  /** The text of note `name`, or null if none was written. */
  read(name: string): Promise<string | null>;
  /** Replaces note `name` with `text`: a reader sees the old or the new. */
  replace(name: string, text: string): Promise<void>;
  /** Adds `text` at the end of note `name` (a crash may leave it torn). */
  append(name: string, text: string): Promise<void>;
}

/**
 * The notes as files of `dir` (created on the first write), mode 0600.
 *
 * @example
 * ```ts
 * import { fileNotes } from "./state_notes.ts";
 * const notes = fileNotes(await Deno.makeTempDir());
 * await notes.append("log.jsonl", "1\n");
 * await notes.append("log.jsonl", "2\n");
 * if (await notes.read("log.jsonl") !== "1\n2\n") throw new Error("append");
 * ```
 */
export function fileNotes(dir: string): StateNotes {
  return {
    where: dir,
    async read(name) {
      try {
        return await Deno.readTextFile(`${dir}/${name}`);
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) return null;
        throw err;
      }
    },
    async replace(name, text) {
      await Deno.mkdir(dir, { recursive: true });
      await atomicWriteFile(`${dir}/${name}`, new TextEncoder().encode(text), {
        mode: 0o600,
      });
    },
    async append(name, text) {
      await Deno.mkdir(dir, { recursive: true });
      await Deno.writeTextFile(`${dir}/${name}`, text, {
        append: true,
        mode: 0o600,
      });
    },
  };
}

/** Notes held in memory only: for tests and peers that keep nothing. */
export function memoryNotes(): StateNotes {
  const notes = new Map<string, string>();
  return {
    where: "memory",
    read: (name) => Promise.resolve(notes.get(name) ?? null),
    replace(name, text) {
      notes.set(name, text);
      return Promise.resolve();
    },
    append(name, text) {
      notes.set(name, (notes.get(name) ?? "") + text);
      return Promise.resolve();
    },
  };
}
