/** The `zoo-node --help` text. */
export const USAGE = `zoo-node: decentralized training node

Usage:
  zoo-node --join [options]        start a node; with --job <id>, train that job
  zoo-node devnet [options]        local chain + N peers training a job together
  zoo-node status [--rpc URL]      show a running node's status (default: the one on --data-dir)
  zoo-node keys init|show          create the node's keys / show its ids
  zoo-node blob put <file>         store a file in the local blockstore, print its CID
  zoo-node blob get <cid>          fetch a blob through the running node
  zoo-node chain deploy|status|register|rounds   the on-chain registry
  zoo-node job create <spec.json>  publish a training job and create it on chain
  zoo-node train --local [options] train a GPT on this machine
  zoo-node sample --checkpoint F   generate text from a checkpoint
  zoo-node --help | --version

Node options (--join):
  --data-dir DIR          keys, blocks and state (default ~/.zoo)
  --listen MULTIADDR      listen address, repeatable (default /ip4/0.0.0.0/tcp/4001)
  --announce MULTIADDR    address to tell peers instead, repeatable (default: the listen ones)
  --bootstrap MULTIADDR   peer to dial on start, with /p2p/<id>, repeatable
  --http [HOST:]PORT|off  local status page + JSON-RPC (default 127.0.0.1:7070)
  --http-host NAME        a DNS name the HTTP server answers to, repeatable
                          (default: IP addresses and localhost only)
  --mdns                  discover peers on the local network
  --job ID|NAME           a job id (CID) to train, or a topic name (default "default")
  --max-blob-bytes N      largest blob to fetch or serve (default 2147483648)
  --rpc-url URL           EVM JSON-RPC endpoint (default: the embedded anvil)
  --registry 0xADDRESS    registry contract (default: the recorded deployment)

devnet options:
  --nodes N               number of peers, 1-32 (default 3)
  --rounds R              rounds to train, 0-10000 (default 3; 0: mesh and blob demo only)
  --spec FILE             job spec fields (JSON) over the devnet's defaults
  --data-dir DIR          keep the peers' state here (default: a temp dir, removed)
  --rpc-url URL           a dev chain (anvil) instead of the embedded one
  --keep-running          stay up until Ctrl-C instead of exiting at the end
  --backend B[,B...]      each peer's compute, in turn (e.g. webgpu,wasm; default auto)

blob get options:
  --from PEER_ID          provider to fetch from, repeatable (default: connected peers)
  --out FILE              also write the blob to FILE

Settings are read from, lowest to highest precedence: defaults, <data-dir>/zoo.json,
ZOO_* environment variables (ZOO_DATA_DIR, ZOO_LISTEN, ZOO_BOOTSTRAP, ZOO_HTTP,
ZOO_HTTP_HOSTS, ZOO_MDNS, ZOO_JOB, ZOO_MAX_BLOB_BYTES, ZOO_RPC_URL, ZOO_REGISTRY; lists
comma-separated), then flags.

Exit codes: 0 success, 1 failure, 2 bad command line or settings.`;
