/**
 * The process the store crash test kills: it writes to a data dir the way
 * a node does, without end, and prints a line once each write has landed
 * (`put CID`, `part CID`, `state N`, `record N`), and a line as each
 * begins (`begin put`, ...); the test SIGKILLs it a few ms after one begins
 * and checks that everything printed is still there, whole,
 * and that nothing on disk is corrupt.
 *
 * Writes: blocks of random size up to 1 MiB and checkpoint-sized ones of
 * 2 MiB (`Blockstore.put`: temp file, fsync, rename), downloads streamed
 * in 64 KiB pieces into a part file (resumed by the next run when killed
 * mid-way, as a fetch resumes), a state file replaced atomically, and round
 * records appended to a JSONL log.
 *
 * Usage: deno run -A tests/_store_crash_writer.ts DIR RUN
 *
 * @module
 */
import { Rng } from "../kernels/data/rng.ts";
import { RoundRecordLog } from "../node/round/records/record_log.ts";
import { Blockstore } from "../node/store/blockstore.ts";
import { atomicWriteFile } from "../node/store/atomic_write.ts";
import { cidForBytes, cidToString } from "../protocol/content/cid.ts";
import { crashRecord, STATE_FILE } from "./_store_crash.ts";

const [dir, run] = Deno.args;
const rng = new Rng("store-crash", [Number(run)]);
const store = await Blockstore.open(`${dir}/blocks`);
const { records, log } = await RoundRecordLog.open(dir, () => {});
let state = 0;
try {
  state = JSON.parse(await Deno.readTextFile(`${dir}/${STATE_FILE}`)).n;
} catch {
  // first run
}
let round = records.length === 0 ? 0 : records[records.length - 1].round + 1;

// One random buffer, stamped with a counter per write: the time goes to
// writing, not to making bytes.
const noise = new Uint8Array(2 << 20);
for (let i = 0; i < noise.length; i += 65536) {
  crypto.getRandomValues(noise.subarray(i, i + 65536));
}
let stamp = 0;
function randomBytes(n: number): Uint8Array {
  const out = noise.slice(0, Math.max(8, n));
  new DataView(out.buffer).setFloat64(0, Number(run) * 1e9 + stamp++);
  return out;
}

/** Download k's bytes: the same in every run, so a killed one resumes. */
function download(k: number): Uint8Array {
  const r = new Rng("store-crash-download", [k]);
  const words = new Uint32Array(((1 + (k % 2)) << 20) / 4);
  for (let i = 0; i < words.length; i++) words[i] = r.nextU32();
  return new Uint8Array(words.buffer);
}

let k = 0;
console.log("ready");
for (;;) {
  const blob = randomBytes(rng.int(1 << 20));
  console.log("begin put");
  console.log(`put ${cidToString(await store.put(blob))}`);
  const checkpoint = randomBytes(2 << 20);
  console.log("begin put");
  console.log(`put ${cidToString(await store.put(checkpoint))}`);

  let bytes = download(k);
  let cid = await cidForBytes(bytes);
  while (await store.has(cid)) {
    bytes = download(++k);
    cid = await cidForBytes(bytes);
  }
  console.log("begin part");
  const part = await store.partial(cid, bytes.length);
  for (let at = part.offset; at < bytes.length; at += 64 << 10) {
    await part.write(
      bytes.subarray(at, Math.min(bytes.length, at + (64 << 10))),
    );
  }
  await part.commit();
  console.log(`part ${cidToString(cid)}`);

  state++;
  console.log("begin state");
  await atomicWriteFile(
    `${dir}/${STATE_FILE}`,
    new TextEncoder().encode(
      JSON.stringify({ n: state, pad: "x".repeat(rng.int(100_000)) }),
    ),
  );
  console.log(`state ${state}`);

  console.log("begin record");
  await log.append(crashRecord(round));
  console.log(`record ${round++}`);
}
