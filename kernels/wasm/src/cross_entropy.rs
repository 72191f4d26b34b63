//! Fused softmax + cross-entropy and its backward pass; rows are split
//! across threads.

use crate::simd::*;
use core::arch::wasm32::*;

/// probs = softmax(logits), losses = log(sum) - (logit[target] - max).
/// Targets must have been checked (`check_ids`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn cross_entropy(
    losses: *mut f32,
    probs: *mut f32,
    logits: *const f32,
    targets: *const i32,
    rows: usize,
    v: usize,
    tid: usize,
    nth: usize,
) {
    let ex = Exp::new();
    let (r0, r1) = part(rows, 1, tid, nth);
    for r in r0..r1 {
        let (x, p) = (logits.add(r * v), probs.add(r * v));
        let max = max_row(x, v);
        // Copy, then exponentiate in place.
        let mut i = 0;
        while i + 4 <= v {
            store(p.add(i), load(x.add(i)));
            i += 4;
        }
        while i < v {
            *p.add(i) = *x.add(i);
            i += 1;
        }
        let sum = exp_row(p, v, max, &ex);
        scale_row(p, v, 1.0 / sum);
        let t = *targets.add(r) as usize;
        let loss = ln64(sum as f64) - (*x.add(t) as f64 - max as f64);
        *losses.add(r) = loss as f32;
    }
}

/// dlogits += (probs - onehot(target)) * dloss.
#[allow(clippy::too_many_arguments)]
pub unsafe fn cross_entropy_backward(
    dlogits: *mut f32,
    probs: *const f32,
    targets: *const i32,
    dloss: f32,
    rows: usize,
    v: usize,
    tid: usize,
    nth: usize,
) {
    let vd = f32x4_splat(dloss);
    let lanes = i32x4(0, 1, 2, 3);
    let one = f32x4_splat(1.0);
    let (r0, r1) = part(rows, 1, tid, nth);
    for r in r0..r1 {
        let (p, d) = (probs.add(r * v), dlogits.add(r * v));
        let t = *targets.add(r);
        let mut i = 0;
        while i < v {
            let c = if v - i < 4 { v - i } else { 4 };
            let hot = v128_and(i32x4_eq(lanes, i32x4_splat(t - i as i32)), one);
            let (pv, dv) = if c == 4 {
                (load(p.add(i)), load(d.add(i)))
            } else {
                (load_partial(p.add(i), c), load_partial(d.add(i), c))
            };
            let nv = f32x4_add(dv, f32x4_mul(f32x4_sub(pv, hot), vd));
            if c == 4 {
                store(d.add(i), nv);
            } else {
                store_partial(d.add(i), nv, c);
            }
            i += 4;
        }
    }
}
