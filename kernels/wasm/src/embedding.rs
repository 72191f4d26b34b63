//! Embedding lookup and its backward pass, and the id check both (and the
//! cross-entropy targets) go through first. The lookup splits rows across
//! threads; the backward pass, which scatters into shared rows, splits
//! channels, so every row of the table sums its updates in row order.

use crate::simd::*;
use core::arch::wasm32::*;

/// Index of the first id outside 0..limit, or -1.
pub unsafe fn check_ids(ids: *const i32, rows: usize, limit: usize) -> i32 {
    for r in 0..rows {
        let id = *ids.add(r);
        if id < 0 || id as usize >= limit {
            return r as i32;
        }
    }
    -1
}

/// out[r] = table[ids[r]] (ids checked).
pub unsafe fn embedding(
    out: *mut f32,
    table: *const f32,
    ids: *const i32,
    rows: usize,
    c: usize,
    tid: usize,
    nth: usize,
) {
    let (r0, r1) = part(rows, 1, tid, nth);
    for r in r0..r1 {
        let src = table.add(*ids.add(r) as usize * c);
        core::ptr::copy_nonoverlapping(src, out.add(r * c), c);
    }
}

/// dtable[ids[r]] += dout[r], rows in order; channels split across threads.
pub unsafe fn embedding_backward(
    dtable: *mut f32,
    dout: *const f32,
    ids: *const i32,
    rows: usize,
    c: usize,
    tid: usize,
    nth: usize,
) {
    let (c0, c1) = part(c, 4, tid, nth);
    for r in 0..rows {
        let dst = dtable.add(*ids.add(r) as usize * c);
        let src = dout.add(r * c);
        let mut j = c0;
        while j + 4 <= c1 {
            store(dst.add(j), f32x4_add(load(dst.add(j)), load(src.add(j))));
            j += 4;
        }
        while j < c1 {
            *dst.add(j) += *src.add(j);
            j += 1;
        }
    }
}
