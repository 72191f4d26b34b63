/**
 * The control block through which the main thread hands kernel calls to the
 * worker threads: a few words of the shared memory, driven with
 * Atomics.wait/notify (no message per call). Layout, in int32 words from
 * the block's start:
 *
 *   0  PENDING   workers still running the current job
 *   1  KERNEL    job: index into THREADED_KERNELS
 *   2  NTH       job: threads taking part (main is tid 0)
 *   3  ARGC      job: number of arguments
 *   4  QUIT      set to 1 to stop the workers
 *   5  ERROR     tid of the first worker whose kernel threw, or 0
 *   6  ALIVE     workers still in their loop
 *   16 + w       wake word of worker w (the job's sequence number)
 *   float64 args from byte ARGS_BYTE on
 *
 * The main thread writes the job, sets PENDING, then bumps the wake words of
 * workers 1..NTH-1 only; each decrements PENDING when done and the last one
 * notifies. Workers never read the job after their decrement, and main
 * never writes it before PENDING is 0.
 *
 * @module
 */

export const PENDING = 0;
export const KERNEL = 1;
export const NTH = 2;
export const ARGC = 3;
export const QUIT = 4;
export const ERROR = 5;
export const ALIVE = 6;
export const WAKE = 16;

/** Most threads a pool may have (wake words fit below the args). */
export const MAX_THREADS = 64;
/** Byte offset of the float64 arguments. */
export const ARGS_BYTE = (WAKE + MAX_THREADS) * 4;
/** Most arguments of one job. */
export const MAX_ARGS = 32;
/** Bytes of the block. */
export const CONTROL_BYTES = ARGS_BYTE + MAX_ARGS * 8;

/**
 * Microseconds a waiting thread polls before it blocks. Waking a blocked
 * thread costs ~45 µs here (a futex on a VM), a polling one ~3 µs, and the
 * gaps between a training step's threaded kernels are mostly shorter than
 * this. Spinning is turned off when threads outnumber cores.
 */
export const SPIN_MICROS = 300;

/** Int32 and float64 views of a control block. */
export function controlViews(
  memory: WebAssembly.Memory,
  offset: number,
): { words: Int32Array; args: Float64Array } {
  return {
    words: new Int32Array(memory.buffer, offset, ARGS_BYTE / 4),
    args: new Float64Array(memory.buffer, offset + ARGS_BYTE, MAX_ARGS),
  };
}

/**
 * Waits until words[index] !== value: polls `spinMicros`, then blocks (or,
 * with `spinOnly`, returns `value` to let the caller wait asynchronously).
 */
export function waitWhileEqual(
  words: Int32Array,
  index: number,
  value: number,
  spinMicros: number,
  spinOnly = false,
): number {
  if (spinMicros > 0) {
    const end = performance.now() + spinMicros / 1000;
    do {
      for (let i = 0; i < 100; i++) {
        const now = Atomics.load(words, index);
        if (now !== value) return now;
      }
    } while (performance.now() < end);
  }
  if (spinOnly) return value;
  for (;;) {
    Atomics.wait(words, index, value);
    const now = Atomics.load(words, index);
    if (now !== value) return now;
  }
}
