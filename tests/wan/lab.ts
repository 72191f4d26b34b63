/**
 * Separate network hosts for tests and benchmarks, made by wan-lab
 * (`../shared/tools/wan-lab`, or `$ZOO_WAN_LAB`): network namespaces
 * zoo-h1..N at 10.99.0.1..N on one switch, each capped to a bandwidth in
 * both directions. This process reaches them through one more link into
 * the switch, at {@linkcode ROOT_ADDRESS}, uncapped. Latency comes from
 * delay relays (delay_relay.ts) in front of each peer, as the kernel here
 * has no netem.
 *
 * Needs root, iproute2 and the wan-lab script: {@linkcode wanLabMissing}
 * says what is missing, so callers can skip visibly.
 *
 * @module
 */
import { startDelayRelay } from "./delay_relay.ts";

/** The wan-lab script. */
export const WAN_LAB = Deno.env.get("ZOO_WAN_LAB") ??
  new URL("../../../shared/tools/wan-lab", import.meta.url).pathname;

/** This process's address on the lab's switch. */
export const ROOT_ADDRESS = "10.99.0.254";

/** The address of lab host `i` (1-based). */
export function hostAddress(i: number): string {
  return `10.99.0.${i}`;
}

/** A command line that runs `cmd` inside lab host `i`. */
export function inHost(i: number, cmd: string[] = []): string[] {
  return ["ip", "netns", "exec", `zoo-h${i}`, ...cmd];
}

/** Why the lab cannot run here, or null when it can. */
export async function wanLabMissing(): Promise<string | null> {
  try {
    await Deno.stat(WAN_LAB);
  } catch {
    return `no wan-lab script at ${WAN_LAB} (set ZOO_WAN_LAB)`;
  }
  const probe = await run(["ip", "netns", "add", "zoo-probe"]).catch((e) =>
    String(e)
  );
  if (probe !== "") return `cannot make network namespaces: ${probe}`;
  await run(["ip", "netns", "del", "zoo-probe"]);
  return null;
}

/** The file whose lock the lab's one user at a time holds. */
const LAB_LOCK = "/tmp/zoo-wan-lab.lock";

/**
 * Brings up `hosts` lab hosts capped at `rate` (tc syntax, e.g. "100mbit")
 * and this process's link to them, runs `fn`, and takes everything down
 * again, whatever `fn` does. A lab left over by a killed run is removed
 * first. The lab is one per machine: its users (test files run in
 * parallel, benchmarks) take turns.
 */
export async function withWanLab<T>(
  hosts: number,
  rate: string,
  fn: () => Promise<T>,
): Promise<T> {
  using lock = await Deno.open(LAB_LOCK, { create: true, write: true });
  await lock.lock(true);
  await run([WAN_LAB, "down"]);
  await run([WAN_LAB, "up", String(hosts), rate], true);
  try {
    await run([
      "ip",
      "link",
      "add",
      "zoo-root",
      "type",
      "veth",
      "peer",
      "name",
      "zs-root",
    ], true);
    await run(["ip", "link", "set", "zs-root", "netns", "zoo-sw"], true);
    await run(
      ["ip", "-n", "zoo-sw", "link", "set", "zs-root", "master", "br0"],
      true,
    );
    await run(["ip", "-n", "zoo-sw", "link", "set", "zs-root", "up"], true);
    await run(
      ["ip", "addr", "add", `${ROOT_ADDRESS}/24`, "dev", "zoo-root"],
      true,
    );
    await run(["ip", "link", "set", "zoo-root", "up"], true);
    return await fn();
  } finally {
    // Deleting the switch namespace deletes zs-root, and with it zoo-root.
    await run([WAN_LAB, "down"]);
  }
}

/**
 * Splits the lab in two: the hosts of `side` move onto a second switch
 * with a link of its own to this process, which keeps its address and MAC
 * on both links (their neighbour caches stay right). Each side reaches this
 * process, where the chain is, but not the other side; established
 * connections across go silent, as on a real partition.
 */
export async function partition(side: readonly number[]): Promise<void> {
  const mac = (await Deno.readTextFile("/sys/class/net/zoo-root/address"))
    .trim();
  const sw = ["ip", "-n", "zoo-sw"];
  await run([...sw, "link", "add", "br1", "type", "bridge"], true);
  await run([...sw, "link", "set", "br1", "up"], true);
  await run([
    "ip",
    "link",
    "add",
    "zoo-root2",
    "address",
    mac,
    "type",
    "veth",
    "peer",
    "name",
    "zs-root2",
  ], true);
  await run(["ip", "link", "set", "zs-root2", "netns", "zoo-sw"], true);
  await run([...sw, "link", "set", "zs-root2", "master", "br1"], true);
  await run([...sw, "link", "set", "zs-root2", "up"], true);
  await run(
    ["ip", "addr", "add", `${ROOT_ADDRESS}/32`, "dev", "zoo-root2"],
    true,
  );
  await run(["ip", "link", "set", "zoo-root2", "up"], true);
  for (const i of side) {
    await run([...sw, "link", "set", `zs${i}`, "master", "br1"], true);
    await run(
      ["ip", "route", "add", `${hostAddress(i)}/32`, "dev", "zoo-root2"],
      true,
    );
  }
}

/** Joins the hosts of `side` (split off by {@linkcode partition}) again. */
export async function heal(side: readonly number[]): Promise<void> {
  for (const i of side) {
    await run(["ip", "-n", "zoo-sw", "link", "set", `zs${i}`, "master", "br0"]);
    await run([
      "ip",
      "route",
      "del",
      `${hostAddress(i)}/32`,
      "dev",
      "zoo-root2",
    ]);
  }
  // Deleting one end of the pair deletes the other.
  await run(["ip", "-n", "zoo-sw", "link", "del", "zs-root2"], true);
  await run(["ip", "-n", "zoo-sw", "link", "del", "br1"], true);
}

/**
 * Runs `fn` with the URL at which lab hosts reach the EVM JSON-RPC at
 * `rpcUrl` (on this machine's loopback): a relay on
 * {@linkcode ROOT_ADDRESS}, closed afterwards.
 */
export async function withLabChain<T>(
  rpcUrl: string,
  fn: (labRpcUrl: string) => Promise<T>,
): Promise<T> {
  const target = new URL(rpcUrl);
  const relay = startDelayRelay({
    listen: { hostname: ROOT_ADDRESS, port: 0 },
    target: { hostname: target.hostname, port: Number(target.port) },
    delayMs: 0,
  });
  try {
    return await fn(
      `http://${ROOT_ADDRESS}:${(relay.addr as Deno.NetAddr).port}`,
    );
  } finally {
    relay.close();
  }
}

/**
 * Puts lab host `i` behind a firewall that, like a home router's NAT,
 * lets it open connections but drops every new one coming in from the
 * other hosts (nftables in its namespace, which the lab removes with the
 * host). This process, at {@linkcode ROOT_ADDRESS}, still gets in: it
 * plays the laptop's own user reading its status page.
 */
export async function blockInbound(i: number): Promise<void> {
  const nft = inHost(i, ["nft"]);
  await run([...nft, "add", "table", "inet", "zoo_nat"], true);
  await run([
    ...nft,
    "add chain inet zoo_nat in { type filter hook input priority 0; policy accept; }",
  ], true);
  await run([
    ...nft,
    `add rule inet zoo_nat in ip saddr != ${ROOT_ADDRESS} ct state new tcp flags syn drop`,
  ], true);
}

/** Why {@linkcode blockInbound} cannot run here, or null when it can. */
export async function nftMissing(): Promise<string | null> {
  const out = await run(["nft", "--version"]).catch((e) => String(e));
  return out === "" ? null : `no nft (apt-get install nftables): ${out}`;
}

/** Runs a command; "" on success, else its stderr (thrown if `strict`). */
async function run(cmd: string[], strict = false): Promise<string> {
  const out = await new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.success) return "";
  const err = new TextDecoder().decode(out.stderr).trim() ||
    `exit code ${out.code}`;
  if (strict) throw new Error(`${cmd.join(" ")}: ${err}`);
  return err;
}
