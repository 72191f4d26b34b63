import assert from "node:assert/strict";
import { KeysBackupError } from "../keys_backup.ts";
import { readPassphrase, type Terminal } from "./passphrase.ts";

/** A terminal that delivers `chunks` one per read and records its modes. */
function fakeTerminal(chunks: (string | number[])[], tty = true) {
  const modes: boolean[] = [];
  const queue = chunks.map((c) =>
    typeof c === "string" ? new TextEncoder().encode(c) : new Uint8Array(c)
  );
  const stdin: Terminal = {
    isTerminal: () => tty,
    setRaw: (mode) => void modes.push(mode),
    read: (buffer) => {
      const next = queue.shift();
      if (next === undefined) return Promise.resolve(null);
      buffer.set(next);
      return Promise.resolve(next.length);
    },
  };
  let shown = "";
  const write = (text: string) => void (shown += text);
  return { stdin, write, modes, shown: () => shown };
}

async function assertRefused(
  promise: Promise<string>,
  pattern: RegExp,
): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof KeysBackupError, `${err}`);
    assert.equal(err.reason, "passphrase");
    assert.match(err.message, pattern);
    return true;
  });
}

Deno.test("passphrase: ZOO_KEYS_PASSPHRASE wins and the terminal is not touched", async () => {
  const t = fakeTerminal([]);
  const got = await readPassphrase({
    confirm: true,
    env: "from the env",
    ...t,
  });
  assert.equal(got, "from the env");
  assert.deepEqual(t.modes, []);
  assert.equal(t.shown(), "");
  await assertRefused(
    readPassphrase({ confirm: false, env: "", ...t }),
    /is empty/,
  );
  await assertRefused(
    readPassphrase({ confirm: false, env: "1234567", ...t }),
    /at least 8 characters: it has 7/,
  );
});

Deno.test("passphrase: no variable and no terminal names the variable", async () => {
  const t = fakeTerminal(["never read\r"], false);
  await assertRefused(
    readPassphrase({ confirm: false, env: undefined, ...t }),
    /stdin is not a terminal: set ZOO_KEYS_PASSPHRASE/,
  );
  assert.deepEqual(t.modes, []);
});

Deno.test("passphrase: typed without echo, raw mode always undone", async () => {
  const t = fakeTerminal(["secret p", "ass\r"]);
  const got = await readPassphrase({ confirm: false, env: undefined, ...t });
  assert.equal(got, "secret pass");
  assert.deepEqual(t.modes, [true, false]);
  assert.equal(t.shown(), "Passphrase: \n");
});

Deno.test("passphrase: export asks twice; a paste of both lines in one read works", async () => {
  const t = fakeTerminal(["secret pass\rsecret pass\r"]);
  const got = await readPassphrase({ confirm: true, env: undefined, ...t });
  assert.equal(got, "secret pass");
  assert.equal(t.shown(), "Passphrase: \nSame passphrase again: \n");

  const differ = fakeTerminal(["secret pass\r", "secret past\r"]);
  await assertRefused(
    readPassphrase({ confirm: true, env: undefined, ...differ }),
    /two passphrases differ/,
  );
  assert.deepEqual(differ.modes, [true, false]);
});

Deno.test("passphrase: Backspace removes a whole character, Ctrl-U the line", async () => {
  const cases: [(string | number[])[], string][] = [
    [["secret passX\x7f\r"], "secret pass"],
    [["pass w\u00f6rd\u00e9", [0x7f], "!\r"], "pass w\u00f6rd!"],
    [["wrong one\x15secret pass\r"], "secret pass"],
    [["\x7f\x7fsecrXY\x08\x08et pass\r"], "secret pass"],
    [["secret\x1b pass\t\r"], "secret pass"],
  ];
  for (const [chunks, want] of cases) {
    const t = fakeTerminal(chunks);
    assert.equal(
      await readPassphrase({ confirm: false, env: undefined, ...t }),
      want,
    );
  }
});

Deno.test("passphrase: Ctrl-C, Ctrl-D and end of input cancel", async () => {
  for (const chunks of [["secret\x03"], ["\x04"], ["secret pa"]]) {
    const t = fakeTerminal(chunks);
    await assertRefused(
      readPassphrase({ confirm: false, env: undefined, ...t }),
      /cancelled/,
    );
    assert.deepEqual(t.modes, [true, false]);
  }
});

Deno.test("passphrase: a short typed one is refused before asking again", async () => {
  const t = fakeTerminal(["short\r", "short\r"]);
  await assertRefused(
    readPassphrase({ confirm: true, env: undefined, ...t }),
    /at least 8 characters/,
  );
  assert.equal(t.shown(), "Passphrase: \n");
});
