/**
 * A kernel worker: instantiates the kernels on the shared memory with its
 * own stack, says "ready", then serves jobs from the control block until
 * told to quit (see `control_block.ts`). Between jobs it polls, then
 * blocks in Atomics.wait; the pool talks to it only through the memory,
 * never by message.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import { THREADED_KERNELS, threadedFn } from "./abi.ts";
import {
  ALIVE,
  ARGC,
  controlViews,
  ERROR,
  KERNEL,
  NTH,
  PENDING,
  QUIT,
  waitWhileEqual,
  WAKE,
} from "./control_block.ts";
import { instantiateKernels } from "./loader.ts";

/**
 * A busy worker turns its event loop after 20 ms, then at doubling
 * intervals up to 1 s (each turn costs ~30 µs).
 */
const TICK_FIRST_MS = 20;
const TICK_MAX_MS = 1000;

/** One event-loop turn: a message to ourselves (timers take ~1-2 ms). */
function eventLoopTurn(): () => Promise<void> {
  const channel = new MessageChannel();
  let resolve = () => {};
  channel.port1.onmessage = () => resolve();
  return () =>
    new Promise<void>((r) => {
      resolve = r;
      channel.port2.postMessage(0);
    });
}

/** The first message a worker gets. */
export interface WorkerInit {
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  tid: number;
  control: number;
  stackTop: number;
  spinMicros: number;
}

self.onmessage = async (event: MessageEvent<WorkerInit>) => {
  const { module, memory, tid, control, stackTop, spinMicros } = event.data;
  try {
    const ex = await instantiateKernels(module, memory, stackTop);
    const fns = THREADED_KERNELS.map((name) => threadedFn(ex, name));
    self.postMessage({ ready: true });
    await serve(fns, memory, control, tid, spinMicros);
  } catch (error) {
    self.postMessage({ ready: false, error: String(error) });
  }
};

async function serve(
  fns: ((...args: number[]) => void)[],
  memory: WebAssembly.Memory,
  control: number,
  tid: number,
  spinMicros: number,
): Promise<void> {
  const { words, args } = controlViews(memory, control);
  // Wake words start at 0 and the pool posts no job before every worker is
  // ready, so 0 is the last value seen (reading it here could miss a job
  // posted between our "ready" and this line).
  let seen = 0;
  const turn = eventLoopTurn();
  let tickMs = TICK_FIRST_MS;
  let lastTick = performance.now();
  const call: number[] = [];
  for (;;) {
    let now = waitWhileEqual(words, WAKE + tid, seen, spinMicros, true);
    if (now === seen) {
      // Idle: turn the event loop once, then block. V8 installs tiered-up
      // (optimized) wasm code through the event loop: a worker that never
      // turns it runs baseline code forever (4x slower on small kernels).
      // (Atomics.waitAsync would turn it while waiting, but its wake-ups
      // are late or lost in Deno workers.)
      await turn();
      lastTick = performance.now();
      now = waitWhileEqual(words, WAKE + tid, seen, 0);
    }
    seen = now;
    if (Atomics.load(words, QUIT) !== 0) break;
    const nth = words[NTH];
    const argc = words[ARGC];
    call.length = 0;
    for (let i = 0; i < argc; i++) call.push(args[i]);
    call.push(tid, nth);
    try {
      fns[words[KERNEL]](...call);
    } catch {
      Atomics.compareExchange(words, ERROR, 0, tid);
    }
    if (Atomics.sub(words, PENDING, 1) === 1) Atomics.notify(words, PENDING);
    if (performance.now() - lastTick > tickMs) {
      // Busy for long: turn the event loop all the same.
      await turn();
      tickMs = Math.min(2 * tickMs, TICK_MAX_MS);
      lastTick = performance.now();
    }
  }
  Atomics.sub(words, ALIVE, 1);
  Atomics.notify(words, ALIVE);
}
