/**
 * Fuzz targets for the blobs peers fetch from each other and the files a
 * node reads back: safetensors and round checkpoints, delta blobs and
 * their quantized containers, job specs, dataset and round manifests,
 * work records, training states, and the known-peers file.
 *
 * Containers with a JSON header are also mutated through it: the header
 * is edited as JSON and written back behind a length that fits, so the
 * mutants reach the field checks behind the length check.
 *
 * @module
 */
import type { Rng } from "../../kernels/data/rng.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
} from "../../kernels/safetensors.ts";
import { DEFAULT_CORPUS_DATASET_ID } from "../../node/job/dataset.ts";
import { parseKnownPeers } from "../../node/p2p/known_peers.ts";
import { manifestFixture, PEERS } from "../../node/round/services/_fakes.ts";
import { JOB, PARENT, PEER } from "../../protocol/codec/_message_fixtures.ts";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import {
  chunkDataset,
  decodeManifest as decodeDatasetManifest,
  encodeManifest as encodeDatasetManifest,
  manifestOf,
} from "../../protocol/content/dataset.ts";
import {
  decodeDeltaBlob,
  type DeltaContext,
  encodeDelta,
} from "../../protocol/round/delta_blob.ts";
import {
  decodeJobSpec,
  defaultJobSpec,
  encodeJobSpec,
} from "../../protocol/spec/job_spec.ts";
import {
  decodeManifest as decodeRoundManifest,
  encodeManifest as encodeRoundManifest,
} from "../../protocol/codec/manifest_codec.ts";
import { quantize } from "../../protocol/aggregation/quantize.ts";
import {
  decodeQuantized,
  encodeQuantized,
} from "../../protocol/aggregation/quantized_container.ts";
import {
  decodeRoundCheckpoint,
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round/round_checkpoint.ts";
import { ProtocolError } from "../../protocol/errors.ts";
import {
  decodeStateHead,
  decodeStateMoments,
  decodeStateParams,
  encodeState,
} from "../../protocol/content/state_hash.ts";
import {
  decodeWorkRecord,
  encodeWorkRecord,
  segmentCount,
} from "../../protocol/audit/work_record.ts";
import { mutateBytes, mutateJson, mutateJsonBytes } from "./mutate.ts";
import { concatBytes } from "../_bytes.ts";
import { BrokenInvariant, type FuzzTarget } from "./target.ts";

const utf8 = new TextEncoder();

/** Small values, so a million inputs take minutes, not hours. */
const N = 300;
const noise = (n: number, seed: number) =>
  Float32Array.from(
    { length: n },
    (_, i) => Math.sin(i * 12.9898 + seed) * 0.01,
  );

const SPEC = defaultJobSpec({
  name: "fuzz",
  model: { layers: 1, dModel: 8, heads: 2, contextLength: 8 },
  innerSteps: 32,
  rounds: 3,
  dataset: { cid: DEFAULT_CORPUS_DATASET_ID },
});

const CONTEXT: DeltaContext = {
  job: JOB,
  round: 3,
  parent: PARENT,
  peer: PEERS[0],
};

/**
 * A mutant of a container that starts with a u64 (little-endian) header
 * length and a JSON header (safetensors): the header edited as JSON half
 * the time, bytes edited otherwise.
 */
function mutateSafetensors(
  rng: Rng,
  seed: Uint8Array,
  seeds: readonly Uint8Array[],
): Uint8Array {
  if (rng.int(2) === 0) return mutateBytes(rng, seed, seeds);
  const view = new DataView(seed.buffer, seed.byteOffset, seed.byteLength);
  const n = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(seed.subarray(8, 8 + n)));
  const edited = utf8.encode(JSON.stringify(mutateJson(rng, header)));
  const head = new Uint8Array(8);
  new DataView(head.buffer).setBigUint64(0, BigInt(edited.length), true);
  return concatBytes(head, edited, seed.subarray(8 + n));
}

/** A mutant of a delta blob: its context edited as JSON, or its bytes. */
function mutateDeltaBlob(
  rng: Rng,
  seed: Uint8Array,
  seeds: readonly Uint8Array[],
): Uint8Array {
  if (rng.int(2) === 0) return mutateBytes(rng, seed, seeds);
  const length = seed[4] | (seed[5] << 8);
  const context = JSON.parse(
    new TextDecoder().decode(seed.subarray(6, 6 + length)),
  );
  const edited = utf8.encode(JSON.stringify(mutateJson(rng, context)));
  const head = seed.slice(0, 6);
  head[4] = edited.length & 0xff;
  head[5] = (edited.length >> 8) & 0xff;
  return concatBytes(head, edited, seed.subarray(6 + length));
}

const same = (a: unknown, b: unknown) =>
  JSON.stringify(a) === JSON.stringify(b);

const safetensors: FuzzTarget = {
  name: "safetensors",
  about: "safetensors files (kernels/safetensors.ts)",
  seeds: () =>
    Promise.resolve([
      encodeSafetensors([
        { name: "a", dtype: "F32", shape: [3, 4], data: noise(12, 1) },
        { name: "b", dtype: "F32", shape: [5], data: noise(5, 2) },
      ], { format: "pt" }),
      encodeSafetensors([], {}),
    ]),
  mutate: mutateSafetensors,
  run: (input) => Boolean(decodeSafetensors(input)),
};

const roundCheckpoint: FuzzTarget = {
  name: "round-checkpoint",
  about: "round checkpoints, C(r) (protocol/round/round_checkpoint.ts)",
  seeds: () =>
    Promise.resolve([
      encodeRoundCheckpoint(genesisCheckpoint(JOB, SPEC.model, 1)),
    ]),
  mutate: mutateSafetensors,
  run: (input) => Boolean(decodeRoundCheckpoint(input)),
};

const deltaBlob: FuzzTarget = {
  name: "delta-blob",
  about:
    "delta blobs: context and quantized delta (protocol/round/delta_blob.ts)",
  seeds: () =>
    Promise.resolve(
      (["int8", "int4", "sign", "none"] as const).map((format) =>
        encodeDelta(
          { ...SPEC, compression: { format, blockSize: 64 } },
          CONTEXT,
          noise(N, 3),
        )
      ),
    ),
  mutate: mutateDeltaBlob,
  run: (input) => Boolean(decodeDeltaBlob(input, CONTEXT, N)),
};

const quantized: FuzzTarget = {
  name: "quantized",
  about:
    "ZQD1 quantized containers, int8/int4/sign/raw (protocol/aggregation/quantize.ts)",
  seeds: () =>
    Promise.resolve(
      ([[8, 64], [4, 256], [4, 7], [1, 128], [1, 5], [32, 0]] as const).map((
        [bits, blockSize],
      ) => encodeQuantized(quantize(noise(N, bits), { bits, blockSize }))),
    ),
  run(input) {
    const q = decodeQuantized(input, { maxElements: 4 * N });
    if (!same([...encodeQuantized(q)], [...input])) {
      throw new BrokenInvariant(
        "an accepted container is not its own encoding",
      );
    }
    return true;
  },
};

const jobSpec: FuzzTarget = {
  name: "job-spec",
  about: "job specs (protocol/spec/job_spec.ts)",
  seeds: () =>
    Promise.resolve([
      encodeJobSpec(SPEC),
      encodeJobSpec({
        ...SPEC,
        compression: { format: "int4", blockSize: 128 },
      }),
    ]),
  mutate: mutateJsonBytes,
  run(input) {
    const spec = decodeJobSpec(input);
    if (!same(decodeJobSpec(encodeJobSpec(spec)), spec)) {
      throw new BrokenInvariant("an accepted spec does not round-trip");
    }
    return true;
  },
};

const datasetManifest: FuzzTarget = {
  name: "dataset-manifest",
  about: "dataset manifests (protocol/content/dataset.ts)",
  seeds: async () => [
    encodeDatasetManifest(
      manifestOf(
        await chunkDataset(utf8.encode("the quick brown fox ".repeat(50)), 256),
      ),
    ),
  ],
  mutate: mutateJsonBytes,
  run: (input) => Boolean(decodeDatasetManifest(input)),
};

const roundManifest: FuzzTarget = {
  name: "round-manifest",
  about: "round manifests (protocol/codec/manifest_codec.ts)",
  seeds: async () => [encodeRoundManifest(await manifestFixture())],
  mutate: mutateJsonBytes,
  run(input) {
    const m = decodeRoundManifest(input);
    if (!same(decodeRoundManifest(encodeRoundManifest(m)), m)) {
      throw new BrokenInvariant("an accepted manifest does not round-trip");
    }
    return true;
  },
};

const workRecord: FuzzTarget = {
  name: "work-record",
  about: "work records (protocol/audit/work_record.ts)",
  seeds: async () => {
    const states = await Promise.all(
      Array.from(
        { length: segmentCount(SPEC.innerSteps) + 1 },
        async (_, i) =>
          cidToString(await cidForBytes(utf8.encode(`state ${i}`))),
      ),
    );
    return [
      encodeWorkRecord({
        peers: PEERS,
        weights: {},
        states,
        shifted: 0,
        from: "",
      }),
      encodeWorkRecord({
        peers: PEERS,
        weights: { [PEERS[1]]: 1, [PEERS[2]]: 3 },
        states,
        shifted: 16,
        from: states[0],
      }),
    ];
  },
  mutate: mutateJsonBytes,
  run: (input) => Boolean(decodeWorkRecord(input, SPEC.innerSteps)),
};

const trainingState: FuzzTarget = {
  name: "training-state",
  about:
    "the three blocks of a training state an auditor fetches: head, parameters, moments (protocol/content/state_hash.ts)",
  seeds: () => {
    const { head, params, moments } = encodeState({
      step: 8,
      params: noise(N, 4),
      m: noise(N, 5),
      // Zero over the first half, as Muon leaves its matrices': a mask.
      v: noise(N, 6).map((x, i) => i < N / 2 ? 0 : Math.abs(x)),
    });
    return Promise.resolve([head, params, moments]);
  },
  // Each block is read by the decoder of what its CID was fetched as; any
  // of them may be handed any bytes.
  run: (input) =>
    [decodeStateHead, decodeStateParams, decodeStateMoments].some((decode) => {
      try {
        return Boolean(decode(input, N));
      } catch (err) {
        if (err instanceof ProtocolError) return false;
        throw err;
      }
    }),
};

const knownPeers: FuzzTarget = {
  name: "known-peers",
  about: "the known-peers file, peers.json (node/p2p/known_peers.ts)",
  seeds: () =>
    Promise.resolve([
      utf8.encode(JSON.stringify([{
        peer: PEER,
        addrs: ["/ip4/127.0.0.1/tcp/4001", "/dns4/seed.example/tcp/4001"],
        lastSeen: 1_700_000_000_000,
      }, {
        peer: PEERS[1],
        addrs: ["/ip4/10.0.0.2/tcp/4001"],
        lastSeen: 1_700_000_000_001,
      }])),
    ]),
  mutate: mutateJsonBytes,
  run(input) {
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder().decode(input));
    } catch {
      return false; // the node logs an unreadable file and starts empty
    }
    return parseKnownPeers(value).length > 0;
  },
  expected: () => false,
};

/** The targets for blobs and files. */
export const BLOB_TARGETS: readonly FuzzTarget[] = [
  safetensors,
  roundCheckpoint,
  deltaBlob,
  quantized,
  jobSpec,
  datasetManifest,
  roundManifest,
  workRecord,
  trainingState,
  knownPeers,
];
