import assert from "node:assert/strict";
import { AGGREGATION_RULES } from "../aggregation/aggregation_rule.ts";
import { defaultJobSpec } from "../spec/job_spec.ts";
import { delta, GENESIS, manifestFrom } from "./_round_machine_fixtures.ts";
import { manifestContribution } from "./contribution.ts";
import {
  fitRefusal,
  isAmended,
  missingVerdict,
  screenRefusal,
  unamendedRefusal,
} from "./manifest_rules.ts";
import { MANIFEST_VERSION, type RoundManifest } from "./round_manifest.ts";

const spec = defaultJobSpec({
  dataset: {
    cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  },
});
const announce = manifestFrom("lead");
const announced = [delta("a"), delta("b"), delta("c")];

/** A manifest of `announce` listing `contributors`, excluding `excluded`. */
function manifest(
  contributors: string[],
  excluded: [string, string][] = [],
): RoundManifest {
  return {
    v: MANIFEST_VERSION,
    job: "job",
    round: 0,
    parent: GENESIS,
    leader: "lead",
    rule: spec.aggregation,
    contributions: contributors.map((p) =>
      manifestContribution(spec, announced.find((d) => d.peer === p)!)
    ),
    excluded: excluded.map(([peer, reason]) => ({
      peer,
      delta: announced.find((d) => d.peer === peer)!.delta,
      reason: reason as RoundManifest["excluded"][number]["reason"],
      evidence: "",
    })),
    checkpoint: announce.checkpoint,
  };
}

const code = (r: { code: string } | null) => r?.code ?? null;

Deno.test("manifest rules: a manifest fits only its announcement, the job's rule and deltas as announced", () => {
  const fit = (m: RoundManifest, jobId = "job") =>
    code(fitRefusal(jobId, spec, announce, m, announced));
  assert.equal(fit(manifest(["a", "b"], [["c", "too-small"]])), null);
  assert.equal(fit(manifest(["a"]), "other-job"), "mismatch");
  assert.equal(fit({ ...manifest(["a"]), leader: "someone" }), "mismatch");
  const other = AGGREGATION_RULES.find((r) => r !== spec.aggregation.rule)!;
  assert.equal(
    fit({ ...manifest(["a"]), rule: { ...spec.aggregation, rule: other } }),
    "rule",
  );
  // A contribution altered, or of a peer that announced nothing.
  const altered = manifest(["a"]);
  assert.equal(
    fit({
      ...altered,
      contributions: [{ ...altered.contributions[0], tokens: 1e9 }],
    }),
    "not-announced",
  );
  assert.equal(
    fit({
      ...altered,
      contributions: [{ ...altered.contributions[0], peer: "z" }],
    }),
    "not-announced",
  );
  const excluded = manifest([], [["b", "too-small"]]);
  assert.equal(
    fit({
      ...excluded,
      excluded: [{ ...excluded.excluded[0], delta: "bafkreiother" }],
    }),
    "not-announced",
  );
});

Deno.test("manifest rules: a readable delta left out is censorship when got well before, owed an amendment when got shortly before", () => {
  const verdict = missingVerdict(
    ["a", "b", "c"],
    new Set(["a"]),
    new Set(["a", "b"]),
  );
  assert.deepEqual(verdict, { censored: ["a"], late: ["b"] });
  // Unreadable deltas are not passed in: rightly left out.
  assert.deepEqual(missingVerdict([], new Set(["a"]), new Set(["a"])), {
    censored: [],
    late: [],
  });
});

Deno.test("manifest rules: the manifest screens out exactly what this peer does", () => {
  const same = [{ peer: "c", reason: "too-small" }];
  assert.equal(screenRefusal(same, same), null);
  assert.equal(code(screenRefusal(same, [])), "screen-mismatch");
  assert.equal(
    code(screenRefusal(same, [{ peer: "c", reason: "too-large" }])),
    "screen-mismatch",
  );
});

Deno.test("manifest rules: an amendment lists what is owed, an unserved delta otherwise than as unserved", () => {
  const late = new Map([["c", "late" as const]]);
  const unserved = new Map([["c", "unserved" as const]]);
  assert.ok(isAmended([manifest(["a"]), manifest(["a", "c"])], late));
  assert.ok(isAmended([manifest(["a"], [["c", "too-small"]])], late));
  assert.ok(!isAmended([manifest(["a"])], late));
  assert.ok(isAmended([manifest(["a", "c"])], unserved));
  assert.ok(!isAmended([manifest(["a"], [["c", "unserved"]])], unserved));
  // Without one by its due time: censorship, an unjustified exclusion, or
  // no one's fault when this peer's loop stalled.
  assert.equal(unamendedRefusal(late, true).code, "censored");
  assert.equal(unamendedRefusal(unserved, true).code, "unjustified-exclusion");
  assert.equal(unamendedRefusal(late, false).code, "cannot-check");
});
