/**
 * EIP-712 attestations of a round, as the registry checks them, and the
 * conversions between off-chain ids (CIDs, peer ids) and contract words.
 *
 * @module
 */
import { peerIdFromString } from "@libp2p/peer-id";
import { bytesToHex, hexToBytes } from "viem";
import {
  type CID,
  cidFromDigest,
  cidToString,
  parseCid,
  RAW_CODEC,
} from "../protocol/content/cid.ts";
import { DAG_PB_CODEC } from "../protocol/content/unixfs.ts";
import type { RoundManifest } from "../protocol/round/round_manifest.ts";

import {
  type Address,
  type Bytes32,
  eip712Domain,
  type RegistryDomain,
  type RegistryMessage,
  registryMessage,
} from "./typed_data.ts";

export { type Address, type Bytes32, eip712Domain, type RegistryDomain };

/** What members sign and the leader commits: one round's outcome. */
export interface Attestation {
  job: Bytes32;
  round: number;
  parent: Bytes32;
  checkpoint: Bytes32;
  manifest: Bytes32;
  /** Contributing members' accounts, ascending (see {@linkcode sortContributions}). */
  contributors: Address[];
  /** Tokens each contributor trained on this round. */
  weights: bigint[];
}

/** The EIP-712 types; must match `ATTESTATION_TYPEHASH` in the contract. */
export const ATTESTATION_TYPES = {
  Attestation: [
    { name: "job", type: "bytes32" },
    { name: "round", type: "uint32" },
    { name: "parent", type: "bytes32" },
    { name: "checkpoint", type: "bytes32" },
    { name: "manifest", type: "bytes32" },
    { name: "contributors", type: "address[]" },
    { name: "weights", type: "uint256[]" },
  ],
} as const;

const ATTESTATION = registryMessage<Attestation>(
  ATTESTATION_TYPES,
  "Attestation",
);

/** The digest the contract recovers signers from. */
export const attestationDigest: RegistryMessage<Attestation>["digest"] =
  ATTESTATION.digest;

/** Signs an attestation with `account` (a viem local account). */
export const signAttestation: RegistryMessage<Attestation>["sign"] =
  ATTESTATION.sign;

/** The address that signed an attestation, to check it as it arrives. */
export const recoverAttester: RegistryMessage<Attestation>["recover"] =
  ATTESTATION.recover;

/**
 * Orders signatures by signer address, as the contract requires, dropping
 * repeats of the same signer.
 */
export function orderSignatures(
  signed: readonly { signer: Address; signature: `0x${string}` }[],
): `0x${string}`[] {
  const bySigner = new Map<string, `0x${string}`>();
  for (const s of signed) bySigner.set(s.signer.toLowerCase(), s.signature);
  return [...bySigner.keys()].sort().map((k) => bySigner.get(k)!);
}

/**
 * Orders contributions by account, as the contract requires; two entries
 * for one account are summed.
 */
export function sortContributions(
  entries: readonly { account: Address; weight: bigint }[],
): { contributors: Address[]; weights: bigint[] } {
  const byAccount = new Map<string, { account: Address; weight: bigint }>();
  for (const e of entries) {
    const key = e.account.toLowerCase();
    const prev = byAccount.get(key);
    byAccount.set(key, {
      account: e.account,
      weight: (prev?.weight ?? 0n) + e.weight,
    });
  }
  const sorted = [...byAccount.keys()].sort().map((k) => byAccount.get(k)!);
  return {
    contributors: sorted.map((e) => e.account),
    weights: sorted.map((e) => e.weight),
  };
}

/**
 * The 32-byte sha2-256 digest inside a CID (a string or CID): raw for a
 * job id or a manifest, dag-pb for a checkpoint (a UnixFS file's root).
 * The chain keeps the digest alone; what a field names fixes its codec
 * when it is read back ({@linkcode bytes32ToCid}).
 */
export function cidToBytes32(cid: string | CID): Bytes32 {
  const parsed = typeof cid === "string" ? parseCid(cid) : cid;
  if (parsed.code !== RAW_CODEC && parsed.code !== DAG_PB_CODEC) {
    throw new TypeError(
      `Cannot put CID ${
        cidToString(parsed)
      } on chain as only raw and dag-pb CIDs map to bytes32: current codec is 0x${
        parsed.code.toString(16)
      }`,
    );
  }
  return bytesToHex(parsed.multihash.digest);
}

/**
 * The CID string for a 32-byte digest read from the chain, under `codec`:
 * `RAW_CODEC` for job ids and manifests, `CHECKPOINT_CODEC`
 * (protocol/round/round_checkpoint.ts) for checkpoints (a head, a genesis,
 * a parent). Given each time: the word alone does not say.
 */
export function bytes32ToCid(word: Bytes32, codec: number): string {
  return cidToString(cidFromDigest(hexToBytes(word), codec));
}

/** The peer id's multihash bytes, as the registry binds them to accounts. */
export function peerIdToHex(peerId: string): `0x${string}` {
  return bytesToHex(peerIdFromString(peerId).toMultihash().bytes);
}

/**
 * The attestation of a round manifest stored under `manifestCid`: what
 * every verifier signs and the leader commits. Weights are the manifest's
 * token counts.
 */
export function attestationForManifest(
  manifestCid: string,
  m: RoundManifest,
): Attestation {
  return {
    job: cidToBytes32(m.job),
    round: m.round,
    parent: cidToBytes32(m.parent),
    checkpoint: cidToBytes32(m.checkpoint),
    manifest: cidToBytes32(manifestCid),
    ...sortContributions(m.contributions.map((c) => ({
      account: c.account,
      weight: BigInt(c.tokens),
    }))),
  };
}
