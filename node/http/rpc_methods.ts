/**
 * The `zoo_*` JSON-RPC methods over a node's info source. Each checks its
 * params (-32602 naming the field), answers from the source, and maps what
 * the source throws to a typed JSON-RPC error.
 *
 * @module
 */
import { SafetensorsError } from "../../kernels/safetensors.ts";
import { ChainError } from "../../chain/errors.ts";
import { BlobFetchError } from "../p2p/blob_fetch.ts";
import { InvalidParamsError, type JsonRpcMethods } from "./jsonrpc.ts";
import {
  BlobUnavailableError,
  ChainRefusedError,
  NoJobError,
  NotFoundError,
  UnauthorizedError,
} from "./rpc_errors.ts";
import { parseParams } from "./rpc_params.ts";
import type { JobSource, NodeInfoSource } from "./types.ts";

/** Default and largest page of `zoo_rounds`. */
export const ROUNDS_PAGE = { default: 100, max: 1000 } as const;

const ROUND = { type: "integer", min: 0, max: 2 ** 32 - 1 } as const;
const CID = { type: "string", maxLength: 128 } as const;

/** Runs a chain transaction; the contract's refusal becomes a -32005. */
async function chainAction<T>(send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (err) {
    if (err instanceof ChainError) {
      throw new ChainRefusedError(err.message, err.reason);
    }
    throw err;
  }
}

/** Who is calling: whether the request carried the node's bearer token. */
export interface RpcCaller {
  authorized: boolean;
}

/**
 * The method table for one request (or batch) from `caller`.
 *
 * @example
 * ```ts ignore
 * const out = await handleJsonRpc(body, rpcMethods(source, { authorized: false }));
 * ```
 */
export function rpcMethods(
  source: NodeInfoSource,
  caller: RpcCaller,
): JsonRpcMethods {
  const jobOf = (method: string): JobSource => {
    const job = source.job();
    if (job === null) throw new NoJobError(method);
    return job;
  };
  return {
    zoo_status: (params) => {
      parseParams("zoo_status", params, {});
      return source.status();
    },
    zoo_peers: async (params) => {
      parseParams("zoo_peers", params, {});
      const peers = source.peers();
      const job = source.job();
      if (job === null) return peers;
      // peers() carries the last reading, which the status page's 1 s
      // refresh keeps fresh; a script that calls once in a while would get
      // the one its previous call started, rounds behind the chain. So the
      // chain is read for the call, and a peer it cannot be read for is
      // null (unknown), never an old figure.
      return await Promise.all(peers.map(async (p) => ({
        ...p,
        contribution: await job.readPeerContribution(p.peerId).catch(() =>
          null
        ),
      })));
    },
    zoo_job: (params) => {
      parseParams("zoo_job", params, {});
      return jobOf("zoo_job").info();
    },
    zoo_rounds: (params) => {
      const p = parseParams("zoo_rounds", params, {
        from: { ...ROUND, optional: true },
        limit: {
          type: "integer",
          min: 1,
          max: ROUNDS_PAGE.max,
          optional: true,
        },
      }) as { from?: number; limit?: number };
      const records = source.job()?.training().committed ?? [];
      return records.filter((r) => r.round >= (p.from ?? 0))
        .slice(0, p.limit ?? ROUNDS_PAGE.default);
    },
    zoo_round: async (params) => {
      const { round } = parseParams("zoo_round", params, { round: ROUND }) as {
        round: number;
      };
      const detail = await jobOf("zoo_round").round(round);
      if (detail === null) {
        throw new NotFoundError(
          `round ${round} is not committed on chain: ask zoo_job for nextRound`,
        );
      }
      return detail;
    },
    zoo_checkpoint: async (params) => {
      const { cid } = parseParams("zoo_checkpoint", params, { cid: CID }) as {
        cid: string;
      };
      let info;
      try {
        info = await source.checkpoint(cid);
      } catch (err) {
        if (err instanceof TypeError || err instanceof SafetensorsError) {
          throw new InvalidParamsError(err.message);
        }
        throw err;
      }
      if (info === null) {
        throw new NotFoundError(
          `checkpoint ${cid} is not in this node's store: fetch it with zoo_fetchBlob first`,
        );
      }
      return info;
    },
    zoo_contributions: (params) => {
      parseParams("zoo_contributions", params, {});
      return jobOf("zoo_contributions").contributions();
    },
    zoo_leave: async (params) => {
      // Authorization first: a caller without the token learns nothing else.
      if (!caller.authorized) throw new UnauthorizedError("zoo_leave");
      const { exit } = parseParams("zoo_leave", params, {
        exit: { type: "boolean", optional: true },
      }) as { exit?: boolean };
      const job = jobOf("zoo_leave");
      const left = job.leave();
      if (!exit) return left;
      return { ...left, exit: await chainAction(() => job.exitStake()) };
    },
    zoo_claimReward: async (params) => {
      // It sends a transaction from the node's account.
      if (!caller.authorized) throw new UnauthorizedError("zoo_claimReward");
      parseParams("zoo_claimReward", params, {});
      const job = jobOf("zoo_claimReward");
      return await chainAction(() => job.claimReward());
    },
    zoo_fetchBlob: async (params) => {
      // It makes the node download and store data: the token's to ask.
      if (!caller.authorized) throw new UnauthorizedError("zoo_fetchBlob");
      const { cid, providers } = parseParams("zoo_fetchBlob", params, {
        cid: CID,
        providers: {
          type: "strings",
          maxItems: 64,
          maxLength: 128,
          optional: true,
        },
      }) as { cid: string; providers?: string[] };
      try {
        return await source.fetchBlob(cid, providers);
      } catch (err) {
        if (err instanceof TypeError) throw new InvalidParamsError(err.message);
        if (err instanceof BlobFetchError) {
          throw new BlobUnavailableError(err.message, err.report);
        }
        throw err;
      }
    },
  };
}
