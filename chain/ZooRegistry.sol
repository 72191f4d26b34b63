// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title ZooRegistry
/// @notice The on-chain side of zoo-node: staked nodes (ZooStaking),
/// training jobs with a reward pool, round commits carrying a quorum of
/// EIP-712 attestations (ZooAttestations), slashing on evidence
/// (ZooEvidence), contribution accounting and pro-rata reward claims.
/// Priced jobs, whose members hold seats won by bids and are paid per
/// verified token, live in the market it deploys (ZooMarket).
/// @dev Every digest here is the sha2-256 digest inside a CIDv1 (raw codec),
/// so off-chain content ids map to bytes32 and back without loss. Rounds are
/// numbered from 0: the commit for round r records checkpoint C(r+1), whose
/// parent is the job's head, starting from the genesis checkpoint C(0).
import "./ZooAttestations.sol";
import "./ZooEvidence.sol";
import "./ZooMarket.sol";
import "./ZooStaking.sol";

contract ZooRegistry is ZooStaking, ZooAttestations, ZooEvidence {
    // ---------------------------------------------------------------- types

    struct Job {
        address creator;
        uint256 rewardPool;
        uint256 minStake;
        uint32 quorum;
        uint32 rounds;
        /// The round the next commit must carry; equals the committed count.
        uint32 nextRound;
        /// Ended by its creator: `rounds` was cut to the rounds committed.
        bool cancelled;
        /// A priced job: members are the market's seat holders, not joiners.
        bool seated;
        /// The most one contributor is credited in a round (0: no cap).
        uint64 maxWeight;
        /// The checkpoint the next commit must name as its parent.
        bytes32 head;
        bytes32 genesis;
        uint256 totalContribution;
        /// Contribution already paid out, for exact pro-rata claims.
        uint256 claimedContribution;
        uint256 paid;
    }

    /// The parent is not stored: it is the previous round's checkpoint (or
    /// the genesis), which saves a fresh slot per commit.
    struct Round {
        bytes32 checkpoint;
        bytes32 manifest;
        address committer;
        uint32 signers;
        uint64 committedAt;
    }

    // ----------------------------------------------------------- constants

    uint256 public constant MAX_CONTRIBUTORS = 256;
    uint256 public constant MAX_SIGNATURES = 256;
    /// A slashing reporter gets 1/REPORTER_SHARE of the stake taken.
    uint256 public constant REPORTER_SHARE = 10;
    /// Refuted failure verdicts after which their signer is slashed.
    uint32 public constant FALSE_VERDICT_STRIKES = 2;
    /// Audits left unanswered while live after which a member is slashed.
    uint32 public constant SILENCE_STRIKES = 2;

    /// Seconds after a job's last commit before rewards can be claimed: time
    /// for the last round's audits to run and their evidence to land, so a
    /// cheat in that round is slashed before it can claim. A deployment
    /// parameter: an hour on a public chain, a minute or two on a devnet
    /// whose rounds and audits take seconds.
    uint64 public immutable challengeWindow;
    /// The market of priced jobs, deployed with the registry.
    ZooMarket public immutable market;

    // ---------------------------------------------------------------- state

    mapping(bytes32 => Job) private jobs;
    mapping(bytes32 => mapping(address => bool)) public isMember;
    mapping(bytes32 => mapping(uint32 => Round)) private roundsOf;
    mapping(bytes32 => mapping(address => uint256)) public contributionOf;
    mapping(bytes32 => mapping(address => bool)) public hasClaimed;
    bytes32[] private jobIds;
    /// Offences already punished: keccak256(account, job, round, kind,
    /// the accused of a false verdict or zero).
    mapping(bytes32 => bool) public punished;
    /// Refuted failure verdicts per job and signer.
    mapping(bytes32 => mapping(address => uint32)) public falseVerdicts;
    /// Audits left unanswered while live, per job and member.
    mapping(bytes32 => mapping(address => uint32)) public silences;
    /// Credit a member gave back for a round whose work it lost, per job,
    /// member and round (0: none declared).
    mapping(bytes32 => mapping(address => mapping(uint32 => uint64))) public lostTokens;
    /// In a priced job, the round after the last one that credited a member
    /// (0: none): how the market tells a silent seat.
    mapping(bytes32 => mapping(address => uint32)) public lastCredited;

    // --------------------------------------------------------------- events

    event NodeSlashed(address indexed account, bytes32 indexed job, uint256 amount);
    /// A quorum refuted `account`'s failure verdict on `accused`'s `round`:
    /// its `strikes`-th in `job`.
    event FalseVerdict(
        address indexed account, bytes32 indexed job, uint32 round, address accused, uint32 strikes
    );
    /// A quorum saw `account`, live, leave its audit of `round` unanswered:
    /// its `strikes`-th in `job`.
    event Silenced(address indexed account, bytes32 indexed job, uint32 round, uint32 strikes);
    /// `account` declared its work for `round` of `job` lost and gave back
    /// `tokens` of its credit.
    event WorkLost(address indexed account, bytes32 indexed job, uint32 round, uint64 tokens);
    event JobCreated(
        bytes32 indexed job,
        address indexed creator,
        bytes32 genesis,
        uint256 rewardPool,
        uint32 quorum,
        uint32 rounds,
        uint256 minStake
    );
    event JobJoined(bytes32 indexed job, address indexed account);
    /// The market took `account`'s seat of `job`: it is no longer a member.
    event SeatVacated(bytes32 indexed job, address indexed account);
    event RoundCommitted(
        bytes32 indexed job,
        uint32 indexed round,
        bytes32 parent,
        bytes32 checkpoint,
        bytes32 manifest,
        address committer,
        address[] contributors,
        uint256[] weights,
        address[] signers
    );
    event RewardClaimed(bytes32 indexed job, address indexed account, uint256 amount);
    event JobCancelled(bytes32 indexed job, uint32 rounds, uint256 refund);

    // --------------------------------------------------------------- errors

    error JobExists(bytes32 job);
    error UnknownJob(bytes32 job);
    error TooManySignatures(uint256 signatures, uint256 max);
    error AlreadyMember(bytes32 job, address account);
    error WrongRound(uint32 expected, uint32 got);
    error WrongParent(bytes32 expected, bytes32 got);
    error JobFinished(bytes32 job);
    error JobNotFinished(bytes32 job);
    error ChallengeWindowOpen(bytes32 job, uint64 claimsFrom);
    error BadContributions(string reason);
    error InvalidSignature(uint256 index);
    error UnknownSigner(address signer);
    error DuplicateSigner(address signer);
    error SignersNotSorted(uint256 index);
    error InsufficientStake(address account, uint256 stake, uint256 required);
    error BelowQuorum(uint256 signatures, uint256 quorum);
    error AlreadyClaimed(bytes32 job, address account);
    error NothingToClaim(bytes32 job, address account);
    error NotMember(bytes32 job, address account);
    error AlreadyPunished(bytes32 offence);
    error NotCreator(bytes32 job, address caller);
    error AlreadyDeclared(bytes32 job, address account, uint32 round);
    error SeatsByBid(bytes32 job);
    error NotMarket(address caller);

    /// @param treasury_ receives the market's network fee, `feeBps_` basis
    /// points of every payment.
    constructor(
        uint256 minNodeStake_,
        uint64 unbondingDelay_,
        uint64 challengeWindow_,
        address treasury_,
        uint16 feeBps_
    ) ZooStaking(minNodeStake_, unbondingDelay_) {
        challengeWindow = challengeWindow_;
        market = new ZooMarket(treasury_, feeBps_);
    }

    // ------------------------------------------------------------- slashing

    /// @notice Slashes `account` on proof of misbehaviour in `job`: `kind` 1
    /// (equivocation), 2 (failed audit, by a quorum of the job's other
    /// members), 3 (a failure verdict of its own that such a quorum
    /// refuted: the first is a strike, recorded and not slashed, the
    /// FALSE_VERDICT_STRIKES-th slashes) or 4 (an audit it left unanswered
    /// while live, by such a quorum: a strike that takes back the round's
    /// credit, the tokens its commitment names, at most what it holds
    /// unclaimed; the SILENCE_STRIKES-th slashes), with `evidence` laid out
    /// as ZooEvidence says. It loses the
    /// job's stake (at least the registry's minimum, at most what it has),
    /// its membership of the job and the contribution it has not claimed
    /// yet, so it earns nothing from the job. A tenth of the stake taken pays the reporter (the gas, and a
    /// reason to look); the rest goes to the job's reward pool, for the
    /// honest contributors. The bounty stays small because a cheater can
    /// report itself from another account: it still loses nine tenths. One
    /// offence (account, job, round, kind, and the accused of a false
    /// verdict) is punished once: equivocation and a failed audit in one
    /// round are two.
    function slash(address account, bytes32 job, uint8 kind, bytes calldata evidence) external {
        Node storage node = nodes[account];
        if (!node.registered) revert NotRegistered(account);
        Job storage j = knownJob(job);
        if (!isMember[job][account]) revert NotMember(job, account);
        (uint32 round, address subject, uint64 tokens) = checkEvidence(account, job, j.quorum, kind, evidence);
        bytes32 offence = keccak256(abi.encode(account, job, round, kind, subject));
        if (punished[offence]) revert AlreadyPunished(offence);
        punished[offence] = true;
        if (kind == EVIDENCE_FALSE_VERDICT) {
            // An honest auditor whose replay went wrong once is warned; one
            // that accuses falsely again is a liar.
            uint32 strikes = ++falseVerdicts[job][account];
            emit FalseVerdict(account, job, round, subject, strikes);
            if (strikes < FALSE_VERDICT_STRIKES) return;
        }
        if (kind == EVIDENCE_SILENCE) {
            // One unanswered audit may be a fault (a stuck server behind a
            // live gossip loop); the round's work went unchecked, so it is
            // not paid for. Twice is a habit.
            uint32 strikes = ++silences[job][account];
            emit Silenced(account, job, round, strikes);
            if (strikes < SILENCE_STRIKES) {
                forfeit(j, job, account, tokens);
                return;
            }
        }
        uint256 amount = j.minStake > minNodeStake ? j.minStake : minNodeStake;
        if (amount > node.stake) amount = node.stake;
        node.stake -= uint128(amount);
        isMember[job][account] = false;
        forfeit(j, job, account, type(uint256).max); // all of it
        uint256 bounty = amount / REPORTER_SHARE;
        j.rewardPool += amount - bounty;
        emit NodeSlashed(account, job, amount);
        pay(msg.sender, bounty);
    }

    /// @notice Declares that the caller lost its work for committed round
    /// `round` of `job` (its disk gone, a browser's storage cleared) and
    /// gives back `tokens` of its unclaimed credit. Auditors that find the
    /// work unserved judge nothing when `tokens` covers what the round
    /// credited the caller (at least 1), so an honest peer that lost its
    /// work loses that round's pay, not its stake. Work it did serve is
    /// judged as any other: a failed replay still convicts.
    function declareLost(bytes32 job, uint32 round, uint64 tokens) external {
        Job storage j = knownJob(job);
        if (!isMember[job][msg.sender]) revert NotMember(job, msg.sender);
        if (round >= j.nextRound) revert BadArgument("round not committed");
        if (tokens == 0) revert BadArgument("tokens must be at least 1");
        if (lostTokens[job][msg.sender][round] != 0) revert AlreadyDeclared(job, msg.sender, round);
        lostTokens[job][msg.sender][round] = tokens;
        forfeit(j, job, msg.sender, tokens);
        emit WorkLost(msg.sender, job, round, tokens);
    }

    /// @dev Takes up to `tokens` of `account`'s contribution to `job` back,
    /// unless it has claimed: what was paid stays paid.
    function forfeit(Job storage j, bytes32 job, address account, uint256 tokens) private {
        if (hasClaimed[job][account]) return;
        uint256 held = contributionOf[job][account];
        if (tokens > held) tokens = held;
        contributionOf[job][account] = held - tokens;
        j.totalContribution -= tokens;
    }

    // ----------------------------------------------------------------- jobs

    /// @notice Creates job `job` (the digest of its spec's CID) with the value
    /// sent as its reward pool.
    function createJob(bytes32 job, bytes32 genesis, uint32 quorum, uint32 rounds, uint256 minStake)
        external
        payable
    {
        if (msg.value == 0) revert BadArgument("reward pool must be > 0");
        newJob(job, genesis, quorum, rounds, minStake);
    }

    /// @notice Creates priced job `job` for the market (its creator here),
    /// whose members are seat holders credited at most `maxWeight` a round.
    function createSeatedJob(
        bytes32 job,
        bytes32 genesis,
        uint32 quorum,
        uint32 rounds,
        uint256 minStake,
        uint64 maxWeight
    ) external {
        if (msg.sender != address(market)) revert NotMarket(msg.sender);
        Job storage j = newJob(job, genesis, quorum, rounds, minStake);
        j.seated = true;
        j.maxWeight = maxWeight;
    }

    function newJob(bytes32 job, bytes32 genesis, uint32 quorum, uint32 rounds, uint256 minStake)
        private
        returns (Job storage j)
    {
        if (jobs[job].creator != address(0)) revert JobExists(job);
        if (job == bytes32(0)) revert BadArgument("job id is zero");
        if (genesis == bytes32(0)) revert BadArgument("genesis checkpoint is zero");
        if (quorum == 0) revert BadArgument("quorum must be > 0");
        if (rounds == 0) revert BadArgument("rounds must be > 0");
        j = jobs[job];
        j.creator = msg.sender;
        j.rewardPool = msg.value;
        j.minStake = minStake;
        j.quorum = quorum;
        j.rounds = rounds;
        j.head = genesis;
        j.genesis = genesis;
        jobIds.push(job);
        emit JobCreated(job, msg.sender, genesis, msg.value, quorum, rounds, minStake);
    }

    /// @notice Gives (`seated`) or takes `account`'s seat of priced job
    /// `job`: its membership. The market's alone to call.
    function setSeat(bytes32 job, address account, bool seated) external {
        if (msg.sender != address(market)) revert NotMarket(msg.sender);
        isMember[job][account] = seated;
        if (seated) emit JobJoined(job, account);
        else emit SeatVacated(job, account);
    }

    /// @notice Makes the caller a member of `job`: members attest rounds and
    /// earn rewards for their contributions. Priced jobs seat their members
    /// by bid instead (`SeatsByBid`).
    function joinJob(bytes32 job) external {
        Job storage j = knownJob(job);
        if (j.seated) revert SeatsByBid(job);
        Node storage node = activeNode(msg.sender);
        if (node.stake < j.minStake) revert InsufficientStake(msg.sender, node.stake, j.minStake);
        if (isMember[job][msg.sender]) revert AlreadyMember(job, msg.sender);
        isMember[job][msg.sender] = true;
        emit JobJoined(job, msg.sender);
    }

    /// @notice Commits round `c.round` of `c.job`: checkpoint C(round+1)
    /// built on `c.parent` from the listed contributions, vouched for by
    /// `signatures`: EIP-712 attestations of `c` from distinct members,
    /// sorted by signer address.
    function commitRound(Attestation calldata c, bytes[] calldata signatures) external {
        Job storage j = knownJob(c.job);
        if (j.nextRound >= j.rounds) revert JobFinished(c.job);
        if (c.round != j.nextRound) revert WrongRound(j.nextRound, c.round);
        if (c.parent != j.head) revert WrongParent(j.head, c.parent);
        if (c.checkpoint == bytes32(0) || c.manifest == bytes32(0)) {
            revert BadArgument("checkpoint and manifest must be set");
        }
        checkContributions(c.contributors, c.weights, j.maxWeight);
        address[] memory signers = checkSignatures(c.job, j.quorum, attestationDigest(c), signatures);

        // A member that left, fell below the stake or was slashed since it
        // trained is listed but earns nothing: the round still commits (a
        // second silence, slashed while the round its manifest lists it in
        // was under way, must not stall the job). One credited
        // stays slashable for the challenge window, whatever its exit.
        uint256 added = 0;
        uint48 slashable = uint48(block.timestamp + challengeWindow);
        for (uint256 i = 0; i < c.contributors.length; i++) {
            if (!isAuditor(c.job, c.contributors[i])) continue;
            contributionOf[c.job][c.contributors[i]] += c.weights[i];
            nodes[c.contributors[i]].slashableUntil = slashable;
            if (j.seated) lastCredited[c.job][c.contributors[i]] = c.round + 1;
            added += c.weights[i];
        }
        j.totalContribution += added;
        j.head = c.checkpoint;
        j.nextRound = c.round + 1;
        roundsOf[c.job][c.round] =
            Round(c.checkpoint, c.manifest, msg.sender, uint32(signers.length), uint64(block.timestamp));
        emit RoundCommitted(
            c.job, c.round, c.parent, c.checkpoint, c.manifest, msg.sender, c.contributors, c.weights, signers
        );
    }

    /// @notice Ends `job` after the rounds committed so far (its creator
    /// only) and refunds the unspent pool: the share of the rounds never
    /// committed. The rest stays for the contributors, claimed as from any
    /// finished job once the challenge window after its last commit has
    /// passed; a job with no commit is refunded whole.
    function cancelJob(bytes32 job) external {
        Job storage j = knownJob(job);
        if (msg.sender != j.creator) revert NotCreator(job, msg.sender);
        if (j.nextRound >= j.rounds) revert JobFinished(job);
        uint256 refund = j.rewardPool - (j.rewardPool * j.nextRound) / j.rounds;
        j.rewardPool -= refund;
        j.rounds = j.nextRound;
        j.cancelled = true;
        emit JobCancelled(job, j.rounds, refund);
        pay(msg.sender, refund);
    }

    // -------------------------------------------------------------- rewards

    /// @notice Pays the caller's share of a finished job's reward pool, in
    /// proportion to its recorded contributions, once the challenge window
    /// after its last commit has passed.
    /// @dev Payouts are differences of a cumulative pro-rata sum, so the last
    /// claim takes the rounding dust and all payouts add up to the pool.
    function claimReward(bytes32 job) external {
        Job storage j = knownJob(job);
        if (j.nextRound < j.rounds) revert JobNotFinished(job);
        uint64 claimsFrom = claimsOpenAt(job, j);
        if (block.timestamp < claimsFrom) revert ChallengeWindowOpen(job, claimsFrom);
        if (hasClaimed[job][msg.sender]) revert AlreadyClaimed(job, msg.sender);
        uint256 share = contributionOf[job][msg.sender];
        if (share == 0) revert NothingToClaim(job, msg.sender);
        hasClaimed[job][msg.sender] = true;
        j.claimedContribution += share;
        uint256 paidAfter = (j.rewardPool * j.claimedContribution) / j.totalContribution;
        uint256 amount = paidAfter - j.paid;
        j.paid = paidAfter;
        emit RewardClaimed(job, msg.sender, amount);
        pay(msg.sender, amount);
    }

    /// @notice What `account` could claim from `job` now (0 before the job
    /// finishes and its challenge window has passed, or after claiming).
    function claimable(bytes32 job, address account) external view returns (uint256) {
        Job storage j = jobs[job];
        uint256 share = contributionOf[job][account];
        if (j.nextRound < j.rounds || share == 0 || hasClaimed[job][account]) return 0;
        if (block.timestamp < claimsOpenAt(job, j)) return 0;
        return (j.rewardPool * (j.claimedContribution + share)) / j.totalContribution - j.paid;
    }

    /// @dev When a finished job's claims open: its last commit plus the
    /// challenge window (a job cancelled before any commit has nothing to
    /// claim).
    function claimsOpenAt(bytes32 job, Job storage j) private view returns (uint64) {
        if (j.rounds == 0) return 0;
        return roundsOf[job][j.rounds - 1].committedAt + challengeWindow;
    }

    // ---------------------------------------------------------------- views

    function getJob(bytes32 job) external view returns (Job memory) {
        return jobs[job];
    }

    /// @notice Committed round `round` of `job` and its parent checkpoint
    /// (all zero when not committed).
    function getRound(bytes32 job, uint32 round) external view returns (Round memory r, bytes32 parent) {
        r = roundsOf[job][round];
        if (r.checkpoint == bytes32(0)) return (r, bytes32(0));
        parent = round == 0 ? jobs[job].genesis : roundsOf[job][round - 1].checkpoint;
    }

    /// @notice Where `job` stands: the round the next commit carries, its
    /// round count, and when its claims open (0 until its last round).
    function progress(bytes32 job) external view returns (uint32 nextRound, uint32 rounds, uint64 claimsFrom) {
        Job storage j = knownJob(job);
        nextRound = j.nextRound;
        rounds = j.rounds;
        if (nextRound >= rounds) claimsFrom = claimsOpenAt(job, j);
    }

    /// @notice Who signed work commitment `w` (zero for a malformed
    /// signature) and its digest: the market checks benchmarks with it.
    function workSigner(WorkCommitment calldata w, bytes calldata signature)
        external
        view
        returns (address signer, bytes32 digest)
    {
        digest = workCommitmentDigest(w);
        signer = signerOf(digest, signature);
    }

    /// @notice Who signed failure verdict `f` (zero for a malformed
    /// signature): the market checks verdicts on benchmarks with it.
    function verdictSigner(AuditFailure calldata f, bytes calldata signature) external view returns (address) {
        return signerOf(auditFailureDigest(f), signature);
    }

    /// @notice Whether `account` could hold a seat of `job`: registered,
    /// not leaving, staked at least the job's minimum.
    function stakedFor(bytes32 job, address account) external view returns (bool) {
        Node storage node = nodes[account];
        return node.registered && node.unbondingEnds == 0 && node.stake >= jobs[job].minStake;
    }

    function jobCount() external view returns (uint256) {
        return jobIds.length;
    }

    function jobAt(uint256 index) external view returns (bytes32) {
        return jobIds[index];
    }

    /// @notice Whether `account` is a member of `job` in good standing now
    /// (registered, not exiting, staked enough): whose attestations and
    /// audit verdicts count.
    function inGoodStanding(bytes32 job, address account) external view returns (bool) {
        return isAuditor(job, account);
    }

    // ------------------------------------------------------------- internal

    function knownJob(bytes32 job) private view returns (Job storage j) {
        j = jobs[job];
        if (j.creator == address(0)) revert UnknownJob(job);
    }

    /// A member in good standing: registered, not exiting, staked enough.
    /// Only such members' signatures and contributions count; one that
    /// started leaving mid-round is skipped, not a reason to refuse the
    /// round (its peers learned of the exit too late to leave it out).
    function isAuditor(bytes32 job, address account) internal view override returns (bool) {
        Node storage node = nodes[account];
        return isMember[job][account] && node.registered && node.unbondingEnds == 0
            && node.stake >= jobs[job].minStake;
    }

    function checkContributions(address[] calldata contributors, uint256[] calldata weights, uint64 maxWeight)
        private
        pure
    {
        if (contributors.length == 0) revert BadContributions("no contributors");
        if (contributors.length > MAX_CONTRIBUTORS) revert BadContributions("too many contributors");
        if (contributors.length != weights.length) revert BadContributions("contributors and weights differ in length");
        address previous = address(0);
        for (uint256 i = 0; i < contributors.length; i++) {
            if (contributors[i] <= previous) revert BadContributions("contributors not sorted ascending and distinct");
            previous = contributors[i];
            if (weights[i] == 0) revert BadContributions("zero weight");
            if (maxWeight != 0 && weights[i] > maxWeight) revert BadContributions("weight above the job's cap");
        }
    }

    /// The signers that count: members in good standing. A member that
    /// started leaving is skipped; a stranger, or a node no longer
    /// registered, reverts.
    function checkSignatures(bytes32 job, uint32 quorum, bytes32 digest, bytes[] calldata signatures)
        private
        view
        returns (address[] memory signers)
    {
        if (signatures.length > MAX_SIGNATURES) revert TooManySignatures(signatures.length, MAX_SIGNATURES);
        signers = new address[](signatures.length);
        uint256 counted = 0;
        address previous = address(0);
        for (uint256 i = 0; i < signatures.length; i++) {
            address signer = recover(digest, signatures[i], i);
            // Membership first: a signature over other data recovers to a
            // random address, which must read as unknown wherever it sorts.
            if (!isMember[job][signer] || !nodes[signer].registered) revert UnknownSigner(signer);
            if (signer == previous) revert DuplicateSigner(signer);
            if (signer < previous) revert SignersNotSorted(i);
            previous = signer;
            if (isAuditor(job, signer)) signers[counted++] = signer;
        }
        if (counted < quorum) revert BelowQuorum(counted, quorum);
        // Shortening the array to the signers that counted: memory-safe.
        assembly ("memory-safe") {
            mstore(signers, counted)
        }
    }

    function recover(bytes32 digest, bytes calldata signature, uint256 index) private pure returns (address) {
        address signer = signerOf(digest, signature);
        if (signer == address(0)) revert InvalidSignature(index);
        return signer;
    }
}
