/** Corpus cache shared by the tests of one machine, so it is fetched once. */
export const CORPUS_CACHE = `${
  Deno.env.get("TMPDIR") ?? "/tmp"
}/zoo-test-cache`;
