/**
 * EIP-712 messages in the registry's domain: attestations, work
 * commitments and audit verdicts are each signed, hashed and recovered the
 * same way, so each is declared once with {@linkcode registryMessage}.
 *
 * @module
 */
import {
  type Account,
  hashTypedData,
  recoverTypedDataAddress,
  type TypedDataDefinition,
} from "viem";

/** A 32-byte word as 0x-hex. */
export type Bytes32 = `0x${string}`;
/** An account address as 0x-hex. */
export type Address = `0x${string}`;

/** The EIP-712 domain of one registry deployment. */
export interface RegistryDomain {
  chainId: number;
  registry: Address;
}

/** The EIP-712 domain object of a registry deployment, for viem. */
export function eip712Domain(domain: RegistryDomain) {
  return {
    name: "ZooRegistry",
    version: "1",
    chainId: domain.chainId,
    verifyingContract: domain.registry,
  } as const;
}

/** The three things done with one kind of registry message. */
export interface RegistryMessage<M> {
  /** The digest a signature over `message` signs (the contract's too). */
  digest(domain: RegistryDomain, message: M): Bytes32;
  /** Signs `message` with `account` (a viem local account). */
  sign(
    account: Account,
    domain: RegistryDomain,
    message: M,
  ): Promise<`0x${string}`>;
  /** The account that signed `message`. */
  recover(
    domain: RegistryDomain,
    message: M,
    signature: `0x${string}`,
  ): Promise<Address>;
}

/**
 * The message of `primaryType` under `types` (which must match the
 * contract's type hash).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { registryMessage } from "./typed_data.ts";
 *
 * const ping = registryMessage<{ n: number }>(
 *   { Ping: [{ name: "n", type: "uint32" }] },
 *   "Ping",
 * );
 * const domain = { chainId: 1, registry: `0x${"11".repeat(20)}` } as const;
 * assert(ping.digest(domain, { n: 1 }).length === 66);
 * ```
 */
export function registryMessage<M>(
  types: Record<string, readonly { name: string; type: string }[]>,
  primaryType: string,
): RegistryMessage<M> {
  const data = (domain: RegistryDomain, message: M) =>
    ({
      domain: eip712Domain(domain),
      types,
      primaryType,
      message,
    }) as unknown as TypedDataDefinition;
  return {
    digest: (domain, message) => hashTypedData(data(domain, message)),
    sign(account, domain, message) {
      if (!account.signTypedData) {
        throw new TypeError("Cannot sign: the account has no local key");
      }
      return account.signTypedData(data(domain, message));
    },
    recover: (domain, message, signature) =>
      recoverTypedDataAddress({ ...data(domain, message), signature }),
  };
}
