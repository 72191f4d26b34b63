/**
 * The test tiers. `deno task check` runs the unit tests beside the code
 * with `ZOO_TEST_TIER=quick`, in under two minutes on a 2-core machine;
 * `deno task test` (what CI runs) runs everything. A unit test that takes
 * seconds (a few training rounds, a subprocess, a key derivation) is
 * passed {@linkcode FULL_TIER}, so the quick tier skips it with a visible
 * "ignored" and the full tier runs it.
 *
 * @example Marking a slow test
 * ```ts ignore
 * Deno.test("trains three rounds", FULL_TIER, async () => {});
 * ```
 *
 * @module
 */

/** Test options that leave a slow test to the full tier. */
export const FULL_TIER: { readonly ignore: boolean } = {
  ignore: Deno.env.get("ZOO_TEST_TIER") === "quick",
};
