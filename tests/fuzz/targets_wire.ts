/**
 * Fuzz targets for what arrives over a connection: gossip envelopes of
 * every message type, the blob protocol's length-prefixed JSON frames
 * (read through the node's own stream reader, in random pieces), and
 * JSON-RPC requests to the node's real method table.
 *
 * @module
 */
import type { Stream } from "@libp2p/interface";
import type { Rng } from "../../kernels/data/rng.ts";
import { fakeJob, fakeSource } from "../../node/http/_fixtures.ts";
import { handleJsonRpc } from "../../node/http/jsonrpc.ts";
import type { CheckpointInfo, JobInfo } from "../../node/http/types.ts";
import { rpcMethods } from "../../node/http/rpc_methods.ts";
import { readJsonFrame, StreamReader } from "../../node/p2p/stream_io.ts";
import {
  HEARTBEAT,
  PEER,
  ROUND_MESSAGES,
} from "../../protocol/codec/_message_fixtures.ts";
import {
  MAX_BLOB_FRAME_BYTES,
  parseBlobRequest,
  parseBlobResponse,
} from "../../protocol/messages/blob_messages.ts";
import { decodeMessage, encodeMessage } from "../../protocol/codec/codec.ts";
import { mutateBytes, mutateJsonBytes } from "./mutate.ts";
import { concatBytes } from "../_bytes.ts";
import { BrokenInvariant, type FuzzTarget } from "./target.ts";

const utf8 = new TextEncoder();
const json = (value: unknown) => utf8.encode(JSON.stringify(value));

/** Gossip: a verdict for every input, never a throw. */
const gossip: FuzzTarget = {
  name: "gossip",
  about: "gossip envelopes, every message type (protocol/codec/codec.ts)",
  seeds: () => Promise.resolve([HEARTBEAT, ...ROUND_MESSAGES].map(json)),
  mutate: mutateJsonBytes,
  run(input, rng) {
    const verdict = decodeMessage(input, rng.int(2) ? { from: PEER } : {});
    if (verdict.verdict !== "accept") return false;
    // What was accepted reads back the same once written out again.
    const again = decodeMessage(encodeMessage(verdict.message));
    if (
      again.verdict !== "accept" ||
      JSON.stringify(again.message) !== JSON.stringify(verdict.message)
    ) {
      throw new BrokenInvariant("an accepted message does not round-trip");
    }
    return true;
  },
  expected: () => false,
};

/** A libp2p stream that delivers `pieces` and then ends. */
function streamOf(pieces: Uint8Array[]): Stream {
  const s = Object.assign(new EventTarget(), {
    maxReadBufferLength: 0,
    readStatus: "readable",
    status: "open",
    remoteWriteStatus: "writable",
    pause() {
      s.readStatus = "paused";
    },
    resume() {
      s.readStatus = "readable";
    },
  });
  queueMicrotask(() => {
    for (const data of pieces) {
      s.dispatchEvent(Object.assign(new Event("message"), { data }));
    }
    s.dispatchEvent(new Event("remoteCloseWrite"));
  });
  return s as unknown as Stream;
}

function frame(value: unknown): Uint8Array {
  const body = json(value);
  const head = new Uint8Array(4);
  new DataView(head.buffer).setUint32(0, body.length);
  return concatBytes(head, body);
}

/** Cuts `bytes` into one to four pieces. */
function pieces(rng: Rng, bytes: Uint8Array): Uint8Array[] {
  const cuts = Array.from(
    { length: rng.int(4) },
    () => rng.int(bytes.length + 1),
  )
    .sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(bytes.subarray(from, c));
    from = c;
  }
  return out;
}

const CID = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";

/** Blob frames: a request or response, or a stream error. */
const blobFrame: FuzzTarget = {
  name: "blob-frame",
  about:
    "blob protocol frames, requests and responses (node/p2p/stream_io.ts, protocol/messages/blob_messages.ts)",
  seeds: () =>
    Promise.resolve([
      frame({ cid: CID, offset: 0 }),
      frame({ cid: CID, offset: 1024, length: 512 }),
      frame({ ok: true, size: 4096, offset: 0, length: 4096 }),
      frame({ ok: true, size: 4096, offset: 1024, length: 512 }),
      frame({ ok: false, error: "not-found" }),
      frame({ ok: false, error: "busy" }),
    ]),
  mutate(rng, seed, seeds) {
    // Mostly the body edited as JSON behind a length that fits it.
    if (rng.int(4) === 0) return mutateBytes(rng, seed, seeds);
    const body = mutateJsonBytes(
      rng,
      seed.subarray(4),
      seeds.map((s) => s.subarray(4)),
    );
    const head = new Uint8Array(4);
    new DataView(head.buffer).setUint32(0, body.length);
    return concatBytes(head, body);
  },
  async run(input, rng) {
    const reader = new StreamReader(streamOf(pieces(rng, input)));
    const value = await readJsonFrame(reader, MAX_BLOB_FRAME_BYTES);
    return parseBlobRequest(value) !== null ||
      parseBlobResponse(value) !== null;
  },
};

const METHOD_CALLS: [string, unknown][] = [
  ["zoo_status", undefined],
  ["zoo_peers", {}],
  ["zoo_job", []],
  ["zoo_rounds", { from: 1, limit: 2 }],
  ["zoo_round", { round: 1 }],
  ["zoo_checkpoint", { cid: CID }],
  ["zoo_contributions", {}],
  ["zoo_leave", {}],
  ["zoo_fetchBlob", { cid: CID }],
];

/** A node whose every RPC handler answers (zoo_leave once). */
const SOURCE = fakeSource({
  job: () => ({ ...fakeJob(3), info: () => Promise.resolve(JOB_INFO) }),
  checkpoint: (cid) =>
    Promise.resolve(cid === CID ? { cid } as unknown as CheckpointInfo : null),
  fetchBlob: (cid) =>
    Promise.resolve({
      cid,
      size: 1,
      bytesFrom: {},
      bad: [],
      failed: {},
      silent: [],
      local: true,
    }),
});

/** What `zoo_job` answers; its fields are not what is fuzzed. */
const JOB_INFO = {
  id: CID,
  spec: {},
  chain: {},
} as unknown as JobInfo;

/** JSON-RPC: a JSON-RPC 2.0 response (or none) for every body. */
const jsonRpc: FuzzTarget = {
  name: "jsonrpc",
  about:
    "JSON-RPC 2.0 requests and batches to every method (node/http/jsonrpc.ts, rpc_methods.ts)",
  seeds: () =>
    Promise.resolve([
      ...METHOD_CALLS.map(([method, params], id) =>
        json({ jsonrpc: "2.0", id, method, params })
      ),
      json(METHOD_CALLS.map(([method, params], id) => ({
        jsonrpc: "2.0",
        id: id % 2 ? id : undefined,
        method,
        params,
      }))),
    ]),
  mutate: mutateJsonBytes,
  async run(input) {
    // Each body as a caller with the token and as one without.
    let accepted = false;
    for (const authorized of [true, false]) {
      const out = await handleJsonRpc(
        new TextDecoder().decode(input),
        rpcMethods(SOURCE, { authorized }),
      );
      if (out === null) return true;
      const reply = JSON.parse(out);
      const replies = Array.isArray(reply) ? reply : [reply];
      // Every handler is real: an internal error is a handler that threw
      // where it should have refused the params.
      if (
        !replies.every((r) =>
          r?.jsonrpc === "2.0" &&
          ("result" in r || ("error" in r && r.error.code !== -32603))
        )
      ) {
        throw new BrokenInvariant(
          `not a JSON-RPC 2.0 response: ${out.slice(0, 200)}`,
        );
      }
      accepted ||= replies.some((r) => "result" in r);
    }
    return accepted;
  },
  expected: () => false,
};

/** The targets for what arrives over a connection. */
export const WIRE_TARGETS: readonly FuzzTarget[] = [gossip, blobFrame, jsonRpc];
