//! Layernorm over C channels (eps 1e-5) and its backward pass.
//! Rows are split across threads; the weight and bias gradients, which sum
//! over rows, are split by channel so each is accumulated in row order.

use crate::simd::*;
use core::arch::wasm32::*;

/// Sum of `f(c, chunk)` vectors over channels 0..C (partial last chunk,
/// whose padding lanes `f` must leave at 0), reduced lane-wise then hsum.
#[inline(always)]
unsafe fn row_sum<F: Fn(usize, usize) -> v128>(cols: usize, f: F) -> f32 {
    let mut acc = f32x4_splat(0.0);
    let mut c = 0;
    while c < cols {
        let count = if cols - c < 4 { cols - c } else { 4 };
        acc = f32x4_add(acc, f(c, count));
        c += 4;
    }
    hsum(acc)
}

#[inline(always)]
unsafe fn ld(p: *const f32, count: usize) -> v128 {
    if count == 4 {
        load(p)
    } else {
        load_partial(p, count)
    }
}

#[inline(always)]
unsafe fn st(p: *mut f32, v: v128, count: usize) {
    if count == 4 {
        store(p, v)
    } else {
        store_partial(p, v, count)
    }
}

/// Zeroes lanes >= count (padding lanes of a partial chunk).
#[inline(always)]
fn mask(v: v128, count: usize) -> v128 {
    if count == 4 {
        return v;
    }
    let lanes = i32x4(0, 1, 2, 3);
    v128_and(v, i32x4_lt(lanes, i32x4_splat(count as i32)))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn layernorm(
    out: *mut f32,
    mean: *mut f32,
    rstd: *mut f32,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    rows: usize,
    cols: usize,
    tid: usize,
    nth: usize,
) {
    let inv_c = 1.0 / cols as f32;
    let (r0, r1) = part(rows, 1, tid, nth);
    for r in r0..r1 {
        let xr = x.add(r * cols);
        let mu = row_sum(cols, |c, n| ld(xr.add(c), n)) * inv_c;
        let vmu = f32x4_splat(mu);
        let var = row_sum(cols, |c, n| {
            let d = mask(f32x4_sub(ld(xr.add(c), n), vmu), n);
            f32x4_mul(d, d)
        }) * inv_c;
        let s = 1.0 / sqrt32(var + 1e-5);
        let vs = f32x4_splat(s);
        let o = out.add(r * cols);
        let mut c = 0;
        while c < cols {
            let n = if cols - c < 4 { cols - c } else { 4 };
            let norm = f32x4_mul(f32x4_sub(ld(xr.add(c), n), vmu), vs);
            st(
                o.add(c),
                f32x4_add(f32x4_mul(norm, ld(w.add(c), n)), ld(b.add(c), n)),
                n,
            );
            c += 4;
        }
        *mean.add(r) = mu;
        *rstd.add(r) = s;
    }
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn layernorm_backward(
    dx: *mut f32,
    dw: *mut f32,
    db: *mut f32,
    dout: *const f32,
    x: *const f32,
    w: *const f32,
    mean: *const f32,
    rstd: *const f32,
    rows: usize,
    cols: usize,
    tid: usize,
    nth: usize,
) {
    let inv_c = 1.0 / cols as f32;
    // dx, by rows: dx += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd.
    let (r0, r1) = part(rows, 1, tid, nth);
    for r in r0..r1 {
        let (xr, dr, dxr) = (x.add(r * cols), dout.add(r * cols), dx.add(r * cols));
        let vmu = f32x4_splat(*mean.add(r));
        let vs = f32x4_splat(*rstd.add(r));
        let norm = |c: usize, n: usize| f32x4_mul(f32x4_sub(ld(xr.add(c), n), vmu), vs);
        let dnorm = |c: usize, n: usize| f32x4_mul(ld(w.add(c), n), ld(dr.add(c), n));
        let dnorm_mean = f32x4_splat(row_sum(cols, dnorm) * inv_c);
        let dnorm_norm_mean =
            f32x4_splat(row_sum(cols, |c, n| f32x4_mul(dnorm(c, n), mask(norm(c, n), n))) * inv_c);
        let mut c = 0;
        while c < cols {
            let n = if cols - c < 4 { cols - c } else { 4 };
            let d = f32x4_sub(
                f32x4_sub(dnorm(c, n), dnorm_mean),
                f32x4_mul(norm(c, n), dnorm_norm_mean),
            );
            st(
                dxr.add(c),
                f32x4_add(ld(dxr.add(c), n), f32x4_mul(d, vs)),
                n,
            );
            c += 4;
        }
    }
    // dw += norm * dout, db += dout, by channels, rows in order.
    let (c0, c1) = part(cols, 4, tid, nth);
    for r in 0..rows {
        let (xr, dr) = (x.add(r * cols), dout.add(r * cols));
        let vmu = f32x4_splat(*mean.add(r));
        let vs = f32x4_splat(*rstd.add(r));
        let mut c = c0;
        while c < c1 {
            let n = if c1 - c < 4 { c1 - c } else { 4 };
            let g = ld(dr.add(c), n);
            let norm = f32x4_mul(f32x4_sub(ld(xr.add(c), n), vmu), vs);
            st(db.add(c), f32x4_add(ld(db.add(c), n), g), n);
            st(
                dw.add(c),
                f32x4_add(ld(dw.add(c), n), f32x4_mul(norm, g)),
                n,
            );
            c += 4;
        }
    }
}
