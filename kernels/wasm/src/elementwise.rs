//! Element-wise kernels and row/column sums. Every element goes through the
//! same operations in the vector body and the tail (a partial vector), so a
//! thread split never changes a result.

use crate::simd::*;
use core::arch::wasm32::*;

/// Range of thread `tid` of `nth` over `n` elements, in 16-element units.
#[inline(always)]
pub fn range(n: usize, tid: usize, nth: usize) -> (usize, usize) {
    part(n, 16, tid, nth)
}

/// Applies `f` to vectors of elements lo..hi, with a partial last vector.
#[inline(always)]
unsafe fn map<F: Fn(usize, v128) -> v128>(
    out: *mut f32,
    x: *const f32,
    (lo, hi): (usize, usize),
    f: F,
) {
    let mut i = lo;
    while i + 4 <= hi {
        store(out.add(i), f(i, load(x.add(i))));
        i += 4;
    }
    if i < hi {
        store_partial(out.add(i), f(i, load_partial(x.add(i), hi - i)), hi - i);
    }
}

/// Loads 4 floats at i, or the `hi - i` that are left as a partial vector.
#[inline(always)]
unsafe fn load_upto(p: *const f32, i: usize, hi: usize) -> v128 {
    if i + 4 <= hi {
        load(p.add(i))
    } else {
        load_partial(p.add(i), hi - i)
    }
}

pub unsafe fn add(out: *mut f32, a: *const f32, b: *const f32, n: usize, tid: usize, nth: usize) {
    let r = range(n, tid, nth);
    map(out, a, r, |i, va| f32x4_add(va, load_upto(b, i, r.1)));
}

pub unsafe fn mul(out: *mut f32, a: *const f32, b: *const f32, n: usize, tid: usize, nth: usize) {
    let r = range(n, tid, nth);
    map(out, a, r, |i, va| f32x4_mul(va, load_upto(b, i, r.1)));
}

/// y += alpha * x (mul then add, never fused).
pub unsafe fn axpy(y: *mut f32, alpha: f32, x: *const f32, n: usize, tid: usize, nth: usize) {
    let r = range(n, tid, nth);
    let va = f32x4_splat(alpha);
    map(y, x, r, |i, vx| {
        f32x4_add(load_upto(y, i, r.1), f32x4_mul(va, vx))
    });
}

pub unsafe fn scale(x: *mut f32, s: f32, n: usize, tid: usize, nth: usize) {
    let vs = f32x4_splat(s);
    map(x, x, range(n, tid, nth), |_, v| f32x4_mul(v, vs));
}

/// Sum of x[i]^2 in float64, strictly in index order (x^2 is exact in f64).
pub unsafe fn sum_squares(x: *const f32, n: usize) -> f64 {
    let mut sum = 0.0f64;
    for i in 0..n {
        let v = *x.add(i) as f64;
        sum += v * v;
    }
    sum
}

/// out[r,c] += bias[c], rows split across threads.
pub unsafe fn add_bias(
    out: *mut f32,
    bias: *const f32,
    rows: usize,
    cols: usize,
    tid: usize,
    nth: usize,
) {
    let (r0, r1) = part(rows, 1, tid, nth);
    for r in r0..r1 {
        let row = out.add(r * cols);
        map(row, row, (0, cols), |c, v| {
            f32x4_add(v, load_upto(bias, c, cols))
        });
    }
}

/// out[c] += x[r,c] for r in order, columns split across threads.
pub unsafe fn sum_rows(
    out: *mut f32,
    x: *const f32,
    rows: usize,
    cols: usize,
    tid: usize,
    nth: usize,
) {
    let (c0, c1) = range(cols, tid, nth);
    for r in 0..rows {
        let row = x.add(r * cols);
        map(out, out, (c0, c1), |c, v| {
            f32x4_add(v, load_upto(row, c, c1))
        });
    }
}

const GELU_K: f32 = 0.797_884_6; // sqrt(2/pi)
const GELU_C: f32 = 0.044_715;

/// Constants of the GELU kernels, made once per call (see `splat`).
struct Gelu {
    exp: Exp,
    k: v128,
    c: v128,
    c3: v128,
    minus_two: v128,
    cap: v128,
    one: v128,
    two: v128,
}

impl Gelu {
    #[inline(always)]
    fn new() -> Gelu {
        Gelu {
            exp: Exp::new(),
            k: splat(GELU_K),
            c: splat(GELU_C),
            c3: splat(3.0 * GELU_C),
            minus_two: splat(-2.0),
            cap: splat(80.0),
            one: splat(1.0),
            two: splat(2.0),
        }
    }

    /// e = exp(-2u) and s = sigmoid(2u) = (1 + tanh u) / 2 = 1 / (1 + e),
    /// with u = sqrt(2/pi) (x + 0.044715 x^3): no cancellation anywhere.
    /// -2u is capped at 80 so that s (~1e-35 there) never goes subnormal.
    #[inline(always)]
    fn parts(&self, x: v128) -> (v128, v128) {
        let x2 = f32x4_mul(x, x);
        let inner = f32x4_add(x, f32x4_mul(self.c, f32x4_mul(x2, x)));
        let u = f32x4_mul(self.k, inner);
        let e = self
            .exp
            .exp(f32x4_pmin(f32x4_mul(self.minus_two, u), self.cap));
        let s = f32x4_div(self.one, f32x4_add(self.one, e));
        (e, s)
    }

    /// GELU'(x) = s + x * 2 s (1 - s) * du/dx, with 1 - s = e s and
    /// du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
    #[inline(always)]
    fn grad(&self, x: v128) -> v128 {
        let (e, s) = self.parts(x);
        let one_minus_s = f32x4_mul(e, s);
        let du = f32x4_mul(
            self.k,
            f32x4_add(self.one, f32x4_mul(self.c3, f32x4_mul(x, x))),
        );
        let ds = f32x4_mul(f32x4_mul(self.two, f32x4_mul(s, one_minus_s)), du);
        f32x4_add(s, f32x4_mul(x, ds))
    }
}

/// out = 0.5 x (1 + tanh u) = x * sigmoid(2u). (Explicit loops: LLVM does
/// not inline this much code through `map`'s closure.)
pub unsafe fn gelu(out: *mut f32, x: *const f32, n: usize, tid: usize, nth: usize) {
    let g = Gelu::new();
    let (mut i, hi) = range(n, tid, nth);
    while i + 4 <= hi {
        let v = load(x.add(i));
        store(out.add(i), f32x4_mul(v, g.parts(v).1));
        i += 4;
    }
    if i < hi {
        let v = load_partial(x.add(i), hi - i);
        store_partial(out.add(i), f32x4_mul(v, g.parts(v).1), hi - i);
    }
}

/// dx += GELU'(x) dout.
pub unsafe fn gelu_backward(
    dx: *mut f32,
    x: *const f32,
    dout: *const f32,
    n: usize,
    tid: usize,
    nth: usize,
) {
    let g = Gelu::new();
    let (mut i, hi) = range(n, tid, nth);
    while i + 4 <= hi {
        let d = f32x4_mul(g.grad(load(x.add(i))), load(dout.add(i)));
        store(dx.add(i), f32x4_add(load(dx.add(i)), d));
        i += 4;
    }
    if i < hi {
        let c = hi - i;
        let d = f32x4_mul(
            g.grad(load_partial(x.add(i), c)),
            load_partial(dout.add(i), c),
        );
        store_partial(dx.add(i), f32x4_add(load_partial(dx.add(i), c), d), c);
    }
}

/// One fused AdamW step over a range; b1c, b2c are 1 - beta^step.
#[allow(clippy::too_many_arguments)]
pub unsafe fn adamw(
    param: *mut f32,
    grad: *const f32,
    m: *mut f32,
    v: *mut f32,
    n: usize,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    wd: f32,
    b1c: f32,
    b2c: f32,
    tid: usize,
    nth: usize,
) {
    let (lo, hi) = range(n, tid, nth);
    let (vb1, vb2) = (f32x4_splat(beta1), f32x4_splat(beta2));
    let (vb1m, vb2m) = (f32x4_splat(1.0 - beta1), f32x4_splat(1.0 - beta2));
    // Multiplying by the inverse bias corrections leaves one division (and
    // one sqrt) per element: the loop stays memory-bound.
    let (vb1c, vb2c) = (f32x4_splat(1.0 / b1c), f32x4_splat(1.0 / b2c));
    let (vlr, veps, vwd) = (f32x4_splat(lr), f32x4_splat(eps), f32x4_splat(wd));
    let step = |g: v128, mv: v128, vv: v128, p: v128| {
        let mv = f32x4_add(f32x4_mul(vb1, mv), f32x4_mul(vb1m, g));
        let vv = f32x4_add(f32x4_mul(vb2, vv), f32x4_mul(f32x4_mul(vb2m, g), g));
        let mhat = f32x4_mul(mv, vb1c);
        let vhat = f32x4_mul(vv, vb2c);
        let upd = f32x4_add(
            f32x4_div(mhat, f32x4_add(f32x4_sqrt(vhat), veps)),
            f32x4_mul(vwd, p),
        );
        (mv, vv, f32x4_sub(p, f32x4_mul(vlr, upd)))
    };
    let mut i = lo;
    while i + 4 <= hi {
        let (mv, vv, p) = step(
            load(grad.add(i)),
            load(m.add(i)),
            load(v.add(i)),
            load(param.add(i)),
        );
        store(m.add(i), mv);
        store(v.add(i), vv);
        store(param.add(i), p);
        i += 4;
    }
    if i < hi {
        let c = hi - i;
        let (mv, vv, p) = step(
            load_partial(grad.add(i), c),
            load_partial(m.add(i), c),
            load_partial(v.add(i), c),
            load_partial(param.add(i), c),
        );
        store_partial(m.add(i), mv, c);
        store_partial(v.add(i), vv, c);
        store_partial(param.add(i), p, c);
    }
}
