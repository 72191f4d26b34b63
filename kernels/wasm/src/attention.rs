//! Causal multi-head self-attention, forward and backward.
//! qkv[b,t] = [q (C) | k (C) | v (C)]; head h uses channels h*hs..(h+1)*hs.
//!
//! Per (batch, head), in passes over the [T, T] att (or datt) block:
//! 1. raw scores q_t . k_u for u <= t, vectorized over u against a
//!    transposed, zero-padded block of UB keys in the thread's scratch;
//! 2. row-wise softmax (or its backward) in place;
//! 3. weighted sums of rows (P @ V, and the gradients) with hs-wide
//!    accumulators in registers.
//!
//! Work is split across threads by (batch, head): each pair is computed
//! whole by one thread in a fixed order, so results do not depend on the
//! split. Above-diagonal entries of att and datt are written as 0.

use crate::simd::*;
use core::arch::wasm32::*;

/// Keys per transposed block (a multiple of 32).
const UB: usize = 64;

/// Floats of scratch one thread needs: a transposed block of UB keys.
pub fn scratch_floats(hs: usize) -> usize {
    hs * UB
}

/// dot(a, b) over n floats: lane-wise partial sums, then `hsum`.
#[inline(always)]
unsafe fn dot(a: *const f32, b: *const f32, n: usize) -> f32 {
    let mut acc = f32x4_splat(0.0);
    let mut i = 0;
    while i + 4 <= n {
        acc = f32x4_add(acc, f32x4_mul(load(a.add(i)), load(b.add(i))));
        i += 4;
    }
    if i < n {
        let c = n - i;
        acc = f32x4_add(
            acc,
            f32x4_mul(load_partial(a.add(i), c), load_partial(b.add(i), c)),
        );
    }
    hsum(acc)
}

/// dst[i * UB + u] = src[u * stride + i] for u < ub, i < hs; 0 for u >= ub.
unsafe fn transpose_block(dst: *mut f32, src: *const f32, stride: usize, ub: usize, hs: usize) {
    for i in 0..hs {
        let d = dst.add(i * UB);
        for u in 0..UB {
            *d.add(u) = if u < ub {
                *src.add(u * stride + i)
            } else {
                0.0
            };
        }
    }
}

/// out[u] = x . block column u for u < len (len <= UB), against a transposed
/// block; 8 vectors (32 columns) at a time.
#[inline(always)]
unsafe fn scores(out: *mut f32, x: *const f32, block: *const f32, hs: usize, len: usize) {
    let mut g = 0;
    while g < len {
        let mut acc = [f32x4_splat(0.0); 8];
        for i in 0..hs {
            let xi = v128_load32_splat(x.add(i) as *const u32);
            let col = block.add(i * UB + g);
            for (k, a) in acc.iter_mut().enumerate() {
                *a = madd(xi, load(col.add(4 * k)), *a);
            }
        }
        for (k, a) in acc.iter().enumerate() {
            let at = g + 4 * k;
            if at >= len {
                break;
            }
            if at + 4 <= len {
                store(out.add(at), *a);
            } else {
                store_partial(out.add(at), *a, len - at);
            }
        }
        g += 32;
    }
}

/// out[0..hs] (=|+=) sum over j < count of w[j * ws] * rows[j * rs + 0..hs].
#[inline(always)]
unsafe fn weighted_sum(
    out: *mut f32,
    w: *const f32,
    ws: usize,
    rows: *const f32,
    rs: usize,
    count: usize,
    hs: usize,
    accumulate: bool,
) {
    let mut i = 0;
    // 32 channels at a time: 8 independent accumulator chains.
    while i + 32 <= hs {
        let mut acc = [f32x4_splat(0.0); 8];
        for j in 0..count {
            let wj = v128_load32_splat(w.add(j * ws) as *const u32);
            let row = rows.add(j * rs + i);
            for (k, a) in acc.iter_mut().enumerate() {
                *a = madd(wj, load(row.add(4 * k)), *a);
            }
        }
        for (k, a) in acc.iter().enumerate() {
            let o = out.add(i + 4 * k);
            store(
                o,
                if accumulate {
                    f32x4_add(load(o), *a)
                } else {
                    *a
                },
            );
        }
        i += 32;
    }
    // Then 4 at a time, the last one partial.
    while i < hs {
        let c = if hs - i < 4 { hs - i } else { 4 };
        let mut acc = f32x4_splat(0.0);
        for j in 0..count {
            let wj = v128_load32_splat(w.add(j * ws) as *const u32);
            let row = rows.add(j * rs + i);
            let v = if c == 4 {
                load(row)
            } else {
                load_partial(row, c)
            };
            acc = madd(wj, v, acc);
        }
        let o = out.add(i);
        if c == 4 {
            store(
                o,
                if accumulate {
                    f32x4_add(load(o), acc)
                } else {
                    acc
                },
            );
        } else {
            let v = if accumulate {
                f32x4_add(load_partial(o, c), acc)
            } else {
                acc
            };
            store_partial(o, v, c);
        }
        i += 4;
    }
}

/// Fills rows t of a [T, T] block with x_t . y_u for u <= t (the rest of the
/// row untouched), where x_t = x + t * xs and y_u = y + u * ys.
unsafe fn causal_scores(
    block: *mut f32,
    x: *const f32,
    xs: usize,
    y: *const f32,
    ys: usize,
    t_len: usize,
    hs: usize,
    scratch: *mut f32,
) {
    let mut u0 = 0;
    while u0 < t_len {
        let ub = if t_len - u0 < UB { t_len - u0 } else { UB };
        transpose_block(scratch, y.add(u0 * ys), ys, ub, hs);
        for t in u0..t_len {
            let len = if t + 1 - u0 < ub { t + 1 - u0 } else { ub };
            scores(block.add(t * t_len + u0), x.add(t * xs), scratch, hs, len);
        }
        u0 += UB;
    }
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn attention(
    out: *mut f32,
    att: *mut f32,
    qkv: *const f32,
    bsz: usize,
    t_len: usize,
    c: usize,
    nh: usize,
    scratch: *mut f32,
    tid: usize,
    nth: usize,
) {
    let hs = c / nh;
    let scale = 1.0 / sqrt32(hs as f32);
    let scratch = scratch.add(tid * crate::SCRATCH_FLOATS);
    let ex = Exp::new();
    let units = bsz * nh;
    let (first, last) = part(units, 1, tid, nth);
    for unit in first..last {
        let (b, h) = (unit / nh, unit % nh);
        let q = qkv.add(b * t_len * 3 * c + h * hs);
        let (k, v) = (q.add(c), q.add(2 * c));
        let a = att.add(unit * t_len * t_len);
        causal_scores(a, q, 3 * c, k, 3 * c, t_len, hs, scratch);
        for t in 0..t_len {
            let row = a.add(t * t_len);
            scale_row(row, t + 1, scale);
            let sum = exp_row(row, t + 1, max_row(row, t + 1), &ex);
            scale_row(row, t + 1, 1.0 / sum);
            for u in t + 1..t_len {
                *row.add(u) = 0.0;
            }
            let o = out.add((b * t_len + t) * c + h * hs);
            weighted_sum(o, row, 1, v, 3 * c, t + 1, hs, false);
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn attention_backward(
    dqkv: *mut f32,
    datt: *mut f32,
    dout: *const f32,
    qkv: *const f32,
    att: *const f32,
    bsz: usize,
    t_len: usize,
    c: usize,
    nh: usize,
    scratch: *mut f32,
    tid: usize,
    nth: usize,
) {
    let hs = c / nh;
    let scale = 1.0 / sqrt32(hs as f32);
    let scratch = scratch.add(tid * crate::SCRATCH_FLOATS);
    let vscale = f32x4_splat(scale);
    let units = bsz * nh;
    let (first, last) = part(units, 1, tid, nth);
    for unit in first..last {
        let (b, h) = (unit / nh, unit % nh);
        let q = qkv.add(b * t_len * 3 * c + h * hs);
        let (k, v) = (q.add(c), q.add(2 * c));
        let dq = dqkv.add(b * t_len * 3 * c + h * hs);
        let (dk, dv) = (dq.add(c), dq.add(2 * c));
        let o = dout.add(b * t_len * c + h * hs);
        let a = att.add(unit * t_len * t_len);
        let d = datt.add(unit * t_len * t_len);
        // out = att @ v: datt = dout . v.
        causal_scores(d, o, c, v, 3 * c, t_len, hs, scratch);
        // softmax: dpre = att * (datt - sum(att * datt)) * scale, in place.
        for t in 0..t_len {
            let (ar, dr) = (a.add(t * t_len), d.add(t * t_len));
            let n = t + 1;
            let vad = f32x4_splat(dot(ar, dr, n));
            let mut u = 0;
            while u < n {
                let cnt = if n - u < 4 { n - u } else { 4 };
                let (pa, pd) = if cnt == 4 {
                    (load(ar.add(u)), load(dr.add(u)))
                } else {
                    (load_partial(ar.add(u), cnt), load_partial(dr.add(u), cnt))
                };
                let g = f32x4_mul(f32x4_mul(pa, f32x4_sub(pd, vad)), vscale);
                if cnt == 4 {
                    store(dr.add(u), g);
                } else {
                    store_partial(dr.add(u), g, cnt);
                }
                u += 4;
            }
            for u in n..t_len {
                *dr.add(u) = 0.0;
            }
            // dq_t += sum over u of dpre[t,u] k_u.
            weighted_sum(dq.add(t * 3 * c), dr, 1, k, 3 * c, n, hs, true);
        }
        // dk_u += sum over t >= u of dpre[t,u] q_t; dv_u += att[t,u] dout_t.
        for u in 0..t_len {
            let n = t_len - u;
            let w = u * t_len + u; // element [u, u], then down the column
            weighted_sum(
                dk.add(u * 3 * c),
                d.add(w),
                t_len,
                q.add(u * 3 * c),
                3 * c,
                n,
                hs,
                true,
            );
            weighted_sum(
                dv.add(u * 3 * c),
                a.add(w),
                t_len,
                o.add(u * c),
                c,
                n,
                hs,
                true,
            );
        }
    }
}
