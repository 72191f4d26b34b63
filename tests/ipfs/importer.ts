/**
 * The root CID IPFS's own UnixFS importer gives each file named on the
 * command line, laid out as `ipfs add --cid-version=1 --raw-leaves
 * --chunker=size-1048576` lays it out (and as zoo-node does, which
 * `tests/ipfs_test.ts` checks): one CID a line.
 *
 *   deno run -A --config tests/ipfs/deno.json tests/ipfs/importer.ts FILE...
 *
 * @module
 */
import { importer } from "ipfs-unixfs-importer";
import { fixedSize } from "ipfs-unixfs-importer/chunker";
import { balanced } from "ipfs-unixfs-importer/layout";

/** Blocks are only counted: the root CID is all this prints. */
const blockstore = {
  put: (cid: unknown) => cid,
};

for (const path of Deno.args) {
  let root = "";
  for await (
    const entry of importer(
      [{ content: await Deno.readFile(path) }],
      blockstore as never,
      {
        cidVersion: 1,
        rawLeaves: true,
        chunker: fixedSize({ chunkSize: 1 << 20 }),
        layout: balanced({ maxChildrenPerNode: 174 }),
        reduceSingleLeafToSelf: false,
      },
    )
  ) root = String(entry.cid);
  console.log(root);
}
