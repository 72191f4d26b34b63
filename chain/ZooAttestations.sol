// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title The registry's EIP-712 domain and the round attestation.
/// @notice Every signature the registry checks (members' attestations of a
/// round, work commitments, audit verdicts) is over a digest in one
/// EIP-712 domain: name "ZooRegistry", version "1", the chain id and the
/// registry's address, so a signature from another chain or deployment
/// recovers to another signer (chain/typed_data.ts signs the same).
abstract contract ZooAttestations {
    /// What members attest and the leader commits: one round's outcome.
    struct Attestation {
        bytes32 job;
        uint32 round;
        bytes32 parent;
        bytes32 checkpoint;
        bytes32 manifest;
        /// Contributing members' accounts, ascending.
        address[] contributors;
        /// Tokens each contributor trained on this round.
        uint256[] weights;
    }

    bytes32 private constant DOMAIN_TYPEHASH = keccak256(
        "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
    );
    bytes32 private constant NAME_HASH = keccak256("ZooRegistry");
    bytes32 private constant VERSION_HASH = keccak256("1");
    /// @notice The EIP-712 type every peer signs to vouch for a round.
    bytes32 public constant ATTESTATION_TYPEHASH = keccak256(
        "Attestation(bytes32 job,uint32 round,bytes32 parent,bytes32 checkpoint,bytes32 manifest,address[] contributors,uint256[] weights)"
    );
    // Signatures with s in the upper half of the curve order are the
    // malleable twins of valid ones (EIP-2).
    uint256 private constant HALF_CURVE_ORDER =
        0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    /// @notice The EIP-712 domain separator, recomputed per call so a fork to
    /// another chain id cannot replay attestations.
    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    /// @notice The digest a member signs to attest round `c`.
    function attestationDigest(Attestation calldata c) public view returns (bytes32) {
        bytes32 structHash = keccak256(
            abi.encode(
                ATTESTATION_TYPEHASH,
                c.job,
                c.round,
                c.parent,
                c.checkpoint,
                c.manifest,
                keccak256(abi.encodePacked(c.contributors)),
                keccak256(abi.encodePacked(c.weights))
            )
        );
        return typedDigest(structHash);
    }

    /// @dev The EIP-712 digest of a struct hash in this domain.
    function typedDigest(bytes32 structHash) internal view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
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
