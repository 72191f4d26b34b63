//! SIMD helpers shared by the kernels.
//!
//! Determinism rule: every element is computed by the same sequence of
//! operations whatever its position (vector body or tail) and whatever the
//! thread split. Tails therefore go through the same vector code on a
//! partially loaded vector (`load_partial` / `store_partial`), and the relaxed
//! FMA (`madd`, fused or not at the engine's choice, but always the same way
//! on one machine) is used only in code that has no scalar twin.

use core::arch::wasm32::*;

/// Thread `tid`'s share of `len` items handed out in units of `unit`:
/// items lo..hi, clipped to `len`. Computed in u64 (no u32 overflow).
#[inline(always)]
pub fn part(len: usize, unit: usize, tid: usize, nth: usize) -> (usize, usize) {
    let units = len.div_ceil(unit) as u64;
    let at = |t: usize| ((units * t as u64 / nth as u64) as usize * unit).min(len);
    (at(tid), at(tid + 1))
}

/// a * b + c: one fused FMA in the relaxed build, mul then add otherwise.
#[inline(always)]
pub fn madd(a: v128, b: v128, c: v128) -> v128 {
    #[cfg(target_feature = "relaxed-simd")]
    {
        f32x4_relaxed_madd(a, b, c)
    }
    #[cfg(not(target_feature = "relaxed-simd"))]
    {
        f32x4_add(f32x4_mul(a, b), c)
    }
}

#[inline(always)]
pub unsafe fn load(p: *const f32) -> v128 {
    v128_load(p as *const v128)
}

#[inline(always)]
pub unsafe fn store(p: *mut f32, v: v128) {
    v128_store(p as *mut v128, v)
}

/// Loads `count` (< 4) floats into the low lanes; the other lanes are 0.
#[inline(always)]
pub unsafe fn load_partial(p: *const f32, count: usize) -> v128 {
    let mut v = f32x4_splat(0.0);
    if count > 0 {
        v = f32x4_replace_lane::<0>(v, *p);
    }
    if count > 1 {
        v = f32x4_replace_lane::<1>(v, *p.add(1));
    }
    if count > 2 {
        v = f32x4_replace_lane::<2>(v, *p.add(2));
    }
    v
}

/// Stores the low `count` (< 4) lanes of `v`.
#[inline(always)]
pub unsafe fn store_partial(p: *mut f32, v: v128, count: usize) {
    if count > 0 {
        *p = f32x4_extract_lane::<0>(v);
    }
    if count > 1 {
        *p.add(1) = f32x4_extract_lane::<1>(v);
    }
    if count > 2 {
        *p.add(2) = f32x4_extract_lane::<2>(v);
    }
}

/// Sum of the four lanes, as ((l0 + l1) + (l2 + l3)).
#[inline(always)]
pub fn hsum(v: v128) -> f32 {
    (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
        + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
}

/// Largest of the four lanes.
#[inline(always)]
pub fn hmax(v: v128) -> f32 {
    let a = f32x4_extract_lane::<0>(v);
    let b = f32x4_extract_lane::<1>(v);
    let c = f32x4_extract_lane::<2>(v);
    let d = f32x4_extract_lane::<3>(v);
    let ab = if a > b { a } else { b };
    let cd = if c > d { c } else { d };
    if ab > cd {
        ab
    } else {
        cd
    }
}

/// A splat of `x` that LLVM cannot constant-fold. V8 rebuilds every
/// `v128.const` from immediates (3-4 instructions) each time it is used, and
/// LLVM leaves constants inside loops; an opaque splat made before a loop is
/// hoisted instead and stays in a register (or one stack slot).
#[inline(always)]
pub fn splat(x: f32) -> v128 {
    f32x4_splat(core::hint::black_box(x))
}

/// Constants of `exp`, made once per kernel call (see `splat`).
#[derive(Clone, Copy)]
pub struct Exp {
    lo: v128,
    hi: v128,
    log2e: v128,
    magic: v128,
    ln2_hi: v128,
    ln2_lo: v128,
    c: [v128; 7],
    bias: v128,
}

impl Exp {
    const LO: f32 = -86.0;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23

    #[inline(always)]
    pub fn new() -> Exp {
        Exp {
            lo: splat(Self::LO),
            hi: splat(88.37),
            log2e: splat(core::f32::consts::LOG2_E),
            magic: splat(Self::MAGIC),
            ln2_hi: splat(-0.693_145_75),
            ln2_lo: splat(-1.428_606_8e-6),
            c: [
                splat(1.0 / 5040.0),
                splat(1.0 / 720.0),
                splat(1.0 / 120.0),
                splat(1.0 / 24.0),
                splat(1.0 / 6.0),
                splat(0.5),
                splat(1.0),
            ],
            bias: i32x4_splat(core::hint::black_box(127)),
        }
    }

    /// exp(x) per lane, relative error about 1 ulp. Inputs above 88.37 give
    /// exp(88.37) ~ 2.6e38; inputs below -86 give 0: results are never
    /// subnormal, whose arithmetic is ~100x slower on x86.
    #[inline(always)]
    pub fn exp(&self, x: v128) -> v128 {
        let keep = f32x4_ge(x, self.lo); // false for NaN too: gives 0
                                         // pmin/pmax are single instructions (min/max must order NaNs: ~7).
        let x = f32x4_pmax(f32x4_pmin(x, self.hi), self.lo);
        // n = round(x / ln 2) by the magic-number trick: the sum's low
        // mantissa bits hold n as an integer (no float->int conversion).
        let t = madd(x, self.log2e, self.magic);
        let n = f32x4_sub(t, self.magic);
        // r = x - n ln 2, ln 2 split in two for accuracy.
        let r = madd(n, self.ln2_hi, x);
        let r = madd(n, self.ln2_lo, r);
        // exp(r) on [-ln2/2, ln2/2], degree-7 Taylor/Horner (error < 1e-8).
        // `madd` fuses in the relaxed build: every lane, body or tail, takes
        // the same path, so results still do not depend on the thread split.
        let mut p = self.c[0];
        for c in &self.c[1..] {
            p = madd(p, r, *c);
        }
        p = madd(p, r, self.c[6]);
        // 2^n: n + 127 in the exponent field (n in -124..127).
        let ni = i32x4_sub(t, self.magic);
        let scale = i32x4_shl(i32x4_add(ni, self.bias), 23);
        v128_and(f32x4_mul(p, scale), keep)
    }
}

/// row[0..n] = exp(row - max); returns the sum (lanes, then the tail in order).
#[inline(always)]
pub unsafe fn exp_row(row: *mut f32, n: usize, max: f32, ex: &Exp) -> f32 {
    let vm = f32x4_splat(max);
    let mut acc = f32x4_splat(0.0);
    let mut i = 0;
    while i + 4 <= n {
        let e = ex.exp(f32x4_sub(load(row.add(i)), vm));
        store(row.add(i), e);
        acc = f32x4_add(acc, e);
        i += 4;
    }
    let mut sum = hsum(acc);
    if i < n {
        let c = n - i;
        let e = ex.exp(f32x4_sub(load_partial(row.add(i), c), vm));
        store_partial(row.add(i), e, c);
        for j in 0..c {
            sum += *row.add(i + j);
        }
    }
    sum
}

/// row[0..n] *= s.
#[inline(always)]
pub unsafe fn scale_row(row: *mut f32, n: usize, s: f32) {
    let vs = f32x4_splat(s);
    let mut i = 0;
    while i + 4 <= n {
        store(row.add(i), f32x4_mul(load(row.add(i)), vs));
        i += 4;
    }
    if i < n {
        let c = n - i;
        store_partial(row.add(i), f32x4_mul(load_partial(row.add(i), c), vs), c);
    }
}

/// Largest of row[0..n] (n >= 1).
#[inline(always)]
pub unsafe fn max_row(row: *const f32, n: usize) -> f32 {
    let mut m = f32x4_splat(f32::NEG_INFINITY);
    let mut i = 0;
    while i + 4 <= n {
        m = f32x4_max(m, load(row.add(i)));
        i += 4;
    }
    let mut max = hmax(m);
    while i < n {
        let x = *row.add(i);
        if !(x <= max) {
            max = x;
        }
        i += 1;
    }
    max
}

/// Natural log of a positive finite f64 (used once per row, for losses).
pub fn ln64(x: f64) -> f64 {
    // x = 2^e * m with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m-1)/(m+1).
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    // atanh(s)/s = sum s^(2i) / (2i+1); |s| < 0.172 so 11 terms reach 1e-17.
    let mut t = 1.0 / 23.0;
    let mut i = 21.0;
    while i > 0.0 {
        t = t * s2 + 1.0 / i;
        i -= 2.0;
    }
    e as f64 * core::f64::consts::LN_2 + 2.0 * s * t
}

/// sqrt of one f32.
#[inline(always)]
pub fn sqrt32(x: f32) -> f32 {
    f32x4_extract_lane::<0>(f32x4_sqrt(f32x4_splat(x)))
}
