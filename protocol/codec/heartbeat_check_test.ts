import { deepStrictEqual, strictEqual } from "node:assert";
import {
  MAX_DEVICE_LENGTH,
  MAX_JOB_ID_LENGTH,
  MAX_PEER_ID_LENGTH,
  MAX_THROUGHPUT,
  MAX_VERSION_LENGTH,
} from "../messages/messages.ts";
import { validateHeartbeat } from "./heartbeat_check.ts";
import { HEARTBEAT } from "./_message_fixtures.ts";

/** The field that failed, or "ok". */
function failedField(obj: Record<string, unknown>): string {
  const check = validateHeartbeat(obj);
  return check.ok ? "ok" : check.field;
}

Deno.test("validateHeartbeat() accepts a valid heartbeat unchanged", () => {
  const check = validateHeartbeat({ ...HEARTBEAT });
  deepStrictEqual(check, { ok: true, message: HEARTBEAT });
});

Deno.test("validateHeartbeat() rebuilds the message in schema key order", () => {
  const shuffled = Object.fromEntries(Object.entries(HEARTBEAT).reverse());
  const check = validateHeartbeat(shuffled);
  if (!check.ok) throw new Error(check.problem);
  deepStrictEqual(Object.keys(check.message), Object.keys(HEARTBEAT));
  strictEqual(JSON.stringify(check.message), JSON.stringify(HEARTBEAT));
});

Deno.test("validateHeartbeat() rejects unknown and missing fields", () => {
  strictEqual(failedField({ ...HEARTBEAT, extra: 1 }), "extra");
  strictEqual(failedField({ ...HEARTBEAT, __proto__x: 1 }), "__proto__x");
  for (const field of Object.keys(HEARTBEAT)) {
    if (field === "v" || field === "type") continue; // checked by the codec
    const obj: Record<string, unknown> = { ...HEARTBEAT };
    delete obj[field];
    strictEqual(failedField(obj), field, `missing ${field}`);
  }
});

Deno.test("validateHeartbeat() bounds string fields", () => {
  const cases: [string, unknown, string][] = [
    ["peer", "", "peer"],
    ["peer", "a".repeat(MAX_PEER_ID_LENGTH), "ok"],
    ["peer", "a".repeat(MAX_PEER_ID_LENGTH + 1), "peer"],
    ["peer", "12D3Koo W", "peer"],
    ["peer", "peer/evil", "peer"],
    ["peer", 12, "peer"],
    ["version", "1.2.3-rc.1+build.5", "ok"],
    ["version", "1." + "0".repeat(MAX_VERSION_LENGTH - 4) + ".0", "ok"],
    ["version", "1." + "0".repeat(MAX_VERSION_LENGTH - 3) + ".0", "version"],
    ["version", "1.2", "version"],
    ["version", "v1.2.3", "version"],
    ["version", "1.2.3\n", "version"],
    ["job", "tiny-shakespeare.v2", "ok"],
    ["job", "j".repeat(MAX_JOB_ID_LENGTH), "ok"],
    ["job", "j".repeat(MAX_JOB_ID_LENGTH + 1), "job"],
    ["job", "", "job"],
    ["job", "a b", "job"],
    ["job", null, "job"],
    ["backend", "webgpu", "ok"],
    ["backend", "none", "ok"],
    ["backend", "cuda", "backend"],
    ["backend", "WASM", "backend"],
    ["device", "", "ok"],
    ["device", "d".repeat(MAX_DEVICE_LENGTH), "ok"],
    ["device", "d".repeat(MAX_DEVICE_LENGTH + 1), "device"],
    ["device", "gpu\u001b[31m", "device"],
    ["device", "gpü", "device"],
    ["device", 7, "device"],
  ];
  for (const [field, value, expected] of cases) {
    strictEqual(
      failedField({ ...HEARTBEAT, [field]: value }),
      expected,
      `${field} = ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("validateHeartbeat() bounds numeric fields", () => {
  for (const field of ["round", "step", "seq"]) {
    const cases: [unknown, string][] = [
      [0, "ok"],
      [Number.MAX_SAFE_INTEGER, "ok"],
      [Number.MAX_SAFE_INTEGER + 1, field],
      [1e300, field],
      [-1, field],
      [1.5, field],
      [NaN, field],
      [Infinity, field],
      ["3", field],
      [null, field],
      [[3], field],
    ];
    for (const [value, expected] of cases) {
      strictEqual(
        failedField({ ...HEARTBEAT, [field]: value }),
        expected,
        `${field} = ${String(value)}`,
      );
    }
  }
  const throughputCases: [unknown, string][] = [
    [0, "ok"],
    [0.25, "ok"],
    [MAX_THROUGHPUT, "ok"],
    [MAX_THROUGHPUT * 2, "throughput"],
    [-0.5, "throughput"],
    [NaN, "throughput"],
    [Infinity, "throughput"],
    ["1", "throughput"],
  ];
  for (const [value, expected] of throughputCases) {
    strictEqual(
      failedField({ ...HEARTBEAT, throughput: value }),
      expected,
      `throughput = ${String(value)}`,
    );
  }
});

Deno.test("validateHeartbeat() takes a priced job's capability class, 1 to 4, or none", () => {
  for (const value of [1, 2, 3, 4]) {
    const check = validateHeartbeat({ ...HEARTBEAT, capabilityClass: value });
    if (!check.ok) throw new Error(check.problem);
    strictEqual(check.message.capabilityClass, value);
  }
  for (const value of [0, 5, 1.5, -1, "3", null]) {
    strictEqual(
      failedField({ ...HEARTBEAT, capabilityClass: value }),
      "capabilityClass",
      JSON.stringify(value),
    );
  }
  const none = validateHeartbeat({ ...HEARTBEAT });
  if (!none.ok) throw new Error(none.problem);
  strictEqual("capabilityClass" in none.message, false);
});
