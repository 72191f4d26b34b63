// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title Staked nodes of the registry
/// @notice Registration bound to a libp2p peer id (one peer id per account,
/// one account per peer id), more stake, the exit with its unbonding delay
/// during which the stake stays slashable, and the withdrawal.
abstract contract ZooStaking {
    /// stake, unbondingEnds, registered and slashableUntil share one slot:
    /// a signature check reads them all with a single cold load, and a
    /// commit that credits a node writes the slot it has just read.
    struct Node {
        uint128 stake;
        /// 0 while active; else the time from which unbonding has ended.
        uint64 unbondingEnds;
        bool registered;
        /// Until when evidence against the node's credited work may still
        /// land: the stake cannot be withdrawn before, even once unbonding
        /// has ended, so an accused that starts its exit cannot leave with it.
        uint48 slashableUntil;
        bytes peerId;
    }

    uint256 public constant MAX_PEER_ID_BYTES = 64;

    uint256 public immutable minNodeStake;
    uint64 public immutable unbondingDelay;

    mapping(address => Node) internal nodes;
    mapping(bytes32 => address) internal peerOwners;

    event NodeRegistered(address indexed account, bytes peerId, uint256 stake);
    event StakeAdded(address indexed account, uint256 amount, uint256 stake);
    event ExitStarted(address indexed account, uint64 unbondingEnds);
    event StakeWithdrawn(address indexed account, uint256 amount);

    error AlreadyRegistered(address account);
    error NotRegistered(address account);
    error StakeTooLow(uint256 stake, uint256 required);
    error BadPeerId();
    error PeerIdTaken(address owner);
    error NodeExiting(address account);
    error NotExiting(address account);
    error StillUnbonding(uint64 unbondingEnds);
    error StillSlashable(uint48 slashableUntil);
    error TransferFailed();
    error BadArgument(string reason);

    constructor(uint256 minNodeStake_, uint64 unbondingDelay_) {
        if (minNodeStake_ == 0) revert BadArgument("minNodeStake must be > 0");
        minNodeStake = minNodeStake_;
        unbondingDelay = unbondingDelay_;
    }

    /// @notice Registers the caller as a node bound to `peerId` (the libp2p
    /// peer id's multihash bytes), staking the value sent.
    function register(bytes calldata peerId) external payable {
        if (nodes[msg.sender].registered) revert AlreadyRegistered(msg.sender);
        if (msg.value < minNodeStake) revert StakeTooLow(msg.value, minNodeStake);
        if (peerId.length == 0 || peerId.length > MAX_PEER_ID_BYTES) revert BadPeerId();
        bytes32 key = keccak256(peerId);
        address owner = peerOwners[key];
        if (owner != address(0)) revert PeerIdTaken(owner);
        peerOwners[key] = msg.sender;
        nodes[msg.sender] = Node(uint128(msg.value), 0, true, 0, peerId);
        emit NodeRegistered(msg.sender, peerId, msg.value);
    }

    /// @notice Adds the value sent to the caller's stake.
    function addStake() external payable {
        Node storage node = activeNode(msg.sender);
        node.stake += uint128(msg.value);
        emit StakeAdded(msg.sender, msg.value, node.stake);
    }

    /// @notice Starts leaving: the node stops counting for attestations at
    /// once, and its stake stays slashable until the unbonding delay ends.
    function beginExit() external {
        Node storage node = activeNode(msg.sender);
        node.unbondingEnds = uint64(block.timestamp) + unbondingDelay;
        emit ExitStarted(msg.sender, node.unbondingEnds);
    }

    /// @notice Pays back the stake once unbonding has ended and the
    /// challenge window of the node's last credited round has passed, and
    /// frees the peer id.
    function withdrawStake() external {
        Node storage node = nodes[msg.sender];
        if (!node.registered) revert NotRegistered(msg.sender);
        if (node.unbondingEnds == 0) revert NotExiting(msg.sender);
        if (block.timestamp < node.unbondingEnds) revert StillUnbonding(node.unbondingEnds);
        if (block.timestamp < node.slashableUntil) revert StillSlashable(node.slashableUntil);
        uint256 amount = node.stake;
        delete peerOwners[keccak256(node.peerId)];
        delete nodes[msg.sender];
        emit StakeWithdrawn(msg.sender, amount);
        pay(msg.sender, amount);
    }

    function getNode(address account) external view returns (Node memory) {
        return nodes[account];
    }

    function accountOfPeer(bytes calldata peerId) external view returns (address) {
        return peerOwners[keccak256(peerId)];
    }

    function activeNode(address account) internal view returns (Node storage node) {
        node = nodes[account];
        if (!node.registered) revert NotRegistered(account);
        if (node.unbondingEnds != 0) revert NodeExiting(account);
    }

    function pay(address to, uint256 amount) internal {
        (bool ok,) = payable(to).call{value: amount}("");
        if (!ok) revert TransferFailed();
    }
}
