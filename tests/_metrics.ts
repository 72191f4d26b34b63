// deno-lint-ignore-file no-import-prefix -- a test and bench package, named
// here by its full specifier rather than in deno.json, so that a first run of
// the product does not fetch it (see deno.json's imports).
/**
 * Reading `/metrics` in tests: Prometheus' own linter (`promtool check
 * metrics`) and an independent parser, so a test never checks the
 * exposition against the renderer's own idea of it.
 */
import parsePrometheus from "npm:parse-prometheus-text-format@1.1.1";
import { which } from "./_tools.ts";

/** promtool on PATH (CI copies it out of Debian's prometheus package). */
export const PROMTOOL: string | null = which("promtool");

/** Runs `promtool check metrics` on `text`; returns its exit code and output. */
export async function promtool(
  text: string,
): Promise<{ code: number; out: string }> {
  if (PROMTOOL === null) throw new Error("promtool is not installed");
  const child = new Deno.Command(PROMTOOL, {
    args: ["check", "metrics"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  const dec = new TextDecoder();
  return { code, out: dec.decode(stdout) + dec.decode(stderr) };
}

/** One metric family as the parser returns it. */
export interface Family {
  name: string;
  type: string;
  metrics: {
    labels?: Record<string, string>;
    value?: string;
    buckets?: Record<string, string>;
    count?: string;
  }[];
}

/** Parses exposition text; throws on lines the format does not allow. */
export function parseMetrics(text: string): Family[] {
  return parsePrometheus(text);
}

/** The value of `name` with exactly `labels`, or null when absent. */
export function sample(
  families: Family[],
  name: string,
  labels: Record<string, string> = {},
): number | null {
  const family = families.find((f) => f.name === name);
  const m = family?.metrics.find((m) =>
    JSON.stringify(m.labels ?? {}) === JSON.stringify(labels)
  );
  return m?.value === undefined ? null : Number(m.value);
}
