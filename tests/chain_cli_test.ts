/**
 * `zoo-node chain ...` and `zoo-node job create` as a user runs them, on the
 * embedded anvil each command starts in the data dir and stops afterwards.
 */
import { withTempDir } from "./_temp_dir.ts";
import assert from "node:assert/strict";
import { zooNode } from "./_cli.ts";

/** A small valid job spec: fields not given take their defaults. */
const SPEC = {
  v: 1,
  name: "cli-test",
  model: {
    vocabSize: 256,
    contextLength: 16,
    dModel: 32,
    heads: 2,
    layers: 1,
  },
  dataset: {
    cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  },
  quorum: 2,
  rounds: 3,
};

async function ok(args: string[]): Promise<string> {
  const { code, stdout, stderr } = await zooNode(args);
  assert.equal(code, 0, `${args.join(" ")}: ${stderr}`);
  return stdout;
}

Deno.test("chain CLI: status, register, job create and rounds on the embedded devnet", async () => {
  await withTempDir("chain-cli", async (dir) => {
    const d = ["--data-dir", dir];
    const noKeys = await zooNode(["chain", "status", ...d]);
    assert.equal(noKeys.code, 1);
    assert.match(noKeys.stderr, /keys init/);

    await ok(["keys", "init", ...d]);
    const peerId = /peer id\s+(\S+)/.exec(await ok(["keys", "show", ...d]))![1];

    const status = await ok(["chain", "status", ...d]);
    assert.match(status, /chain\s+31337 at block \d+ .*embedded anvil/);
    const registry = /registry\s+(0x[0-9a-fA-F]{40})/.exec(status)![1];
    // The registry's terms, the devnet's challenge window among them.
    assert.match(
      status,
      /registry\s+0x[0-9a-fA-F]{40}: min stake 1 ETH, unbonding \d+ s, claims 90 s after a job's last commit/,
    );
    assert.match(status, /not registered/);
    // Each command stops the anvil it started; its state stays.
    await assert.rejects(Deno.stat(`${dir}/chain/anvil.json`));
    await Deno.stat(`${dir}/chain/anvil-state.json`);

    const reg = await ok(["chain", "register", "--stake", "2", ...d]);
    assert.match(
      reg,
      new RegExp(`registered 0x[0-9a-fA-F]{40} as ${peerId} with stake 2 ETH`),
    );
    const again = await zooNode(["chain", "register", ...d]);
    assert.equal(again.code, 1);
    assert.match(
      again.stderr,
      /^zoo-node: Cannot register the node: account 0x[0-9a-fA-F]{40} is already registered\n$/,
    );

    // A job id the registry does not know is refused before any join,
    // named as typed.
    const unknown = SPEC.dataset.cid;
    const stray = await zooNode(["--join", "--job", unknown, ...d]);
    assert.equal(stray.code, 1, stray.stderr);
    assert.match(
      stray.stderr,
      new RegExp(`Cannot join job ${unknown}: no such job on registry`),
    );
    assert.doesNotMatch(stray.stdout, /joined/);

    const after = await ok(["chain", "status", ...d]);
    assert.ok(after.includes(`registry  ${registry}`), after);
    assert.match(after, new RegExp(`node\\s+${peerId}, stake 2 ETH, active`));

    const specPath = `${dir}/spec.json`;
    await Deno.writeTextFile(specPath, JSON.stringify(SPEC));
    const created = await ok([
      "job",
      "create",
      specPath,
      "--reward",
      "0.05",
      ...d,
    ]);
    const job = /job\s+(baf\S+)/.exec(created)![1];
    assert.match(created, /genesis\s+baf\S+/);
    assert.match(created, /pool 0.05 ETH, quorum 2, 3 rounds/);
    // No audit rate in the spec: the least that deters 10x at these terms
    // (slash 1 ETH against 0.05 ETH over 3 rounds and 2 peers needs 0.09)
    // and catches a full cheater within 20 rounds with p 0.95 (0.14).
    assert.match(
      created,
      /audits\s+rate 0.14: a cheater risks 16\.8x a round's pay \(caught 0.14 x slash, 0.14 ETH, against 0.008333333333333333 ETH; floor 10x\); caught within 20 rounds with p 0.951; rounds start from zero moments, so audits replay from C\(r\)/,
    );
    // The spec is in the blockstore under the job id.
    const listed = await ok(["chain", "status", ...d]);
    assert.ok(listed.includes(`${job}  round 0/3`), listed);

    const rounds = await ok(["chain", "rounds", "--job", job, ...d]);
    assert.match(rounds, /no committed rounds/);
    const json = JSON.parse(
      await ok(["chain", "rounds", "--job", job, "--json", ...d]),
    );
    assert.deepEqual(json, { job, rounds: [] });

    // A job whose model cannot fit this node is refused before the join,
    // with the need and the limit: batches of 65536 x 16 on this model
    // take more than a wasm32 memory holds.
    const hugePath = `${dir}/huge.json`;
    await Deno.writeTextFile(
      hugePath,
      JSON.stringify({ ...SPEC, name: "too-big", batchSize: 65536 }),
    );
    const huge = /job\s+(baf\S+)/.exec(
      await ok(["job", "create", hugePath, "--reward", "0.05", ...d]),
    )![1];
    const refused = await zooNode([
      "--join",
      "--job",
      huge,
      "--backend",
      "wasm",
      ...d,
    ]);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(
        `Cannot join job ${huge} on wasm-\\w+ .*: its model needs [\\d.]+ GB of WASM memory for 2 trainers \\(training and an audit's replay, batches of 65536 x 16\\) and a wasm32 memory holds 4.29 GB: train it on a GPU \\(--backend webgpu\\)`,
      ),
    );
    assert.doesNotMatch(refused.stdout, /joined/);

    const dup = await zooNode([
      "job",
      "create",
      specPath,
      "--reward",
      "0.05",
      ...d,
    ]);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /already exists/);

    const deployed = await ok(["chain", "deploy", ...d]);
    const fresh = /registry\s+(0x[0-9a-fA-F]{40})/.exec(deployed)![1];
    assert.notEqual(fresh, registry);
    assert.ok((await ok(["chain", "status", ...d])).includes(fresh));
  });
});

Deno.test("chain CLI: bad input exits 2 or 1 with one clear line", async () => {
  await withTempDir("chain-cli", async (dir) => {
    const d = ["--data-dir", dir];
    await ok(["keys", "init", ...d]);
    const cases: [string[], number, RegExp][] = [
      [["chain"], 2, /"chain" needs deploy, status, register or rounds/],
      [
        ["chain", "register", "--stake", "lots", ...d],
        2,
        /--stake must be an amount of ETH/,
      ],
      [["chain", "rounds", ...d], 2, /needs --job/],
      [["chain", "rounds", "--job", "nope", ...d], 2, /--job must be a job id/],
      [["chain", "status", "--rpc-url", "ftp://x", ...d], 2, /rpc-url/],
      [["chain", "status", "--registry", "0x12", ...d], 2, /registry/],
      [
        ["chain", "status", "--rpc-url", "http://127.0.0.1:9", ...d],
        1,
        /Cannot reach the chain at http:\/\/127\.0\.0\.1:9/,
      ],
      [
        ["job", "create", `${dir}/missing.json`, ...d],
        2,
        /cannot read the job spec/,
      ],
      [
        ["chain", "rounds", "--job", `0x${"ab".repeat(32)}`, ...d],
        1,
        /does not exist/,
      ],
    ];
    await Deno.writeTextFile(
      `${dir}/bad.json`,
      JSON.stringify({ ...SPEC, quorum: 0 }),
    );
    cases.push([["job", "create", `${dir}/bad.json`, ...d], 2, /quorum/]);
    // Deterrence below the spec's floor is refused before anything is sent:
    // 5 ETH over 3 rounds and 2 peers pays 0.83 ETH a round against a
    // 1 ETH slash; a stated rate of 0.05 risks 6x where 10x is asked.
    await Deno.writeTextFile(`${dir}/spec.json`, JSON.stringify(SPEC));
    cases.push([
      ["job", "create", `${dir}/spec.json`, "--reward", "5", ...d],
      2,
      /spec\.json: audit\.deterrence 10 cannot be met: auditing every delta, a cheater risks only 1\.2x a round's pay; raise --min-stake/,
    ]);
    await Deno.writeTextFile(
      `${dir}/low.json`,
      JSON.stringify({ ...SPEC, audit: { rate: 0.05 } }),
    );
    cases.push([
      ["job", "create", `${dir}/low.json`, "--reward", "0.05", ...d],
      2,
      /low\.json: audit\.rate 0\.05 lets a cheater risk only 6\.0x a round's pay, below audit\.deterrence 10/,
    ]);
    // The spec may state its own floor.
    await Deno.writeTextFile(
      `${dir}/floor.json`,
      JSON.stringify({ ...SPEC, audit: { deterrence: 2 } }),
    );
    cases.push([
      ["job", "create", `${dir}/floor.json`, "--reward", "5", ...d],
      2,
      /audit\.deterrence 2 cannot be met: auditing every delta, a cheater risks only 1\.2x/,
    ]);
    for (const [args, code, message] of cases) {
      const out = await zooNode(args);
      const what = `${args.join(" ")}: ${out.stderr}`;
      assert.equal(out.code, code, what);
      assert.equal(out.stderr.trimEnd().split("\n").length, 1, what);
      assert.match(out.stderr, message, what);
    }
  });
});

Deno.test("chain CLI: a priced job: job create --max-price prints its market, job market its open seats, --join without a fitting --bid is refused before any work", async () => {
  await withTempDir("chain-cli-market", async (dir) => {
    const d = ["--data-dir", dir];
    await ok(["keys", "init", ...d]);
    await ok(["chain", "register", ...d]);
    const specPath = `${dir}/spec.json`;
    await Deno.writeTextFile(specPath, JSON.stringify(SPEC));

    // --reward pays a pool; a market flag prices the job: not both.
    const both = await zooNode([
      "job",
      "create",
      specPath,
      "--reward",
      "1",
      "--max-price",
      "1gwei",
      ...d,
    ]);
    assert.equal(both.code, 2, both.stderr);
    assert.match(
      both.stderr,
      /--reward funds a pool job, --max-price a priced one/,
    );
    // A budget that cannot pay its rounds at the maximum price.
    const short = await zooNode([
      "job",
      "create",
      specPath,
      "--max-price",
      "1gwei",
      "--budget",
      "0.00000001",
      ...d,
    ]);
    assert.equal(short.code, 1, short.stderr);
    assert.match(
      short.stderr,
      /cannot pay the job's rounds at its maximum price/,
    );

    const created = await ok([
      "job",
      "create",
      specPath,
      "--max-price",
      "1gwei",
      "--seats",
      "2",
      "--bidding-window",
      "0",
      ...d,
    ]);
    const job = /job\s+(baf\S+)/.exec(created)![1];
    // 50 steps x 16 x 16 tokens a seat a round; 2 seats at 1 gwei a token
    // for 3 rounds; the bar trains a round in the 60 s deadline, and the
    // benchmark lasts 10 s at it (9 steps of 256 tokens).
    assert.match(created, /budget 0.0000768 ETH, quorum 2, 3 rounds/);
    assert.match(
      created,
      /market\s+at most 1 gwei a token, 2 seats of 12800 tokens a round: a round costs at most 0.0000256 ETH, so the budget buys 3 rounds at the maximum price \(the unspent part is refunded\); bids close 0 s from now; admission: 213 tokens\/s, timed on chain over a 9-step benchmark/,
    );

    const market = await ok(["job", "market", job, ...d]);
    assert.match(market, /0 of 2 seats taken/);
    assert.match(
      market,
      /seats\s+2 open and no admitted bid waits for them/,
    );
    const json = JSON.parse(await ok(["job", "market", job, "--json", ...d]));
    assert.equal(json.seats, 2);
    assert.equal(json.filled, 0);
    assert.equal(json.maxPrice, "1000000000");
    assert.deepEqual(json.bids, []);

    // No bid, and a bid above the maximum: refused before the spec is
    // fetched (its dataset does not exist here).
    const noBid = await zooNode(["--join", "--job", job, ...d]);
    assert.equal(noBid.code, 1, noBid.stderr);
    assert.match(
      noBid.stderr,
      /it is a priced job \(at most 1 gwei a token, 2 seats\): bid for a seat with --bid PRICE/,
    );
    const tooHigh = await zooNode([
      "--join",
      "--job",
      job,
      "--bid",
      "2gwei",
      ...d,
    ]);
    assert.equal(tooHigh.code, 1, tooHigh.stderr);
    assert.match(
      tooHigh.stderr,
      /a bid of 2 gwei a token is above the job's maximum/,
    );

    // The registry's terms name the market's fee.
    assert.match(
      await ok(["chain", "status", ...d]),
      /market fee 5% to 0x[0-9a-fA-F]{40}/,
    );
  });
});
