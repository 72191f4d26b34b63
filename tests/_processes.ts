/**
 * What is left running after a command: processes seen in /proc.
 *
 * @module
 */

/** Pids of live processes whose command line mentions `text`. */
export async function processesMentioning(text: string): Promise<number[]> {
  const found: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`)
      .catch(() => "");
    const state = await Deno.readTextFile(`/proc/${entry.name}/stat`)
      .catch(() => "");
    // A zombie has exited: only its parent's wait is missing.
    if (cmdline.includes(text) && !/^\d+ \(.*\) Z/.test(state)) {
      found.push(Number(entry.name));
    }
  }
  return found;
}
