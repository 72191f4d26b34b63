import assert from "node:assert/strict";
import { resolvePeerConfig, TAB_MAX_BLOB_BYTES } from "./peer_config.ts";

const JOB = "bafkreicvzkykvf7iuyd6424afshdxp2pmlggj6c7cqkz2avjmg3jw6zv5i";
const PEER = "12D3KooWSFkS4QVqt5KdW3dCDxt6LhUnWfzETwXxp61pDvgUjoFZ";
const SERVED = {
  job: JOB,
  bootstrap: [`/ip4/127.0.0.1/tcp/4002/ws/p2p/${PEER}`],
  rpcUrl: "http://127.0.0.1:8545",
  registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
  maxBlobBytes: 2 ** 31,
  confirmations: 2,
};
const q = (text = "") => new URLSearchParams(text);

Deno.test("tab config: the node's, with its cores' threads and a tab's blob cap", () => {
  assert.deepEqual(resolvePeerConfig(SERVED, q(), 16), {
    ...SERVED,
    threads: 4,
    maxBlobBytes: TAB_MAX_BLOB_BYTES,
  });
  assert.equal(resolvePeerConfig(SERVED, q(), 1).threads, 1);
  assert.equal(
    resolvePeerConfig({ ...SERVED, confirmations: undefined }, q(), 2)
      .confirmations,
    null,
  );
});

Deno.test("tab config: the address picks job, peers and threads, never chain or registry", () => {
  const other = "bafkreicjb5zcdwaimp3i5ebcryyjai35qncmsntc32i7kixamam75btlze";
  const wss = `/dns4/peer.example/tcp/443/wss/p2p/${PEER}`;
  const config = resolvePeerConfig(
    SERVED,
    q(
      `job=${other}&bootstrap=${encodeURIComponent(wss)}&threads=3` +
        "&rpc=http://evil.example&registry=0x" + "e".repeat(40),
    ),
    8,
  );
  assert.equal(config.job, other);
  assert.deepEqual(config.bootstrap, [wss]);
  assert.equal(config.threads, 3);
  assert.equal(config.rpcUrl, SERVED.rpcUrl);
  assert.equal(config.registry, SERVED.registry);
});

Deno.test("tab config: bad or missing fields are refused, naming them", () => {
  const refused = (served: unknown, query: string, why: RegExp) =>
    assert.throws(() => resolvePeerConfig(served, q(query), 4), why);
  refused({}, "", /job "?null"? is not a job id/);
  refused(SERVED, "job=nope", /job "nope" is not a job id/);
  refused({ ...SERVED, bootstrap: [] }, "", /no peer to dial/);
  refused(SERVED, "bootstrap=/ip4/1.2.3.4/tcp/1", /no peer to dial/);
  refused(
    SERVED,
    `bootstrap=${encodeURIComponent("/ip4/1.2.3.4/tcp/1/ws")}`,
    /no peer to dial/,
  );
  refused({ ...SERVED, rpcUrl: undefined }, "", /--browser-rpc-url/);
  refused({ ...SERVED, rpcUrl: "ws://x" }, "", /--browser-rpc-url/);
  refused({ ...SERVED, registry: "0x12" }, "", /no registry/);
  for (const t of ["0", "abc", "1.5", "65"]) {
    refused(SERVED, `threads=${t}`, /threads=.*whole number from 1 to 64/);
  }
  refused({ ...SERVED, confirmations: -1 }, "", /confirmations/);
});
