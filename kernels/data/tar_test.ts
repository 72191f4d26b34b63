import { concatBytes } from "../../tests/_bytes.ts";
import assert from "node:assert/strict";
import { TarFormatError, untar } from "./tar.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

// GNU tar 1.34 archives of the same tree, gzipped and base64-encoded:
//   ./a.txt "hello\n", ./big (700 × "z"), ./link -> a.txt (a symlink),
//   ./d{70}/f{60} "long name\n" (too long for the 100-byte name field).
// pax: the long name is a PAX `path` record; ustar: it uses the prefix field.
const GNU_PAX =
  "H4sIAAAAAAACA+3YzWqEMBQF4Kz7FHkCk9z83FX3Xc4rpIzzQ61TZixIn77BVceFU2gMpJ5vExFB5HjC1UaJ1emEvZ/WZL5Ox8YGTRy0m86zZRbSiwI+b0O8plvmeMifD1eJRsVmGIfV8w/OLeQf7vM32nonpEb+qzu1XXd5ErBRjXo9Hwvs/wv9N8Ru3n8dGP0v4QugUti9c+z/+yxUzvmfPKWREPN/Tfnv4vjSxn17vanDzKP5nwzf528NpcvlWFP+lTLOyo84nJ6zvQiHP8CHSLX9X0j14fe/oVn/yWuL+b+E7tIfZR/fW1Rvo/3vzv1bgf+/zL+f/4wh64Wk9X9Nbr7/AAAAAAAAAPD/fQOoAP+uACgAAA==";
const GNU_USTAR =
  "H4sIAAAAAAACA+3YTQrCMBAF4Kw9RU+Q/2TOU7HWYqygFcTTG7qyXRTBJFD7vk1KNiUM8zoNFyw7GZFz4xrN1/FZGS81eWnHfTJErHKsgMd9qG/xlSkO+Xm4leCi5sNzyF5/b+1C/f20/koaZ1klUf/sTk0I1x2DjeJi37UF8n+h/5UmO+9/6Qn9X8ILYKWQ3iny/5CESDn/a6fjSIj5v4DjD5LN/0pP62+VJL3y73+qxsp8/HDt26qvLw3+ATaa/6HrzwXuf4i+z3+ltHGs0vmvJjaf/wAAAAAAAAAAAPC/3lDQETAAKAAA";

async function gunzipBase64(b64: string): Promise<Uint8Array> {
  const gz = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([gz]).stream().pipeThrough(
    new DecompressionStream("gzip"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A minimal ustar writer for building edge cases. */
function entry(
  name: string,
  data: Uint8Array | string,
  options: { type?: string; size?: number | Uint8Array; magic?: string } = {},
): Uint8Array {
  const body = typeof data === "string" ? enc.encode(data) : data;
  const header = new Uint8Array(512);
  const put = (at: number, s: string) => header.set(enc.encode(s), at);
  put(0, name);
  put(100, "0000644\0");
  put(108, "0000000\0");
  put(116, "0000000\0");
  if (options.size instanceof Uint8Array) header.set(options.size, 124);
  else {put(
      124,
      (options.size ?? body.length).toString(8).padStart(11, "0") + "\0",
    );}
  put(136, "13602240000\0"); // 2020-01-01
  put(156, options.type ?? "0");
  put(257, options.magic ?? "ustar\x0000");
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : header[i];
  put(148, sum.toString(8).padStart(6, "0") + "\0 ");
  const padded = new Uint8Array(Math.ceil(body.length / 512) * 512);
  padded.set(body);
  return concatBytes(header, padded);
}

const END = new Uint8Array(1024);

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bytes = enc.encode(body).length;
  let length = bytes + 1;
  while (String(length).length + bytes !== length) length++;
  return `${length}${body}`;
}

Deno.test("untar reads GNU tar's pax and ustar archives alike", async () => {
  const long = `./${"d".repeat(70)}/${"f".repeat(60)}`;
  for (const b64 of [GNU_PAX, GNU_USTAR]) {
    const files = untar(await gunzipBase64(b64));
    assert.deepEqual(files.map((f) => f.name), ["./a.txt", "./big", long]);
    assert.equal(dec.decode(files[0].data), "hello\n");
    assert.equal(dec.decode(files[1].data), "z".repeat(700));
    assert.equal(dec.decode(files[2].data), "long name\n");
    assert.equal(files[0].mode, 0o644);
    assert.equal(files[0].mtime, Date.UTC(2020, 0, 1) / 1000);
  }
});

Deno.test("untar: empty archives and archives without an end marker", () => {
  assert.deepEqual(untar(new Uint8Array()), []);
  assert.deepEqual(untar(END), []);
  const files = untar(concatBytes(entry("a", "x"), entry("b", "")));
  assert.deepEqual(files.map((f) => [f.name, dec.decode(f.data)]), [
    ["a", "x"],
    ["b", ""],
  ]);
});

Deno.test("untar skips directories, links and global headers", () => {
  const files = untar(concatBytes(
    entry("dir/", "", { type: "5" }),
    entry("sym", "", { type: "2" }),
    entry("pax_global_header", paxRecord("comment", "hi"), { type: "g" }),
    entry("dir/file", "data"),
    END,
  ));
  assert.deepEqual(files.map((f) => f.name), ["dir/file"]);
});

Deno.test("untar applies PAX path and size, and GNU long names", () => {
  const big = "y".repeat(600);
  const files = untar(concatBytes(
    entry("PaxHeader", paxRecord("path", "é/long") + paxRecord("size", "600"), {
      type: "x",
    }),
    entry("short", big, { size: 0 }),
    entry("././@LongLink", "gnu/" + "n".repeat(150) + "\0", { type: "L" }),
    entry("trunc", "g"),
    entry("plain", "p"),
    END,
  ));
  assert.deepEqual(files.map((f) => f.name), [
    "é/long",
    "gnu/" + "n".repeat(150),
    "plain",
  ]);
  assert.equal(dec.decode(files[0].data), big);
});

Deno.test("untar reads base-256 sizes", () => {
  const size = new Uint8Array(12);
  size[0] = 0x80;
  size[11] = 3;
  assert.equal(dec.decode(untar(entry("b", "abc", { size }))[0].data), "abc");
  size[0] = 0xc0; // negative
  assert.throws(() => untar(entry("b", "abc", { size })), TarFormatError);
});

Deno.test("untar refuses corrupt archives with the offset", () => {
  const good = concatBytes(entry("a", "x"), entry("b", "y"), END);
  const flipped = good.slice();
  flipped[512 + 512 + 3] ^= 1; // a name byte of the second header
  assert.throws(() => untar(flipped), (error) => {
    assert.ok(error instanceof TarFormatError);
    assert.equal(error.offset, 1024);
    assert.match(error.message, /checksum/);
    return true;
  });
  assert.throws(() => untar(good.subarray(0, 1024 + 100)), /partial header/);
  assert.throws(() => untar(entry("a", "x", { size: 2000 })), /truncated/);
  assert.throws(
    () => untar(entry("a", "x", { magic: "nope\0\0" })),
    /not ustar/,
  );
  assert.throws(
    () =>
      untar(concatBytes(entry("p", "junk", { type: "x" }), entry("a", "x"))),
    /PAX header/,
  );
  assert.throws(
    () => untar(enc.encode("not a tar at all".repeat(40))),
    TarFormatError,
  );
});
