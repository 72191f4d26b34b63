/**
 * Amounts and claims as people read them, for the CLI's `status`, the
 * browser peer's page and their tests: whole token counts, ETH that never
 * reads 0.000000 for a nonzero amount, the rounds that credited a peer
 * (numbered from 0, as everywhere), and when its reward can be claimed.
 * The status page's script embeds formatTokens, formatEther and claimsLine
 * by their source (./page_script.ts), so these three refer to nothing
 * outside themselves.
 *
 * @module
 */
import type { Contributions } from "./types.ts";

/**
 * Token counts in full, with thousands separators.
 *
 * @example
 * ```ts
 * import { formatTokens } from "./status_text.ts";
 * import { strictEqual } from "node:assert";
 *
 * strictEqual(formatTokens("401408"), "401,408");
 * ```
 */
export function formatTokens(n: string | bigint): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/**
 * Wei as ETH, cut (never rounded up) to six decimals, or for an amount
 * under a millionth to its first 4 significant digits: a nonzero stake or
 * reward must not read 0.000000.
 *
 * @example
 * ```ts
 * import { formatEther } from "./status_text.ts";
 * import { strictEqual } from "node:assert";
 *
 * strictEqual(formatEther(1234n), "0.000000000000001234 ETH");
 * strictEqual(formatEther("1500000000000000000"), "1.5 ETH");
 * ```
 */
export function formatEther(wei: string | bigint): string {
  // Inside the function: the status page's script embeds its source.
  const WEI_PER_ETH = 10n ** 18n;
  const w = BigInt(wei);
  const whole = w / WEI_PER_ETH;
  const frac = (w % WEI_PER_ETH).toString().padStart(18, "0");
  const lead = frac.search(/[1-9]/);
  const keep = whole > 0n || lead < 6 ? 6 : Math.min(18, lead + 4);
  const shown = frac.slice(0, keep).replace(/0+$/, "");
  return `${whole}${shown ? `.${shown}` : ""} ETH`;
}

/** Rounds listed by number before the older ones are elided. */
const ROUNDS_LISTED = 8;

/**
 * The tokens the chain credits the account with and the rounds that
 * credited it, numbered from 0 as everywhere else.
 */
export function creditLine(c: Contributions): string {
  const rounds = c.contributedRounds;
  if (rounds.length === 0) return "0 tokens, in no round yet";
  const listed = rounds.length > ROUNDS_LISTED
    ? `…, ${rounds.slice(-ROUNDS_LISTED).join(", ")}`
    : rounds.join(", ");
  return `${formatTokens(c.contribution)} tokens in ${rounds.length} round${
    rounds.length === 1 ? "" : "s"
  } (${listed})`;
}

/** When the reward can be claimed, as the chain has it. */
export function claimsLine(c: Contributions, nowMs: number): string {
  if (c.stage === "claimed") return "claimed";
  if (c.stage === "none") return "nothing credited to claim";
  if (c.claimsFrom === null) {
    return `claims open after round ${c.rounds - 1} commits + challenge window`;
  }
  const at = new Date(c.claimsFrom * 1000).toISOString().slice(0, 16)
    .replace("T", " ");
  return `claims open ${c.claimsFrom * 1000 <= nowMs ? "since " : ""}${at} UTC`;
}
