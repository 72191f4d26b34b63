import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { cidForBytes } from "../../../protocol/content/cid.ts";
import { LIBP2P, putBlob, random, withNodes } from "../../p2p/_blob_nodes.ts";
import { MalformedWork, provenBy } from "./work_reader.ts";

Deno.test({
  name:
    "provenBy: a peer's own 'not found' or oversized answer, or malformed bytes, prove it at fault; a peer that cannot be reached does not",
  ...LIBP2P,
  fn: () =>
    withNodes([{}, {}], async ([client, server]) => {
      const missing = await cidForBytes(random(64));
      const refused = await client.blobs.fetch(missing, [server.id]).then(
        () => null,
        (err) => err,
      );
      assert.ok(refused instanceof Error);
      assert.equal(provenBy(refused, server.id), true);
      // Wrapped, as a caller may rethrow it with a cause.
      assert.equal(
        provenBy(new Error("audit", { cause: refused }), server.id),
        true,
      );

      const nobody = peerIdFromPrivateKey(await generateKeyPair("Ed25519"))
        .toString();
      const unreachable = await client.blobs.fetch(missing, [nobody], {
        signal: AbortSignal.timeout(2_000),
      }).then(() => null, (err) => err);
      assert.ok(unreachable instanceof Error);
      assert.equal(provenBy(unreachable, nobody), false);
      assert.equal(provenBy(new Error("timed out"), server.id), false);

      // A committed blob larger than what it was committed as may be: the
      // peer's own answer says so.
      const big = await putBlob(random(4096), server);
      const oversized = await client.blobs.fetch(big, [server.id], {
        maxBytes: 1024,
      }).then(() => null, (err) => err);
      assert.ok(oversized instanceof Error);
      assert.equal(provenBy(oversized, server.id), true);
      assert.equal(provenBy(new MalformedWork(new Error("bad")), "x"), true);
    }),
});
