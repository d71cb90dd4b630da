//! Flat-mode cores of the algebra, written once as `const fn` over slices so that the runtime
//! [`Layout`](crate::Layout) and the const [`StaticLayout`](crate::StaticLayout) share one
//! implementation. Each follows pycute's definition step for step, including its use of Python's
//! floor division, because results are compared against pycute's. Every arithmetic step is
//! checked: a value outside `i64` is [`LayoutError::Overflow`].

use crate::LayoutError;

/// Python's `a // b`. `i64::MIN // -1` is an overflow; a zero divisor (only reachable from
/// malformed input, since divisors are shapes or nonzero strides) is an invalid argument.
pub(crate) const fn floor_div(a: i64, b: i64) -> Result<i64, LayoutError> {
    if b == 0 {
        return Err(LayoutError::InvalidArgument("division by zero"));
    }
    let Some(q) = a.checked_div(b) else {
        return Err(LayoutError::Overflow);
    };
    // `a % b` cannot overflow once `a / b` did not; `q - 1` cannot either, since |q| < |a| when
    // the division is inexact.
    Ok(if a % b != 0 && ((a < 0) != (b < 0)) { q - 1 } else { q })
}

/// `-(-a // b)`: ceiling division with Python's rounding.
pub(crate) const fn ceil_div(a: i64, b: i64) -> Result<i64, LayoutError> {
    if b == 0 {
        return Err(LayoutError::InvalidArgument("division by zero"));
    }
    let Some(q) = a.checked_div(b) else {
        return Err(LayoutError::Overflow);
    };
    Ok(if a % b != 0 && ((a < 0) == (b < 0)) { q + 1 } else { q })
}

/// Python's `a % b` (the sign of `b`).
#[cfg_attr(not(feature = "alloc"), allow(dead_code))]
pub(crate) const fn py_mod(a: i64, b: i64) -> Result<i64, LayoutError> {
    if b == 0 {
        return Err(LayoutError::InvalidArgument("division by zero"));
    }
    // `i64::MIN % -1` is 0 mathematically; `checked_rem` only refuses it because the quotient
    // overflows.
    let r = match a.checked_rem(b) {
        Some(r) => r,
        None => 0,
    };
    // `r` and `b` have opposite signs here, so the sum lies between them.
    Ok(if r != 0 && ((r < 0) != (b < 0)) { r + b } else { r })
}

/// CuTe's `shape_div` for integers: exact quotient, or ±1 when `b` is a multiple of `a`.
#[cfg(feature = "alloc")]
pub(crate) const fn shape_div(a: i64, b: i64) -> Result<i64, LayoutError> {
    if b != 0 && is_multiple(a, b) {
        match a.checked_div(b) {
            Some(q) => Ok(q),
            None => Err(LayoutError::Overflow),
        }
    } else if a != 0 && is_multiple(b, a) {
        Ok(a.signum() * b.signum())
    } else {
        Err(LayoutError::StrideDivisibility { shape: a, stride: b })
    }
}

/// Whether `a` is a multiple of `b` (`b != 0`), without the `i64::MIN % -1` overflow.
#[cfg(feature = "alloc")]
const fn is_multiple(a: i64, b: i64) -> bool {
    b == -1 || a % b == 0
}

pub(crate) const fn checked_mul(a: i64, b: i64) -> Result<i64, LayoutError> {
    match a.checked_mul(b) {
        Some(v) => Ok(v),
        None => Err(LayoutError::Overflow),
    }
}

pub(crate) const fn checked_add(a: i64, b: i64) -> Result<i64, LayoutError> {
    match a.checked_add(b) {
        Some(v) => Ok(v),
        None => Err(LayoutError::Overflow),
    }
}

/// Product of the first `n` shapes.
pub(crate) const fn product(s: &[i64], n: usize) -> Result<i64, LayoutError> {
    let mut p = 1i64;
    let mut i = 0;
    while i < n {
        p = tri!(checked_mul(p, s[i]));
        i += 1;
    }
    Ok(p)
}

/// The layout's value at 1-D index `idx` (colexicographic; the last mode takes the remainder,
/// as pycute's `crd2idx` does for an integer coordinate). Shapes are positive; an index below 0
/// splits with Rust's truncating division, as the const layouts always have.
pub(crate) const fn eval(s: &[i64], d: &[i64], n: usize, mut idx: i64) -> Result<i64, LayoutError> {
    if n == 0 {
        return Ok(0);
    }
    let mut r = 0i64;
    let mut i = 0;
    while i + 1 < n {
        if s[i] > 0 {
            r = tri!(checked_add(r, tri!(checked_mul(idx % s[i], d[i]))));
            idx /= s[i];
        }
        i += 1;
    }
    checked_add(r, tri!(checked_mul(idx, d[n - 1])))
}

/// pycute `coalesce` of `n` flat modes, in place. Needs room for one mode; returns the new count
/// (>= 1). Merged shapes are checked products.
pub(crate) const fn coalesce_in_place(s: &mut [i64], d: &mut [i64], n: usize) -> Result<usize, LayoutError> {
    let (mut last_s, mut last_d) = (1i64, 0i64);
    let mut k = 0;
    let mut i = 0;
    while i < n {
        let (cs, cd) = (s[i], d[i]);
        i += 1;
        if cs == 1 {
            continue;
        }
        // A product outside `i64` cannot equal the stride `cd`, so those modes do not merge.
        let contiguous = match last_s.checked_mul(last_d) {
            Some(v) => v == cd,
            None => false,
        };
        if last_s == 1 {
            last_s = cs;
            last_d = cd;
        } else if contiguous {
            last_s = tri!(checked_mul(last_s, cs));
        } else {
            // k < i - 1: the slot was already read.
            s[k] = last_s;
            d[k] = last_d;
            k += 1;
            last_s = cs;
            last_d = cd;
        }
    }
    s[k] = last_s;
    d[k] = last_d;
    Ok(k + 1)
}

/// pycute `filter`: drop size-1 and stride-0 modes, then coalesce. In place; returns the count.
pub(crate) const fn filter_in_place(s: &mut [i64], d: &mut [i64], n: usize) -> Result<usize, LayoutError> {
    let mut k = 0;
    let mut i = 0;
    while i < n {
        if s[i] != 1 && d[i] != 0 {
            s[k] = s[i];
            d[k] = d[i];
            k += 1;
        }
        i += 1;
    }
    if k == 0 {
        s[0] = 1;
        d[0] = 0;
        return Ok(1);
    }
    coalesce_in_place(s, d, k)
}

/// Composition of a coalesced flat `A` with one integer-shaped mode `b_s:b_d` of `B`.
pub(crate) const fn compose_mode(
    a_s: &[i64],
    a_d: &[i64],
    a_n: usize,
    b_s: i64,
    b_d: i64,
    out_s: &mut [i64],
    out_d: &mut [i64],
) -> Result<usize, LayoutError> {
    let cap = if out_s.len() < out_d.len() { out_s.len() } else { out_d.len() };
    if cap == 0 {
        return Err(LayoutError::Capacity { capacity: 0, needed: 1 });
    }
    if b_d == 0 {
        out_s[0] = b_s;
        out_d[0] = 0;
        return Ok(1);
    }
    if b_s <= 0 {
        return Err(LayoutError::NonPositiveShape(b_s));
    }
    let mut rest_shape = b_s;
    let mut rest_stride = b_d;
    let mut k = 0;
    let mut i = 0;
    while i + 1 < a_n {
        let (cs, cd) = (a_s[i], a_d[i]);
        if cs <= 0 {
            return Err(LayoutError::NonPositiveShape(cs));
        }
        // A negative stride walks A's modes downwards: its magnitude decides how many of B's elements fall in
        // this mode of A, and the sign stays on the strides (pycute's floor division instead gave a step inside
        // the mode, |stride| < shape, no elements here and a stride of 0 after it: not A ∘ B).
        let magnitude = match rest_stride.checked_abs() {
            Some(m) => m,
            None => return Err(LayoutError::Overflow),
        };
        if magnitude == 0 || !(cs % magnitude == 0 || magnitude % cs == 0) {
            return Err(LayoutError::StrideDivisibility { shape: cs, stride: rest_stride });
        }
        let q = cs / magnitude;
        let mut new_shape = if q > 1 { q } else { 1 };
        if new_shape > rest_shape {
            new_shape = rest_shape;
        }
        if new_shape != 1 {
            if k >= cap {
                return Err(LayoutError::Capacity { capacity: cap, needed: k + 1 });
            }
            out_s[k] = new_shape;
            out_d[k] = tri!(checked_mul(rest_stride, cd));
            k += 1;
        }
        // pycute floors here; a remainder means B's mode straddles A's modes and the result
        // would silently lose elements (C++ CuTe rejects it), so it is undefined.
        if rest_shape % new_shape != 0 {
            return Err(LayoutError::ShapeDivisibility { shape: rest_shape, divisor: new_shape });
        }
        rest_shape /= new_shape;
        let next = tri!(ceil_div(magnitude, cs));
        rest_stride = if rest_stride < 0 { -next } else { next };
        i += 1;
    }
    if rest_shape != 1 || k == 0 {
        if k >= cap {
            return Err(LayoutError::Capacity { capacity: cap, needed: k + 1 });
        }
        out_s[k] = rest_shape;
        out_d[k] = tri!(checked_mul(rest_stride, a_d[a_n - 1]));
        k += 1;
    }
    Ok(k)
}

/// Whether mode `(s0, d0)` sorts before `(s1, d1)`: by stride, then shape, like Python's sort
/// of `(stride, shape)` tuples.
const fn less2(a0: i64, a1: i64, b0: i64, b1: i64) -> bool {
    a0 < b0 || (a0 == b0 && a1 < b1)
}

/// Sorts the first `n` modes by `(stride, shape)` in place (insertion sort: `const`, and linear
/// on input that is already sorted, which is how the runtime layouts call it).
const fn sort_by_stride(s: &mut [i64], d: &mut [i64], n: usize) {
    let mut i = 1;
    while i < n {
        let mut j = i;
        while j > 0 && less2(d[j], s[j], d[j - 1], s[j - 1]) {
            let (ts, td) = (s[j], d[j]);
            s[j] = s[j - 1];
            d[j] = d[j - 1];
            s[j - 1] = ts;
            d[j - 1] = td;
            j -= 1;
        }
        i += 1;
    }
}

/// pycute `complement(A, cotarget)` of `n` flat modes, in place (needs room for `n + 1`).
/// `cotarget` must be positive: a complement up to 0 or less would need a mode of size 0.
pub(crate) const fn complement_in_place(
    s: &mut [i64],
    d: &mut [i64],
    n: usize,
    cotarget: i64,
) -> Result<usize, LayoutError> {
    let cap = if s.len() < d.len() { s.len() } else { d.len() };
    if cap < n + 1 {
        return Err(LayoutError::Capacity { capacity: cap, needed: n + 1 });
    }
    if cotarget < 1 {
        return Err(LayoutError::InvalidArgument("complement cotarget must be positive"));
    }
    sort_by_stride(s, d, n);
    let mut current = 1i64;
    let mut k = 0;
    let mut i = 0;
    while i < n {
        let (cs, cd) = (s[i], d[i]);
        i += 1;
        if cd == 0 || cs == 1 {
            continue;
        }
        let span = tri!(checked_mul(cs, cd));
        // pycute asserts the first; the second would leave a size-0 mode (a stride inside the
        // span of smaller modes without overlapping them), which no complement can fill.
        if current > span || cd < current {
            return Err(LayoutError::NotInjective);
        }
        s[k] = tri!(floor_div(cd, current));
        d[k] = current;
        k += 1;
        current = span;
    }
    // ceil(cotarget / current) without forming `cotarget + current - 1`.
    s[k] = tri!(ceil_div(cotarget, current));
    d[k] = current;
    coalesce_in_place(s, d, k + 1)
}

const fn less3(a: (i64, i64, i64), b: (i64, i64, i64)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && (a.1 < b.1 || (a.1 == b.1 && a.2 < b.2)))
}

/// pycute `right_inverse` of `n` flat modes, in place; `scratch` holds at least `n` values and
/// `s`/`d` at least one. Returns the count.
pub(crate) const fn right_inverse_in_place(
    s: &mut [i64],
    d: &mut [i64],
    scratch: &mut [i64],
    n: usize,
) -> Result<usize, LayoutError> {
    tri!(sort_for_right_inverse(s, d, scratch, n));
    right_inverse_sorted(s, d, scratch, n)
}

/// The first half of [`right_inverse_in_place`]: writes each mode's column-major stride in the
/// layout to `scratch` and sorts the modes by `(d, s, that stride)` as pycute does.
pub(crate) const fn sort_for_right_inverse(
    s: &mut [i64],
    d: &mut [i64],
    scratch: &mut [i64],
    n: usize,
) -> Result<(), LayoutError> {
    let mut acc = 1i64;
    let mut i = 0;
    while i < n {
        scratch[i] = acc;
        // The running product past the last mode is not used, so only a product that is used
        // can overflow the layout's size.
        if i + 1 < n {
            acc = tri!(checked_mul(acc, s[i]));
        }
        i += 1;
    }
    let mut i = 1;
    while i < n {
        let mut j = i;
        while j > 0 && less3((d[j], s[j], scratch[j]), (d[j - 1], s[j - 1], scratch[j - 1])) {
            let (ts, td, tr) = (s[j], d[j], scratch[j]);
            s[j] = s[j - 1];
            d[j] = d[j - 1];
            scratch[j] = scratch[j - 1];
            s[j - 1] = ts;
            d[j - 1] = td;
            scratch[j - 1] = tr;
            j -= 1;
        }
        i += 1;
    }
    Ok(())
}

/// Whether the right inverse's chain over modes sorted by [`sort_for_right_inverse`] (each
/// stride the product of the shapes and strides before it, as [`right_inverse_sorted`] takes
/// them) takes in all `l_modes` non-trivial modes of a layout `L` of size `size_l`, told apart
/// from the other modes by a column-major stride `r` below `size_l`. The chained modes then form
/// a bijection onto `[0, product)` which `R` inverts, so `R(L(i)) == i` for every `i < size_l`.
pub(crate) const fn chain_covers(s: &[i64], d: &[i64], r: &[i64], n: usize, size_l: i64, l_modes: usize) -> bool {
    let mut current = 1i64;
    let mut covered = 0;
    let mut i = 0;
    while i < n {
        let (cs, cd, cr) = (s[i], d[i], r[i]);
        i += 1;
        if cs == 1 {
            continue;
        }
        if cd != current {
            break;
        }
        if cr < size_l {
            covered += 1;
        }
        current = match cs.checked_mul(cd) {
            Some(v) => v,
            None => break,
        };
    }
    covered == l_modes
}

/// The tail of [`right_inverse_in_place`]: modes `(s[i], d[i])` with their column-major strides
/// `r[i]` in the layout, already sorted by `(d, s, r)`. Writes `R` to `s`/`d`; returns its count.
pub(crate) const fn right_inverse_sorted(
    s: &mut [i64],
    d: &mut [i64],
    r: &[i64],
    n: usize,
) -> Result<usize, LayoutError> {
    let mut current = 1i64;
    let mut k = 0;
    let mut i = 0;
    while i < n {
        let (cs, cd, cr) = (s[i], d[i], r[i]);
        i += 1;
        if cs == 1 {
            continue;
        }
        if current != cd {
            break;
        }
        s[k] = cs;
        d[k] = cr;
        k += 1;
        // A next stride equal to a product outside `i64` cannot exist: the run ends here.
        current = match cs.checked_mul(cd) {
            Some(v) => v,
            None => break,
        };
    }
    coalesce_in_place(s, d, k)
}

/// Largest layout size for which left inverses are verified element by element.
pub(crate) const LEFT_INVERSE_CHECK_LIMIT: i64 = 1 << 22;

/// Whether `R(L(i)) == i` for every `i < size(L)`, evaluated element by element; `false` above
/// [`LEFT_INVERSE_CHECK_LIMIT`] elements, where only [`chain_covers`] can prove it. Modes of size 1
/// do not change the function, so callers may drop them first to keep each evaluation short.
pub(crate) const fn is_left_inverse(
    l_s: &[i64],
    l_d: &[i64],
    l_n: usize,
    r_s: &[i64],
    r_d: &[i64],
    r_n: usize,
) -> Result<bool, LayoutError> {
    let mut i = 0;
    while i < l_n {
        if l_s[i] > 1 && l_d[i] == 0 {
            return Ok(false);
        }
        i += 1;
    }
    let size_l = tri!(product(l_s, l_n));
    if size_l > LEFT_INVERSE_CHECK_LIMIT {
        return Ok(false);
    }
    let size_r = tri!(product(r_s, r_n));
    let mut i = 0;
    while i < size_l {
        let v = tri!(eval(l_s, l_d, l_n, i));
        if v < 0 || v >= size_r || tri!(eval(r_s, r_d, r_n, v)) != i {
            return Ok(false);
        }
        i += 1;
    }
    Ok(true)
}
