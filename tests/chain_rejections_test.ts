/**
 * The registry on a real anvil rejects every bad commit, claim and
 * registration with the error the contract promises.
 */
import { parseEther } from "viem";
import { orderSignatures, signAttestation } from "../chain/attestation.ts";
import {
  claimReward,
  commitRound,
  deployRegistry,
  registerNode,
  slash,
} from "../chain/registry.ts";
import {
  attestation,
  CHAIN_TEST,
  CHALLENGE_WINDOW,
  digestOf,
  GENESIS,
  JOB,
  jobWithMembers,
  passTime,
  rejects,
  signAll,
  TEST_REGISTRY,
  withChain,
} from "./_chain.ts";

Deno.test({
  name:
    "chain: every bad commit, claim and registration is rejected with its error",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const nodes = await jobWithMembers(chain, 4, { quorum: 3, rounds: 2 });
      const [a, b, c, d] = nodes;
      const att = attestation(0, GENESIS, [{ node: a, tokens: 10n }]);
      const good = await signAll([a, b, c], att);
      const domain = { chainId: a.client.chainId, registry: chain.registry };

      // Malformed signature bytes.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: [good[0], good[1], good[2].slice(0, -2) as `0x${string}`],
        }),
        "InvalidSignature",
      );
      // A signature over a different checkpoint recovers to a stranger.
      const other = { ...att, checkpoint: digestOf("another checkpoint") };
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: orderSignatures([
            ...await Promise.all([a, b].map(async (s) => ({
              signer: s.client.account.address,
              signature: await signAttestation(s.client.account, domain, att),
            }))),
            {
              signer: c.client.account.address,
              signature: await signAttestation(c.client.account, domain, other),
            },
          ]),
        }),
        "UnknownSigner",
      );
      // The same signer twice.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: [good[0], good[0], good[1]],
        }),
        "DuplicateSigner",
      );
      // Signatures not in signer order.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: [...good].reverse(),
        }),
        "SignersNotSorted",
      );
      // An account that never registered.
      const stranger = await chain.account();
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, b, stranger], att),
        }),
        "UnknownSigner",
      );
      // A registered node that is not a member of this job.
      await registerNode(stranger.reg, {
        peerIdHex: stranger.peerIdHex,
        stake: parseEther("1"),
      });
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, b, stranger], att),
        }),
        "UnknownSigner",
      );
      // Below quorum.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, b], att),
        }),
        "BelowQuorum",
      );
      // Wrong parent.
      const orphan = { ...att, parent: digestOf("not the head") };
      await rejects(
        commitRound(a.reg, {
          attestation: orphan,
          signatures: await signAll([a, b, c], orphan),
        }),
        "WrongParent",
      );
      // A skipped round.
      const skipped = { ...att, round: 1 };
      await rejects(
        commitRound(a.reg, {
          attestation: skipped,
          signatures: await signAll([a, b, c], skipped),
        }),
        "WrongRound",
      );
      // Signed for another chain id, or for another registry.
      const otherChain = { ...domain, chainId: domain.chainId + 1 };
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: orderSignatures(
            await Promise.all([a, b, c].map(async (s) => ({
              signer: s.client.account.address,
              signature: await signAttestation(
                s.client.account,
                otherChain,
                att,
              ),
            }))),
          ),
        }),
        "UnknownSigner",
      );
      const otherRegistry = (await deployRegistry(d.client, TEST_REGISTRY))
        .address;
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll(
            [a, b, c].map((s) => ({
              ...s,
              reg: { ...s.reg, address: otherRegistry },
            })),
            att,
          ),
        }),
        "UnknownSigner",
      );

      // The good commit lands; replaying it is the wrong round.
      await commitRound(a.reg, { attestation: att, signatures: good });
      await rejects(
        commitRound(a.reg, { attestation: att, signatures: good }),
        "WrongRound",
      );
      // Claims wait for the last round; then one claim per account.
      await rejects(claimReward(a.reg, { job: JOB }), "JobNotFinished");
      const last = attestation(1, att.checkpoint, [{ node: b, tokens: 5n }]);
      await commitRound(a.reg, {
        attestation: last,
        signatures: await signAll([a, b, c], last),
      });
      const finished = attestation(2, last.checkpoint, [{
        node: b,
        tokens: 5n,
      }]);
      await rejects(
        commitRound(a.reg, {
          attestation: finished,
          signatures: await signAll([a, b, c], finished),
        }),
        "JobFinished",
      );
      await rejects(claimReward(b.reg, { job: JOB }), "ChallengeWindowOpen");
      await passTime(b.client, CHALLENGE_WINDOW);
      await claimReward(b.reg, { job: JOB });
      await rejects(claimReward(b.reg, { job: JOB }), "AlreadyClaimed");
      await rejects(claimReward(d.reg, { job: JOB }), "NothingToClaim");

      // Registration rules: stake floor, one peer id per account, once.
      const poor = await chain.account();
      await rejects(
        registerNode(poor.reg, {
          peerIdHex: poor.peerIdHex,
          stake: parseEther("0.5"),
        }),
        "StakeTooLow",
      );
      await rejects(
        registerNode(poor.reg, {
          peerIdHex: a.peerIdHex,
          stake: parseEther("1"),
        }),
        "PeerIdTaken",
      );
      await rejects(
        registerNode(a.reg, { peerIdHex: a.peerIdHex, stake: parseEther("1") }),
        "AlreadyRegistered",
      );
      await rejects(
        slash(a.reg, {
          account: b.client.account.address,
          job: JOB,
          kind: 9,
          evidence: "0x",
        }),
        "EvidenceNotSupported",
      );
    }),
});
