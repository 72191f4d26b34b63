/**
 * Crash consistency of what a node writes: a writer process
 * (`_store_crash_writer.ts`) is SIGKILLed 0-5 ms after a write begins,
 * aimed at each kind of write in turn, over and over in one data dir, while it puts blocks, streams downloads, replaces a
 * state file and appends round records. After every kill, every block on
 * disk verifies against its CID, everything the writer acknowledged is
 * there, the state file is whole, and the record log loads with at most a
 * torn last line.
 */
import assert from "node:assert/strict";
import { Rng } from "../kernels/data/rng.ts";
import { RoundRecordLog } from "../node/round/records/record_log.ts";
import { Blockstore } from "../node/store/blockstore.ts";
import { parseCid } from "../protocol/content/cid.ts";
import { STATE_FILE } from "./_store_crash.ts";

const WRITER = new URL("./_store_crash_writer.ts", import.meta.url).pathname;
const KILLS = 40;

/** The writes a kill is aimed at, in turn. */
const KINDS = ["put", "part", "state", "record"] as const;

/**
 * Runs the writer until `ms` after the `nth` write of `kind` begins, then
 * SIGKILLs it; resolves with every line it printed.
 */
async function killDuring(
  dir: string,
  run: number,
  kind: string,
  nth: number,
  ms: number,
): Promise<string[]> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", WRITER, dir, String(run)],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines: string[] = [];
  let seen = 0, rest = "";
  for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + text).split("\n");
    rest = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      if (line === `begin ${kind}` && ++seen === nth) {
        setTimeout(() => child.kill("SIGKILL"), ms);
      }
    }
  }
  const { signal } = await child.status;
  assert.equal(signal, "SIGKILL", await stderr);
  return lines;
}

Deno.test("store crash consistency: SIGKILL during block, download, state and record writes loses nothing acknowledged and leaves nothing corrupt", async () => {
  const dir = await Deno.makeTempDir({ prefix: "zoo-store-crash-" });
  const rng = new Rng("store-crash-test");
  const acked = new Set<string>();
  const rounds = new Set<number>();
  let state = 0;
  let partsLeft = 0, tornRecords = 0, blocks = 0;
  try {
    for (let run = 0; run < KILLS; run++) {
      const lines = await killDuring(
        dir,
        run,
        KINDS[run % KINDS.length],
        1 + rng.int(3),
        rng.int(6),
      );
      for (const line of lines) {
        const [what, value] = line.split(" ");
        if (what === "put" || what === "part") acked.add(value);
        if (what === "state") state = Number(value);
        if (what === "record") rounds.add(Number(value));
      }

      const log = await Deno.readTextFile(`${dir}/records.jsonl`).catch(() =>
        ""
      );
      if (log !== "" && !log.endsWith("\n")) tornRecords++;
      for await (const e of Deno.readDir(`${dir}/blocks/tmp`)) {
        if (e.name.endsWith(".part")) partsLeft++;
      }

      const store = await Blockstore.open(`${dir}/blocks`);
      for await (const e of Deno.readDir(`${dir}/blocks/tmp`)) {
        assert.ok(!e.name.endsWith(".tmp"), `run ${run}: ${e.name} left`);
      }
      blocks = 0;
      for await (const cid of store.list()) {
        assert.ok(await store.verify(cid), `run ${run}: ${cid} is corrupt`);
        blocks++;
      }
      for (const cid of acked) {
        assert.ok(await store.has(parseCid(cid)), `run ${run}: ${cid} lost`);
      }
      const saved = JSON.parse(
        await Deno.readTextFile(`${dir}/${STATE_FILE}`).catch(() => '{"n":0}'),
      );
      // The write may land without its acknowledgement, never the reverse.
      assert.ok(
        saved.n === state || saved.n === state + 1,
        `run ${run}: state ${saved.n}, acknowledged ${state}`,
      );
      state = saved.n;
      const damaged: string[] = [];
      const { records } = await RoundRecordLog.open(
        dir,
        (l) => damaged.push(l),
      );
      assert.deepEqual(damaged, [], `run ${run}`);
      const loaded = records.map((r) => r.round);
      for (const r of rounds) {
        assert.ok(loaded.includes(r), `run ${run}: record ${r} lost`);
      }
      assert.deepEqual(
        loaded,
        loaded.map((_, i) => i),
        `run ${run}: rounds ${loaded}`,
      );
    }
    console.log(
      `${KILLS} kills: ${blocks} blocks verified, ${acked.size} acknowledged, ${partsLeft} downloads and ${tornRecords} records cut mid-write, state ${state}`,
    );
    assert.ok(acked.size > KILLS, "the writer got far enough to matter");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
