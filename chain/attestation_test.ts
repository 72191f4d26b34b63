import {
  CHECKPOINT_CODEC,
  roundCheckpointCid,
} from "../protocol/round/round_checkpoint.ts";
import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { keccak256, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  cidForBytes,
  cidToString,
  RAW_CODEC,
} from "../protocol/content/cid.ts";
import {
  type Attestation,
  bytes32ToCid,
  cidToBytes32,
  orderSignatures,
  peerIdToHex,
  recoverAttester,
  signAttestation,
  sortContributions,
} from "./attestation.ts";

const DOMAIN = {
  chainId: 31337,
  registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
} as const;

function sample(): Attestation {
  return {
    job: keccak256(toHex("job")),
    round: 3,
    parent: keccak256(toHex("parent")),
    checkpoint: keccak256(toHex("checkpoint")),
    manifest: keccak256(toHex("manifest")),
    contributors: [],
    weights: [],
  };
}

Deno.test("cidToBytes32 and bytes32ToCid round-trip raw sha2-256 CIDs", async () => {
  const cid = cidToString(await cidForBytes(new TextEncoder().encode("zoo")));
  const word = cidToBytes32(cid);
  assert.match(word, /^0x[0-9a-f]{64}$/);
  assert.equal(bytes32ToCid(word, RAW_CODEC), cid);
  assert.throws(() => cidToBytes32("not a cid"), TypeError);
});

Deno.test("cidToBytes32 keeps a checkpoint's dag-pb root, read back under its codec; refuses others", async () => {
  const file = await roundCheckpointCid(new Uint8Array([1, 2, 3]));
  assert.equal(
    bytes32ToCid(cidToBytes32(file), CHECKPOINT_CODEC),
    cidToString(file),
  );
  const dagJson = await cidForBytes(new Uint8Array([1]), 0x0129);
  assert.throws(() => cidToBytes32(dagJson), /only raw and dag-pb/);
});

Deno.test("a signed attestation recovers to its signer and not for another domain", async () => {
  const account = privateKeyToAccount(generatePrivateKey());
  const att = sample();
  const sig = await signAttestation(account, DOMAIN, att);
  assert.equal(await recoverAttester(DOMAIN, att, sig), account.address);
  assert.notEqual(
    await recoverAttester({ ...DOMAIN, chainId: 1 }, att, sig),
    account.address,
  );
  assert.notEqual(
    await recoverAttester(DOMAIN, { ...att, round: 4 }, sig),
    account.address,
  );
});

Deno.test("orderSignatures sorts by signer and drops repeats", () => {
  const out = orderSignatures([
    { signer: "0xBB00000000000000000000000000000000000000", signature: "0x02" },
    { signer: "0xaa00000000000000000000000000000000000000", signature: "0x01" },
    { signer: "0xbb00000000000000000000000000000000000000", signature: "0x03" },
  ]);
  assert.deepEqual(out, ["0x01", "0x03"]);
});

Deno.test("sortContributions orders accounts ascending and sums repeats", () => {
  const out = sortContributions([
    { account: "0x00000000000000000000000000000000000000C0", weight: 5n },
    { account: "0x00000000000000000000000000000000000000a0", weight: 1n },
    { account: "0x00000000000000000000000000000000000000c0", weight: 2n },
  ]);
  assert.deepEqual(out.weights, [1n, 7n]);
  assert.equal(
    out.contributors[0].toLowerCase(),
    "0x00000000000000000000000000000000000000a0",
  );
});

Deno.test("peerIdToHex gives the peer id's multihash bytes", async () => {
  const peerId = peerIdFromPrivateKey(await generateKeyPair("Ed25519"));
  const hex = peerIdToHex(peerId.toString());
  assert.equal(hex, toHex(peerId.toMultihash().bytes));
  assert.throws(() => peerIdToHex("nonsense"));
});
