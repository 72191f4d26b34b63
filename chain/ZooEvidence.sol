// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title Evidence of misbehaviour that the registry checks on its own.
/// @notice Kind 1, equivocation: two work commitments signed by one account
/// for the same job and round that differ. A peer commits to the work
/// behind its delta (chain/work_commitment.ts) in the registry's EIP-712
/// domain, so the two signed commitments alone prove the offence: no vote,
/// no oracle. The domain binds the chain id and the registry's address, so
/// evidence from another chain or deployment recovers to other signers.
abstract contract ZooEvidence {
    /// What a contributor signs with its delta.
    struct WorkCommitment {
        bytes32 job;
        uint32 round;
        bytes32 parent;
        bytes32 delta;
        uint32 steps;
        uint64 tokens;
        uint32 segments;
        bytes32 trajectory;
        bytes32 kernel;
    }

    uint8 public constant EVIDENCE_EQUIVOCATION = 1;

    bytes32 public constant WORK_COMMITMENT_TYPEHASH = keccak256(
        "WorkCommitment(bytes32 job,uint32 round,bytes32 parent,bytes32 delta,uint32 steps,uint64 tokens,uint32 segments,bytes32 trajectory,bytes32 kernel)"
    );

    // Signatures with s in the upper half of the curve order are the
    // malleable twins of valid ones (EIP-2).
    uint256 private constant HALF_CURVE_ORDER =
        0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    error BadEvidence(string reason);

    /// @notice The EIP-712 domain separator commitments are signed in.
    function domainSeparator() public view virtual returns (bytes32);

    /// @notice The digest an account signs to commit to `w`.
    function workCommitmentDigest(WorkCommitment memory w) public view returns (bytes32) {
        bytes32 structHash = keccak256(
            abi.encode(
                WORK_COMMITMENT_TYPEHASH,
                w.job,
                w.round,
                w.parent,
                w.delta,
                w.steps,
                w.tokens,
                w.segments,
                w.trajectory,
                w.kernel
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
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

    /// @dev The signer of `digest`, or the zero address for a malformed or
    /// malleable signature.
    function signerOf(bytes32 digest, bytes memory signature) internal pure returns (address) {
        if (signature.length != 65) return address(0);
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 32))
            s := mload(add(signature, 64))
            v := byte(0, mload(add(signature, 96)))
        }
        if (uint256(s) > HALF_CURVE_ORDER || (v != 27 && v != 28)) return address(0);
        return ecrecover(digest, v, r, s);
    }
}
