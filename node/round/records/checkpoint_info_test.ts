import { rejects, strictEqual } from "node:assert";
import { SafetensorsError } from "../../../kernels/safetensors.ts";
import { cidToString } from "../../../protocol/content/cid.ts";
import { defaultJobSpec } from "../../../protocol/spec/job_spec.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../../protocol/round/round_checkpoint.ts";
import { Blockstore } from "../../store/blockstore.ts";
import { checkpointInfo } from "./checkpoint_info.ts";
import { record } from "../../http/_fixtures.ts";

Deno.test("checkpoint info reads job, round and config from the header", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = await Blockstore.open(dir);
    const model = defaultJobSpec({
      name: "t",
      model: { layers: 1, dModel: 32, heads: 2, contextLength: 32 },
      dataset: {
        cid: "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
      },
    }).model;
    const bytes = encodeRoundCheckpoint(
      genesisCheckpoint("bafkreijob", model, 1),
    );
    const cid = cidToString(await store.put(bytes));
    const committed = { ...record(0), checkpoint: cid };
    const info = await checkpointInfo(store, cid, [record(1), committed]);
    strictEqual(info?.cid, cid);
    strictEqual(info?.size, bytes.length);
    strictEqual(info?.format, "zoo-round/1");
    strictEqual(info?.job, "bafkreijob");
    strictEqual(info?.round, 0);
    strictEqual(info?.parent, null);
    strictEqual((info?.config as { dModel: number }).dModel, 32);
    strictEqual(info?.committed, committed);

    const other = cidToString(
      await store.put(new TextEncoder().encode("hello")),
    );
    await rejects(() => checkpointInfo(store, other, []), SafetensorsError);
    const missing =
      "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku";
    strictEqual(await checkpointInfo(store, missing, []), null);
    await rejects(() => checkpointInfo(store, "not-a-cid", []), TypeError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
