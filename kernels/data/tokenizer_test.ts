import assert from "node:assert/strict";
import { decode, encode, VOCAB_SIZE } from "./tokenizer.ts";

Deno.test("encode gives UTF-8 bytes and decode round-trips any text", () => {
  assert.equal(VOCAB_SIZE, 256);
  assert.deepEqual([...encode("A é€😀")], [
    0x41,
    0x20,
    0xc3,
    0xa9,
    0xe2,
    0x82,
    0xac,
    0xf0,
    0x9f,
    0x98,
    0x80,
  ]);
  for (
    const text of ["", "plain", "\ufeffBOM kept", "tabs\tand\nlines", "日本語"]
  ) {
    assert.equal(decode(encode(text)), text);
    assert.equal(decode(Array.from(encode(text))), text);
    assert.equal(decode(Int32Array.from(encode(text))), text);
  }
});

Deno.test("decode never throws on invalid UTF-8 or out-of-vocabulary ids", () => {
  assert.equal(decode([0x68, 0xff, 0x69]), "h\ufffdi");
  assert.equal(decode(new Uint8Array([0xe2, 0x82])), "\ufffd"); // truncated €
  assert.equal(decode([0xc3]), "\ufffd");
  assert.equal(
    decode([0x61, 256, -1, 1.5, NaN, 0x62]),
    "a\ufffd\ufffd\ufffd\ufffdb",
  );
  // Every single byte decodes to one character.
  for (let b = 0; b < VOCAB_SIZE; b++) assert.equal(decode([b]).length, 1);
});

Deno.test("encode replaces lone surrogates", () => {
  assert.deepEqual([...encode("\ud800")], [0xef, 0xbf, 0xbd]);
});
