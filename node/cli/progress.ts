/**
 * A progress bar for long work: redrawn in place on a terminal, a line per
 * tenth of the work otherwise (logs, CI), always on stderr so stdout stays
 * for results.
 */
export class Progress {
  readonly #total: number;
  readonly #label: string;
  readonly #tty: boolean;
  readonly #started = performance.now();
  #lastTenth = -1;

  constructor(total: number, label: string) {
    this.#total = total;
    this.#label = label;
    this.#tty = Deno.stderr.isTerminal();
  }

  /** Reports `done` units of work with a short status text. */
  update(done: number, status: string): void {
    const elapsed = (performance.now() - this.#started) / 1000;
    const eta = done > 0 ? (elapsed / done) * (this.#total - done) : NaN;
    const width = 24;
    const filled = Math.round((width * done) / this.#total);
    const bar = "#".repeat(filled) + ".".repeat(width - filled);
    const line = `${this.#label} [${bar}] ${done}/${this.#total} ${status} | ${
      formatDuration(elapsed)
    } elapsed, ETA ${formatDuration(eta)}`;
    if (this.#tty) {
      write(`\r\x1b[2K${line}`);
      return;
    }
    const tenth = Math.floor((10 * done) / this.#total);
    if (tenth !== this.#lastTenth) {
      this.#lastTenth = tenth;
      write(`${line}\n`);
    }
  }

  /** Ends the bar's line. */
  finish(): void {
    if (this.#tty) write("\n");
  }
}

/** 75 → "1:15", 3725 → "1:02:05". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "--:--";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  const mm = h > 0 ? String(m).padStart(2, "0") : String(m);
  return `${h > 0 ? `${h}:` : ""}${mm}:${String(r).padStart(2, "0")}`;
}

function write(text: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(text));
}
