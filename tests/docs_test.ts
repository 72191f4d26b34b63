/**
 * The reference docs name what the code's tables declare: a rule, a bench
 * or a spec field added in code and left out of its README fails here.
 */
import assert from "node:assert/strict";
import { AGGREGATION_RULES } from "../protocol/aggregation/aggregation_rule.ts";
import { BENCHES } from "./bench/dispatch.ts";
import { TOP_KEYS } from "../protocol/spec/job_spec.ts";

const read = (path: string) =>
  Deno.readTextFile(new URL(`../${path}`, import.meta.url));

Deno.test("docs: the job spec table names every field and aggregation rule", async () => {
  const cli = await read("node/cli/README.md");
  const table = cli.slice(cli.indexOf("#### The job spec"));
  const fields = table.split("\n").filter((l) => l.startsWith("| `"))
    .map((l) => l.split("|")[1]).join(" ");
  for (const key of TOP_KEYS.filter((k) => k !== "v")) {
    assert.ok(fields.includes(`\`${key}\``), key);
  }
  const row = table.split("\n").find((l) => l.startsWith("| `aggregation`"))!;
  for (const rule of AGGREGATION_RULES) assert.ok(row.includes(rule), rule);
});

Deno.test("docs: the bench README has a section for every bench and lists every rule", async () => {
  const benches = await read("tests/bench/README.md");
  for (const name of Object.keys(BENCHES)) {
    assert.match(benches, new RegExp(`^### \`${name}\`$`, "m"), name);
  }
  const rules = /--rule ([\w|-]+)/.exec(benches)![1].split("|");
  assert.deepEqual(rules.sort(), [...AGGREGATION_RULES].sort());
});
