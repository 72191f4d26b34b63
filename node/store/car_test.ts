import assert from "node:assert/strict";
import { CarBlockIterator, CarReader, CarWriter } from "@ipld/car";
import { sha256, sha512 } from "multiformats/hashes/sha2";
import {
  blockCid,
  CID,
  cidForBytes,
  cidToString,
  RAW_CODEC,
  SHA256_CODE,
} from "../../protocol/content/cid.ts";
import { concatBytes } from "../../tests/_bytes.ts";
import {
  type CarBlock,
  CarError,
  fileCarBlocks,
  filesOfCar,
  readCar,
  writeCar,
} from "./car.ts";
import * as dagPB from "@ipld/dag-pb";
import { UnixFS } from "ipfs-unixfs";
import {
  DAG_PB_CODEC,
  FILE_BLOCK_BYTES,
  fileDag,
  fileDagOfLeaves,
} from "../../protocol/content/unixfs.ts";

const LIMIT = { maxBlockBytes: 1 << 20 };

/** A raw block of `size` patterned bytes under its sha2-256 CID. */
async function rawBlock(size: number, salt = 0): Promise<CarBlock> {
  const bytes = new Uint8Array(size).map((_, i) => (i * 31 + salt) & 0xff);
  return { cid: await cidForBytes(bytes), bytes };
}

/** Every block of `source`, read with {@linkcode readCar}. */
async function readAll(
  source: Uint8Array | AsyncIterable<Uint8Array>,
  options = LIMIT,
): Promise<{ roots: readonly CID[]; blocks: CarBlock[] }> {
  const car = await readCar(source, options);
  const blocks = [];
  for await (const block of car.blocks) blocks.push(block);
  return { roots: car.roots, blocks };
}

/** `bytes` in chunks of `size`, as a file stream would bring them. */
async function* chunked(bytes: Uint8Array, size: number) {
  for (let at = 0; at < bytes.length; at += size) {
    yield bytes.slice(at, at + size);
  }
}

/** Asserts `promise` rejects with a CarError matching `pattern`. */
async function assertCarError(
  promise: Promise<unknown>,
  pattern: RegExp,
): Promise<CarError> {
  let caught: unknown;
  await promise.catch((err) => caught = err);
  assert.ok(caught instanceof CarError, `not a CarError: ${caught}`);
  assert.match(caught.message, pattern);
  assert.ok(!caught.message.includes("\n"), "one line");
  return caught;
}

/** A CAR written by @ipld/car itself, so it may hold what writeCar refuses. */
async function libraryCar(roots: CID[], blocks: CarBlock[]) {
  const { writer, out } = CarWriter.create(roots);
  const bytes = new Response(ReadableStream.from(out)).bytes();
  for (const block of blocks) await writer.put(block);
  await writer.close();
  return await bytes;
}

// --- An independent reader of the CARv1 framing, trusting no library ---

/** An unsigned LEB128 varint at `at`: its value and the offset after it. */
function varint(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  for (let shift = 1;; shift *= 128) {
    assert.ok(at < bytes.length, "varint runs past the end");
    const b = bytes[at++];
    value += (b & 0x7f) * shift;
    if (b < 0x80) return [value, at];
  }
}

/** The subset of CBOR a CAR header uses: maps, arrays, text, bytes, uints, tag 42. */
function cbor(bytes: Uint8Array, at: number): [unknown, number] {
  const major = bytes[at] >> 5;
  let n = bytes[at] & 0x1f;
  at++;
  if (n === 24) n = bytes[at++];
  else if (n === 25) [n, at] = [(bytes[at] << 8) | bytes[at + 1], at + 2];
  else assert.ok(n < 24, `unexpected CBOR length form ${n}`);
  const items = (count: number) => {
    const out = [];
    for (let i = 0; i < count; i++) {
      let item;
      [item, at] = cbor(bytes, at);
      out.push(item);
    }
    return out;
  };
  switch (major) {
    case 0:
      return [n, at];
    case 2:
      return [bytes.slice(at, at + n), at + n];
    case 3:
      return [new TextDecoder().decode(bytes.subarray(at, at + n)), at + n];
    case 4:
      return [items(n), at];
    case 5: {
      const kv = items(2 * n);
      return [
        Object.fromEntries(
          Array.from({ length: n }, (_, i) => [kv[2 * i], kv[2 * i + 1]]),
        ),
        at,
      ];
    }
    case 6: {
      assert.equal(n, 42, "the only tag dag-cbor allows is 42, a CID");
      const [link, end] = cbor(bytes, at);
      assert.ok(link instanceof Uint8Array && link[0] === 0, "CID link");
      return [{ cid: link.subarray(1) }, end];
    }
  }
  throw new Error(`unexpected CBOR major type ${major}`);
}

/**
 * Parses a CARv1 by hand: varint header length, dag-cbor header, then
 * varint-prefixed sections of a CIDv1 (version, codec, multihash) and the
 * block. Checks each raw sha2-256 block with crypto.subtle.
 */
async function parseCarV1(bytes: Uint8Array) {
  const [headerLength, start] = varint(bytes, 0);
  const [header, end] = cbor(bytes, start);
  assert.equal(end, start + headerLength, "header length");
  const { version, roots } = header as { version: number; roots: unknown[] };
  assert.equal(version, 1);
  const sections = [];
  for (let at = end; at < bytes.length;) {
    const [length, cidStart] = varint(bytes, at);
    const sectionEnd = cidStart + length;
    const [cidVersion, a] = varint(bytes, cidStart);
    const [codec, b] = varint(bytes, a);
    const [hash, c] = varint(bytes, b);
    const [digestLength, digestStart] = varint(bytes, c);
    const digest = bytes.slice(digestStart, digestStart + digestLength);
    const block = bytes.slice(digestStart + digestLength, sectionEnd);
    assert.ok(sectionEnd <= bytes.length, "section runs past the end");
    assert.deepEqual([cidVersion, codec, hash, digestLength], [
      1,
      RAW_CODEC,
      SHA256_CODE,
      32,
    ]);
    const actual = new Uint8Array(
      await crypto.subtle.digest("SHA-256", block),
    );
    assert.deepEqual(actual, digest, "block hashes to its CID");
    sections.push({
      cid: bytes.slice(cidStart, digestStart + digestLength),
      block,
    });
    at = sectionEnd;
  }
  return { roots: roots as { cid: Uint8Array }[], sections };
}

Deno.test("writeCar writes a CARv1 that an independent parser and @ipld/car both read back", async () => {
  const one = await rawBlock(70_000);
  const two = await rawBlock(0);
  const car = await writeCar([one.cid], [one, two]);

  const parsed = await parseCarV1(car);
  assert.deepEqual(parsed.roots, [{ cid: one.cid.bytes }]);
  assert.deepEqual(
    parsed.sections,
    [one, two].map((b) => ({ cid: b.cid.bytes, block: b.bytes })),
  );

  const reader = await CarReader.fromBytes(car);
  assert.equal(reader.version, 1);
  assert.deepEqual((await reader.getRoots()).map(cidToString), [
    cidToString(one.cid),
  ]);
  assert.deepEqual((await reader.get(one.cid))?.bytes, one.bytes);
  const streamed = await CarBlockIterator.fromIterable(chunked(car, 4096));
  const cids = [];
  for await (const block of streamed) cids.push(cidToString(block.cid));
  assert.deepEqual(cids, [one, two].map((b) => cidToString(b.cid)));
});

Deno.test("readCar round trip, from bytes and from a stream in small chunks", async () => {
  const blocks = [await rawBlock(5000), await rawBlock(1, 3)];
  const car = await writeCar([blocks[1].cid, blocks[0].cid], blocks);
  for (const source of [car, chunked(car, 7), chunked(car, 1)]) {
    const read = await readAll(source);
    assert.deepEqual(read.roots.map(cidToString), [
      cidToString(blocks[1].cid),
      cidToString(blocks[0].cid),
    ]);
    assert.deepEqual(
      read.blocks.map((b) => b.bytes),
      blocks.map((b) => b.bytes),
    );
    assert.ok(read.blocks.every((b, i) => b.cid.equals(blocks[i].cid)));
  }
  // No roots, no blocks: a valid, empty CAR.
  assert.deepEqual(await readAll(await writeCar([], [])), {
    roots: [],
    blocks: [],
  });
});

Deno.test("readCar reads a CARv2 and ignores what follows its payload", async () => {
  const block = await rawBlock(300);
  const v1 = await writeCar([block.cid], [block]);
  const pragma = [0x0a, 0xa1, 0x67, ...new TextEncoder().encode("version"), 2];
  const header = new DataView(new ArrayBuffer(40));
  header.setBigUint64(16, BigInt(pragma.length + 40), true); // data offset
  header.setBigUint64(24, BigInt(v1.length), true); // data size
  const index = new Uint8Array([1, 2, 3, 4]); // not a section: must be skipped
  const v2 = concatBytes(
    new Uint8Array(pragma),
    new Uint8Array(header.buffer),
    v1,
    index,
  );
  const car = await readCar(v2, LIMIT);
  assert.equal(car.version, 2);
  const read = await readAll(v2);
  assert.deepEqual(read.blocks.map((b) => b.bytes), [block.bytes]);
});

Deno.test("one changed byte in a block is refused, and the blocks before it come through", async () => {
  const good = await rawBlock(1000);
  const bad = await rawBlock(1000, 9);
  const car = await writeCar([good.cid], [good, bad]);
  const tampered = car.slice();
  tampered[tampered.length - 500] ^= 0x01;
  const reader = await readCar(tampered, LIMIT);
  const got: CarBlock[] = [];
  const err = await assertCarError(
    (async () => {
      for await (const block of reader.blocks) got.push(block);
    })(),
    /^Cannot accept CAR block 2 bafkrei\w+ as its bytes hash to bafkrei\w+: they were damaged or tampered with$/,
  );
  assert.equal(err.block, 2);
  assert.deepEqual(got.map((b) => b.bytes), [good.bytes]);
});

Deno.test("a truncated CAR, an empty file and a file that is no CAR are refused", async () => {
  const block = await rawBlock(2000);
  const car = await writeCar([block.cid], [block]);
  for (const cut of [1, 100, 1990]) {
    await assertCarError(
      readAll(car.subarray(0, car.length - cut)),
      /^Cannot read CAR block 1 as the file ends early: is it truncated\?$/,
    );
  }
  // Cut at a section boundary: the framing is whole, the root is missing.
  const headerOnly = car.subarray(0, car.length - 2000 - 36 - 2);
  await assertCarError(
    readAll(headerOnly),
    /^Cannot read CAR as it ends without the block of its root bafkrei\w+: is it truncated\?$/,
  );
  await assertCarError(
    readAll(car.subarray(0, 10)),
    /^Cannot read CAR as it does not start with a valid CAR header: the file ends early/,
  );
  await assertCarError(
    readAll(new Uint8Array()),
    /does not start with a valid CAR header/,
  );
  await assertCarError(
    readAll(new TextEncoder().encode('{"not": "a CAR"}\n')),
    /^Cannot read CAR as it does not start with a valid CAR header: /,
  );
});

Deno.test("blocks and roots in another codec or hash, or over the limit, are refused", async () => {
  const bytes = new TextEncoder().encode("a block");
  const dagCbor = CID.createV1(0x71, await sha256.digest(bytes));
  const sha2512 = CID.createV1(RAW_CODEC, await sha512.digest(bytes));
  const raw = await cidForBytes(bytes);
  await assertCarError(
    readAll(await libraryCar([], [{ cid: dagCbor, bytes }])),
    /^Cannot read CAR block 1 bafyrei\w+ as its codec is dag-cbor \(0x71\): zoo-node takes only CIDv1 sha2-256 blocks, raw \(0x55\) or dag-pb \(0x70\)/,
  );
  await assertCarError(
    readAll(await libraryCar([], [{ cid: sha2512, bytes }])),
    /^Cannot read CAR block 1 \w+ as its hash is 0x13 with 64 bytes, not sha2-256/,
  );
  await assertCarError(
    readCar(await libraryCar([dagCbor], []), LIMIT),
    /^Cannot read CAR root bafyrei\w+ as its codec is dag-cbor/,
  );
  const big = await libraryCar([raw], [{ cid: raw, bytes }]);
  await assertCarError(
    readAll(big, { maxBlockBytes: bytes.length - 1 }),
    /^Cannot read CAR block 1 \(bafkrei\w+\) as it is 7 bytes, over the limit of 6 \(maxBlobBytes\)$/,
  );
  assert.equal((await readAll(big, { maxBlockBytes: 7 })).blocks.length, 1);
  await assert.rejects(readCar(big, { maxBlockBytes: -1 }), RangeError);
  // writeCar refuses the same, and bytes that are not the CID's.
  await assertCarError(writeCar([dagCbor], []), /^Cannot write CAR root/);
  await assertCarError(
    writeCar([], [{ cid: sha2512, bytes }]),
    /^Cannot accept CAR block 1 .* not sha2-256/,
  );
  await assertCarError(
    writeCar([raw], [{ cid: raw, bytes: bytes.slice(1) }]),
    /^Cannot accept CAR block 1 .* as its bytes hash to/,
  );
});

Deno.test("a section shorter than its own CID is refused, not looped on", async () => {
  const block = await rawBlock(10);
  const header = await writeCar([], []);
  const car = concatBytes(
    header,
    new Uint8Array([3]),
    block.cid.bytes,
    block.bytes,
  );
  await assertCarError(
    readAll(car),
    /^Cannot read CAR block 1 as its section is shorter than its CID$/,
  );
});

Deno.test("a file goes into a CAR as its DAG and comes out whole; a missing leaf or another layout is refused", async () => {
  const bytes = new Uint8Array(2 * FILE_BLOCK_BYTES + 99);
  for (let at = 0; at < bytes.length; at += 65536) {
    crypto.getRandomValues(bytes.subarray(at, at + 65536));
  }
  const dag = fileDag(bytes);
  const blocks = fileCarBlocks(dag, bytes);
  assert.equal(blocks.length, 4);
  const extra = {
    cid: await cidForBytes(new Uint8Array([7])),
    bytes: new Uint8Array([7]),
  };
  const car = await writeCar([dag.root, extra.cid], [...blocks, extra]);
  const out = await filesOfCar(await readCar(car, LIMIT), bytes.length);
  assert.equal(out.count, 5);
  assert.deepEqual(out.files.map((f) => f.root.toString()), [
    dag.root.toString(),
  ]);
  assert.deepEqual(out.files[0].bytes, bytes);
  assert.deepEqual(out.blocks.map((b) => b.cid.toString()), [
    extra.cid.toString(),
  ]);

  await assertCarError(
    filesOfCar(await readCar(car, LIMIT), bytes.length - 1),
    /^Cannot read file bafybei\w+ from the CAR: Cannot read file .* over the limit/,
  );
  const cut = await writeCar([dag.root], blocks.slice(0, 3));
  await assertCarError(
    filesOfCar(await readCar(cut, LIMIT), Infinity),
    /as its leaf bafkrei\w+ \(bytes 2097152-2097251\) is not in it$/,
  );
  // Two leaves under one node and the third beside them: UnixFS, not ours.
  const inner = fileDagOfLeaves(dag.leaves.slice(0, 2));
  const node = dagPB.encode(dagPB.prepare({
    Data: new UnixFS({
      type: "file",
      blockSizes: [2n * BigInt(FILE_BLOCK_BYTES), 99n],
    }).marshal(),
    Links: [
      { Hash: inner.root, Name: "", Tsize: 1 },
      { Hash: dag.leaves[2].cid, Name: "", Tsize: 99 },
    ],
  }));
  const other = { cid: await blockCid(node, DAG_PB_CODEC), bytes: node };
  const foreign = await writeCar([other.cid], [
    other,
    ...inner.nodes,
    ...blocks.slice(1),
  ]);
  await assertCarError(
    filesOfCar(await readCar(foreign, LIMIT), Infinity),
    /is not laid out as zoo-node lays out files/,
  );
});
