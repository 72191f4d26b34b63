// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import "./ZooEvidence.sol";

/// What the market needs of the registry that deployed it.
interface IZooSeats {
    function createSeatedJob(
        bytes32 job,
        bytes32 genesis,
        uint32 quorum,
        uint32 rounds,
        uint256 minStake,
        uint64 maxWeight
    ) external;
    function setSeat(bytes32 job, address account, bool seated) external;
    function cancelJob(bytes32 job) external;
    function stakedFor(bytes32 job, address account) external view returns (bool);
    function inGoodStanding(bytes32 job, address account) external view returns (bool);
    function contributionOf(bytes32 job, address account) external view returns (uint256);
    function lastCredited(bytes32 job, address account) external view returns (uint32);
    function progress(bytes32 job) external view returns (uint32 nextRound, uint32 rounds, uint64 claimsFrom);
    function workSigner(ZooEvidence.WorkCommitment calldata w, bytes calldata signature)
        external
        view
        returns (address signer, bytes32 digest);
    function verdictSigner(ZooEvidence.AuditFailure calldata f, bytes calldata signature)
        external
        view
        returns (address);
    function slash(address account, bytes32 job, uint8 kind, bytes calldata evidence) external;
}

/// @title ZooMarket
/// @notice Priced jobs: a creator deposits a budget and states a maximum
/// price per verified token and a number of seats; staked providers bid a
/// price at or below it, prove their speed with the job's benchmark, and
/// the lowest admitted bids take the seats, each paid its own bid for the
/// tokens the registry credits it. A seat whose holder left, was slashed
/// or went silent for SILENT_ROUNDS committed rounds reopens to the next
/// bid. A network fee (`feeBps` of every payment) goes to the treasury;
/// what the seats did not earn goes back to the creator.
/// A benchmark is a signed work commitment for round BENCHMARK_ROUND: the
/// job's model trained from its genesis checkpoint on batches drawn from
/// the bid's block hash. The chain times it; the job's members replay it
/// like any audit, and post their failure verdicts here
/// (`failBenchmark`); once the job's quorum of members in good standing
/// has, the market lays the evidence before the registry (kind 2, a
/// failed audit), which slashes the bidder, and its seat reopens.
/// @dev The market is deployed by the registry and is the registry-side
/// creator of every priced job: membership of such a job is a seat, given
/// and taken here. Payments are not moved per round: what a provider is
/// owed is its bid times the contribution the registry holds for it, which
/// slashing and declared losses already reduce, so a commit costs no more
/// than a seat's credit write and a cheat's pay vanishes with its credit.
/// The budget covers every round at the maximum price because the
/// registry caps a contributor's weight at `tokensPerSeat` a round and at
/// most `seats` members are credited.
contract ZooMarket {
    struct Terms {
        bytes32 job;
        bytes32 genesis;
        uint32 quorum;
        uint32 rounds;
        uint256 minStake;
        /// Wei per verified token, the most a seat is paid.
        uint128 maxPrice;
        uint32 seats;
        /// Tokens a seat trains in a round (steps x batch x context): the
        /// registry's cap on one contributor's weight in one round.
        uint64 tokensPerSeat;
        /// Tokens the admission benchmark trains.
        uint64 benchTokens;
        /// The admission bar: a slower provider is refused.
        uint64 minTokensPerSecond;
        /// Seconds from creation during which bids gather before seats fill.
        uint64 biddingWindow;
    }

    struct Market {
        address creator;
        bytes32 genesis;
        uint128 budget;
        uint128 maxPrice;
        uint64 tokensPerSeat;
        uint64 benchTokens;
        uint64 minTokensPerSecond;
        uint64 biddingEnds;
        uint32 seats;
        uint32 filled;
        /// The job's quorum: failure verdicts a faked benchmark needs.
        uint32 quorum;
        bool settled;
        /// Refunds the registry sent back on a cancel (its pool's share of
        /// slashed stake for rounds never committed), owed to the creator.
        uint128 returned;
    }

    enum Stage {
        None,
        /// Bid placed; its benchmark clock runs from the bid's block.
        Bid,
        /// Benchmark fast enough: waiting for a seat.
        Admitted,
        /// Benchmark below the bar.
        Refused,
        Seated,
        /// Lost its seat (left, slashed or silent): it cannot bid again.
        Left
    }

    struct Bid {
        uint128 price;
        uint64 placedAt;
        uint64 placedBlock;
        uint64 tokensPerSecond;
        uint8 class;
        Stage stage;
        /// The registry round the seat was taken at (silence counts from it).
        uint32 seatedRound;
        /// The digest of the benchmark's signed work commitment.
        bytes32 result;
    }

    /// A member's signed failure verdict on a bidder's benchmark.
    struct Verdict {
        address signer;
        bytes signature;
    }

    /// At most this many bids per job: seat filling scans them.
    uint256 public constant MAX_BIDS = 64;
    /// Committed rounds without credit after which a seat reopens.
    uint32 public constant SILENT_ROUNDS = 2;
    /// Capability classes: class c is at least 2^(c-1) times the bar.
    uint8 public constant MAX_CLASS = 4;
    uint16 public constant MAX_FEE_BPS = 10_000;
    /// The round number a benchmark's work commitment carries.
    uint32 public constant BENCHMARK_ROUND = type(uint32).max;

    IZooSeats public immutable registry;
    address public immutable treasury;
    /// The network fee, in basis points of every payment.
    uint16 public immutable feeBps;

    mapping(bytes32 => Market) private markets;
    mapping(bytes32 => mapping(address => Bid)) private bids;
    mapping(bytes32 => address[]) private bidders;
    mapping(bytes32 => mapping(address => bool)) public paid;
    /// Failure verdicts posted on a bidder's benchmark, by job and bidder.
    mapping(bytes32 => mapping(address => Verdict[])) private verdicts;
    /// Fees earned by the treasury and not yet sent.
    uint256 public feesOwed;

    event MarketOpened(
        bytes32 indexed job,
        address indexed creator,
        uint256 budget,
        uint256 maxPrice,
        uint32 seats,
        uint64 tokensPerSeat,
        uint64 biddingEnds
    );
    event BidPlaced(bytes32 indexed job, address indexed account, uint256 price);
    event Admitted(bytes32 indexed job, address indexed account, uint64 tokensPerSecond, uint8 class);
    event BenchmarkRefused(bytes32 indexed job, address indexed account, uint64 tokensPerSecond, uint64 required);
    /// A benchmark's signed work commitment, for the members who replay it.
    event BenchmarkProved(
        bytes32 indexed job, address indexed account, ZooEvidence.WorkCommitment work, bytes signature
    );
    event SeatTaken(bytes32 indexed job, address indexed account, uint256 price, uint32 round);
    /// `reason`: 1 left or slashed (no longer in good standing), 2 silent,
    /// 3 its benchmark failed a quorum's replays.
    event SeatReopened(bytes32 indexed job, address indexed account, uint8 reason);
    event SeatsOpen(bytes32 indexed job, uint32 open);
    event Paid(
        bytes32 indexed job, address indexed account, uint256 tokens, uint256 price, uint256 amount, uint256 fee
    );
    event Refunded(bytes32 indexed job, address indexed creator, uint256 amount);
    /// `signer` replayed `account`'s benchmark and got another state:
    /// the `count`-th such verdict.
    event BenchmarkFailed(bytes32 indexed job, address indexed account, address signer, uint256 count);
    event FeesWithdrawn(address indexed treasury, uint256 amount);

    error NotRegistry();
    error UnknownMarket(bytes32 job);
    error BudgetShort(uint256 budget, uint256 needed);
    error BidAboveMax(uint256 price, uint256 maxPrice);
    error NotStaked(bytes32 job, address account);
    error TooManyBids(bytes32 job);
    error BidClosed(bytes32 job, address account);
    error NoBid(bytes32 job, address account);
    error BenchmarkTooSoon(uint64 placedBlock);
    error BenchmarkExpired(uint64 placedBlock);
    error BiddingOpen(bytes32 job, uint64 biddingEnds);
    error SeatActive(bytes32 job, address account);
    error NotCreator(bytes32 job, address caller);
    error ClaimsClosed(bytes32 job, uint64 claimsFrom);
    error AlreadyPaid(bytes32 job, address account);
    error NothingToClaim(bytes32 job, address account);
    error AlreadySettled(bytes32 job);
    error BadTerms(string reason);
    error BadBenchmark(string reason);
    error BadVerdict(string reason);
    error TransferFailed();

    constructor(address treasury_, uint16 feeBps_) {
        if (feeBps_ > MAX_FEE_BPS) revert BadTerms("fee above 100%");
        if (treasury_ == address(0)) revert BadTerms("treasury is zero");
        registry = IZooSeats(msg.sender);
        treasury = treasury_;
        feeBps = feeBps_;
    }

    /// Refunds the registry pays a cancelled job's creator (here).
    receive() external payable {
        if (msg.sender != address(registry)) revert NotRegistry();
    }

    // --------------------------------------------------------------- create

    /// @notice Opens a priced job: the value sent is its budget, which must
    /// pay every round's seats at the maximum price.
    function createJob(Terms calldata t) external payable {
        if (t.maxPrice == 0) revert BadTerms("max price must be > 0");
        if (t.seats == 0) revert BadTerms("seats must be > 0");
        if (t.quorum > t.seats) revert BadTerms("quorum above seats");
        if (t.tokensPerSeat == 0 || t.benchTokens == 0) revert BadTerms("token counts must be > 0");
        uint256 needed = roundCost(t.maxPrice, t.seats, t.tokensPerSeat) * t.rounds;
        if (msg.value < needed || msg.value == 0) revert BudgetShort(msg.value, needed);
        registry.createSeatedJob(t.job, t.genesis, t.quorum, t.rounds, t.minStake, t.tokensPerSeat);
        Market storage m = markets[t.job];
        m.creator = msg.sender;
        m.genesis = t.genesis;
        m.budget = uint128(msg.value);
        m.maxPrice = t.maxPrice;
        m.tokensPerSeat = t.tokensPerSeat;
        m.benchTokens = t.benchTokens;
        m.minTokensPerSecond = t.minTokensPerSecond;
        m.biddingEnds = uint64(block.timestamp) + t.biddingWindow;
        m.seats = t.seats;
        m.quorum = t.quorum;
        emit MarketOpened(t.job, msg.sender, msg.value, t.maxPrice, t.seats, t.tokensPerSeat, m.biddingEnds);
    }

    /// @notice What one round of `seats` seats costs at `price`.
    function roundCost(uint256 price, uint32 seats, uint64 tokensPerSeat) public pure returns (uint256) {
        return price * seats * tokensPerSeat;
    }

    // ------------------------------------------------------------------ bid

    /// @notice Bids `price` wei per verified token for a seat of `job` and
    /// starts the benchmark clock: the benchmark's data is drawn from this
    /// block's hash (`benchmarkSeed`), unknown until the bid is mined, and
    /// its speed is measured from this block's time to the proof's. A
    /// bidder not yet admitted, or refused, may bid again (the clock
    /// restarts); an admitted one may lower its price.
    function bid(bytes32 job, uint128 price) external {
        Market storage m = knownMarket(job);
        if (price == 0 || price > m.maxPrice) revert BidAboveMax(price, m.maxPrice);
        if (!registry.stakedFor(job, msg.sender)) revert NotStaked(job, msg.sender);
        (uint32 nextRound, uint32 rounds,) = registry.progress(job);
        if (nextRound >= rounds) revert BidClosed(job, msg.sender);
        Bid storage b = bids[job][msg.sender];
        if (b.stage == Stage.None) {
            if (bidders[job].length >= MAX_BIDS) revert TooManyBids(job);
            bidders[job].push(msg.sender);
        }
        if (b.stage == Stage.None || b.stage == Stage.Bid || b.stage == Stage.Refused) {
            b.stage = Stage.Bid;
            b.placedAt = uint64(block.timestamp);
            b.placedBlock = uint64(block.number);
        } else if (b.stage != Stage.Admitted || price > b.price) {
            revert BidClosed(job, msg.sender);
        }
        b.price = price;
        emit BidPlaced(job, msg.sender, price);
        if (b.stage == Stage.Admitted) fill(job, m);
    }

    /// @notice The seed of `account`'s benchmark for `job`: which batches it
    /// trains. Zero until its bid is mined and after 256 blocks.
    function benchmarkSeed(bytes32 job, address account) public view returns (bytes32) {
        Bid storage b = bids[job][account];
        bytes32 hash = blockhash(b.placedBlock);
        if (b.stage == Stage.None || hash == bytes32(0)) return bytes32(0);
        return keccak256(abi.encode(hash, job, account));
    }

    /// @notice Ends the caller's benchmark with `work`, its work commitment
    /// signed by the caller (`signature`, EIP-712 in the registry's domain):
    /// round BENCHMARK_ROUND from the genesis checkpoint, on the batches of
    /// the bid's seed, benchTokens tokens. Its speed, benchTokens over the
    /// seconds since the bid's block, admits it in a class or refuses it;
    /// an admitted bid takes an open seat at once once bidding has closed.
    function proveBenchmark(bytes32 job, ZooEvidence.WorkCommitment calldata work, bytes calldata signature)
        external
    {
        Market storage m = knownMarket(job);
        Bid storage b = bids[job][msg.sender];
        if (b.stage != Stage.Bid) revert NoBid(job, msg.sender);
        if (block.number <= b.placedBlock) revert BenchmarkTooSoon(b.placedBlock);
        bytes32 seed = benchmarkSeed(job, msg.sender);
        if (seed == bytes32(0)) revert BenchmarkExpired(b.placedBlock);
        if (work.job != job || work.round != BENCHMARK_ROUND || work.parent != m.genesis) {
            revert BadBenchmark("not a benchmark of this job from its genesis");
        }
        if (work.data != seed) revert BadBenchmark("not trained on the bid's seed");
        if (work.tokens != m.benchTokens) revert BadBenchmark("not the job's benchmark tokens");
        (address signer, bytes32 digest) = registry.workSigner(work, signature);
        if (signer != msg.sender) revert BadBenchmark("not signed by the bidder");
        uint64 elapsed = uint64(block.timestamp) - b.placedAt;
        if (elapsed == 0) elapsed = 1;
        uint64 speed = m.benchTokens / elapsed;
        b.tokensPerSecond = speed;
        b.result = digest;
        emit BenchmarkProved(job, msg.sender, work, signature);
        if (speed < m.minTokensPerSecond) {
            b.stage = Stage.Refused;
            emit BenchmarkRefused(job, msg.sender, speed, m.minTokensPerSecond);
            return;
        }
        uint8 class = 1;
        uint256 bar = uint256(m.minTokensPerSecond) * 2;
        while (class < MAX_CLASS && speed >= bar && bar > 0) {
            class++;
            bar *= 2;
        }
        b.class = class;
        b.stage = Stage.Admitted;
        emit Admitted(job, msg.sender, speed, class);
        fill(job, m);
    }

    // ---------------------------------------------------------------- seats

    /// @notice Gives open seats of `job` to the lowest admitted bids (ties:
    /// the earlier bid, then the lower address) once bidding has closed.
    function fillSeats(bytes32 job) external {
        Market storage m = knownMarket(job);
        if (block.timestamp < m.biddingEnds) revert BiddingOpen(job, m.biddingEnds);
        fill(job, m);
    }

    /// @notice Reopens `account`'s seat of `job` when it is no longer in
    /// good standing (it left, was slashed or fell below the stake) or went
    /// SILENT_ROUNDS committed rounds without credit since it was seated or
    /// last credited, and gives it to the next bid.
    function reopenSeat(bytes32 job, address account) external {
        Market storage m = knownMarket(job);
        Bid storage b = bids[job][account];
        if (b.stage != Stage.Seated) revert SeatActive(job, account);
        uint8 reason = 0;
        if (!registry.inGoodStanding(job, account)) {
            reason = 1;
        } else {
            (uint32 nextRound,,) = registry.progress(job);
            uint32 since = registry.lastCredited(job, account);
            if (since < b.seatedRound) since = b.seatedRound;
            if (nextRound >= since + SILENT_ROUNDS) reason = 2;
        }
        if (reason == 0) revert SeatActive(job, account);
        b.stage = Stage.Left;
        m.filled--;
        registry.setSeat(job, account, false);
        emit SeatReopened(job, account, reason);
        fill(job, m);
    }

    /// @notice Posts `verdict`, a member's signed AuditFailure on
    /// `account`'s benchmark `work` (round BENCHMARK_ROUND, its commitment
    /// digest), which the member's replay did not reproduce. Once members
    /// in good standing other than the bidder have posted the job's quorum
    /// of them, its bid ends; a seat holder's verdicts go to the registry
    /// as failed-audit evidence, which slashes it (the reporter's tenth to
    /// the caller), and its seat goes to the next bid.
    function failBenchmark(
        bytes32 job,
        address account,
        ZooEvidence.WorkCommitment calldata work,
        bytes calldata workSignature,
        bytes calldata verdict
    ) external {
        Market storage m = knownMarket(job);
        Verdict[] storage held = postVerdict(job, account, work, workSignature, verdict);
        bytes[] memory counted = standingVerdicts(job, held);
        if (counted.length < m.quorum) return;
        convict(job, m, account, abi.encode(work, workSignature, counted));
    }

    /// Checks `verdict` on `account`'s benchmark and keeps it.
    function postVerdict(
        bytes32 job,
        address account,
        ZooEvidence.WorkCommitment calldata work,
        bytes calldata workSignature,
        bytes calldata verdict
    ) private returns (Verdict[] storage held) {
        Bid storage b = bids[job][account];
        if (b.stage != Stage.Admitted && b.stage != Stage.Seated) revert BadVerdict("no admitted benchmark");
        (address worker, bytes32 digest) = registry.workSigner(work, workSignature);
        if (worker != account || digest != b.result) revert BadVerdict("not the bidder's benchmark");
        address signer = registry.verdictSigner(
            ZooEvidence.AuditFailure(job, BENCHMARK_ROUND, account, digest), verdict
        );
        if (signer == address(0) || signer == account || !registry.inGoodStanding(job, signer)) {
            revert BadVerdict("not by another member in good standing");
        }
        held = verdicts[job][account];
        for (uint256 i = 0; i < held.length; i++) {
            if (held[i].signer == signer) revert BadVerdict("already posted");
        }
        held.push(Verdict(signer, verdict));
        emit BenchmarkFailed(job, account, signer, held.length);
    }

    /// Ends `account`'s bid: a seat holder's evidence goes to the
    /// registry, which slashes it (the reporter's bounty to the caller), and
    /// its seat reopens; a bidder not seated yet, not a member the registry
    /// can slash, only loses its bid.
    function convict(bytes32 job, Market storage m, address account, bytes memory evidence) private {
        Bid storage b = bids[job][account];
        bool seated = b.stage == Stage.Seated;
        b.stage = Stage.Left;
        if (!seated) return;
        uint256 before_ = address(this).balance;
        registry.slash(account, job, 2, evidence);
        uint256 bounty = address(this).balance - before_;
        m.filled--;
        emit SeatReopened(job, account, 3);
        fill(job, m);
        send(msg.sender, bounty);
    }

    /// The signatures of `held` whose signers are in good standing now,
    /// sorted by signer as the registry requires.
    function standingVerdicts(bytes32 job, Verdict[] storage held) private view returns (bytes[] memory out) {
        address[] memory signers = new address[](held.length);
        bytes[] memory sigs = new bytes[](held.length);
        uint256 n = 0;
        for (uint256 i = 0; i < held.length; i++) {
            if (!registry.inGoodStanding(job, held[i].signer)) continue;
            // Insertion sort: a handful of verdicts.
            uint256 j = n++;
            while (j > 0 && signers[j - 1] > held[i].signer) {
                signers[j] = signers[j - 1];
                sigs[j] = sigs[j - 1];
                j--;
            }
            signers[j] = held[i].signer;
            sigs[j] = held[i].signature;
        }
        out = new bytes[](n);
        for (uint256 i = 0; i < n; i++) {
            out[i] = sigs[i];
        }
    }

    function fill(bytes32 job, Market storage m) private {
        if (block.timestamp < m.biddingEnds) return;
        (uint32 nextRound, uint32 rounds,) = registry.progress(job);
        if (nextRound >= rounds) return;
        address[] storage all = bidders[job];
        while (m.filled < m.seats) {
            address best = address(0);
            Bid storage top = bids[job][address(0)];
            for (uint256 i = 0; i < all.length; i++) {
                Bid storage b = bids[job][all[i]];
                if (b.stage != Stage.Admitted) continue;
                if (best != address(0) && !before(b, all[i], top, best)) continue;
                if (!registry.stakedFor(job, all[i])) continue;
                best = all[i];
                top = b;
            }
            if (best == address(0)) break;
            top.stage = Stage.Seated;
            top.seatedRound = nextRound;
            m.filled++;
            registry.setSeat(job, best, true);
            emit SeatTaken(job, best, top.price, nextRound);
        }
        if (m.filled < m.seats) emit SeatsOpen(job, m.seats - m.filled);
    }

    function before(Bid storage a, address aAccount, Bid storage b, address bAccount) private view returns (bool) {
        if (a.price != b.price) return a.price < b.price;
        if (a.placedAt != b.placedAt) return a.placedAt < b.placedAt;
        return aAccount < bAccount;
    }

    // ------------------------------------------------------------- payments

    /// @notice Ends `job` early (its creator only): no round after the ones
    /// committed is paid, and what they did not spend is refunded by
    /// `settle` once claims open.
    function cancel(bytes32 job) external {
        Market storage m = knownMarket(job);
        if (msg.sender != m.creator) revert NotCreator(job, msg.sender);
        uint256 before_ = address(this).balance;
        registry.cancelJob(job);
        m.returned += uint128(address(this).balance - before_);
    }

    /// @notice Pays the caller for `job`: its bid times the tokens the
    /// registry credits it, less the network fee, once the job has ended
    /// and its challenge window has passed (a cheat's credit is gone by then).
    function claim(bytes32 job) external {
        knownMarket(job);
        claimsOpen(job);
        if (paid[job][msg.sender]) revert AlreadyPaid(job, msg.sender);
        uint256 tokens = registry.contributionOf(job, msg.sender);
        uint256 price = bids[job][msg.sender].price;
        if (tokens == 0 || price == 0) revert NothingToClaim(job, msg.sender);
        paid[job][msg.sender] = true;
        uint256 amount = tokens * price;
        uint256 fee = (amount * feeBps) / MAX_FEE_BPS;
        feesOwed += fee;
        emit Paid(job, msg.sender, tokens, price, amount, fee);
        send(msg.sender, amount - fee);
    }

    /// @notice Refunds `job`'s creator what its seats did not earn, once
    /// the job has ended and its challenge window has passed. Anyone may
    /// call it.
    function settle(bytes32 job) external {
        Market storage m = knownMarket(job);
        claimsOpen(job);
        if (m.settled) revert AlreadySettled(job);
        m.settled = true;
        uint256 refund = m.budget - spent(job) + m.returned;
        emit Refunded(job, m.creator, refund);
        send(m.creator, refund);
    }

    /// @notice Sends the fees earned so far to the treasury (anyone may).
    function withdrawFees() external {
        uint256 amount = feesOwed;
        feesOwed = 0;
        emit FeesWithdrawn(treasury, amount);
        send(treasury, amount);
    }

    /// @notice What `job`'s seats have earned so far (fees included): each
    /// bidder's price times its credited tokens.
    function spent(bytes32 job) public view returns (uint256 total) {
        address[] storage all = bidders[job];
        for (uint256 i = 0; i < all.length; i++) {
            total += bids[job][all[i]].price * registry.contributionOf(job, all[i]);
        }
    }

    function claimsOpen(bytes32 job) private view {
        (uint32 nextRound, uint32 rounds, uint64 claimsFrom) = registry.progress(job);
        if (nextRound < rounds || block.timestamp < claimsFrom) revert ClaimsClosed(job, claimsFrom);
    }

    // ---------------------------------------------------------------- views

    function getMarket(bytes32 job) external view returns (Market memory) {
        return markets[job];
    }

    function getBid(bytes32 job, address account) external view returns (Bid memory) {
        return bids[job][account];
    }

    function biddersOf(bytes32 job) external view returns (address[] memory) {
        return bidders[job];
    }

    // ------------------------------------------------------------- internal

    function knownMarket(bytes32 job) private view returns (Market storage m) {
        m = markets[job];
        if (m.creator == address(0)) revert UnknownMarket(job);
    }

    function send(address to, uint256 amount) private {
        (bool ok,) = payable(to).call{value: amount}("");
        if (!ok) revert TransferFailed();
    }
}
