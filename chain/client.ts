/**
 * A viem client for one EVM JSON-RPC endpoint and one account: retries with
 * backoff on transport errors, and polls fast on local chains where blocks
 * are mined instantly.
 *
 * @module
 */
import {
  type Account,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type PublicClient,
  type Transport,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ChainError } from "./errors.ts";

/** Chain ids of local development chains (anvil, hardhat). */
export const LOCAL_CHAIN_IDS: readonly number[] = [31337, 1337];

/** A connection to a chain as one account. */
export interface ChainClient {
  chainId: number;
  rpcUrl: string;
  account: Account & { address: `0x${string}` };
  public: PublicClient<Transport, Chain>;
  wallet: WalletClient<Transport, Chain, Account>;
}

/** Connection settings; `accountKey` is the node's secp256k1 key. */
export interface ConnectOptions {
  rpcUrl: string;
  accountKey: `0x${string}`;
  /** Attempts after the first on transport errors (default 4). */
  retryCount?: number;
  /** Base backoff in ms, doubled per attempt (default 150). */
  retryDelayMs?: number;
  /** Per-request timeout in ms (default 10 000). */
  timeoutMs?: number;
}

/**
 * Connects to `rpcUrl`, asking it for its chain id (so a wrong URL fails
 * here with a clear message, not at the first transaction).
 *
 * @example
 * ```ts ignore
 * const client = await connectChain({ rpcUrl: anvil.rpcUrl, accountKey });
 * console.log(client.chainId, client.account.address);
 * ```
 */
export async function connectChain(opts: ConnectOptions): Promise<ChainClient> {
  const transport = http(opts.rpcUrl, {
    retryCount: opts.retryCount ?? 4,
    retryDelay: opts.retryDelayMs ?? 150,
    timeout: opts.timeoutMs ?? 10_000,
  });
  const probe = createPublicClient({ transport, cacheTime: 0 });
  let chainId: number;
  try {
    chainId = await probe.getChainId();
  } catch (err) {
    throw new ChainError(
      `Cannot reach the chain at ${opts.rpcUrl}: ${
        (err as { shortMessage?: string }).shortMessage ??
          (err as Error).message
      }`,
      null,
      [],
      { cause: err },
    );
  }
  const local = LOCAL_CHAIN_IDS.includes(chainId);
  const chain = defineChain({
    id: chainId,
    name: local ? "local" : `chain ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [opts.rpcUrl] } },
  });
  // viem's defaults (4 s) suit public chains; anvil mines on arrival.
  const pollingInterval = local ? 50 : 2000;
  const account = privateKeyToAccount(opts.accountKey);
  return {
    chainId,
    rpcUrl: opts.rpcUrl,
    account,
    public: createPublicClient({
      chain,
      transport,
      pollingInterval,
      cacheTime: 0,
    }),
    wallet: createWalletClient({
      chain,
      transport,
      account,
      pollingInterval,
      cacheTime: 0,
    }),
  };
}
