/**
 * Outside programs some tests drive (a browser, Prometheus' own linter),
 * and the rule for when one is missing: skip with a visible note on a
 * developer's machine, fail under CI (CI=true), where `.ci/run` installs
 * them.
 */

/** Debian's chromium, driven by playwright-core. */
export const CHROMIUM = "/usr/bin/chromium";

/** The path of `name` on PATH, or null. */
export function which(name: string): string | null {
  const dirs = (Deno.env.get("PATH") ?? "").split(":");
  return dirs.map((dir) => `${dir}/${name}`).find(isFile) ?? null;
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Whether a test needing `path` must be skipped: true (after printing why)
 * when the program is missing outside CI; throws when it is missing under
 * CI.
 */
export function skipWithout(path: string | null, what: string): boolean {
  if (path !== null && isFile(path)) return false;
  if (Deno.env.get("CI") === "true") {
    throw new Error(
      `${what} is missing under CI: .ci/run must install it`,
    );
  }
  console.warn(
    `SKIPPED: ${what} is not installed here; see .ci/run for how to install it`,
  );
  return true;
}
