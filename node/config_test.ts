import assert from "node:assert/strict";
import {
  type Config,
  ConfigError,
  defaultConfig,
  ENV_NAMES,
  KEYS,
  SETTINGS,
} from "./config.ts";
import { loadConfig } from "./config_load.ts";
import { parseCommand } from "./cli/parse.ts";

const PEER = "12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA";

/** Runs `fn` with a fresh data dir; writes `zoo.json` there when given. */
async function withDataDir(
  zooJson: unknown,
  fn: (dir: string, path: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "zoo-config-" });
  const path = `${dir}/zoo.json`;
  try {
    if (zooJson !== undefined) {
      const text = typeof zooJson === "string"
        ? zooJson
        : JSON.stringify(zooJson);
      await Deno.writeTextFile(path, text);
    }
    await fn(dir, path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Asserts that `fn` rejects with a ConfigError whose message has `parts`. */
async function assertConfigError(
  fn: () => Promise<unknown>,
  ...parts: string[]
): Promise<void> {
  await assert.rejects(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `not a ConfigError: ${err}`);
    for (const part of parts) {
      assert.ok(err.message.includes(part), `"${part}" not in: ${err.message}`);
    }
    return true;
  });
}

Deno.test("defaults: every setting when no source gives one", async () => {
  await withDataDir(undefined, async (dir) => {
    const config = await loadConfig({ dataDir: dir }, { HOME: "/home/ann" });
    assert.deepEqual(config, { ...defaultConfig("/home/ann"), dataDir: dir });
  });
  assert.deepEqual(defaultConfig("/home/ann"), {
    dataDir: "/home/ann/.zoo",
    listen: ["/ip4/0.0.0.0/tcp/4001"],
    announce: [],
    bootstrap: [],
    http: { hostname: "127.0.0.1", port: 7070 },
    httpHosts: [],
    mdns: false,
    relay: false,
    browserPeer: null,
    browserRpcUrl: null,
    job: "default",
    maxBlobBytes: 2 ** 31,
    rpcUrl: null,
    registry: null,
    confirmations: null,
    backend: "auto",
    threads: null,
    overlap: false,
    dutyCycle: 1,
    bid: null,
  });
  assert.equal(defaultConfig(undefined).dataDir, "./.zoo");
});

/** One value per setting per source, each distinct from the others. */
const FILE = {
  listen: ["/ip4/127.0.0.1/tcp/1001"],
  announce: ["/ip4/192.0.2.1/tcp/1001"],
  bootstrap: [`/ip4/10.0.0.1/tcp/1001/p2p/${PEER}`],
  http: "127.0.0.1:1001",
  httpHosts: ["file.lan"],
  mdns: true,
  relay: false,
  browserPeer: "/srv/file-peer",
  browserRpcUrl: "https://rpc.example/file",
  job: "from-file",
  maxBlobBytes: 1001,
  rpcUrl: "http://127.0.0.1:1001",
  registry: "0x0000000000000000000000000000000000001001",
  confirmations: 1,
  backend: "wasm",
  threads: 1,
  overlap: false,
  dutyCycle: 0.5,
  bid: "1001",
};
const ENV: Record<string, string> = {
  ZOO_LISTEN: "/ip4/127.0.0.1/tcp/2002,/ip4/127.0.0.1/tcp/2003",
  ZOO_ANNOUNCE: "/ip4/192.0.2.2/tcp/2002,/dns4/node.example/tcp/2002",
  ZOO_BOOTSTRAP: `/ip4/10.0.0.2/tcp/2002/p2p/${PEER}`,
  ZOO_HTTP: "0.0.0.0:2002",
  ZOO_HTTP_HOSTS: "env.lan, node.example",
  ZOO_MDNS: "false",
  ZOO_RELAY: "true",
  ZOO_BROWSER_PEER: "/srv/env-peer",
  ZOO_BROWSER_RPC_URL: "https://rpc.example/env",
  ZOO_JOB: "from-env",
  ZOO_MAX_BLOB_BYTES: "2002",
  ZOO_RPC_URL: "https://rpc.example/2002",
  ZOO_REGISTRY: "0x0000000000000000000000000000000000002002",
  ZOO_CONFIRMATIONS: "2",
  ZOO_BACKEND: "js",
  ZOO_THREADS: "2",
  ZOO_OVERLAP: "true",
  ZOO_DUTY_CYCLE: "0.25",
  ZOO_BID: "2002",
};
const FLAGS: Omit<Config, "dataDir" | "mdns"> = {
  listen: ["/ip4/127.0.0.1/tcp/3003"],
  announce: ["/ip4/192.0.2.3/tcp/3003"],
  bootstrap: [`/ip4/10.0.0.3/tcp/3003/p2p/${PEER}`],
  http: null,
  httpHosts: ["flags.lan"],
  relay: true,
  browserPeer: "/srv/flags-peer",
  browserRpcUrl: "https://rpc.example/flags",
  job: "from-flags",
  maxBlobBytes: 3003,
  rpcUrl: "http://127.0.0.1:3003",
  registry: "0x0000000000000000000000000000000000003003",
  confirmations: 3,
  backend: "webgpu",
  threads: 3,
  overlap: false,
  dutyCycle: 1,
  bid: "3003",
};

Deno.test("zoo.json overrides every default", () =>
  withDataDir(FILE, async (dir) => {
    const config = await loadConfig({ dataDir: dir }, {});
    assert.deepEqual(config, {
      ...FILE,
      dataDir: dir,
      http: { hostname: "127.0.0.1", port: 1001 },
    });
  }));

Deno.test("ZOO_* env overrides zoo.json, lists comma-separated", () =>
  withDataDir(FILE, async (dir) => {
    const config = await loadConfig({ dataDir: dir }, ENV);
    assert.deepEqual(config, {
      dataDir: dir,
      listen: ["/ip4/127.0.0.1/tcp/2002", "/ip4/127.0.0.1/tcp/2003"],
      announce: ["/ip4/192.0.2.2/tcp/2002", "/dns4/node.example/tcp/2002"],
      bootstrap: [ENV.ZOO_BOOTSTRAP],
      http: { hostname: "0.0.0.0", port: 2002 },
      httpHosts: ["env.lan", "node.example"],
      mdns: false,
      relay: true,
      browserPeer: "/srv/env-peer",
      browserRpcUrl: "https://rpc.example/env",
      job: "from-env",
      maxBlobBytes: 2002,
      rpcUrl: ENV.ZOO_RPC_URL,
      registry: ENV.ZOO_REGISTRY,
      confirmations: 2,
      backend: "js",
      threads: 2,
      overlap: true,
      dutyCycle: 0.25,
      bid: "2002",
    });
  }));

Deno.test("--bid takes wei or gwei and keeps wei", () => {
  assert.deepEqual(parseCommand(["--join", "--bid", "0.5gwei"]), {
    kind: "join",
    flags: { bid: "500000000" },
  });
  assert.deepEqual(parseCommand(["--join", "--bid=7"]), {
    kind: "join",
    flags: { bid: "7" },
  });
});

Deno.test("flags override env and zoo.json", () =>
  withDataDir(FILE, async (dir) => {
    const config = await loadConfig(
      { ...FLAGS, dataDir: dir, mdns: true },
      ENV,
    );
    assert.deepEqual(config, { ...FLAGS, dataDir: dir, mdns: true });
  }));

Deno.test("--overlap turns training ahead on; leaving it out changes nothing", () => {
  const on = parseCommand(["--join", "--overlap"]);
  assert.deepEqual(on, { kind: "join", flags: { overlap: true } });
  assert.deepEqual(parseCommand(["--join"]), { kind: "join", flags: {} });
});

Deno.test("dataDir: flag beats ZOO_DATA_DIR, which beats HOME", async () => {
  await withDataDir({ job: "flag-dir" }, async (flagDir) => {
    await withDataDir({ job: "env-dir" }, async (envDir) => {
      const env = { HOME: "/nonexistent", ZOO_DATA_DIR: envDir };
      const fromFlag = await loadConfig({ dataDir: flagDir }, env);
      assert.equal(fromFlag.dataDir, flagDir);
      assert.equal(fromFlag.job, "flag-dir");
      const fromEnv = await loadConfig({}, env);
      assert.equal(fromEnv.dataDir, envDir);
      assert.equal(fromEnv.job, "env-dir");
    });
  });
  const fromHome = await loadConfig({}, { HOME: "/nonexistent" });
  assert.equal(fromHome.dataDir, "/nonexistent/.zoo");
});

Deno.test('zoo.json: http "off" is null, env "off" too', () =>
  withDataDir({ http: "off" }, async (dir) => {
    assert.equal((await loadConfig({ dataDir: dir }, {})).http, null);
    const env = { ZOO_HTTP: "off" };
    assert.equal(
      (await loadConfig({}, { ...env, ZOO_DATA_DIR: dir })).http,
      null,
    );
  }));

Deno.test('confirmations: "auto" (null in zoo.json) overrides a lower source; 0 is kept', () =>
  withDataDir({ confirmations: 5 }, async (dir) => {
    const load = (env: Record<string, string>) =>
      loadConfig({ dataDir: dir }, env).then((c) => c.confirmations);
    assert.equal(await load({}), 5);
    assert.equal(await load({ ZOO_CONFIRMATIONS: "auto" }), null);
    assert.equal(await load({ ZOO_CONFIRMATIONS: "0" }), 0);
    for (const json of ["auto", null]) {
      await withDataDir({ confirmations: json }, async (inner) => {
        const c = await loadConfig({ dataDir: inner }, {});
        assert.equal(c.confirmations, null);
      });
    }
  }));

Deno.test("zoo.json may not set dataDir", () =>
  withDataDir(
    { dataDir: "/elsewhere" },
    (dir, path) =>
      assertConfigError(
        () => loadConfig({ dataDir: dir }, {}),
        path,
        "dataDir",
      ),
  ));

Deno.test("zoo.json: an unknown key names the key and the file", () =>
  withDataDir(
    { jobb: "typo" },
    (dir, path) =>
      assertConfigError(() => loadConfig({ dataDir: dir }, {}), path, "jobb"),
  ));

Deno.test("zoo.json: invalid JSON or a non-object is a ConfigError", async () => {
  for (const text of ["{ listen: [", "[1, 2]", "null", "7"]) {
    await withDataDir(
      text,
      (dir, path) =>
        assertConfigError(() => loadConfig({ dataDir: dir }, {}), path),
    );
  }
});

/** Bad values: [setting, env/flag text, zoo.json value, text in message]. */
const BAD: [keyof Config, string, unknown, string][] = [
  ["listen", "foo", ["foo"], "foo"],
  ["announce", "/ip4/300.1.2.3/tcp/1", ["bar"], "announce"],
  ["bootstrap", "/ip4/1.2.3.4/tcp/1", ["/ip4/1.2.3.4/tcp/1"], "/p2p/"],
  ["http", "99999", "99999", "99999"],
  ["http", "abc", "abc", "abc"],
  ["mdns", "maybe", "maybe", "maybe"],
  ["relay", "maybe", "maybe", "maybe"],
  ["job", "my job", "my job", "my job"],
  ["maxBlobBytes", "0", 0, "0"],
  ["maxBlobBytes", "-1", -1, "-1"],
  ["maxBlobBytes", "1.5", 1.5, "1.5"],
  ["maxBlobBytes", "x", "x", '"x"'],
  ["rpcUrl", "localhost:8545", "localhost:8545", "localhost:8545"],
  ["rpcUrl", "ws://127.0.0.1:1", "ws://127.0.0.1:1", "http://"],
  ["registry", "0x1234", "0x1234", "0x1234"],
  ["confirmations", "-1", -1, "-1"],
  ["confirmations", "1.5", 1.5, "1.5"],
  ["confirmations", "65", 65, "65"],
  ["confirmations", "two", "two", "two"],
  ["backend", "cuda", "cuda", "cuda"],
  ["threads", "0", 0, "0"],
  ["threads", "65", 65, "65"],
  ["threads", "two", "two", "two"],
  ["overlap", "sometimes", "sometimes", "sometimes"],
  ["dutyCycle", "0", 0, "0"],
  ["dutyCycle", "1.5", 1.5, "1.5"],
  ["dutyCycle", "half", "half", "half"],
  ["bid", "0", "0", "0"],
  ["bid", "-5", "-5", "-5"],
  ["bid", "cheap", "cheap", "cheap"],
];

Deno.test("bad values in zoo.json name the file and the value", async () => {
  for (const [key, , json, shown] of BAD) {
    await withDataDir(
      { [key]: json },
      (dir, path) =>
        assertConfigError(() => loadConfig({ dataDir: dir }, {}), path, shown),
    );
  }
});

Deno.test("bad values in ZOO_* env name the variable and the value", async () => {
  for (const [key, text, , shown] of BAD) {
    const env = { [ENV_NAMES[key]]: text, HOME: "/nonexistent" };
    await assertConfigError(() => loadConfig({}, env), ENV_NAMES[key], shown);
  }
});

Deno.test("bad values in flags name the flag and the value", () => {
  const FLAG: Record<string, string> = {
    listen: "--listen",
    announce: "--announce",
    bootstrap: "--bootstrap",
    http: "--http",
    job: "--job",
    maxBlobBytes: "--max-blob-bytes",
    rpcUrl: "--rpc-url",
    registry: "--registry",
    confirmations: "--confirmations",
    backend: "--backend",
    threads: "--threads",
    dutyCycle: "--duty-cycle",
    bid: "--bid",
  };
  for (const [key, text, , shown] of BAD) {
    // boolean flags
    if (key === "mdns" || key === "relay" || key === "overlap") continue;
    assert.throws(
      () => parseCommand(["--join", `${FLAG[key]}=${text}`]),
      (err) => {
        assert.ok(err instanceof ConfigError, `${key}: ${err}`);
        assert.ok(err.message.includes(FLAG[key]), err.message);
        assert.ok(err.message.includes(shown), err.message);
        return true;
      },
    );
  }
});

Deno.test("httpHosts: a name that is not a DNS name is refused where it is given", async () => {
  for (const bad of ["evil example", "a:80", "-x.lan", "x..lan", "*.lan"]) {
    await assertConfigError(
      () => loadConfig({}, { HOME: "/nonexistent", ZOO_HTTP_HOSTS: bad }),
      "env ZOO_HTTP_HOSTS",
      "httpHosts",
      "expected a list of DNS names",
    );
  }
  assert.deepEqual(
    parseCommand(["--join", "--http-host", "a.lan", "--http-host", "b"]),
    { kind: "join", flags: { httpHosts: ["a.lan", "b"] } },
  );
});

Deno.test("every setting is declared once: one env var and one flag each, all distinct, every default listed", () => {
  const envs = KEYS.map((k) => SETTINGS[k].env);
  const flags = KEYS.map((k) => SETTINGS[k].flag);
  assert.deepEqual(new Set(envs).size, KEYS.length);
  assert.deepEqual(new Set(flags).size, KEYS.length);
  assert.deepEqual(Object.keys(defaultConfig("/home/u")), [...KEYS]);
  for (const k of KEYS) {
    assert.deepEqual(ENV_NAMES[k], SETTINGS[k].env);
    // Switches are the boolean settings, and only they.
    assert.deepEqual(
      SETTINGS[k].form === "switch",
      typeof defaultConfig("/home/u")[k] === "boolean",
      k,
    );
  }
});
