import { deepStrictEqual, strictEqual, throws } from "node:assert";
import { Rng } from "../../kernels/data/rng.ts";
import {
  decodeMessage,
  DROP_REASONS,
  type DropReason,
  encodeMessage,
  type Verdict,
} from "./codec.ts";
import {
  type Heartbeat,
  MAX_JOB_ID_LENGTH,
  MAX_MESSAGE_BYTES,
  MAX_PEER_ID_LENGTH,
  MAX_PLAN_MESSAGE_BYTES,
  MAX_VERSION_LENGTH,
} from "../messages/messages.ts";
import { PLAN } from "./_message_fixtures.ts";

const PEER = "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo";
const HEARTBEAT: Heartbeat = {
  v: 1,
  type: "heartbeat",
  peer: PEER,
  version: "0.1.0",
  job: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  round: 3,
  step: 17,
  backend: "webgpu",
  device: "NVIDIA H100 80GB HBM3 (vulkan)",
  throughput: 812.5,
  seq: 42,
  addrs: ["/ip4/127.0.0.1/tcp/4001"],
};

const utf8 = new TextEncoder();

function decodeJson(value: unknown, from?: string): Verdict {
  return decodeMessage(utf8.encode(JSON.stringify(value)), { from });
}

function dropOf(verdict: Verdict): string {
  return verdict.verdict === "accept"
    ? "accept"
    : `${verdict.verdict}:${verdict.reason}`;
}

Deno.test("encodeMessage() and decodeMessage() round trip", () => {
  const bytes = encodeMessage(HEARTBEAT);
  strictEqual(
    new TextDecoder().decode(bytes),
    '{"v":1,"type":"heartbeat","peer":"' + PEER + '","version":"0.1.0",' +
      '"job":"bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",' +
      '"round":3,"step":17,"backend":"webgpu",' +
      '"device":"NVIDIA H100 80GB HBM3 (vulkan)","throughput":812.5,"seq":42,"addrs":["/ip4/127.0.0.1/tcp/4001"]}',
  );
  deepStrictEqual(decodeMessage(bytes), {
    verdict: "accept",
    message: HEARTBEAT,
  });
  deepStrictEqual(decodeMessage(bytes, { from: PEER }), {
    verdict: "accept",
    message: HEARTBEAT,
  });
});

Deno.test("encodeMessage() is independent of the input's key order", () => {
  const shuffled = Object.fromEntries(
    Object.entries(HEARTBEAT).reverse(),
  ) as Heartbeat;
  deepStrictEqual(encodeMessage(shuffled), encodeMessage(HEARTBEAT));
});

Deno.test("encodeMessage() refuses what peers would drop", () => {
  const bad = [
    { ...HEARTBEAT, seq: -1 },
    { ...HEARTBEAT, throughput: NaN },
    { ...HEARTBEAT, extra: true },
    { ...HEARTBEAT, v: 2 },
    { ...HEARTBEAT, peer: "x".repeat(MAX_MESSAGE_BYTES) },
  ];
  for (const msg of bad) {
    throws(() => encodeMessage(msg as Heartbeat), TypeError);
  }
});

Deno.test("encodeMessage() keeps the largest heartbeat far under the limit", () => {
  const largest: Heartbeat = {
    ...HEARTBEAT,
    peer: "P".repeat(MAX_PEER_ID_LENGTH),
    version: "1.0.0-" + "a".repeat(MAX_VERSION_LENGTH - 6),
    job: "j".repeat(MAX_JOB_ID_LENGTH),
    round: Number.MAX_SAFE_INTEGER,
    step: Number.MAX_SAFE_INTEGER,
    throughput: 123456789.12345679,
    seq: Number.MAX_SAFE_INTEGER,
  };
  const size = encodeMessage(largest).byteLength;
  strictEqual(size < 1024, true, `largest heartbeat is ${size} bytes`);
});

Deno.test("decodeMessage() checks the size before parsing, and each type's own after", () => {
  // Invalid UTF-8 that would be "malformed" if it were ever parsed.
  const huge = new Uint8Array(MAX_PLAN_MESSAGE_BYTES + 1).fill(0xff);
  deepStrictEqual(decodeMessage(huge), {
    verdict: "reject",
    reason: "oversized",
    detail: `${MAX_PLAN_MESSAGE_BYTES + 1} bytes > ${MAX_PLAN_MESSAGE_BYTES}`,
  });
  // A slice plan may pass MAX_MESSAGE_BYTES, up to its own bound.
  const plan = JSON.stringify(PLAN);
  const pad = (json: string, to: number) =>
    utf8.encode(json + " ".repeat(to - json.length));
  strictEqual(
    dropOf(decodeMessage(pad(plan, MAX_MESSAGE_BYTES + 1))),
    "accept",
  );
  strictEqual(
    dropOf(decodeMessage(pad(plan, MAX_PLAN_MESSAGE_BYTES))),
    "accept",
  );
  // A valid heartbeat padded to one byte over the limit is still oversized.
  const json = JSON.stringify(HEARTBEAT);
  const over = json + " ".repeat(MAX_MESSAGE_BYTES + 1 - json.length);
  strictEqual(dropOf(decodeMessage(utf8.encode(over))), "reject:oversized");
  // Padded to exactly the limit it is accepted.
  const atLimit = json + " ".repeat(MAX_MESSAGE_BYTES - json.length);
  strictEqual(utf8.encode(atLimit).byteLength, MAX_MESSAGE_BYTES);
  strictEqual(dropOf(decodeMessage(utf8.encode(atLimit))), "accept");
});

Deno.test("decodeMessage() rejects malformed input", () => {
  const inputs: Uint8Array[] = [
    new Uint8Array(),
    new Uint8Array([0xc3, 0x28]), // invalid UTF-8
    new Uint8Array([
      0xef,
      0xbb,
      0xbf,
      ...utf8.encode(JSON.stringify(HEARTBEAT)),
    ]), // BOM
    utf8.encode("{"),
    utf8.encode("null"),
    utf8.encode("42"),
    utf8.encode('"heartbeat"'),
    utf8.encode(JSON.stringify([HEARTBEAT])),
    utf8.encode(JSON.stringify({ ...HEARTBEAT, v: "1" })),
    utf8.encode(JSON.stringify({ ...HEARTBEAT, v: 0 })),
    utf8.encode(JSON.stringify({ ...HEARTBEAT, v: 1.5 })),
    utf8.encode(JSON.stringify({ ...HEARTBEAT, v: undefined })),
    utf8.encode(JSON.stringify({ ...HEARTBEAT, type: 7 })),
    utf8.encode(JSON.stringify({ ...HEARTBEAT, type: "" })),
    utf8.encode(JSON.stringify({ ...HEARTBEAT, type: "t".repeat(65) })),
    "not bytes" as unknown as Uint8Array,
  ];
  for (const [i, bytes] of inputs.entries()) {
    strictEqual(dropOf(decodeMessage(bytes)), "reject:malformed", `input ${i}`);
  }
});

Deno.test("decodeMessage() ignores newer versions and unknown types", () => {
  strictEqual(
    dropOf(decodeJson({ ...HEARTBEAT, v: 2 })),
    "ignore:unknown-version",
  );
  // A newer version may change any field, so only v is looked at.
  strictEqual(
    dropOf(decodeJson({ v: 9, anything: [] })),
    "ignore:unknown-version",
  );
  strictEqual(
    dropOf(decodeJson({ ...HEARTBEAT, type: "from-the-future" })),
    "ignore:unknown-type",
  );
  strictEqual(
    dropOf(decodeJson({ ...HEARTBEAT, type: "toString" })),
    "ignore:unknown-type",
  );
});

Deno.test("decodeMessage() rejects invalid fields", () => {
  const cases: Record<string, unknown>[] = [
    { ...HEARTBEAT, extra: 1 },
    { ...HEARTBEAT, round: -1 },
    { ...HEARTBEAT, step: 2.5 },
    { ...HEARTBEAT, seq: 2 ** 53 },
    { ...HEARTBEAT, seq: 1e300 },
    { ...HEARTBEAT, throughput: -1 },
    { ...HEARTBEAT, throughput: null }, // what JSON.stringify makes of NaN
    { ...HEARTBEAT, backend: "cuda" },
    { ...HEARTBEAT, peer: "p".repeat(MAX_PEER_ID_LENGTH + 1) },
    { ...HEARTBEAT, addrs: "/ip4/1.2.3.4/tcp/1" },
    { ...HEARTBEAT, addrs: ["ip4/1.2.3.4"] },
    { ...HEARTBEAT, addrs: ["/" + "a".repeat(256)] },
    { ...HEARTBEAT, addrs: Array(9).fill("/ip4/1.2.3.4/tcp/1") },
    { ...HEARTBEAT, addrs: [7] },
  ];
  for (const obj of cases) {
    strictEqual(
      dropOf(decodeJson(obj)),
      "reject:invalid-field",
      JSON.stringify(obj),
    );
  }
  // Numbers that JSON.stringify cannot write but a hostile peer can.
  const json = JSON.stringify(HEARTBEAT);
  for (const raw of ["1e400", "-1e400", "NaN", "Infinity", "0x10"]) {
    const bytes = utf8.encode(json.replace('"seq":42', `"seq":${raw}`));
    const got = dropOf(decodeMessage(bytes));
    strictEqual(
      got === "reject:invalid-field" || got === "reject:malformed",
      true,
      `seq ${raw}: ${got}`,
    );
  }
  // JSON.parse makes "__proto__" an own key, so it is an unknown field.
  const proto = json.replace('{"v":1', '{"__proto__":{"seq":1},"v":1');
  strictEqual(
    dropOf(decodeMessage(utf8.encode(proto))),
    "reject:invalid-field",
  );
  const detail = decodeJson({ ...HEARTBEAT, seq: -3 });
  strictEqual(
    detail.verdict !== "accept" && detail.detail,
    "heartbeat.seq must be a safe integer >= 0",
  );
});

Deno.test("decodeMessage() reads -0 as 0", () => {
  const json = JSON.stringify(HEARTBEAT).replace('"step":17', '"step":-0');
  const verdict = decodeMessage(utf8.encode(json));
  if (verdict.verdict !== "accept") throw new Error(verdict.reason);
  if (verdict.message.type !== "heartbeat") throw new Error("not a heartbeat");
  strictEqual(Object.is(verdict.message.step, 0), true);
});

Deno.test("decodeMessage() rejects a peer speaking for another", () => {
  strictEqual(
    dropOf(decodeJson(HEARTBEAT, "12D3KooWSomebodyElse")),
    "reject:sender-mismatch",
  );
  // An invalid message is reported as such even from the wrong sender.
  strictEqual(
    dropOf(decodeJson({ ...HEARTBEAT, seq: -1 }, "12D3KooWSomebodyElse")),
    "reject:invalid-field",
  );
});

Deno.test("decodeMessage() reaches every drop reason", () => {
  const seen = new Set<DropReason>();
  const inputs: [Uint8Array, string?][] = [
    [new Uint8Array(MAX_PLAN_MESSAGE_BYTES + 1)],
    [utf8.encode("[")],
    [utf8.encode(JSON.stringify({ ...HEARTBEAT, v: 2 }))],
    [utf8.encode(JSON.stringify({ ...HEARTBEAT, type: "from-the-future" }))],
    [utf8.encode(JSON.stringify({ ...HEARTBEAT, step: -1 }))],
    [utf8.encode(JSON.stringify(HEARTBEAT)), "12D3KooWOther"],
  ];
  for (const [bytes, from] of inputs) {
    const verdict = decodeMessage(bytes, { from });
    if (verdict.verdict !== "accept") seen.add(verdict.reason);
  }
  deepStrictEqual([...seen], [...DROP_REASONS]);
});

/** Uniform draws in [0, 1) from a seeded stream, the same every run. */
function prng(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.nextFloat();
}

const ODD_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  2 ** 53,
  -0,
  1e308,
  "",
  "x".repeat(200),
  "heartbeat",
  "wasm",
  "1.0.0",
  PEER,
  [],
  [1, 2],
  {},
  { v: 1 },
];

function mutateObject(rand: () => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const obj: Record<string, unknown> = { ...HEARTBEAT };
  const keys = [...Object.keys(HEARTBEAT), "extra", "constructor", "toString"];
  const edits = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < edits; i++) {
    const key = pick(keys);
    if (rand() < 0.2) delete obj[key];
    else obj[key] = pick(ODD_VALUES);
  }
  return rand() < 0.1 ? [obj] : obj;
}

function mutateBytes(bytes: Uint8Array, rand: () => number): Uint8Array {
  const out = [...bytes];
  const edits = 1 + Math.floor(rand() * 4);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(rand() * (out.length + 1));
    const r = rand();
    if (r < 0.4) out[at] = Math.floor(rand() * 256);
    else if (r < 0.7) out.splice(at, 1);
    else out.splice(at, 0, Math.floor(rand() * 256));
  }
  return rand() < 0.1
    ? new Uint8Array(out.slice(0, Math.floor(rand() * out.length)))
    : new Uint8Array(out);
}

function checkVerdict(verdict: Verdict, label: string): void {
  if (verdict.verdict === "accept") {
    // Whatever was accepted must survive a re-encode unchanged.
    const again = decodeMessage(encodeMessage(verdict.message));
    deepStrictEqual(again, verdict, label);
    return;
  }
  strictEqual(DROP_REASONS.includes(verdict.reason), true, label);
  const ignorable = verdict.reason === "unknown-version" ||
    verdict.reason === "unknown-type";
  strictEqual(verdict.verdict === "ignore", ignorable, label);
}

Deno.test("decodeMessage() never throws on fuzzed input", () => {
  const rand = prng(0x5eed);
  const valid = encodeMessage(HEARTBEAT);
  const tally = { accept: 0, ignore: 0, reject: 0 };
  for (let i = 0; i < 2000; i++) {
    let bytes: Uint8Array;
    const kind = i % 3;
    if (kind === 0) {
      const length = Math.floor(rand() * 300);
      bytes = new Uint8Array(length).map(() => Math.floor(rand() * 256));
    } else if (kind === 1) {
      bytes = utf8.encode(JSON.stringify(mutateObject(rand)));
    } else {
      bytes = mutateBytes(valid, rand);
    }
    const from = rand() < 0.5 ? PEER : undefined;
    const label = `case ${i}: ${new TextDecoder().decode(bytes)}`;
    const verdict = decodeMessage(bytes, { from });
    checkVerdict(verdict, label);
    tally[verdict.verdict]++;
  }
  // The fuzzer must reach past the parser, not only feed it noise.
  strictEqual(tally.reject > 1000, true, JSON.stringify(tally));
  strictEqual(tally.ignore > 10, true, JSON.stringify(tally));
  strictEqual(tally.accept > 10, true, JSON.stringify(tally));
});
