/**
 * The help texts: `zoo-node --help`, and each command's own `--help`.
 *
 * @module
 */

const SETTINGS =
  `Settings are read from, lowest to highest precedence: defaults, <data-dir>/zoo.json,
ZOO_* environment variables (ZOO_DATA_DIR, ZOO_LISTEN, ZOO_ANNOUNCE, ZOO_BOOTSTRAP, ZOO_HTTP,
ZOO_HTTP_HOSTS, ZOO_MDNS, ZOO_RELAY, ZOO_JOB, ZOO_MAX_BLOB_BYTES, ZOO_RPC_URL, ZOO_REGISTRY,
ZOO_CONFIRMATIONS, ZOO_BACKEND, ZOO_THREADS, ZOO_OVERLAP, ZOO_DUTY_CYCLE; lists comma-separated),
then flags.`;

const EXIT_CODES =
  "Exit codes: 0 success, 1 failure, 2 bad command line or settings.";

const CHAIN_OPTIONS =
  `  --data-dir DIR          the node's keys (default ~/.zoo)
  --rpc-url URL           EVM JSON-RPC endpoint (default: the embedded anvil)
  --registry 0xADDRESS    registry contract (default: the recorded deployment)`;

/** The `zoo-node --help` text. */
export const USAGE = `zoo-node: decentralized training node

Usage:
  zoo-node --join [options]        start a node; with --job <id>, train that job
  zoo-node devnet [options]        local chain + N peers training a job together
  zoo-node status [--rpc URL]      show a running node's status (default: the one on --data-dir)
  zoo-node keys init|show          create the node's keys / show its ids
  zoo-node keys export|import      save the keys to an encrypted file / restore them
  zoo-node blob put <file>         store a file in the local blockstore, print its CID
  zoo-node blob get <cid>          fetch a blob through the running node
  zoo-node chain deploy|status|register|rounds   the on-chain registry
  zoo-node job create <spec.json>  publish a training job and create it on chain
  zoo-node job cancel <job id>     end a job you created; refund its unspent pool
  zoo-node stake add <ETH>|exit|withdraw   this node's stake on the registry
  zoo-node rewards [claim]         rewards earned in jobs / claim them
  zoo-node train --local [options] train a GPT on this machine
  zoo-node sample --checkpoint F   generate text from a checkpoint (file or CID)
  zoo-node export <checkpoint> --safetensors F   a checkpoint's model, for other tools
  zoo-node export <checkpoint> --car F   a checkpoint under its CID, for IPFS tools
  zoo-node import --car F          store the blocks of a CAR file, verified
  zoo-node --help | --version

Run "zoo-node <command> --help" for a command's options.

${SETTINGS}

${EXIT_CODES}`;

/** The commands that answer `--help` with their own text. */
export const HELP_TOPICS = [
  "join",
  "devnet",
  "status",
  "keys",
  "blob",
  "chain",
  "job",
  "stake",
  "rewards",
  "train",
  "sample",
  "export",
  "import",
] as const;

/** A command with its own `--help` text. */
export type HelpTopic = typeof HELP_TOPICS[number];

/** Each command's `--help` text. */
export const COMMAND_HELP: { readonly [T in HelpTopic]: string } = {
  join:
    `zoo-node --join [options]: start a node; with --job <id>, train that job

Options:
  --data-dir DIR          keys, blocks and state (default ~/.zoo)
  --listen MULTIADDR      listen address, repeatable (default /ip4/0.0.0.0/tcp/4001)
  --announce MULTIADDR    address to tell peers instead, repeatable (default: the listen ones)
  --bootstrap MULTIADDR   peer to dial on start, with /p2p/<id>, repeatable
  --http [HOST:]PORT|off  local status page + JSON-RPC (default 127.0.0.1:7070)
  --http-host NAME        a DNS name the HTTP server answers to, repeatable
                          (default: IP addresses and localhost only)
  --mdns                  discover peers on the local network
  --relay                 relay for peers that cannot accept connections
                          (they listen on /p2p-circuit through this node)
  --browser-peer DIR      serve a browser peer build at /peer/ (deno task bundle:browser)
  --browser-rpc-url URL   the chain URL given to browser tabs (default: --rpc-url
                          if it is on this machine, else none)
  --job ID|NAME           a job id (CID) to train, or a topic name (default "default")
  --max-blob-bytes N      largest blob to fetch or serve (default 2147483648)
  --rpc-url URL           EVM JSON-RPC endpoint (default: the embedded anvil)
  --registry 0xADDRESS    registry contract (default: the recorded deployment)
  --confirmations N|auto  blocks a round's commit must be under before it counts, 0-64
                          (default auto: 0 on anvil/hardhat, 3 on other chains)
  --backend B             auto|webgpu|wasm|js (default auto)
  --threads N             CPU backend threads, 1-64 (default: every core, at most 8)
  --overlap               train ahead while a round commits
  --duty-cycle F          share of the time spent training, 0 < F <= 1 (default 1)
  --bid PRICE             a priced job: bid this price per verified token for a
                          seat (wei, or gwei as 0.4gwei), run its benchmark and
                          wait for a seat

${SETTINGS}

${EXIT_CODES}`,
  devnet:
    `zoo-node devnet [options]: a local chain and N peers training a job together

Options:
  --nodes N               number of peers, 1-32 (default 3)
  --rounds R              rounds to train, 0-10000 (default 3; 0: mesh and blob demo only)
  --spec FILE             job spec fields (JSON) over the devnet's defaults
  --data-dir DIR          keep the peers' state here (default: a temp dir, removed)
  --rpc-url URL           a dev chain (anvil) instead of the embedded one
  --keep-running          stay up until Ctrl-C instead of exiting at the end
                          (then the end says when claims open and how to claim)
  --backend B[,B...]      each peer's compute, in turn (e.g. webgpu,wasm; default auto)
  --challenge-window S    seconds from the job's last commit to its claims (default 90)
  --browser-peer [DIR]    node-1 also serves a browser tab as a peer, from the build
                          in DIR (default: one built in the devnet's folder); the
                          devnet funds the tab's account; implies --keep-running,
                          --rounds defaults to 100

${EXIT_CODES}`,
  status: `zoo-node status [options]: show a running node's status and peers

Options:
  --data-dir DIR          ask the node running on this data dir (default ~/.zoo)
  --rpc URL               ask the node at this HTTP address instead
                          (e.g. http://127.0.0.1:7070)

${EXIT_CODES}`,
  keys: `zoo-node keys init|show|export|import [options]

  init                    create the libp2p and chain account keys if missing
                          (never overwrites them); print the peer id and address
  show                    print the peer id and chain address (never the keys)
  export --out FILE       write both keys to FILE (mode 0600), encrypted with a
                          passphrase; the peer id and address stay readable
    --force                 replace FILE if it exists
  import FILE             store the keys of a backup made by "keys export", as
                          "keys init" would; print the peer id and address
    --force                 replace keys the data dir already holds

The passphrase (8 characters or more) is read from ZOO_KEYS_PASSPHRASE if set,
else asked for on the terminal without echo (twice for export).

Options:
  --data-dir DIR          where the keys are (default ~/.zoo)

${EXIT_CODES}`,
  blob: `zoo-node blob put <file> | get <cid> [options]

  put <file>              store a file in the local blockstore, print its CID
  get <cid>               have the running node fetch the blob, verified by CID

Options:
  --data-dir DIR          the blockstore / the running node (default ~/.zoo)
  --from PEER_ID          (get) provider to fetch from, repeatable
                          (default: connected peers)
  --out FILE              (get) also write the blob to FILE

${EXIT_CODES}`,
  chain:
    `zoo-node chain deploy|status|register|rounds [options]: the on-chain registry

  deploy                  deploy a new registry and record it
    --min-stake ETH         least stake to register (default 1)
    --unbonding-delay S     seconds from exit to withdrawal (default 60)
    --challenge-window S    seconds from a job's last commit to its claims (default 3600)
    --fee-bps N             the market's fee on priced jobs, basis points (default 500)
    --treasury 0xADDRESS    where the fee goes (default: this account)
  status                  chain, registry, this account and every job
  register                register this node's account bound to its peer id
    --stake ETH             stake to put up (default: the registry's minimum)
  rounds --job ID         a job's committed rounds
    --from N                first round (default 0)
    --limit N               rounds to list (default 100)
    --json                  one JSON object per round

Options of every action:
${CHAIN_OPTIONS}

${EXIT_CODES}`,
  job:
    `zoo-node job create <spec.json> | cancel <job id> | market <job id> [options]

  create <spec.json>      fill the spec's missing fields with their defaults,
                          validate it, store it and the genesis checkpoint in
                          the blockstore (its CID is the job id) and create
                          the job on chain
    --reward ETH            the job's reward pool (default 1)
    --min-stake ETH         least stake of its peers (default 0)
    --data PATH             train on this text file, or every text file
                            under this directory, instead of the spec's
                            dataset: it is chunked and stored here, and this
                            data dir's node serves it to the job's peers
    --max-price PRICE       a priced job instead of a pool: the most a seat
                            is paid per verified token (wei, or gwei as 1gwei)
    --seats N               its seats, 1-64 (default: the spec's minPeers)
    --budget ETH            what it may spend (default: every round at the
                            maximum price; the unspent part is refunded)
    --bidding-window S      seconds bids gather before seats fill (default 60)
    --min-tokens-per-second N  the admission bar (default: the speed that
                            trains a seat's round within the round deadline)
  cancel <job id>         end a job this account created after its committed
                          rounds: the pool's share of the rounds never
                          committed is refunded at once, its contributors
                          claim the rest (a priced job: what its seats did not
                          earn, once its challenge window has passed)
  market <job id>         a priced job's terms, seats and every bid: price,
                          stage, benchmark speed and class, tokens credited
    --json                  one JSON object

Options of every action:
${CHAIN_OPTIONS}

${EXIT_CODES}`,
  stake: `zoo-node stake add <ETH> | exit | withdraw [options]

  add <ETH>               add to this node's stake
  exit                    start leaving: the node stops counting for every
                          job at once; the stake stays slashable until the
                          registry's unbonding delay has passed
  withdraw                after the unbonding delay, pay the stake back and
                          free the peer id

Options:
${CHAIN_OPTIONS}

${EXIT_CODES}`,
  rewards: `zoo-node rewards [claim] [options]

  (none)                  each job this account trained in: its contribution,
                          and whether the reward is claimable, claimed, or
                          when claims open
    --json                  one JSON object
  claim                   claim the reward of --job, or of every job whose
                          reward is claimable now

Options:
  --job ID                one job (its spec's CID or 0x digest)
${CHAIN_OPTIONS}

${EXIT_CODES}`,
  train:
    `zoo-node train --local [options]: train a byte-level GPT on this machine

Options:
  --steps N               optimizer steps (default 500)
  --batch N               sequences per step (default 16)
  --context N             tokens per sequence (default 64)
  --layers N              transformer blocks (default 2)
  --d-model N             model width (default 128)
  --heads N               attention heads (default 4)
  --lr X                  peak learning rate (default 3e-3)
  --optimizer O           muon|adamw: Muon for the attention and MLP weights,
                          AdamW for the rest, as jobs (default muon); or
                          AdamW alone
  --seed N                initialization and data order (default 1)
  --eval-every N          steps between held-out evaluations (default 100)
  --backend B             auto|webgpu|wasm|js (default auto)
  --threads N             CPU backend threads, 1-64
  --data FILE             any text file (default: the Brown corpus)
  --out FILE              checkpoint to write
                          (default <data-dir>/checkpoints/local.safetensors)
  --data-dir DIR          where the corpus cache and checkpoints go (default ~/.zoo)

${EXIT_CODES}`,
  sample:
    `zoo-node sample --checkpoint F [options]: generate text from a checkpoint

Options:
  --checkpoint F          a checkpoint: a file, or the CID of a job's round
                          checkpoint (fetched by the running node if not held)
  --prompt TEXT           text to continue (default "")
  --tokens N              tokens to generate (default 200)
  --temperature X         0 is greedy (default 0.8)
  --top-k N               sample among the K likeliest (default 40)
  --seed N                sampling seed (default 1)
  --backend B             auto|wasm|js (default auto)
  --data-dir DIR          where a CID is looked up (default ~/.zoo)

${EXIT_CODES}`,
  export:
    `zoo-node export <checkpoint> --safetensors FILE | --car FILE [options]

The checkpoint is a file, or the CID of a job's round checkpoint (fetched by
the running node if not held).

  --safetensors FILE      write its model tensors as safetensors under GPT-2's
                          Hugging Face names, without the optimizer state; the
                          job, round and parent stay in the metadata
  --car FILE              write it unchanged as a CARv1 file whose root is its
                          CID (a file's: the CID of its bytes), so that
                          "ipfs dag import" keeps that CID (a block over
                          1 MiB needs Kubo's big-block option: see node/cli/README.md)

Options:
  --data-dir DIR          where a CID is looked up (default ~/.zoo)

${EXIT_CODES}`,
  import: `zoo-node import --car FILE [options]

Stores the blocks of a CAR file (from "zoo-node export --car", or
"ipfs dag export" of raw blocks) in the local blockstore, each checked against
its CID first; prints the roots and the count of blocks. Only CIDv1 raw
(0x55) sha2-256 blocks of at most maxBlobBytes are taken; a damaged, cut or
other CAR stops the import at the first bad block, which is not stored.

Options:
  --car FILE              the CAR file (CARv1 or CARv2) to read
  --data-dir DIR          the blockstore (default ~/.zoo)

${EXIT_CODES}`,
};
