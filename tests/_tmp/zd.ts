import { runAttack } from "../attack/attack_run.ts";
import { benchSpec } from "../_job_cluster.ts";
const attack = (Deno.args[0] ?? "zero-delta") as never;
const spec = benchSpec({ name: "bench-attacks", model: "tiny", peers: 5, rounds: 6, innerSteps: 20 }, { roundDeadlineMs: 20_000, minPeers: 4 });
const r = await runAttack({ attack, peers: 5, spec, keys: "/tmp/bk" });
console.log(JSON.stringify({ fp: r.falsePositives, refusals: r.refusals, honest: r.honestCredit, detected: r.detectedRounds }, null, 1));
