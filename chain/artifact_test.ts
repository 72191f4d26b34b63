import { FULL_TIER } from "../tests/_tier.ts";
import assert from "node:assert/strict";
import {
  ZOO_REGISTRY_COMPILER,
  zooMarketAbi,
  zooRegistryAbi,
  zooRegistryBytecode,
} from "./artifact.ts";
import { compileRegistry, EVM_VERSION, OPTIMIZER_RUNS } from "./build.ts";

Deno.test(
  "the committed artifact matches a fresh compile of ZooRegistry.sol and its market",
  FULL_TIER,
  async () => {
    const fresh = await compileRegistry();
    assert.deepEqual(
      ZOO_REGISTRY_COMPILER,
      {
        solc: fresh.compiler,
        evmVersion: EVM_VERSION,
        optimizerRuns: OPTIMIZER_RUNS,
      },
    );
    assert.deepEqual(
      zooRegistryAbi,
      fresh.abi,
      "ABI differs: run `deno task build:contracts` and commit chain/artifact.ts",
    );
    assert.deepEqual(
      zooMarketAbi,
      fresh.marketAbi,
      "market ABI differs: run `deno task build:contracts` and commit chain/artifact.ts",
    );
    assert.equal(
      zooRegistryBytecode,
      fresh.bytecode,
      "bytecode differs: run `deno task build:contracts` and commit chain/artifact.ts",
    );
  },
);
