/** The `zoo-node --help` text. */
export const USAGE = `zoo-node: decentralized training node

Usage:
  zoo-node --join [options]        start a node and join the mesh
  zoo-node devnet [--nodes N]      start N local peers on loopback, show the mesh
  zoo-node status [--rpc URL]      show a running node's status (default: the one on --data-dir)
  zoo-node keys init|show          create the node's keys / show its ids
  zoo-node blob put <file>         store a file in the local blockstore, print its CID
  zoo-node blob get <cid>          fetch a blob through the running node
  zoo-node --help | --version

Node options (--join):
  --data-dir DIR          keys, blocks and state (default ~/.zoo)
  --listen MULTIADDR      listen address, repeatable (default /ip4/0.0.0.0/tcp/4001)
  --bootstrap MULTIADDR   peer to dial on start, with /p2p/<id>, repeatable
  --http [HOST:]PORT|off  local status page + JSON-RPC (default 127.0.0.1:7070)
  --mdns                  discover peers on the local network
  --job NAME              job to gossip on (default "default")
  --max-blob-bytes N      largest blob to fetch or serve (default 2147483648)

devnet options:
  --nodes N               number of peers, 1-32 (default 3)
  --data-dir DIR          keep the peers' state here (default: a temp dir, removed)
  --keep-running          stay up until Ctrl-C instead of exiting after the demo

blob get options:
  --from PEER_ID          provider to fetch from, repeatable (default: connected peers)
  --out FILE              also write the blob to FILE

Settings are read from, lowest to highest precedence: defaults, <data-dir>/zoo.json,
ZOO_* environment variables (ZOO_DATA_DIR, ZOO_LISTEN, ZOO_BOOTSTRAP, ZOO_HTTP,
ZOO_MDNS, ZOO_JOB, ZOO_MAX_BLOB_BYTES; lists comma-separated), then flags.

Exit codes: 0 success, 1 failure, 2 bad command line or settings.`;
