import assert from "node:assert/strict";
import type { DevnetChain } from "./chain.ts";
import { balanceReads, MAX_REQUEST_BYTES, startFaucet } from "./faucet.ts";

const bytes = (value: unknown) =>
  new TextEncoder().encode(
    typeof value === "string" ? value : JSON.stringify(value),
  );

Deno.test("faucet: the accounts a request reads the balance of, alone or in a batch", () => {
  const a = "0x1111111111111111111111111111111111111111";
  const b = "0xABCDEFabcdef0000000000000000000000000000";
  const call = (method: string, params: unknown) => ({
    jsonrpc: "2.0",
    id: 1,
    method,
    params,
  });
  assert.deepEqual(balanceReads(bytes(call("eth_getBalance", [a, "latest"]))), [
    a,
  ]);
  assert.deepEqual(
    balanceReads(bytes([
      call("eth_getBalance", [a, "latest"]),
      call("eth_chainId", []),
      call("eth_getBalance", [b, "latest"]),
    ])),
    [a, b],
  );
  // Anything else is forwarded untouched, funding nobody.
  for (
    const body of [
      call("eth_call", [{ to: a }, "latest"]),
      call("eth_getBalance", ["0x1234", "latest"]),
      call("eth_getBalance", {}),
      call("eth_getBalance", [42]),
      null,
      [null],
      "not json",
    ]
  ) {
    assert.deepEqual(balanceReads(bytes(body)), [], JSON.stringify(body));
  }
});

Deno.test("faucet: a request over the size limit is refused with 413 before anything reaches the chain", async () => {
  // Nothing of the chain is touched on this path.
  const faucet = startFaucet({} as DevnetChain, () => {
    throw new Error("funded");
  });
  try {
    const res = await fetch(faucet.url, {
      method: "POST",
      body: new Uint8Array(MAX_REQUEST_BYTES + 1),
    });
    assert.equal(res.status, 413);
    await res.body?.cancel();
  } finally {
    await faucet.stop();
  }
});
