import assert from "node:assert/strict";
import { ConfigError } from "../config.ts";
import { parseCommand, UsageError } from "./parse.ts";
import { COMMAND_HELP, HELP_TOPICS, type HelpTopic } from "./usage.ts";

const PEER = "12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA";
const BOOT_A = `/ip4/10.0.0.1/tcp/4001/p2p/${PEER}`;
const BOOT_B = `/ip4/10.0.0.2/tcp/4001/p2p/${PEER}`;

/** Asserts `argv` throws a UsageError whose message matches `pattern`. */
function assertUsage(argv: string[], pattern: RegExp): void {
  assert.throws(() => parseCommand(argv), (err: unknown) => {
    assert.ok(err instanceof UsageError, `${argv.join(" ")}: ${err}`);
    assert.match(err.message, pattern);
    return true;
  });
}

Deno.test("help: no arguments, --help, -h, help", () => {
  for (const argv of [[], ["--help"], ["-h"], ["help"]]) {
    assert.deepEqual(parseCommand(argv), { kind: "help" });
  }
});

Deno.test("help: every command answers --help / -h with its own text", () => {
  const asks: [string[], HelpTopic][] = [
    [["--join", "--help"], "join"],
    [["--join", "--listen", "/ip4/0.0.0.0/tcp/1", "-h"], "join"],
    [["devnet", "--nodes", "0", "--help"], "devnet"],
    [["status", "--help"], "status"],
    [["keys", "--help"], "keys"],
    [["keys", "init", "-h"], "keys"],
    [["keys", "export", "--help"], "keys"],
    [["keys", "import", "-h"], "keys"],
    [["blob", "get", "--help"], "blob"],
    [["chain", "rounds", "--help"], "chain"],
    [["job", "create", "--help"], "job"],
    [["stake", "add", "--help"], "stake"],
    [["rewards", "claim", "-h"], "rewards"],
    [["train", "--help"], "train"],
    [["sample", "--help"], "sample"],
    [["export", "--help"], "export"],
    [["import", "--car", "x.car", "-h"], "import"],
  ];
  for (const [argv, topic] of asks) {
    assert.deepEqual(
      parseCommand(argv),
      { kind: "help", topic },
      argv.join(" "),
    );
  }
  assert.deepEqual(new Set(asks.map(([, t]) => t)), new Set(HELP_TOPICS));
  // After "--" it is an argument, not a request for help.
  assertUsage(["blob", "put", "--", "--help", "x"], /argument/);
});

/** Argument lists that reach each command's flag parser. */
const PARSED_AS: { [T in HelpTopic]: string[][] } = {
  join: [["--join"]],
  devnet: [["devnet"]],
  status: [["status"]],
  keys: [["keys", "init"], ["keys", "export", "--out", "f"], [
    "keys",
    "import",
    "f",
  ]],
  blob: [["blob", "put", "f"], ["blob", "get", "cid"]],
  chain: [["chain", "deploy"], ["chain", "status"], ["chain", "register"], [
    "chain",
    "rounds",
  ]],
  job: [["job", "create", "spec.json"], ["job", "cancel", "bafk"], [
    "job",
    "market",
    "bafk",
  ]],
  stake: [["stake", "add", "1"], ["stake", "exit"], ["stake", "withdraw"]],
  rewards: [["rewards"], ["rewards", "claim"]],
  train: [["train", "--local"]],
  sample: [["sample", "--checkpoint", "f"]],
  export: [["export", "f", "--safetensors", "out"], [
    "export",
    "f",
    "--car",
    "o",
  ]],
  import: [["import", "--car", "f"]],
};

/** Whether some way into `topic` knows `flag`. */
function knows(topic: HelpTopic, flag: string): boolean {
  return PARSED_AS[topic].some((prefix) => {
    try {
      parseCommand([...prefix, flag, "1"]);
    } catch (err) {
      return !/Unknown option/.test((err as Error).message);
    }
    return true;
  });
}

Deno.test("help: each command's text names exactly the flags it takes", () => {
  const flagsOf = (topic: HelpTopic) =>
    new Set(COMMAND_HELP[topic].match(/--[a-z][a-z-]*/g));
  const every = new Set(HELP_TOPICS.flatMap((t) => [...flagsOf(t)]));
  for (const topic of HELP_TOPICS) {
    const named = flagsOf(topic);
    for (const flag of every) {
      if (flag === "--help" || flag === "--local" || flag === "--join") {
        continue;
      }
      assert.equal(
        knows(topic, flag),
        named.has(flag),
        `${topic} ${flag}: ${
          named.has(flag) ? "named, not taken" : "taken, not named"
        }`,
      );
    }
  }
});

Deno.test("version: --version, -V", () => {
  assert.deepEqual(parseCommand(["--version"]), { kind: "version" });
  assert.deepEqual(parseCommand(["-V"]), { kind: "version" });
});

Deno.test("--join alone has no settings", () => {
  assert.deepEqual(parseCommand(["--join"]), { kind: "join", flags: {} });
});

Deno.test("--join with every flag", () => {
  const command = parseCommand([
    "--join",
    "--data-dir",
    "/tmp/zoo",
    "--listen",
    "/ip4/0.0.0.0/tcp/1",
    "--listen",
    "/ip4/0.0.0.0/tcp/2,/ip4/0.0.0.0/tcp/3",
    "--bootstrap",
    BOOT_A,
    "--bootstrap",
    BOOT_B,
    "--http",
    "0.0.0.0:8080",
    "--mdns",
    "--job",
    "mnist-1",
    "--max-blob-bytes",
    "1024",
  ]);
  assert.deepEqual(command, {
    kind: "join",
    flags: {
      dataDir: "/tmp/zoo",
      listen: [
        "/ip4/0.0.0.0/tcp/1",
        "/ip4/0.0.0.0/tcp/2",
        "/ip4/0.0.0.0/tcp/3",
      ],
      bootstrap: [BOOT_A, BOOT_B],
      http: { hostname: "0.0.0.0", port: 8080 },
      mdns: true,
      job: "mnist-1",
      maxBlobBytes: 1024,
    },
  });
});

Deno.test("--join: --http PORT, --http off, --flag=value form", () => {
  assert.deepEqual(parseCommand(["--join", "--http", "9000"]), {
    kind: "join",
    flags: { http: { hostname: "127.0.0.1", port: 9000 } },
  });
  assert.deepEqual(parseCommand(["--join", "--http=off"]), {
    kind: "join",
    flags: { http: null },
  });
  assert.deepEqual(
    parseCommand(["--join", `--bootstrap=${BOOT_A},${BOOT_B}`]),
    {
      kind: "join",
      flags: { bootstrap: [BOOT_A, BOOT_B] },
    },
  );
});

Deno.test("--join --confirmations: blocks 0 to 64, or auto", () => {
  const depth = (value: string) => {
    const c = parseCommand(["--join", "--confirmations", value]);
    return c.kind === "join" ? c.flags.confirmations : undefined;
  };
  assert.equal(depth("0"), 0);
  assert.equal(depth("2"), 2);
  assert.equal(depth("64"), 64);
  assert.equal(depth("auto"), null);
  for (const bad of ["-1", "65", "1.5", "two", "", "0x2", "1e1"]) {
    assert.throws(
      () => parseCommand(["--join", `--confirmations=${bad}`]),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, `${bad}: ${err}`);
        assert.equal(
          err.message,
          `flag --confirmations: confirmations: expected a whole number of blocks from 0 to 64, or auto: current value is "${bad}"`,
        );
        return true;
      },
    );
  }
  // "-1" as a separate word reads as a flag, not a value: a usage error.
  assertUsage(["--join", "--confirmations", "-1"], /--confirmations/);
  assertUsage(["--join", "--confirmations"], /--confirmations/);
  // A node setting of --join only: the chain commands read no commits.
  assertUsage(["chain", "status", "--confirmations", "2"], /confirmations/);
});

Deno.test("keys init / keys show, with and without --data-dir", () => {
  assert.deepEqual(parseCommand(["keys", "init"]), {
    kind: "keys",
    action: "init",
    flags: {},
  });
  assert.deepEqual(parseCommand(["keys", "show", "--data-dir", "/d"]), {
    kind: "keys",
    action: "show",
    flags: { dataDir: "/d" },
  });
});

Deno.test("devnet: defaults, --nodes, --rounds, --spec, --keep-running, --data-dir", () => {
  assert.deepEqual(parseCommand(["devnet"]), {
    kind: "devnet",
    nodes: 3,
    rounds: 3,
    spec: null,
    keepRunning: false,
    backends: [],
    challengeWindow: 90n,
    browserPeer: null,
    flags: {},
  });
  assert.deepEqual(
    parseCommand([
      "devnet",
      "--nodes",
      "32",
      "--rounds",
      "0",
      "--spec",
      "job.json",
      "--keep-running",
      "--data-dir",
      "/d",
    ]),
    {
      kind: "devnet",
      nodes: 32,
      rounds: 0,
      spec: "job.json",
      keepRunning: true,
      backends: [],
      challengeWindow: 90n,
      browserPeer: null,
      flags: { dataDir: "/d" },
    },
  );
  assert.equal(
    (parseCommand(["devnet", "--nodes", "1"]) as { nodes: number }).nodes,
    1,
  );
});

Deno.test("status, with and without --data-dir and --rpc", () => {
  assert.deepEqual(parseCommand(["status"]), {
    kind: "status",
    rpc: null,
    flags: {},
  });
  assert.deepEqual(parseCommand(["status", "--data-dir", "/d"]), {
    kind: "status",
    rpc: null,
    flags: { dataDir: "/d" },
  });
  for (
    const url of [
      "http://127.0.0.1:7070",
      "http://127.0.0.1:7070/",
      "https://node.example:8443/rpc",
    ]
  ) {
    assert.equal(
      (parseCommand(["status", "--rpc", url]) as { rpc: string }).rpc,
      url,
    );
  }
  for (const bad of ["127.0.0.1:7070", "ftp://x", "http://", "http://a/b/c"]) {
    assertUsage(
      ["status", "--rpc", bad],
      /--rpc must be a node's HTTP address/,
    );
  }
});

Deno.test("blob put <file>", () => {
  assert.deepEqual(parseCommand(["blob", "put", "w.bin", "--data-dir", "/d"]), {
    kind: "blob-put",
    file: "w.bin",
    flags: { dataDir: "/d" },
  });
});

Deno.test("blob get <cid> with --from (repeated, comma lists) and --out", () => {
  const cid = "bafkreiabc";
  assert.deepEqual(parseCommand(["blob", "get", cid]), {
    kind: "blob-get",
    cid,
    out: null,
    from: [],
    flags: {},
  });
  assert.deepEqual(
    parseCommand([
      "blob",
      "get",
      cid,
      "--from",
      "PeerA,PeerB",
      "--from",
      "PeerC",
      "--out",
      "w.bin",
      "--data-dir",
      "/d",
    ]),
    {
      kind: "blob-get",
      cid,
      out: "w.bin",
      from: ["PeerA", "PeerB", "PeerC"],
      flags: { dataDir: "/d" },
    },
  );
});

Deno.test("unknown commands are UsageErrors naming them", () => {
  assertUsage(["frobnicate"], /"frobnicate".*--help/);
  assertUsage(["--data-dir", "/d"], /"--data-dir"/);
  assertUsage(["blob", "delete", "x"], /"blob" needs.*"delete"/);
  assertUsage(["blob"], /"blob" needs/);
});

Deno.test("unknown flags are UsageErrors naming them", () => {
  assertUsage(["--join", "--nosuch"], /--nosuch/);
  assertUsage(["keys", "init", "--listen", "/ip4/0.0.0.0/tcp/1"], /--listen/);
  assertUsage(["status", "--nodes", "3"], /--nodes/);
  assertUsage(["blob", "put", "f", "--out", "x"], /--out/);
  assertUsage(["devnet", "--mdns"], /--mdns/);
  assertUsage(["--join", "--mdns=yes"], /--mdns/);
});

Deno.test("keys needs init, show, export or import", () => {
  assertUsage(
    ["keys"],
    /"keys" needs "init", "show", "export .*" or "import .*".*""/,
  );
  assertUsage(["keys", "rotate"], /"rotate"/);
});

Deno.test("keys export --out FILE [--force], keys import FILE [--force]", () => {
  assert.deepEqual(parseCommand(["keys", "export", "--out", "k.json"]), {
    kind: "keys-export",
    out: "k.json",
    force: false,
    flags: {},
  });
  assert.deepEqual(
    parseCommand([
      "keys",
      "export",
      "--out=k.json",
      "--force",
      "--data-dir",
      "/d",
    ]),
    {
      kind: "keys-export",
      out: "k.json",
      force: true,
      flags: { dataDir: "/d" },
    },
  );
  assert.deepEqual(parseCommand(["keys", "import", "k.json"]), {
    kind: "keys-import",
    file: "k.json",
    force: false,
    flags: {},
  });
  assert.deepEqual(
    parseCommand(["keys", "import", "--force", "k.json", "--data-dir", "/d"]),
    {
      kind: "keys-import",
      file: "k.json",
      force: true,
      flags: { dataDir: "/d" },
    },
  );
  assertUsage(["keys", "export"], /keys export needs --out FILE/);
  assertUsage(["keys", "export", "--out", ""], /keys export needs --out FILE/);
  assertUsage(
    ["keys", "export", "--out", "k", "extra"],
    /unexpected argument "extra"/,
  );
  assertUsage(["keys", "import"], /expected 1 argument\(s\): got 0/);
  assertUsage(["keys", "import", "a", "b"], /expected 1 argument\(s\): got 2/);
  assertUsage(["keys", "import", "k", "--out", "x"], /--out/);
  assertUsage(["keys", "init", "--force"], /--force/);
  assertUsage(["keys", "export", "--out", "k", "--force=yes"], /--force/);
});

Deno.test("devnet --backend: one choice for every peer, or one per peer in turn", () => {
  const backends = (args: string[]) =>
    (parseCommand(["devnet", ...args]) as { backends: string[] }).backends;
  assert.deepEqual(backends(["--backend", "wasm"]), ["wasm"]);
  assert.deepEqual(backends(["--backend", "webgpu,wasm"]), ["webgpu", "wasm"]);
  assertUsage(
    ["devnet", "--backend", "webgpu,cuda"],
    /--backend must be auto, webgpu, wasm, js or a comma-separated list of them: current value is "webgpu,cuda"/,
  );
  assertUsage(["devnet", "--backend", ""], /--backend must be/);
});

Deno.test("devnet --challenge-window: the registry's window in seconds", () => {
  const window = (args: string[]) =>
    (parseCommand(["devnet", ...args]) as { challengeWindow: bigint })
      .challengeWindow;
  assert.equal(window(["--challenge-window", "5"]), 5n);
  assert.equal(window(["--challenge-window=0"]), 0n);
  for (const w of ["-1", "x", "1.5", ""]) {
    assertUsage(
      ["devnet", `--challenge-window=${w}`],
      /--challenge-window must be an integer from 0 to 315360000/,
    );
  }
});

Deno.test("devnet --browser-peer [DIR]: a build of its own or DIR, a long job, kept running", () => {
  const devnet = (args: string[]) =>
    parseCommand(["devnet", ...args]) as {
      browserPeer: { dir: string | null } | null;
      rounds: number;
      keepRunning: boolean;
      nodes: number;
      flags: Record<string, unknown>;
    };
  for (
    const args of [
      ["--browser-peer"],
      ["--browser-peer", "--nodes", "2"],
      ["--browser-peer="],
    ]
  ) {
    const c = devnet(args);
    assert.deepEqual(c.browserPeer, { dir: null }, args.join(" "));
    assert.equal(c.rounds, 100);
    assert.equal(c.keepRunning, true);
    assert.deepEqual(c.flags, {});
  }
  assert.equal(devnet(["--browser-peer", "--nodes", "2"]).nodes, 2);
  assert.deepEqual(devnet(["--browser-peer", "dist/browser"]).browserPeer, {
    dir: "dist/browser",
  });
  assert.deepEqual(
    devnet(["--nodes", "2", "--browser-peer=web", "--rounds", "7"]),
    {
      ...devnet(["--nodes", "2", "--rounds", "7", "--keep-running"]),
      browserPeer: { dir: "web" },
    },
  );
  assertUsage(
    ["devnet", "--browser-peer", "--rounds", "0"],
    /--browser-peer needs a job for the tab to train: --rounds must be at least 1/,
  );
  assertUsage(
    ["devnet", "--browser-peer", "a", "b"],
    /unexpected argument "b"/,
  );
});

Deno.test("devnet --nodes must be 1 to 32", () => {
  for (const n of ["0", "33", "abc", "1.5", "-1", ""]) {
    assertUsage(
      ["devnet", `--nodes=${n}`],
      /--nodes must be an integer from 1 to 32/,
    );
  }
  assertUsage(["devnet", "--nodes", "abc"], /"abc"/);
  for (const r of ["-1", "10001", "x"]) {
    assertUsage(
      ["devnet", `--rounds=${r}`],
      /--rounds must be an integer from 0 to 10000/,
    );
  }
});

Deno.test("blob put and get need exactly one argument", () => {
  assertUsage(["blob", "put"], /expected 1 argument\(s\): got 0/);
  assertUsage(["blob", "put", "a", "b"], /expected 1 argument\(s\): got 2/);
  assertUsage(["blob", "get"], /expected 1 argument\(s\): got 0/);
});

Deno.test("extra positionals are UsageErrors", () => {
  assertUsage(["--join", "extra"], /unexpected argument "extra"/);
  assertUsage(["keys", "init", "extra"], /unexpected argument "extra"/);
  assertUsage(["status", "extra"], /unexpected argument "extra"/);
  assertUsage(["devnet", "extra"], /unexpected argument "extra"/);
});

Deno.test("a bad setting value is a ConfigError naming the flag", () => {
  const cases: [string[], string][] = [
    [["--join", "--listen", "foo"], "--listen"],
    [["--join", "--bootstrap", "/ip4/1.2.3.4/tcp/1"], "--bootstrap"],
    [["--join", "--http", "nope"], "--http"],
    [["--join", "--job", "a b"], "--job"],
    [["--join", "--max-blob-bytes", "0"], "--max-blob-bytes"],
    [["status", "--data-dir="], "--data-dir"],
  ];
  for (const [argv, flag] of cases) {
    assert.throws(() => parseCommand(argv), (err: unknown) => {
      assert.ok(err instanceof ConfigError, `${argv.join(" ")}: ${err}`);
      assert.ok(err.message.includes(flag), err.message);
      return true;
    });
  }
});

Deno.test("train --optimizer is Muon unless adamw is asked for; anything else is a usage error", () => {
  const train = parseCommand(["train", "--local"]);
  assert.equal(train.kind === "train" && train.optimizer, "muon");
  const adamw = parseCommand(["train", "--local", "--optimizer", "adamw"]);
  assert.equal(adamw.kind === "train" && adamw.optimizer, "adamw");
  assertUsage(
    ["train", "--local", "--optimizer", "sgd"],
    /--optimizer must be muon or adamw: current value is "sgd"/,
  );
});

Deno.test("train --backend and --threads are node settings; sample takes the CPU backends", () => {
  for (const backend of ["auto", "webgpu", "wasm", "js"] as const) {
    const command = parseCommand(["train", "--local", "--backend", backend]);
    assert.equal(command.kind === "train" && command.flags.backend, backend);
  }
  const threads = parseCommand(["train", "--local", "--threads", "3"]);
  assert.equal(threads.kind === "train" && threads.flags.threads, 3);
  const train = parseCommand(["train", "--local"]);
  assert.equal(train.kind === "train" && train.flags.backend, undefined);
  assert.throws(
    () => parseCommand(["train", "--local", "--backend", "cuda"]),
    (err: unknown) =>
      err instanceof ConfigError && /--backend.*"cuda"/.test(err.message),
  );
  assertUsage(
    ["sample", "--checkpoint", "x", "--backend", "webgpu"],
    /--backend must be auto, wasm or js: current value is "webgpu"/,
  );
});

Deno.test("export <checkpoint> takes --safetensors FILE or --car FILE, exactly one", () => {
  assert.deepEqual(parseCommand(["export", "c", "--safetensors", "m.st"]), {
    kind: "export",
    checkpoint: "c",
    format: "safetensors",
    out: "m.st",
    flags: {},
  });
  assert.deepEqual(
    parseCommand(["export", "c", "--car", "c.car", "--data-dir", "/d"]),
    {
      kind: "export",
      checkpoint: "c",
      format: "car",
      out: "c.car",
      flags: { dataDir: "/d" },
    },
  );
  assertUsage(["export", "c"], /needs --safetensors FILE .* or --car FILE/);
  assertUsage(["export", "c", "--car", ""], /needs --safetensors FILE/);
  assertUsage(
    ["export", "c", "--car", "a", "--safetensors", "b"],
    /--safetensors FILE or --car FILE, not both/,
  );
  assertUsage(["export", "--car", "a"], /expected 1 argument\(s\): got 0/);
});

Deno.test("import --car FILE", () => {
  assert.deepEqual(parseCommand(["import", "--car", "c.car"]), {
    kind: "import",
    car: "c.car",
    flags: {},
  });
  assert.deepEqual(
    parseCommand(["import", "--data-dir", "/d", "--car=c.car"]),
    { kind: "import", car: "c.car", flags: { dataDir: "/d" } },
  );
  assertUsage(["import"], /import needs --car FILE/);
  assertUsage(["import", "c.car"], /unexpected argument "c.car"/);
  assertUsage(["import", "--car", "c.car", "--out", "x"], /--out/);
});

Deno.test("stake, rewards and job cancel: bad amounts, ids and actions are usage errors", () => {
  assertUsage(["stake", "add", "0"], /above 0 ETH/);
  assertUsage(["stake", "add", "0.0"], /above 0 ETH/);
  assertUsage(["stake", "add", "1e3"], /amount of ETH/);
  assertUsage(["stake", "add"], /expected 1 argument/);
  assertUsage(["stake", "leave"], /"stake" needs/);
  assertUsage(["rewards", "--job", ""], /--job needs a job id/);
  assertUsage(["rewards", "claim", "--json"], /Unknown option/);
  assertUsage(["job", "cancel"], /expected 1 argument/);
  assertUsage(["job", "create", "s.json", "--data", ""], /--data needs/);
});
