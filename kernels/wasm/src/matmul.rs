//! out[m,n] (+)= op(a)[m,k] @ op(b)[k,n], Goto/BLIS style.
//!
//! Loops, outermost first: NC columns of B (packed once per thread into a
//! KC x NC block), KC steps of k, MC rows of A (packed into an MC x KC
//! block), then NR-wide and MR-tall micro-tiles computed by one register-
//! blocked micro-kernel. Edges are zero-padded in the packed panels so edge
//! tiles run the same micro-kernel as interior ones.
//!
//! Determinism: every output element is `sum over KC blocks (in order) of
//! (FMA chain over k in order, starting from 0)`, added to out, whatever tile
//! or thread computes it. Splitting rows or columns across threads therefore
//! gives bit-identical results for any thread count.

use crate::simd::*;
use core::arch::wasm32::*;
use core::sync::atomic::{compiler_fence, Ordering};

/// Micro-tile rows (packing assumes 4).
pub const MR: usize = 4;
/// Micro-tile columns (a multiple of 4).
pub const NR: usize = 8;
const NV: usize = NR / 4;
/// k block; part of the arithmetic (fixed, never depends on threads).
pub const KC: usize = 256;
/// Rows of A packed at once (a multiple of MR).
pub const MC: usize = 128;
/// Columns of B packed at once (a multiple of NR).
pub const NC: usize = 2048;

/// Floats of per-thread scratch: packed A block, packed B block, edge tile.
pub const SCRATCH_FLOATS: usize = MC * KC + KC * NC + MR * NR;

pub const TRANS_A: u32 = 1;
pub const TRANS_B: u32 = 2;
pub const ACCUMULATE: u32 = 4;

/// The micro-kernel: tile (+)= Ap[MR x kc] @ Bp[kc x NR] for the top-left
/// `mr x nr` of the tile at `c` (row stride `ldc`).
#[inline(never)]
unsafe fn kernel(
    kc: usize,
    ap: *const f32,
    bp: *const f32,
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    overwrite: bool,
    tile: *mut f32,
) {
    let mut acc = [[f32x4_splat(0.0); NV]; MR];
    let mut a = ap;
    let mut b = bp;
    for _ in 0..kc {
        // One B vector at a time. The fences keep LLVM's loads in this
        // order; V8 then reuses each broadcast for the second B vector, so
        // 8 accumulators + MR broadcasts + 1 B vector are live: 13 of V8's
        // 15 SIMD registers. (6x8 or 4x12 tiles spill and run at half speed;
        // unrolling k does too. Measured: 4x8 ~55 GFLOP/s with FMA.)
        for j in 0..NV {
            compiler_fence(Ordering::SeqCst);
            let bv = load(b.add(4 * j));
            for r in 0..MR {
                compiler_fence(Ordering::SeqCst);
                let av = v128_load32_splat(a.add(r) as *const u32);
                acc[r][j] = madd(av, bv, acc[r][j]);
            }
        }
        a = a.add(MR);
        b = b.add(NR);
    }
    if mr == MR && nr == NR {
        for r in 0..MR {
            for j in 0..NV {
                let p = c.add(r * ldc + 4 * j);
                let v = if overwrite {
                    acc[r][j]
                } else {
                    f32x4_add(load(p), acc[r][j])
                };
                store(p, v);
            }
        }
    } else {
        for r in 0..MR {
            for j in 0..NV {
                store(tile.add(r * NR + 4 * j), acc[r][j]);
            }
        }
        for r in 0..mr {
            for j in 0..nr {
                let p = c.add(r * ldc + j);
                let t = *tile.add(r * NR + j);
                *p = if overwrite { t } else { *p + t };
            }
        }
    }
}

/// A matrix operand: element (i, p) of op(x) is x[i*rs + p*cs].
#[derive(Clone, Copy)]
struct Operand {
    ptr: *const f32,
    rs: usize,
    cs: usize,
}

impl Operand {
    #[inline(always)]
    unsafe fn at(&self, i: usize, p: usize) -> f32 {
        *self.ptr.add(i * self.rs + p * self.cs)
    }
}

/// Packs rows i0..i0+mc, k p0..p0+kc of op(A) into MR-row panels, k-major.
unsafe fn pack_a(dst: *mut f32, a: Operand, i0: usize, p0: usize, mc: usize, kc: usize) {
    let mut ir = 0;
    while ir < mc {
        let rows = if mc - ir < MR { mc - ir } else { MR };
        let panel = dst.add(ir * kc);
        if rows == MR && a.rs == 1 {
            // transA: MR contiguous floats per k.
            for p in 0..kc {
                let src = a.ptr.add((p0 + p) * a.cs + i0 + ir);
                let d = panel.add(p * MR);
                let mut r = 0;
                while r + 4 <= MR {
                    store(d.add(r), load(src.add(r)));
                    r += 4;
                }
                while r < MR {
                    *d.add(r) = *src.add(r);
                    r += 1;
                }
            }
        } else if rows == MR {
            // Row-major A: 4x4 transposes of MR = 4 rows.
            let src = a.ptr.add((i0 + ir) * a.rs + p0);
            let mut p = 0;
            while p + 4 <= kc {
                let s = src.add(p);
                let t = transpose4(
                    load(s),
                    load(s.add(a.rs)),
                    load(s.add(2 * a.rs)),
                    load(s.add(3 * a.rs)),
                );
                for (q, v) in t.iter().enumerate() {
                    store(panel.add((p + q) * MR), *v);
                }
                p += 4;
            }
            while p < kc {
                for r in 0..MR {
                    *panel.add(p * MR + r) = *src.add(r * a.rs + p);
                }
                p += 1;
            }
        } else {
            for p in 0..kc {
                for r in 0..MR {
                    *panel.add(p * MR + r) = if r < rows {
                        a.at(i0 + ir + r, p0 + p)
                    } else {
                        0.0
                    };
                }
            }
        }
        ir += MR;
    }
}

#[inline(always)]
fn transpose4(r0: v128, r1: v128, r2: v128, r3: v128) -> [v128; 4] {
    let t0 = i32x4_shuffle::<0, 4, 1, 5>(r0, r1);
    let t1 = i32x4_shuffle::<2, 6, 3, 7>(r0, r1);
    let t2 = i32x4_shuffle::<0, 4, 1, 5>(r2, r3);
    let t3 = i32x4_shuffle::<2, 6, 3, 7>(r2, r3);
    [
        i32x4_shuffle::<0, 1, 4, 5>(t0, t2),
        i32x4_shuffle::<2, 3, 6, 7>(t0, t2),
        i32x4_shuffle::<0, 1, 4, 5>(t1, t3),
        i32x4_shuffle::<2, 3, 6, 7>(t1, t3),
    ]
}

/// Packs k p0..p0+kc, columns j0..j0+nc of op(B) into NR-column panels,
/// k-major. op(B)(p, j) is b[p*rs + j*cs].
unsafe fn pack_b(dst: *mut f32, b: Operand, p0: usize, j0: usize, kc: usize, nc: usize) {
    let mut jr = 0;
    while jr < nc {
        let cols = if nc - jr < NR { nc - jr } else { NR };
        let panel = dst.add(jr * kc);
        if cols == NR && b.cs == 1 {
            // Row-major B: NR contiguous floats per k.
            for p in 0..kc {
                let src = b.ptr.add((p0 + p) * b.rs + j0 + jr);
                let d = panel.add(p * NR);
                for j in 0..NV {
                    store(d.add(4 * j), load(src.add(4 * j)));
                }
            }
        } else if cols == NR {
            // transB: column j of op(B) is contiguous in k; 4x4 transposes.
            let mut p = 0;
            while p + 4 <= kc {
                for q in 0..NV {
                    let src = b.ptr.add((j0 + jr + 4 * q) * b.cs + p0 + p);
                    let t = transpose4(
                        load(src),
                        load(src.add(b.cs)),
                        load(src.add(2 * b.cs)),
                        load(src.add(3 * b.cs)),
                    );
                    for (s, v) in t.iter().enumerate() {
                        store(panel.add((p + s) * NR + 4 * q), *v);
                    }
                }
                p += 4;
            }
            while p < kc {
                for j in 0..NR {
                    *panel.add(p * NR + j) = b.at(p0 + p, j0 + jr + j);
                }
                p += 1;
            }
        } else {
            for p in 0..kc {
                for j in 0..NR {
                    *panel.add(p * NR + j) = if j < cols {
                        b.at(p0 + p, j0 + jr + j)
                    } else {
                        0.0
                    };
                }
            }
        }
        jr += NR;
    }
}

/// One product restricted to output rows i0..i1 and columns j0..j1.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_block(
    c: *mut f32,
    a: Operand,
    b: Operand,
    k: usize,
    n: usize,
    accumulate: bool,
    (i0, i1): (usize, usize),
    (j0, j1): (usize, usize),
    scratch: *mut f32,
) {
    if i0 >= i1 || j0 >= j1 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for i in i0..i1 {
                for j in j0..j1 {
                    *c.add(i * n + j) = 0.0;
                }
            }
        }
        return;
    }
    let ap = scratch;
    let bp = scratch.add(MC * KC);
    let tile = bp.add(KC * NC);
    let mut jc = j0;
    while jc < j1 {
        let nc = if j1 - jc < NC { j1 - jc } else { NC };
        let mut pc = 0;
        while pc < k {
            let kc = if k - pc < KC { k - pc } else { KC };
            let overwrite = pc == 0 && !accumulate;
            pack_b(bp, b, pc, jc, kc, nc);
            let mut ic = i0;
            while ic < i1 {
                let mc = if i1 - ic < MC { i1 - ic } else { MC };
                pack_a(ap, a, ic, pc, mc, kc);
                let mut jr = 0;
                while jr < nc {
                    let nr = if nc - jr < NR { nc - jr } else { NR };
                    let mut ir = 0;
                    while ir < mc {
                        let mr = if mc - ir < MR { mc - ir } else { MR };
                        kernel(
                            kc,
                            ap.add(ir * kc),
                            bp.add(jr * kc),
                            c.add((ic + ir) * n + jc + jr),
                            n,
                            mr,
                            nr,
                            overwrite,
                            tile,
                        );
                        ir += MR;
                    }
                    jr += NR;
                }
                ic += MC;
            }
            pc += KC;
        }
        jc += NC;
    }
}

/// Thread `tid` of `nth`'s share of a batched matmul.
#[allow(clippy::too_many_arguments)]
pub unsafe fn matmul(
    out: *mut f32,
    a: *const f32,
    b: *const f32,
    m: usize,
    k: usize,
    n: usize,
    flags: u32,
    batch: usize,
    scratch: *mut f32,
    tid: usize,
    nth: usize,
) {
    let scratch = scratch.add(tid * crate::SCRATCH_FLOATS);
    let accumulate = flags & ACCUMULATE != 0;
    let (ars, acs) = if flags & TRANS_A != 0 { (1, m) } else { (k, 1) };
    let (brs, bcs) = if flags & TRANS_B != 0 { (1, k) } else { (n, 1) };
    let product = |i: usize, rows: (usize, usize), cols: (usize, usize)| {
        let ao = Operand {
            ptr: a.add(i * m * k),
            rs: ars,
            cs: acs,
        };
        let bo = Operand {
            ptr: b.add(i * k * n),
            rs: brs,
            cs: bcs,
        };
        gemm_block(
            out.add(i * m * n),
            ao,
            bo,
            k,
            n,
            accumulate,
            rows,
            cols,
            scratch,
        );
    };
    if batch >= nth {
        let (lo, hi) = part(batch, 1, tid, nth);
        for i in lo..hi {
            product(i, (0, m), (0, n));
        }
        return;
    }
    let tiles_m = m.div_ceil(MR);
    let tiles_n = n.div_ceil(NR);
    for i in 0..batch {
        if tiles_m >= 4 * nth || tiles_m >= tiles_n {
            product(i, part(m, MR, tid, nth), (0, n));
        } else {
            product(i, (0, m), part(n, NR, tid, nth));
        }
    }
}
