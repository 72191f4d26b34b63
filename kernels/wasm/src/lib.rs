//! zoo-node compute kernels for WebAssembly SIMD (see `README.md` beside
//! `Cargo.toml`).
//!
//! Exports take byte offsets into the shared linear memory plus sizes; the
//! TypeScript side owns the memory layout. No statics and no allocator: the
//! module is instantiated once per thread on one shared memory.
//!
//! Kernels that end in `tid, nth` compute the share of thread `tid` of `nth`;
//! every thread count gives bit-identical results (see each module's notes).
//!
//! # Safety
//! Every pointer must address a live buffer of the size the arguments imply;
//! outputs must not overlap inputs unless a kernel says it works in place.

#![no_std]
#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

mod attention;
mod cross_entropy;
mod elementwise;
mod embedding;
mod layernorm;
mod matmul;
mod simd;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// Version of this export table; the loader refuses other versions.
#[no_mangle]
pub extern "C" fn abi_version() -> u32 {
    1
}

/// Floats of scratch each thread owns (matmul's packed panels, attention's
/// transposed key blocks); thread `tid` uses the `tid`-th slice of it.
pub const SCRATCH_FLOATS: usize = matmul::SCRATCH_FLOATS;

/// Bytes of scratch each thread needs.
#[no_mangle]
pub extern "C" fn scratch_bytes() -> usize {
    SCRATCH_FLOATS * 4
}

/// Largest head size attention supports (its scratch is hs * 64 floats).
#[no_mangle]
pub extern "C" fn attention_max_head_size() -> usize {
    let mut hs = 1;
    while attention::scratch_floats(hs + 1) <= SCRATCH_FLOATS {
        hs += 1;
    }
    hs
}

/// out[m,n] (+)= op(a)[m,k] @ op(b)[k,n] for `batch` products; flags: 1 transA,
/// 2 transB, 4 accumulate. `scratch` holds nth * scratch_bytes().
#[no_mangle]
pub unsafe extern "C" fn matmul(
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
    matmul::matmul(out, a, b, m, k, n, flags, batch, scratch, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn add(
    out: *mut f32,
    a: *const f32,
    b: *const f32,
    n: usize,
    tid: usize,
    nth: usize,
) {
    elementwise::add(out, a, b, n, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn mul(
    out: *mut f32,
    a: *const f32,
    b: *const f32,
    n: usize,
    tid: usize,
    nth: usize,
) {
    elementwise::mul(out, a, b, n, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn axpy(
    y: *mut f32,
    alpha: f32,
    x: *const f32,
    n: usize,
    tid: usize,
    nth: usize,
) {
    elementwise::axpy(y, alpha, x, n, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn scale(x: *mut f32, s: f32, n: usize, tid: usize, nth: usize) {
    elementwise::scale(x, s, n, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn sum_squares(x: *const f32, n: usize) -> f64 {
    elementwise::sum_squares(x, n)
}

#[no_mangle]
pub unsafe extern "C" fn add_bias(
    out: *mut f32,
    bias: *const f32,
    rows: usize,
    cols: usize,
    tid: usize,
    nth: usize,
) {
    elementwise::add_bias(out, bias, rows, cols, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn sum_rows(
    out: *mut f32,
    x: *const f32,
    rows: usize,
    cols: usize,
    tid: usize,
    nth: usize,
) {
    elementwise::sum_rows(out, x, rows, cols, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn gelu(out: *mut f32, x: *const f32, n: usize, tid: usize, nth: usize) {
    elementwise::gelu(out, x, n, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn gelu_backward(
    dx: *mut f32,
    x: *const f32,
    dout: *const f32,
    n: usize,
    tid: usize,
    nth: usize,
) {
    elementwise::gelu_backward(dx, x, dout, n, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn layernorm(
    out: *mut f32,
    mean: *mut f32,
    rstd: *mut f32,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    rows: usize,
    c: usize,
    tid: usize,
    nth: usize,
) {
    layernorm::layernorm(out, mean, rstd, x, w, b, rows, c, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn layernorm_backward(
    dx: *mut f32,
    dw: *mut f32,
    db: *mut f32,
    dout: *const f32,
    x: *const f32,
    w: *const f32,
    mean: *const f32,
    rstd: *const f32,
    rows: usize,
    c: usize,
    tid: usize,
    nth: usize,
) {
    layernorm::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, rows, c, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn attention(
    out: *mut f32,
    att: *mut f32,
    qkv: *const f32,
    b: usize,
    t: usize,
    c: usize,
    nh: usize,
    scratch: *mut f32,
    tid: usize,
    nth: usize,
) {
    attention::attention(out, att, qkv, b, t, c, nh, scratch, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn attention_backward(
    dqkv: *mut f32,
    datt: *mut f32,
    dout: *const f32,
    qkv: *const f32,
    att: *const f32,
    b: usize,
    t: usize,
    c: usize,
    nh: usize,
    scratch: *mut f32,
    tid: usize,
    nth: usize,
) {
    attention::attention_backward(dqkv, datt, dout, qkv, att, b, t, c, nh, scratch, tid, nth)
}

/// Index of the first id outside 0..limit, or -1.
#[no_mangle]
pub unsafe extern "C" fn check_ids(ids: *const i32, rows: usize, limit: usize) -> i32 {
    embedding::check_ids(ids, rows, limit)
}

#[no_mangle]
pub unsafe extern "C" fn cross_entropy(
    losses: *mut f32,
    probs: *mut f32,
    logits: *const f32,
    targets: *const i32,
    rows: usize,
    v: usize,
    tid: usize,
    nth: usize,
) {
    cross_entropy::cross_entropy(losses, probs, logits, targets, rows, v, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn cross_entropy_backward(
    dlogits: *mut f32,
    probs: *const f32,
    targets: *const i32,
    dloss: f32,
    rows: usize,
    v: usize,
    tid: usize,
    nth: usize,
) {
    cross_entropy::cross_entropy_backward(dlogits, probs, targets, dloss, rows, v, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn embedding(
    out: *mut f32,
    table: *const f32,
    ids: *const i32,
    rows: usize,
    c: usize,
    tid: usize,
    nth: usize,
) {
    embedding::embedding(out, table, ids, rows, c, tid, nth)
}

#[no_mangle]
pub unsafe extern "C" fn embedding_backward(
    dtable: *mut f32,
    dout: *const f32,
    ids: *const i32,
    rows: usize,
    c: usize,
    tid: usize,
    nth: usize,
) {
    embedding::embedding_backward(dtable, dout, ids, rows, c, tid, nth)
}

/// One AdamW step; b1c = 1 - beta1^step, b2c = 1 - beta2^step.
#[no_mangle]
pub unsafe extern "C" fn adamw(
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
    elementwise::adamw(
        param, grad, m, v, n, lr, beta1, beta2, eps, wd, b1c, b2c, tid, nth,
    )
}
