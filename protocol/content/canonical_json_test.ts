import { strictEqual, throws } from "node:assert";
import { canonicalJson } from "./canonical_json.ts";

Deno.test("canonicalJson sorts keys at every level, without whitespace", () => {
  strictEqual(
    canonicalJson({ z: 1, a: { y: [3, { c: null, b: "é\n" }], x: false } }),
    '{"a":{"x":false,"y":[3,{"b":"é\\n","c":null}]},"z":1}',
  );
  // Insertion order does not matter; code-unit order puts "B" before "a".
  strictEqual(canonicalJson({ a: 1, B: 2 }), canonicalJson({ B: 2, a: 1 }));
  strictEqual(canonicalJson({ a: 1, B: 2 }), '{"B":2,"a":1}');
});

Deno.test("canonicalJson writes numbers in their shortest form", () => {
  strictEqual(
    canonicalJson([0.7, 1e-8, 3e-3, -0, 1e21, 65536]),
    "[0.7,1e-8,0.003,0,1e+21,65536]",
  );
});

Deno.test("canonicalJson refuses values JSON cannot hold", () => {
  for (const bad of [NaN, Infinity, undefined, 1n, () => 0]) {
    throws(() => canonicalJson({ a: bad }), TypeError);
  }
});
