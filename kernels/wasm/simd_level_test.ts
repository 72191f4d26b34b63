import { equal, throws } from "node:assert";
import { relaxedSimdSupported, resolveSimdLevel } from "./simd_level.ts";

Deno.test("loader: detects relaxed SIMD (on in Deno 2.9) and resolves auto", () => {
  equal(typeof relaxedSimdSupported(), "boolean");
  equal(
    resolveSimdLevel("auto"),
    relaxedSimdSupported() ? "relaxed" : "simd128",
  );
  equal(resolveSimdLevel("simd128"), "simd128");
  throws(
    () => resolveSimdLevel("avx" as "simd128"),
    /expected "auto", "relaxed" or "simd128"/,
  );
});
