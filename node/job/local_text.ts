/**
 * A job's text from the creator's own files: one text file, or every
 * text file under a directory, joined in a fixed order so the same tree
 * always gives the same bytes (and so the same dataset CID).
 *
 * @module
 */
import { join, relative, sep } from "node:path";
import { CorpusError, loadTextFile } from "./corpus.ts";
import { MAX_DATASET_BYTES } from "./dataset.ts";

/** What {@linkcode loadLocalText} read. */
export interface LocalText {
  bytes: Uint8Array;
  /** The files joined, relative to the directory (the file itself if one). */
  files: string[];
}

/**
 * The text of `path`: a text file, or the text files under a directory
 * (recursively, by sorted relative path, hidden entries skipped, each
 * followed by a newline). Throws a {@linkcode CorpusError} for a missing
 * path, an empty one, a binary file or more than the largest dataset.
 */
export async function loadLocalText(path: string): Promise<LocalText> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (error) {
    throw new CorpusError(
      `Cannot read ${path} as it does not exist or cannot be read (${
        (error as Error).message
      })`,
      path,
      { cause: error },
    );
  }
  if (!info.isDirectory) {
    checkSize(path, info.size);
    return { bytes: await loadTextFile(path), files: [path] };
  }
  const files = (await walk(path)).map((f) => relative(path, f))
    // One order on every platform: "/" between parts, code-unit sort.
    .map((f) => f.split(sep).join("/")).sort();
  if (files.length === 0) {
    throw new CorpusError(
      `Cannot read ${path} as it holds no files (hidden ones are skipped)`,
      path,
    );
  }
  // Sized before anything is read: a tree too large is refused at once.
  let total = 0;
  for (const f of files) total += (await Deno.stat(join(path, f))).size + 1;
  checkSize(path, total);
  const parts: Uint8Array[] = [];
  let size = 0;
  for (const f of files) {
    const text = await loadTextFile(join(path, f));
    size += text.length + 1;
    // A file that grew since it was sized is caught here.
    checkSize(path, size);
    parts.push(text, NEWLINE);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  return { bytes, files };
}

const NEWLINE = new Uint8Array([0x0a]);

/** Regular files under `dir`, hidden entries and links skipped. */
async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.startsWith(".")) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory) out.push(...await walk(full));
    else if (entry.isFile) out.push(full);
  }
  return out;
}

function checkSize(path: string, size: number): void {
  if (size > MAX_DATASET_BYTES) {
    throw new CorpusError(
      `Cannot use ${path} as a dataset as it must be at most ${MAX_DATASET_BYTES} bytes: current size is ${size}`,
      path,
    );
  }
}
