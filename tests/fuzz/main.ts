/**
 * `deno task fuzz [--runs N] [--target NAME[,NAME...]] [--seed S]
 * [--jobs J] [--json]`: fuzzes every decoder that takes bytes from
 * outside (tests/fuzz/targets.ts), each target in a worker watched for
 * hangs, and reports inputs, crashes, slow inputs, hangs and peak heap per
 * target. Exits 1 on any crash or hang.
 *
 * `deno task fuzz --target NAME --seed S --replay I` makes input I of that
 * run again, prints it (hex, first 1 KiB) and feeds it in this thread,
 * with the full stack of whatever it throws.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { feed, fuzzInput, type FuzzReport } from "./run.ts";
import { TARGETS } from "./targets.ts";

/** No progress from a worker for this long is a hang, ms. */
const HANG_MS = 60_000;

/** A target's report with what the watchdog saw. */
export interface TargetResult extends FuzzReport {
  /** 1 when the worker stopped reporting (an input that never returned). */
  hangs: number;
  /** The largest heap the worker used, MB. */
  heapMb: number;
}

function usage(message: string): never {
  console.error(`zoo-fuzz: ${message}`);
  console.error(
    "usage: deno task fuzz [--runs N] [--target NAME[,NAME]] [--seed S] [--jobs J] [--json] [--replay I]",
  );
  console.error(`targets: ${TARGETS.map((t) => t.name).join(", ")}`);
  Deno.exit(2);
}

function positive(flag: string, text: string | undefined, fallback: number) {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) {
    usage(`--${flag} must be a positive integer: ${text}`);
  }
  return n;
}

/** Runs one target in a worker; a hang ends it and is counted. */
function runInWorker(
  target: string,
  seed: string,
  runs: number,
): Promise<TargetResult> {
  const worker = new Worker(new URL("./worker.ts", import.meta.url), {
    type: "module",
  });
  const started = performance.now();
  let done = 0;
  let heap = 0;
  return new Promise((resolve) => {
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    /** Ends the run early: a hang or a worker that died. */
    const stop = (error: string, hang: boolean) => {
      clearTimeout(watchdog);
      worker.terminate();
      resolve({
        target,
        seed,
        inputs: done,
        accepted: 0,
        crashes: hang ? 0 : 1,
        slow: 0,
        findings: [{ index: done, error, at: "", bytes: 0 }],
        maxMs: hang ? HANG_MS : 0,
        ms: Math.round(performance.now() - started),
        hangs: hang ? 1 : 0,
        heapMb: Math.round(heap / 2 ** 20),
      });
    };
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(
        () =>
          stop(`hang: no progress for ${HANG_MS} ms after input ${done}`, true),
        HANG_MS,
      );
    };
    worker.onmessage = (e) => {
      heap = Math.max(heap, e.data.heapUsed);
      if (e.data.type === "progress") {
        done = e.data.done;
        return arm();
      }
      clearTimeout(watchdog);
      worker.terminate();
      resolve({
        ...e.data.report,
        hangs: 0,
        heapMb: Math.round(heap / 2 ** 20),
      });
    };
    worker.onerror = (e) => {
      e.preventDefault();
      stop(`worker died: ${e.message}`, false);
    };
    arm();
    worker.postMessage({ target, seed, runs });
  });
}

async function replay(name: string, seed: string, index: number) {
  const target = TARGETS.find((t) => t.name === name)!;
  const { input, rng } = fuzzInput(target, await target.seeds(), seed, index);
  const hex = [...input.subarray(0, 1024)]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  console.log(
    `input ${index} of ${name} (seed ${seed}): ${input.length} bytes`,
  );
  console.log(hex);
  const { accepted, crash, refusal } = await feed(target, input, rng);
  if (crash) {
    console.log(crash.stack);
    Deno.exit(1);
  }
  console.log(
    accepted ? "accepted" : `refused: ${refusal?.message ?? "(no error)"}`,
  );
}

async function main(argv: string[]) {
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: {
        runs: { type: "string" },
        target: { type: "string" },
        seed: { type: "string" },
        jobs: { type: "string" },
        json: { type: "boolean" },
        replay: { type: "string" },
      },
      strict: true,
    });
  } catch (err) {
    usage((err as Error).message);
  }
  const v = args.values;
  const names = v.target?.split(",") ?? TARGETS.map((t) => t.name);
  for (const n of names) {
    if (!TARGETS.some((t) => t.name === n)) usage(`no target named ${n}`);
  }
  const seed = v.seed ?? "zoo-fuzz";
  if (v.replay !== undefined) {
    if (names.length !== 1) usage("--replay needs one --target");
    const index = Number(v.replay);
    if (!Number.isSafeInteger(index) || index < 0) {
      usage(`--replay must be an index: ${v.replay}`);
    }
    return await replay(names[0], seed, index);
  }
  const runs = positive("runs", v.runs, 10_000);
  const jobs = positive("jobs", v.jobs, navigator.hardwareConcurrency);
  const queue = [...names];
  const results: TargetResult[] = [];
  await Promise.all(
    Array.from({ length: Math.min(jobs, queue.length) }, async () => {
      for (let name = queue.shift(); name; name = queue.shift()) {
        const r = await runInWorker(name, seed, runs);
        results.push(r);
        if (!v.json) {
          console.log(
            `${r.target.padEnd(17)} ${String(r.inputs).padStart(9)} inputs ${
              String(r.accepted).padStart(8)
            } accepted ${r.crashes} crashes ${r.hangs} hangs ${r.slow} slow  max ${r.maxMs} ms  heap ${r.heapMb} MB  ${
              (r.ms / 1000).toFixed(1)
            } s`,
          );
          for (const f of r.findings) {
            console.log(
              `  input ${f.index} (${f.bytes} bytes): ${f.error} ${f.at}`,
            );
          }
        }
      }
    }),
  );
  results.sort((a, b) => names.indexOf(a.target) - names.indexOf(b.target));
  if (v.json) {
    console.log(JSON.stringify({ seed, runs, targets: results }, null, 2));
  }
  const bad = results.filter((r) => r.crashes + r.hangs > 0);
  if (bad.length > 0) {
    console.error(
      `zoo-fuzz: ${
        bad.map((r) => r.target).join(", ")
      } crashed or hung; replay with --target NAME --seed ${seed} --replay INDEX`,
    );
    Deno.exit(1);
  }
}

if (import.meta.main) await main(Deno.args);
