import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { cidForBytes } from "../../protocol/cid.ts";
import { LIBP2P, random, withNodes } from "../p2p/_blob_nodes.ts";
import { refusedBy } from "./work_reader.ts";

Deno.test({
  name:
    "refusedBy: a peer's own 'not found' is a refusal; a peer that cannot be reached is not",
  ...LIBP2P,
  fn: () =>
    withNodes([{}, {}], async ([client, server]) => {
      const missing = await cidForBytes(random(64));
      const refused = await client.blobs.fetch(missing, [server.id]).then(
        () => null,
        (err) => err,
      );
      assert.ok(refused instanceof Error);
      assert.equal(refusedBy(refused, server.id), true);
      // Wrapped, as a caller may rethrow it with a cause.
      assert.equal(
        refusedBy(new Error("audit", { cause: refused }), server.id),
        true,
      );

      const nobody = peerIdFromPrivateKey(await generateKeyPair("Ed25519"))
        .toString();
      const unreachable = await client.blobs.fetch(missing, [nobody], {
        signal: AbortSignal.timeout(2_000),
      }).then(() => null, (err) => err);
      assert.ok(unreachable instanceof Error);
      assert.equal(refusedBy(unreachable, nobody), false);
      assert.equal(refusedBy(new Error("timed out"), server.id), false);
    }),
});
