/**
 * Turns the Brown corpus (Form C: POS-tagged `word/tag` tokens, one
 * sentence per line, paragraphs separated by blank lines) into plain prose
 * for byte-level language modelling.
 *
 * The output, exactly:
 * - corpus files are those named `c[a-r]NN` (the basename; `package/ca01`
 *   counts), taken in code-unit order of the basename; everything else
 *   (CONTENTS, README, cats.txt, package.json) is skipped;
 * - each token loses its tag after the LAST "/" (`and/or/cc` → `and/or`);
 * - tokens are joined with single spaces, except none before `, . ; : ? !
 *   ) ] }`, closing quotes, `n't` and `'s`-style clitics, and none after
 *   opening quotes and brackets; `` and '' become `"`; a lone `'` is an
 *   opening quote and the next one in the paragraph its closing quote; a
 *   sentence-final `.` right after a word ending in "." (`Jr. .`) is dropped,
 *   and so is a `;`, `?` or `!` repeating the one before (the corpus has
 *   thousands of `?/. ?/.`);
 * - the sentences of a paragraph form one line; a headline line (most of
 *   its tokens tagged `-hl`) is a line of its own;
 * - lines end with "\n", and a blank line separates files.
 *
 * Pure and deterministic: the same files give the same string.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { brownToText } from "./brown.ts";
 * const text = brownToText([["ca01", "\tHe/pps said/vbd ``/`` no/at ''/'' ./.\n"]]);
 * assert(text === 'He said "no".\n');
 * ```
 *
 * @module
 */

/** Basenames of the corpus files: genre letter a–r, two-digit number. */
const CORPUS_FILE = /^c[a-r]\d\d$/;

const NO_SPACE_BEFORE = new Set([
  ",",
  ".",
  ";",
  ":",
  "?",
  "!",
  ")",
  "]",
  "}",
  "''",
  "n't",
  "'s",
  "'re",
  "'ve",
  "'ll",
  "'d",
  "'m",
]);
const DOUBLED = new Set([";", "?", "!"]);
const NO_SPACE_AFTER = new Set(["``", "(", "[", "{"]);
const QUOTES = new Map([["``", '"'], ["''", '"']]);

/** Converts Brown corpus files to prose; see the module doc for the rules. */
export function brownToText(
  files: Iterable<[name: string, content: string]>,
): string {
  const corpus = [...files]
    .map(([name, content]) => ({ base: basename(name), name, content }))
    .filter((file) => CORPUS_FILE.test(file.base))
    .sort((a, b) => compare(a.base, b.base) || compare(a.name, b.name));
  const documents: string[] = [];
  for (const file of corpus) {
    const lines = fileToLines(file.content);
    if (lines.length > 0) documents.push(lines.map((l) => l + "\n").join(""));
  }
  return documents.join("\n");
}

/** The prose lines of one file: paragraphs and headlines. */
function fileToLines(content: string): string[] {
  const out: string[] = [];
  let paragraph: string[][] = []; // tagged tokens, per source line
  const flush = () => {
    if (paragraph.length > 0) out.push(detokenize(paragraph.flat()));
    paragraph = [];
  };
  for (const line of content.split(/\r?\n/)) {
    const tokens = line.split(/\s+/).filter((t) => t.length > 0);
    if (tokens.length === 0) {
      flush();
    } else if (isHeadline(tokens)) {
      flush();
      out.push(detokenize(tokens));
    } else {
      paragraph.push(tokens);
    }
  }
  flush();
  return out;
}

function isHeadline(tokens: string[]): boolean {
  const tagged = tokens.filter((t) => tagOf(t).includes("-hl")).length;
  return tagged * 2 > tokens.length;
}

/** Joins the words of tagged tokens into one line of prose. */
function detokenize(tokens: string[]): string {
  let text = "";
  let glueNext = true; // no space before the first word
  let singleQuoteOpen = false;
  let previous = "";
  for (const token of tokens) {
    const word = wordOf(token);
    // "Jr./np ./." — the abbreviation's period also ends the sentence.
    if (word === "." && previous.endsWith(".")) continue;
    // The corpus doubles many of these (`?/. ?/.` thousands of times).
    if (DOUBLED.has(word) && word === previous) continue;
    previous = word;
    let glueBefore = NO_SPACE_BEFORE.has(word);
    let glueAfter = NO_SPACE_AFTER.has(word);
    if (word === "'") {
      glueBefore = singleQuoteOpen;
      glueAfter = !singleQuoteOpen;
      singleQuoteOpen = !singleQuoteOpen;
    }
    if (!glueNext && !glueBefore) text += " ";
    text += QUOTES.get(word) ?? word;
    glueNext = glueAfter;
  }
  return text;
}

/** The word of `word/tag`: everything before the last "/" (a bare token is kept). */
function wordOf(token: string): string {
  const slash = token.lastIndexOf("/");
  return slash > 0 ? token.slice(0, slash) : token;
}

function tagOf(token: string): string {
  const slash = token.lastIndexOf("/");
  return slash > 0 ? token.slice(slash + 1) : "";
}

function basename(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
