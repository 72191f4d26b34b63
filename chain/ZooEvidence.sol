// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title Evidence of misbehaviour that the registry checks on its own.
/// @notice A peer commits to the work behind its delta
/// (chain/work_commitment.ts) in the registry's EIP-712 domain; the domain
/// binds the chain id and the registry's address, so evidence from another
/// chain or deployment recovers to other signers. Four kinds:
///
/// Kind 1, equivocation: two work commitments signed by one account for the
/// same job and round that differ. The two signed commitments alone prove
/// the offence: no vote, no oracle.
///
/// Kind 2, failed audit: one signed work commitment plus AuditFailure
/// verdicts on it (chain/audit_verdict.ts), signed by a quorum of the job's
/// other members who re-ran the work and got something else. The verdicts
/// are the vote; the contract checks who cast them, not the work, and
/// counts those whose signers are in good standing when it lands.
///
/// Kind 3, false verdict: an auditor's signed AuditFailure plus
/// AuditRefutation verdicts on that very failure, signed by a quorum of the
/// job's other members (not the accused) who re-ran the same work and saw
/// it pass. The same vote that would have convicted the accused clears it
/// and turns the accusation against its signer.
///
/// Kind 4, silence: one signed work commitment plus AuditSilence verdicts
/// on it, signed by a quorum of the job's other members: the accused was
/// live but never answered its drawn audit, so its work for that round
/// cannot be checked. Silence and a partition look alike to one auditor;
/// the verdict tells them apart by what its signer saw. A peer signs one
/// only when it opened a request stream to the accused (so the network
/// between them worked), saw the accused keep gossiping all along (so it
/// was up and reachable), and got no answer for the whole serve window
/// (one round deadline, time for an honest peer to restart). A peer it
/// could not reach signs nothing. A quorum of such verdicts is the vote,
/// as for a failed audit; the registry counts signers, not what they saw.
import "./ZooAttestations.sol";

abstract contract ZooEvidence is ZooAttestations {
    /// What a contributor signs with its delta.
    struct WorkCommitment {
        bytes32 job;
        uint32 round;
        bytes32 parent;
        /// Hash of the inputs that fix the batches the peer trained on.
        bytes32 data;
        bytes32 delta;
        uint32 steps;
        uint64 tokens;
        uint32 segments;
        bytes32 trajectory;
        bytes32 kernel;
    }

    /// What an auditor signs when `peer`'s work for `round` of `job`, as
    /// committed to by the WorkCommitment digest `commitment`, fails its
    /// audit.
    struct AuditFailure {
        bytes32 job;
        uint32 round;
        address peer;
        bytes32 commitment;
    }

    /// What a member signs when its own replay of the work an AuditFailure
    /// `failure` (its EIP-712 digest) accuses passed: the accusation by
    /// `accuser` is false.
    struct AuditRefutation {
        bytes32 job;
        uint32 round;
        address accuser;
        bytes32 failure;
    }

    /// What an auditor signs when `peer`, live all along, left the audit
    /// of its work for `round` of `job`, as committed to by the
    /// WorkCommitment digest `commitment`, unanswered for the whole serve
    /// window. The layout of AuditFailure under another type: a verdict of
    /// one kind never counts as the other.
    struct AuditSilence {
        bytes32 job;
        uint32 round;
        address peer;
        bytes32 commitment;
    }

    uint8 public constant EVIDENCE_EQUIVOCATION = 1;
    uint8 public constant EVIDENCE_FAILED_AUDIT = 2;
    uint8 public constant EVIDENCE_FALSE_VERDICT = 3;
    uint8 public constant EVIDENCE_SILENCE = 4;

    bytes32 public constant WORK_COMMITMENT_TYPEHASH = keccak256(
        "WorkCommitment(bytes32 job,uint32 round,bytes32 parent,bytes32 data,bytes32 delta,uint32 steps,uint64 tokens,uint32 segments,bytes32 trajectory,bytes32 kernel)"
    );
    bytes32 public constant AUDIT_FAILURE_TYPEHASH =
        keccak256("AuditFailure(bytes32 job,uint32 round,address peer,bytes32 commitment)");

    bytes32 public constant AUDIT_REFUTATION_TYPEHASH =
        keccak256("AuditRefutation(bytes32 job,uint32 round,address accuser,bytes32 failure)");

    bytes32 public constant AUDIT_SILENCE_TYPEHASH =
        keccak256("AuditSilence(bytes32 job,uint32 round,address peer,bytes32 commitment)");

    error BadEvidence(string reason);
    error EvidenceNotSupported(uint8 kind);

    /// @dev Whether `account` may sign audit verdicts in `job` now: a
    /// member in good standing, as for attesting a round.
    function isAuditor(bytes32 job, address account) internal view virtual returns (bool);

    /// @notice The digest an account signs to commit to `w`.
    function workCommitmentDigest(WorkCommitment memory w) public view returns (bytes32) {
        bytes32 structHash = keccak256(
            abi.encode(
                WORK_COMMITMENT_TYPEHASH,
                w.job,
                w.round,
                w.parent,
                w.data,
                w.delta,
                w.steps,
                w.tokens,
                w.segments,
                w.trajectory,
                w.kernel
            )
        );
        return typedDigest(structHash);
    }

    /// @notice The digest an auditor signs to declare that `f.peer`'s work
    /// failed its audit.
    function auditFailureDigest(AuditFailure memory f) public view returns (bytes32) {
        return verdictDigest(AUDIT_FAILURE_TYPEHASH, f.job, f.round, f.peer, f.commitment);
    }

    /// @notice The digest an auditor signs to declare that `s.peer`, live,
    /// left the audit of its work unanswered for the whole serve window.
    function auditSilenceDigest(AuditSilence memory s) public view returns (bytes32) {
        return verdictDigest(AUDIT_SILENCE_TYPEHASH, s.job, s.round, s.peer, s.commitment);
    }

    /// @notice The digest a member signs to declare that `r.accuser`'s
    /// failure verdict `r.failure` is refuted by its own passed replay.
    function auditRefutationDigest(AuditRefutation memory r) public view returns (bytes32) {
        bytes32 structHash = keccak256(abi.encode(AUDIT_REFUTATION_TYPEHASH, r.job, r.round, r.accuser, r.failure));
        return typedDigest(structHash);
    }

    /// @dev The round of the offence of `kind` that `evidence` proves
    /// against `account` in `job`, whose quorum is `quorum`; reverts with
    /// BadEvidence unless it proves one, with EvidenceNotSupported for an
    /// unknown kind.
    /// `subject` tells offences of one kind and round apart (the accused of
    /// a false verdict; zero for the other kinds). `tokens` is the credit a
    /// silence forfeits: the tokens the accused committed to for the round
    /// (zero for the other kinds, which take all of it).
    function checkEvidence(address account, bytes32 job, uint32 quorum, uint8 kind, bytes calldata evidence)
        internal
        view
        returns (uint32 round, address subject, uint64 tokens)
    {
        if (kind == EVIDENCE_EQUIVOCATION) return (checkEquivocation(account, job, evidence), address(0), 0);
        if (kind == EVIDENCE_FAILED_AUDIT) return (checkFailedAudit(account, job, quorum, evidence), address(0), 0);
        if (kind == EVIDENCE_FALSE_VERDICT) {
            (round, subject) = checkFalseVerdict(account, job, quorum, evidence);
            return (round, subject, 0);
        }
        if (kind == EVIDENCE_SILENCE) {
            (round, tokens) = checkSilence(account, job, quorum, evidence);
            return (round, address(0), tokens);
        }
        revert EvidenceNotSupported(kind);
    }

    /// @dev The round and accused of a failure verdict by `account` in
    /// `job` that a quorum refuted; reverts with BadEvidence unless
    /// `evidence` is abi.encode(AuditFailure f, bytes sigF, bytes[]
    /// refutations): `f` signed by `account`, and AuditRefutation verdicts
    /// on it by at least `quorum` distinct auditors of the job in good
    /// standing now, neither `account` nor the accused.
    function checkFalseVerdict(address account, bytes32 job, uint32 quorum, bytes calldata evidence)
        internal
        view
        returns (uint32 round, address accused)
    {
        (AuditFailure memory f, bytes memory sigF, bytes[] memory refutations) =
            abi.decode(evidence, (AuditFailure, bytes, bytes[]));
        if (f.job != job) revert BadEvidence("a verdict of another job");
        bytes32 failure = auditFailureDigest(f);
        if (signerOf(failure, sigF) != account) revert BadEvidence("not signed by the account");
        if (refutations.length < quorum) revert BadEvidence("fewer verdicts than the job's quorum");
        bytes32 digest = auditRefutationDigest(AuditRefutation(job, f.round, account, failure));
        if (countVerdicts(account, f.peer, digest, job, refutations) < quorum) {
            revert BadEvidence("fewer verdicts in good standing than the job's quorum");
        }
        return (f.round, f.peer);
    }

    /// @dev The round in which `account` signed two different commitments
    /// for `job`; reverts with BadEvidence unless `evidence` is
    /// abi.encode(WorkCommitment a, bytes sigA, WorkCommitment b, bytes sigB)
    /// proving exactly that.
    function checkEquivocation(address account, bytes32 job, bytes calldata evidence)
        internal
        view
        returns (uint32 round)
    {
        (WorkCommitment memory a, bytes memory sigA, WorkCommitment memory b, bytes memory sigB) =
            abi.decode(evidence, (WorkCommitment, bytes, WorkCommitment, bytes));
        if (a.job != job || b.job != job) revert BadEvidence("a commitment of another job");
        if (a.round != b.round) revert BadEvidence("commitments of different rounds");
        bytes32 da = workCommitmentDigest(a);
        bytes32 db = workCommitmentDigest(b);
        if (da == db) revert BadEvidence("the same commitment twice");
        if (signerOf(da, sigA) != account || signerOf(db, sigB) != account) {
            revert BadEvidence("not signed by the account");
        }
        return a.round;
    }

    /// @dev The round whose work by `account` in `job` failed its audit;
    /// reverts with BadEvidence unless `evidence` is
    /// abi.encode(WorkCommitment w, bytes sigW, bytes[] verdicts): `w`
    /// signed by `account`, and AuditFailure verdicts on it by at least
    /// `quorum` distinct auditors of the job in good standing now, other
    /// than `account`.
    function checkFailedAudit(address account, bytes32 job, uint32 quorum, bytes calldata evidence)
        internal
        view
        returns (uint32 round)
    {
        (round,) = checkVerdictsOnWork(account, job, quorum, AUDIT_FAILURE_TYPEHASH, evidence);
    }

    /// @dev The round whose audit `account`, live, left unanswered in
    /// `job`, and the tokens it committed to for that round; reverts with
    /// BadEvidence unless `evidence` is abi.encode(WorkCommitment w, bytes
    /// sigW, bytes[] verdicts): `w` signed by `account`, and AuditSilence
    /// verdicts on it by at least `quorum` distinct auditors of the job in
    /// good standing now, other than `account`.
    function checkSilence(address account, bytes32 job, uint32 quorum, bytes calldata evidence)
        internal
        view
        returns (uint32 round, uint64 tokens)
    {
        return checkVerdictsOnWork(account, job, quorum, AUDIT_SILENCE_TYPEHASH, evidence);
    }

    /// @dev Kinds 2 and 4: `evidence` as checkFailedAudit says, with
    /// verdicts of type `verdictType` (AuditFailure or AuditSilence, one
    /// layout); the commitment's round and tokens.
    function checkVerdictsOnWork(
        address account,
        bytes32 job,
        uint32 quorum,
        bytes32 verdictType,
        bytes calldata evidence
    ) private view returns (uint32 round, uint64 tokens) {
        (WorkCommitment memory w, bytes memory sigW, bytes[] memory verdicts) =
            abi.decode(evidence, (WorkCommitment, bytes, bytes[]));
        if (w.job != job) revert BadEvidence("a commitment of another job");
        round = w.round;
        tokens = w.tokens;
        bytes32 digest = workCommitmentDigest(w);
        if (signerOf(digest, sigW) != account) revert BadEvidence("not signed by the account");
        if (verdicts.length < quorum) revert BadEvidence("fewer verdicts than the job's quorum");
        digest = verdictDigest(verdictType, job, round, account, digest);
        if (countVerdicts(account, address(0), digest, job, verdicts) < quorum) {
            revert BadEvidence("fewer verdicts in good standing than the job's quorum");
        }
    }

    /// @dev The EIP-712 digest of a verdict of type `verdictType` on
    /// `peer`'s work for `round` of `job`, committed to as `commitment`.
    function verdictDigest(bytes32 verdictType, bytes32 job, uint32 round, address peer, bytes32 commitment)
        private
        view
        returns (bytes32)
    {
        return typedDigest(keccak256(abi.encode(verdictType, job, round, peer, commitment)));
    }

    /// @dev How many of `verdicts` on `digest` come from auditors of `job`
    /// in good standing now, other than `accused` (and `party`, the
    /// accused of a refuted verdict: its word does not clear itself). A verdict whose signer
    /// has since left, fell below the stake or was slashed is not counted
    /// but voids nothing: the others still convict, so churn among the
    /// signers (or a colluder's own conviction) cannot save the accused.
    /// Counted signers must ascend strictly: that proves them distinct with
    /// one comparison each, no set in storage or memory.
    function countVerdicts(address accused, address party, bytes32 digest, bytes32 job, bytes[] memory verdicts)
        private
        view
        returns (uint256 counted)
    {
        address previous = address(0);
        for (uint256 i = 0; i < verdicts.length; i++) {
            address signer = signerOf(digest, verdicts[i]);
            if (signer == address(0)) revert BadEvidence("a malformed verdict signature");
            if (signer == accused) revert BadEvidence("a verdict by the accused");
            if (signer == party) revert BadEvidence("a verdict by the party it clears");
            // Standing first: a verdict over other data recovers to a
            // random address, which must read as a stranger wherever it sorts.
            if (!isAuditor(job, signer)) continue;
            if (signer == previous) revert BadEvidence("two verdicts by one signer");
            if (signer < previous) revert BadEvidence("verdicts not sorted by signer");
            previous = signer;
            counted++;
        }
    }
}
