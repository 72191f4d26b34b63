/**
 * `zoo-node job market <job id>`: a priced job as its market holds it:
 * the terms, the seats taken, and every bid with its price, stage,
 * benchmark speed and class, and the tokens the registry credits it.
 * What a creator watches while seats fill, and what says a job waits for
 * want of an admitted bid.
 *
 * @module
 */
import { formatEther } from "viem";
import { RAW_CODEC } from "../../protocol/content/cid.ts";
import { bytes32ToCid } from "../../chain/attestation.ts";
import { ChainError } from "../../chain/errors.ts";
import {
  listBidders,
  marketOf,
  readBid,
  readMarket,
  spentOf,
} from "../../chain/market.ts";
import { contributionOf, readJob } from "../../chain/registry.ts";
import { sessionRegistry } from "../chain_session.ts";
import type { Config } from "../config.ts";
import { priceText } from "../job/seat.ts";
import { parseJobId, withSession } from "./chain.ts";
import type { ChainCommand } from "./parse_chain.ts";

/** `zoo-node job market <job id> [--json]`. */
export function jobMarket(
  config: Config,
  command: Extract<ChainCommand, { kind: "job-market" }>,
): Promise<number> {
  const job = parseJobId(command.job);
  const id = bytes32ToCid(job, RAW_CODEC);
  return withSession(config, async (session) => {
    const reg = await sessionRegistry(session, config);
    const market = await marketOf(reg);
    const [terms, record] = await Promise.all([
      readMarket(market, job),
      readJob(reg, job),
    ]);
    if (!record.seated) {
      throw new ChainError(
        `job ${id} is not priced: it pays a pool ("zoo-node rewards")`,
        null,
      );
    }
    const bids = await Promise.all(
      (await listBidders(market, job)).map(async (account) => ({
        account,
        bid: await readBid(market, job, account),
        tokens: await contributionOf(reg, job, account),
      })),
    );
    const spent = await spentOf(market, job);
    const now = (await reg.client.public.getBlock()).timestamp;
    const open = now < terms.biddingEnds;
    if (command.json) {
      console.log(JSON.stringify({
        job: id,
        maxPrice: String(terms.maxPrice),
        budget: String(terms.budget),
        spent: String(spent),
        seats: terms.seats,
        filled: terms.filled,
        biddingEnds: Number(terms.biddingEnds),
        minTokensPerSecond: String(terms.minTokensPerSecond),
        roundsCommitted: record.nextRound,
        rounds: record.rounds,
        bids: bids.map(({ account, bid, tokens }) => ({
          account,
          price: String(bid.price),
          stage: bid.stage,
          tokensPerSecond: String(bid.tokensPerSecond),
          capabilityClass: bid.capabilityClass,
          seatedRound: bid.stage === "seated" || bid.stage === "left"
            ? bid.seatedRound
            : null,
          tokens: String(tokens),
        })),
      }));
      return 0;
    }
    console.log(
      `job       ${id}: round ${record.nextRound}/${record.rounds}, ${terms.filled} of ${terms.seats} seats taken`,
    );
    console.log(
      `market    at most ${priceText(terms.maxPrice)}; budget ${
        formatEther(terms.budget)
      } ETH, earned so far ${
        formatEther(spent)
      } ETH; admission ${terms.minTokensPerSecond} tokens/s; bidding ${
        open ? "open until" : "closed at"
      } ${new Date(Number(terms.biddingEnds) * 1000).toISOString()}`,
    );
    for (const { account, bid, tokens } of bids) {
      const speed = bid.tokensPerSecond > 0n
        ? `, ${bid.tokensPerSecond} tokens/s${
          bid.capabilityClass > 0 ? ` class ${bid.capabilityClass}` : ""
        }`
        : "";
      const seat = bid.stage === "seated" || bid.stage === "left"
        ? ` from round ${bid.seatedRound}`
        : "";
      console.log(
        `bid       ${account} ${
          priceText(bid.price)
        }: ${bid.stage}${seat}${speed}; ${tokens} tokens credited`,
      );
    }
    const waiting = bids.some((b) => b.bid.stage === "admitted");
    if (terms.filled < terms.seats && !waiting && !open) {
      console.log(
        `seats     ${
          terms.seats - terms.filled
        } open and no admitted bid waits for them: they go to the next bid whose benchmark clears the bar`,
      );
    }
    return 0;
  });
}
