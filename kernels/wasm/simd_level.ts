/**
 * Which build of the kernels runs: relaxed SIMD (fused multiply-add) where
 * the engine supports it, else plain SIMD.
 *
 * @module
 */
/** Which build of the kernels to run. */
export type SimdLevel = "relaxed" | "simd128";

/** A module whose only function uses f32x4.relaxed_madd (opcode 0xfd 0x105). */
const RELAXED_PROBE = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00,
  0x01,
  0x08,
  0x01,
  0x60,
  0x03,
  0x7b,
  0x7b,
  0x7b,
  0x01,
  0x7b,
  0x03,
  0x02,
  0x01,
  0x00,
  0x0a,
  0x0d,
  0x01,
  0x0b,
  0x00,
  0x20,
  0x00,
  0x20,
  0x01,
  0x20,
  0x02,
  0xfd,
  0x85,
  0x02,
  0x0b,
]);

/** Whether this engine runs relaxed SIMD (fused multiply-add). */
export function relaxedSimdSupported(): boolean {
  return WebAssembly.validate(RELAXED_PROBE);
}

/** The build to use for `simd` ("auto" picks relaxed where supported). */
export function resolveSimdLevel(simd: "auto" | SimdLevel = "auto"): SimdLevel {
  if (simd === "auto") return relaxedSimdSupported() ? "relaxed" : "simd128";
  if (simd === "relaxed" && !relaxedSimdSupported()) {
    throw new RangeError(
      'Cannot use simd "relaxed" as this engine lacks relaxed SIMD: use "auto" or "simd128"',
    );
  }
  if (simd !== "relaxed" && simd !== "simd128") {
    throw new RangeError(
      `Cannot use simd "${simd}": expected "auto", "relaxed" or "simd128"`,
    );
  }
  return simd;
}
