/**
 * The devnet's chain-side constants and actions: the embedded registry's
 * parameters, the funds each local account gets through anvil's cheat
 * methods, and whether a contract lives at an address. Recording
 * deployments in a data dir is the node's (`node/store/chain_records.ts`).
 *
 * @module
 */
import { parseEther } from "viem";
import type { Address } from "./attestation.ts";
import type { ChainClient } from "./client.ts";
import type { RegistryParams } from "./registry_writes.ts";

/**
 * The challenge window `chain deploy` gives a registry unless told: an
 * hour, time for a real network's last-round audits to land their
 * evidence whatever its round deadline and latency.
 */
export const DEFAULT_CHALLENGE_WINDOW = 3600n;

/**
 * Registry parameters of the embedded devnet. Its challenge window is 90 s:
 * the last round's audits there take at most its 20 s round deadline to
 * fetch the work plus the replay and the evidence's one transaction, and
 * a user who ran a devnet should see a claim paid in minutes, not an hour.
 */
export const DEVNET_REGISTRY: Readonly<RegistryParams> = {
  minNodeStake: parseEther("1"),
  unbondingDelay: 60n,
  challengeWindow: 90n,
};

/** Balance given to each local account on the devnet. */
export const DEVNET_FUNDS: bigint = parseEther("10000");

/** Whether contract code lives at `address`. */
export async function hasCode(
  client: ChainClient,
  address: Address,
): Promise<boolean> {
  const code = await client.public.getCode({ address });
  return code !== undefined && code !== "0x";
}

/**
 * Tops each address up to `amount` on a dev chain: anvil's
 * `anvil_setBalance`, else Hardhat's `hardhat_setBalance`.
 */
export async function fundOnDevnet(
  client: ChainClient,
  addresses: readonly Address[],
  amount: bigint = DEVNET_FUNDS,
): Promise<void> {
  for (const address of addresses) {
    if (await client.public.getBalance({ address }) >= amount) continue;
    const params = [address, `0x${amount.toString(16)}`] as never;
    await client.public.request({
      method: "anvil_setBalance" as never,
      params,
    }).catch(() =>
      client.public.request({ method: "hardhat_setBalance" as never, params })
    );
  }
}
