/**
 * The validator of the heartbeat, each peer's liveness and progress beacon.
 *
 * @module
 */
import {
  ADDR_PATTERN,
  DEVICE_PATTERN,
  fail,
  isBackend,
  isBoundedString,
  isCount,
  isJobId,
  isPeerId,
  JOB_ID_PROBLEM,
  PEER_ID_PROBLEM,
  SEMVER_PATTERN,
  unknownField,
} from "../messages/message_fields.ts";
import {
  BACKENDS,
  type FieldCheck,
  type Heartbeat,
  MAX_ADDR_LENGTH,
  MAX_ADDRS,
  MAX_CAPABILITY_CLASS,
  MAX_DEVICE_LENGTH,
  MAX_THROUGHPUT,
  MAX_VERSION_LENGTH,
  PROTOCOL_VERSION,
} from "../messages/messages.ts";

const HEARTBEAT_FIELDS = new Set([
  "v",
  "type",
  "peer",
  "version",
  "job",
  "round",
  "step",
  "backend",
  "device",
  "throughput",
  "seq",
  "addrs",
  "capabilityClass",
]);

/**
 * Checks a parsed heartbeat. The caller has already checked `v` and `type`.
 *
 * @example Accepting a heartbeat
 * ```ts
 * import { validateHeartbeat } from "./heartbeat_check.ts";
 * const check = validateHeartbeat({
 *   v: 1, type: "heartbeat", peer: "12D3KooWabc", version: "0.1.0",
 *   job: "bafyjob", round: 3, step: 17, backend: "wasm",
 *   device: "wasm-relaxed x1", throughput: 812.5,
 *   seq: 42, addrs: ["/ip4/10.0.0.2/tcp/4001"],
 * });
 * if (!check.ok) throw new Error(check.problem);
 * ```
 */
export function validateHeartbeat(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<Heartbeat> {
  const unknown = unknownField(obj, HEARTBEAT_FIELDS);
  if (unknown !== undefined) {
    return fail(unknown, "is not a field of a heartbeat");
  }
  const {
    peer,
    version,
    job,
    round,
    step,
    backend,
    device,
    throughput,
    seq,
    addrs,
    capabilityClass,
  } = obj;
  if (!isPeerId(peer)) return fail("peer", PEER_ID_PROBLEM);
  if (!isBoundedString(version, MAX_VERSION_LENGTH, SEMVER_PATTERN)) {
    return fail(
      "version",
      `must be a semver of <= ${MAX_VERSION_LENGTH} chars`,
    );
  }
  if (!isJobId(job)) return fail("job", JOB_ID_PROBLEM);
  if (!isCount(round)) return fail("round", "must be a safe integer >= 0");
  if (!isCount(step)) return fail("step", "must be a safe integer >= 0");
  if (!isBackend(backend)) {
    return fail("backend", `must be one of ${BACKENDS.join(", ")}`);
  }
  if (
    typeof device !== "string" || device.length > MAX_DEVICE_LENGTH ||
    !DEVICE_PATTERN.test(device)
  ) {
    return fail(
      "device",
      `must be at most ${MAX_DEVICE_LENGTH} printable ASCII chars`,
    );
  }
  if (
    typeof throughput !== "number" || !(throughput >= 0) ||
    !(throughput <= MAX_THROUGHPUT)
  ) {
    return fail("throughput", `must be a number in [0, ${MAX_THROUGHPUT}]`);
  }
  if (!isCount(seq)) return fail("seq", "must be a safe integer >= 0");
  if (
    !Array.isArray(addrs) || addrs.length > MAX_ADDRS ||
    !addrs.every((a) => isBoundedString(a, MAX_ADDR_LENGTH, ADDR_PATTERN))
  ) {
    return fail(
      "addrs",
      `must be at most ${MAX_ADDRS} multiaddr strings of <= ${MAX_ADDR_LENGTH} chars`,
    );
  }
  if (
    capabilityClass !== undefined &&
    !(Number.isInteger(capabilityClass) && (capabilityClass as number) >= 1 &&
      (capabilityClass as number) <= MAX_CAPABILITY_CLASS)
  ) {
    return fail(
      "capabilityClass",
      `must be an integer from 1 to ${MAX_CAPABILITY_CLASS} when present`,
    );
  }
  // Rebuilt field by field so the result holds nothing unchecked and its key
  // order, hence its encoding, is the same whoever built the input. Adding 0
  // turns a received -0 into 0, which is what re-encoding it would give.
  const message: Heartbeat = {
    v: PROTOCOL_VERSION,
    type: "heartbeat",
    peer,
    version,
    job,
    round: round + 0,
    step: step + 0,
    backend,
    device,
    throughput: throughput + 0,
    seq: seq + 0,
    addrs: [...addrs],
    ...(capabilityClass === undefined
      ? {}
      : { capabilityClass: capabilityClass as number }),
  };
  return { ok: true, message };
}
