/**
 * Attestations: this peer's EIP-712 signature over a manifest it built or
 * verified (the bytes the registry checks when the round is committed),
 * and the check of other members' signatures as they arrive on gossip.
 *
 * @module
 */
import type { LocalAccount } from "viem/accounts";
import {
  type Address,
  attestationForManifest,
  recoverAttester,
  type RegistryDomain,
  signAttestation,
} from "../../../chain/attestation.ts";
import type { AttestationMessage } from "../../../protocol/messages/messages.ts";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import type { RoundPublisher } from "../services/publisher.ts";

/** What an {@linkcode Attester} uses. */
export interface AttesterOptions {
  /** This peer's chain account, which signs. */
  account: LocalAccount;
  /** The registry's domain the signatures are made in. */
  domain: RegistryDomain;
  publisher: Pick<RoundPublisher, "header" | "publish">;
  /** Whether `account` is the one bound to member `peer` in the job. */
  isMemberAccount(peer: string, account: string): Promise<boolean>;
}

/** Signs this peer's attestations and checks other members'. */
export class Attester {
  readonly #o: AttesterOptions;

  constructor(o: AttesterOptions) {
    this.#o = o;
  }

  /** This peer's signed attestation of `manifest`. */
  async attestation(
    manifestCid: string,
    manifest: RoundManifest,
  ): Promise<AttestationMessage> {
    const signature = await signAttestation(
      this.#o.account,
      this.#o.domain,
      attestationForManifest(manifestCid, manifest),
    );
    return {
      ...this.#o.publisher.header("attest", manifest.round, manifest.parent),
      manifest: manifestCid,
      checkpoint: manifest.checkpoint,
      account: this.#o.account.address,
      signature,
    };
  }

  /** Signs `manifest` and publishes it (sent again until the round ends). */
  async attest(manifestCid: string, manifest: RoundManifest): Promise<void> {
    await this.#o.publisher.publish(
      await this.attestation(manifestCid, manifest),
      { repeat: true },
    );
  }

  /**
   * Whether gossiped `msg` is a member's signature over `manifest` under
   * the account bound to its peer id.
   */
  async valid(
    msg: AttestationMessage,
    manifest: RoundManifest,
  ): Promise<boolean> {
    const signer: Address | null = await recoverAttester(
      this.#o.domain,
      attestationForManifest(msg.manifest, manifest),
      msg.signature as `0x${string}`,
    ).catch(() => null);
    if (signer?.toLowerCase() !== msg.account.toLowerCase()) return false;
    return await this.#o.isMemberAccount(msg.peer, msg.account);
  }
}
