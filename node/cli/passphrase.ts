/**
 * Where `keys export` and `keys import` get the passphrase: the
 * `ZOO_KEYS_PASSPHRASE` variable (scripts, tests), else the terminal, typed
 * without echo; with neither, a clear error, never a hang on a pipe.
 *
 * @module
 */
import { checkPassphrase, KeysBackupError } from "../keys_backup.ts";

/** The variable a script sets the passphrase in. */
export const PASSPHRASE_ENV = "ZOO_KEYS_PASSPHRASE";

/** The input the passphrase is typed on; `Deno.stdin` is one. */
export interface Terminal {
  isTerminal(): boolean;
  setRaw(mode: boolean): void;
  read(buffer: Uint8Array): Promise<number | null>;
}

/** Where {@linkcode readPassphrase} looks; the process's own by default. */
export interface PassphraseSources {
  /** Ask twice and compare (when typed): for a new backup. */
  confirm: boolean;
  /**
   * The value of `ZOO_KEYS_PASSPHRASE`, `undefined` when unset; read from
   * the process's environment when this field is left out.
   */
  env?: string;
  stdin?: Terminal;
  /** Shows a prompt; stderr by default, so stdout stays the command's. */
  write?: (text: string) => void;
}

/**
 * The passphrase from `ZOO_KEYS_PASSPHRASE` if set, else typed on the
 * terminal without echo. Throws a {@linkcode KeysBackupError} (reason
 * `passphrase`) when there is no source, the entry is cancelled, the two
 * entries differ, or the passphrase is empty or too short.
 */
export async function readPassphrase(
  sources: PassphraseSources,
): Promise<string> {
  const env = "env" in sources ? sources.env : Deno.env.get(PASSPHRASE_ENV);
  if (env !== undefined) {
    checkPassphrase(env);
    return env;
  }
  const stdin = sources.stdin ?? Deno.stdin;
  const write = sources.write ??
    ((text: string) => Deno.stderr.writeSync(new TextEncoder().encode(text)));
  if (!stdin.isTerminal()) {
    throw new KeysBackupError(
      "passphrase",
      `Cannot ask for the passphrase as stdin is not a terminal: set ${PASSPHRASE_ENV}`,
    );
  }
  const keys = new KeyReader(stdin);
  stdin.setRaw(true);
  try {
    const first = await readHiddenLine(keys, write, "Passphrase: ");
    checkPassphrase(first);
    if (sources.confirm) {
      const again = await readHiddenLine(
        keys,
        write,
        "Same passphrase again: ",
      );
      if (again !== first) {
        throw new KeysBackupError(
          "passphrase",
          "The two passphrases differ: nothing was written",
        );
      }
    }
    return first;
  } finally {
    stdin.setRaw(false);
  }
}

/**
 * Bytes from the terminal one at a time, keeping the rest of a read for
 * the next line, so a pasted "pass⏎pass⏎" answers both prompts.
 */
class KeyReader {
  #stdin: Terminal;
  #buffer = new Uint8Array(256);
  #at = 0;
  #end = 0;

  constructor(stdin: Terminal) {
    this.#stdin = stdin;
  }

  /** The next byte, or null at end of input. */
  async next(): Promise<number | null> {
    if (this.#at === this.#end) {
      const n = await this.#stdin.read(this.#buffer);
      if (n === null || n === 0) return null;
      this.#at = 0;
      this.#end = n;
    }
    return this.#buffer[this.#at++];
  }
}

const ENTER = [0x0d, 0x0a];
const CTRL_C = 0x03;
const CTRL_D = 0x04;
const CTRL_U = 0x15;
const BACKSPACE = [0x7f, 0x08];

/**
 * One line typed in raw mode, with nothing echoed: Enter ends it,
 * Backspace removes a character, Ctrl-U the whole line; Ctrl-C, and
 * Ctrl-D or the end of input, cancel (raw mode turns off the terminal's
 * own handling of them). Other control bytes are dropped.
 */
async function readHiddenLine(
  keys: KeyReader,
  write: (text: string) => void,
  prompt: string,
): Promise<string> {
  write(prompt);
  const bytes: number[] = [];
  try {
    for (;;) {
      const byte = await keys.next();
      if (byte === null || byte === CTRL_C || byte === CTRL_D) {
        throw new KeysBackupError(
          "passphrase",
          "Passphrase entry cancelled: nothing was changed",
        );
      }
      if (ENTER.includes(byte)) break;
      if (BACKSPACE.includes(byte)) {
        // Drop UTF-8 continuation bytes, then the character's first byte.
        while (bytes.length > 0 && (bytes[bytes.length - 1] & 0xc0) === 0x80) {
          bytes.pop();
        }
        bytes.pop();
      } else if (byte === CTRL_U) {
        bytes.fill(0).length = 0;
      } else if (byte >= 0x20) {
        bytes.push(byte);
      }
    }
    return new TextDecoder().decode(new Uint8Array(bytes));
  } finally {
    // No echo means the cursor never moved past the prompt's line.
    write("\n");
    bytes.fill(0);
  }
}
