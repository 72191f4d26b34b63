/**
 * How busy the rest of the machine was while a section ran: CPU time of the
 * whole machine (/proc/stat, steal included) minus this process's and its
 * waited-for children's (/proc/self/stat), per second of wall time. On a
 * shared 2-core box, 0.3 "other cores" is enough to spoil a 2-thread number.
 * Linux only; elsewhere every figure is null.
 *
 * @module
 */

/** Clock ticks per second of /proc (USER_HZ, 100 on every Linux port). */
const TICKS = 100;

/** CPU seconds at one instant. */
export interface CpuSample {
  wall: number;
  /** Busy time of all CPUs together. */
  machine: number;
  /** This process and its reaped children. */
  self: number;
}

/** The current sample, or null where /proc cannot be read. */
export function cpuSample(): CpuSample | null {
  try {
    const stat = Deno.readTextFileSync("/proc/stat");
    const cpu = stat.slice(0, stat.indexOf("\n")).trim().split(/\s+/).slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal: busy = all but idle, iowait
    const busy = cpu.slice(0, 8).reduce((a, b) => a + b, 0) - cpu[3] - cpu[4];
    const own = Deno.readTextFileSync("/proc/self/stat");
    // Fields after "(comm)": state is field 3, utime..cstime are 14..17.
    const f = own.slice(own.lastIndexOf(")") + 2).split(" ").map(Number);
    return {
      wall: performance.now() / 1000,
      machine: busy / TICKS,
      self: (f[11] + f[12] + f[13] + f[14]) / TICKS,
    };
  } catch {
    return null;
  }
}

/** Average cores used by other processes between two samples. */
export function otherCores(
  from: CpuSample | null,
  to: CpuSample | null,
): number | null {
  if (!from || !to || to.wall <= from.wall) return null;
  const others = (to.machine - from.machine) - (to.self - from.self);
  return Math.max(0, others / (to.wall - from.wall));
}
