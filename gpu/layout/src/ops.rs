//! The layout algebra on runtime layouts: coalesce, filter, composition, complement, inverses,
//! divides, products and recasts, each with pycute's (CuTe's reference) semantics and result
//! shapes. Undefined cases return a [`LayoutError`] instead of asserting, and so does arithmetic
//! that leaves `i64` ([`LayoutError::Overflow`]).
//!
//! Cost: every operation here is linear in the number of leaf modes of its arguments, up to a
//! sort (complement and the inverses sort the modes by stride, `O(n log n)`), and composition
//! coalesces `A` once, then takes `O(63)` per mode of `B`: it requires `A`'s size to fit in an
//! `i64`, so the coalesced `A` has at most 63 modes above size 1. [`left_inverse`] also checks its result on up to 2^22 elements of the domain.

use alloc::vec;
use alloc::vec::Vec;

use crate::flat;
use crate::int_tuple::IntTuple;
use crate::{Layout, LayoutError};

/// The second argument of the by-mode operations (pycute's "tuple of layouts, `None` as no-op").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tiler {
    /// Leave this mode as it is (pycute's `None`, CuTe's `_`).
    Skip,
    /// Apply the operation with this layout to the (whole) mode.
    Layout(Layout),
    /// Apply element `i` to top-level mode `i`; modes past the end are kept.
    Modes(Vec<Tiler>),
}

impl From<Layout> for Tiler {
    fn from(l: Layout) -> Self {
        Self::Layout(l)
    }
}

impl From<&Layout> for Tiler {
    fn from(l: &Layout) -> Self {
        Self::Layout(l.clone())
    }
}

/// An integer tiler `n` is the layout `n:1`.
impl From<i64> for Tiler {
    fn from(n: i64) -> Self {
        Self::Layout(Layout::int(n, 1))
    }
}

/// A shape used as a tiler applies `n:1` to each mode, recursively.
impl From<&IntTuple> for Tiler {
    fn from(t: &IntTuple) -> Self {
        match t {
            IntTuple::Int(n) => Self::from(*n),
            IntTuple::Tuple(items) => Self::Modes(items.iter().map(Self::from).collect()),
        }
    }
}

fn check_rank(layout: &Layout, tiler_rank: usize) -> Result<(), LayoutError> {
    if layout.rank() < tiler_rank {
        return Err(LayoutError::RankMismatch { layout_rank: layout.rank(), tiler_rank });
    }
    Ok(())
}

/// `make_layout(f(A[i], T[i]) for i < len(T), A[i] for the rest)`.
fn by_mode<T>(
    a: &Layout,
    tiles: &[T],
    mut f: impl FnMut(&Layout, &T) -> Result<Layout, LayoutError>,
) -> Result<Layout, LayoutError> {
    check_rank(a, tiles.len())?;
    let modes = a.modes();
    let mut out = Vec::with_capacity(modes.len());
    for (i, m) in modes.iter().enumerate() {
        out.push(if i < tiles.len() { f(m, &tiles[i])? } else { m.clone() });
    }
    Ok(Layout::from_modes(out))
}

fn coalesced_leaves(l: &Layout) -> Result<(Vec<i64>, Vec<i64>), LayoutError> {
    let (mut s, mut d) = l.leaves();
    if s.is_empty() {
        s.push(1);
        d.push(0);
    }
    let len = s.len();
    let n = flat::coalesce_in_place(&mut s, &mut d, len)?;
    s.truncate(n);
    d.truncate(n);
    Ok((s, d))
}

/// Flattens and merges modes while preserving the function (`i -> L(i)`);
/// [`LayoutError::Overflow`] where a merged shape does not fit in an `i64`.
pub fn coalesce(l: &Layout) -> Result<Layout, LayoutError> {
    let (s, d) = coalesced_leaves(l)?;
    Ok(Layout::from_flat(&s, &d))
}

/// Coalesce by mode: an integer in `profile` coalesces that whole mode; a tuple recurses.
pub fn coalesce_by(l: &Layout, profile: &IntTuple) -> Result<Layout, LayoutError> {
    match profile {
        IntTuple::Int(_) => coalesce(l),
        IntTuple::Tuple(p) => by_mode(l, p, coalesce_by),
    }
}

/// Drops stride-0 and size-1 modes, then coalesces.
pub fn filter(l: &Layout) -> Result<Layout, LayoutError> {
    let (mut s, mut d) = l.leaves();
    if s.is_empty() {
        return Ok(Layout::int(1, 0));
    }
    let len = s.len();
    let n = flat::filter_in_place(&mut s, &mut d, len)?;
    Ok(Layout::from_flat(&s[..n], &d[..n]))
}

/// Filter by mode, like [`coalesce_by`].
pub fn filter_by(l: &Layout, profile: &IntTuple) -> Result<Layout, LayoutError> {
    match profile {
        IntTuple::Int(_) => filter(l),
        IntTuple::Tuple(p) => by_mode(l, p, filter_by),
    }
}

/// `A ∘ B`: `R(c) = A(B(c))` over `B`'s domain, shaped like `B`. `A`'s size must fit in an
/// `i64` ([`LayoutError::Overflow`] otherwise): its coalesced form then has at most 63 modes of
/// size above 1, which bounds the work per mode of `B`.
pub fn composition(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    a.size()?;
    let (a_s, a_d) = coalesced_leaves(a)?;
    compose_coalesced(&a_s, &a_d, b)
}

/// [`composition`] with `A` coalesced once for all of `B`'s modes.
fn compose_coalesced(a_s: &[i64], a_d: &[i64], b: &Layout) -> Result<Layout, LayoutError> {
    match (b.shape(), b.stride()) {
        (IntTuple::Int(bs), IntTuple::Int(bd)) => {
            let mut out_s = vec![0; a_s.len().max(1)];
            let mut out_d = vec![0; a_s.len().max(1)];
            let n = flat::compose_mode(a_s, a_d, a_s.len(), *bs, *bd, &mut out_s, &mut out_d)?;
            Ok(Layout::from_flat(&out_s[..n], &out_d[..n]))
        }
        _ => {
            let modes = b.modes().iter().map(|bi| compose_coalesced(a_s, a_d, bi)).collect::<Result<Vec<_>, _>>()?;
            Ok(Layout::from_modes(modes))
        }
    }
}

/// Composition with a tiler: by mode for [`Tiler::Modes`], identity for [`Tiler::Skip`].
pub fn composition_with(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    match tiler {
        Tiler::Skip => Ok(a.clone()),
        Tiler::Layout(b) => composition(a, b),
        Tiler::Modes(t) => by_mode(a, t, composition_with),
    }
}

/// `complement(A, cotarget)`: the ordered layout whose offsets, combined with `A`'s, fill
/// `[0, cotarget)` without overlapping `A` (pycute's definition; `cotarget` 1 gives the minimal one).
/// `cotarget` must be positive ([`LayoutError::InvalidArgument`] otherwise).
pub fn complement(a: &Layout, cotarget: i64) -> Result<Layout, LayoutError> {
    let (s, d) = a.leaves();
    let n = s.len();
    // Sorted here in O(n log n), so that the const core's insertion sort finds nothing to move.
    let mut modes: Vec<(i64, i64)> = d.into_iter().zip(s).collect();
    // (stride, shape) tuples order exactly as the core's comparison does.
    modes.sort_unstable();
    let (mut d, mut s): (Vec<i64>, Vec<i64>) = modes.into_iter().unzip();
    s.push(0);
    d.push(0);
    let m = flat::complement_in_place(&mut s, &mut d, n, cotarget)?;
    Ok(Layout::from_flat(&s[..m], &d[..m]))
}

/// Flat modes sorted as pycute's right inverse sorts them, by `(stride, shape, column-major
/// stride in L)`, with that last stride in `r`.
struct SortedModes {
    s: Vec<i64>,
    d: Vec<i64>,
    r: Vec<i64>,
}

/// Sorts in `O(n log n)`, so that the const core's insertion sort is not needed; the product
/// past the last mode is not a stride and is not formed.
fn sorted_modes(s: &[i64], d: &[i64]) -> Result<SortedModes, LayoutError> {
    let n = s.len();
    let mut modes = Vec::with_capacity(n);
    let mut acc = 1i64;
    for (i, (&si, &di)) in s.iter().zip(d).enumerate() {
        modes.push((di, si, acc));
        if i + 1 < n {
            acc = flat::checked_mul(acc, si)?;
        }
    }
    modes.sort_unstable();
    Ok(SortedModes {
        s: modes.iter().map(|m| m.1).collect(),
        d: modes.iter().map(|m| m.0).collect(),
        r: modes.iter().map(|m| m.2).collect(),
    })
}

fn right_inverse_of_sorted(modes: &SortedModes) -> Result<(Vec<i64>, Vec<i64>), LayoutError> {
    let n = modes.s.len();
    let (mut s, mut d) = (modes.s.clone(), modes.d.clone());
    if n == 0 {
        s.push(0);
        d.push(0);
    }
    let m = flat::right_inverse_sorted(&mut s, &mut d, &modes.r, n)?;
    s.truncate(m);
    d.truncate(m);
    Ok((s, d))
}

fn right_inverse_leaves(s: Vec<i64>, d: Vec<i64>) -> Result<(Vec<i64>, Vec<i64>), LayoutError> {
    right_inverse_of_sorted(&sorted_modes(&s, &d)?)
}

/// A right inverse `R` with `L(R(i)) == i` for `i < size(R)` (pycute's: as far as `L`'s sorted
/// strides stay contiguous from 1, so it always exists, possibly `1:0`, unless `L`'s size
/// overflows `i64`).
pub fn right_inverse(l: &Layout) -> Result<Layout, LayoutError> {
    let (s, d) = l.leaves();
    let (s, d) = right_inverse_leaves(s, d)?;
    Ok(Layout::from_flat(&s, &d))
}

/// pycute's left inverse `right_inverse(make_layout(L, complement(L)))`, checked to satisfy
/// `R(L(i)) == i`; an error when `L` is not injective (or no layout inverts it). The check is
/// exact and takes no evaluation when the right inverse's stride chain takes in all of `L`'s
/// modes; otherwise `L` is evaluated element by element, up to 2^22 elements, and a larger
/// such `L` is [`LayoutError::NoLeftInverse`].
pub fn left_inverse(l: &Layout) -> Result<Layout, LayoutError> {
    let c = complement(l, 1).map_err(|e| match e {
        LayoutError::NotInjective => LayoutError::NoLeftInverse,
        e => e,
    })?;
    let size_l = l.size()?;
    let (mut s, mut d) = l.leaves();
    let (cs, cd) = c.leaves();
    s.extend(cs);
    d.extend(cd);
    let modes = sorted_modes(&s, &d)?;
    let (rs, rd) = right_inverse_of_sorted(&modes)?;
    // Size-1 modes do not change `L`'s function: dropping them keeps each evaluation of the
    // check as short as the (at most 63) modes that do.
    let (ls, ld): (Vec<i64>, Vec<i64>) = {
        let (ls, ld) = l.leaves();
        ls.into_iter().zip(ld).filter(|&(s, _)| s != 1).unzip()
    };
    // Exact when the chain takes in all of L's modes; otherwise checked element by element.
    let proven = flat::chain_covers(&modes.s, &modes.d, &modes.r, modes.s.len(), size_l, ls.len());
    if !proven && !flat::is_left_inverse(&ls, &ld, ls.len(), &rs, &rd, rs.len())? {
        return Err(LayoutError::NoLeftInverse);
    }
    Ok(Layout::from_flat(&rs, &rd))
}

/// `A ∘ (B, complement(B, size(A)))`: mode 0 indexes within a tile `B`, mode 1 over the tiles.
pub fn logical_divide(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    match tiler {
        Tiler::Skip => Ok(a.clone()),
        Tiler::Layout(b) => {
            let rest = complement(b, a.size()?)?;
            composition(a, &Layout::from_modes([b.clone(), rest]))
        }
        Tiler::Modes(t) => by_mode(a, t, logical_divide),
    }
}

/// `(A, complement(A, size(A)*cosize(B)) ∘ B)`: `A` repeated over the layout `B`.
pub fn logical_product(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    match tiler {
        Tiler::Skip => Ok(a.clone()),
        Tiler::Layout(b) => {
            let cotarget = flat::checked_mul(a.size()?, b.cosize()?)?;
            let rest = composition(&complement(a, cotarget)?, b)?;
            Ok(Layout::from_modes([a.clone(), rest]))
        }
        Tiler::Modes(t) => by_mode(a, t, logical_product),
    }
}

type Splitter = fn(&Layout, &Tiler) -> Result<Layout, LayoutError>;

/// Applies `split` by mode and gathers the results to `((tiles...), (rests..., untouched...))`.
fn hier_unzip(split: Splitter, a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    match tiler {
        Tiler::Skip => Ok(Layout::from_modes([Layout::int(1, 0), a.clone()])),
        Tiler::Layout(_) => split(a, tiler),
        Tiler::Modes(t) => {
            check_rank(a, t.len())?;
            let modes = a.modes();
            let mut firsts = Vec::with_capacity(t.len());
            let mut seconds = Vec::with_capacity(modes.len());
            for (m, ti) in modes.iter().zip(t) {
                let split_mode = hier_unzip(split, m, ti)?;
                firsts.push(split_mode.mode(0).ok_or(LayoutError::NotCongruent)?);
                seconds.push(split_mode.mode(1).ok_or(LayoutError::NotCongruent)?);
            }
            seconds.extend(modes[t.len()..].iter().cloned());
            Ok(Layout::from_modes([Layout::from_modes(firsts), Layout::from_modes(seconds)]))
        }
    }
}

fn unpack_second(zipped: Layout) -> Layout {
    let mut modes = zipped.modes();
    let rest = modes.pop().map(|r| r.modes()).unwrap_or_default();
    modes.extend(rest);
    Layout::from_modes(modes)
}

fn unpack_both(zipped: Layout) -> Layout {
    Layout::from_modes(zipped.modes().iter().flat_map(Layout::modes))
}

/// `((tiles), (rests))`: logical divide with the tile modes and the rest modes gathered.
pub fn zipped_divide(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    hier_unzip(logical_divide, a, tiler)
}

/// `((tiles), rest0, rest1, ...)`.
pub fn tiled_divide(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    Ok(unpack_second(zipped_divide(a, tiler)?))
}

/// `(tile0, tile1, ..., rest0, rest1, ...)`.
pub fn flat_divide(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    Ok(unpack_both(zipped_divide(a, tiler)?))
}

/// `((A modes), (products))`, the product counterpart of [`zipped_divide`].
pub fn zipped_product(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    hier_unzip(logical_product, a, tiler)
}

/// `((A modes), p0, p1, ...)`.
pub fn tiled_product(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    Ok(unpack_second(zipped_product(a, tiler)?))
}

/// `(a0, a1, ..., p0, p1, ...)`.
pub fn flat_product(a: &Layout, tiler: &Tiler) -> Result<Layout, LayoutError> {
    Ok(unpack_both(zipped_product(a, tiler)?))
}

/// Shared by blocked and raked products: `logical_product` of the rank-aligned layouts, zipped
/// mode by mode (`block` first or `repeat` first), each mode coalesced.
fn zipped_rank_product(a: &Layout, b: &Layout, block_first: bool) -> Result<Layout, LayoutError> {
    let rank = a.rank().max(b.rank());
    let product = logical_product(&a.append_to_rank(rank), &Tiler::Layout(b.append_to_rank(rank)))?;
    let (block, repeat) = match (product.mode(0), product.mode(1)) {
        (Some(x), Some(y)) => (x, y),
        _ => return Err(LayoutError::NotCongruent),
    };
    let (block_modes, repeat_modes) =
        if rank == 1 { (vec![block], vec![repeat]) } else { (block.modes(), repeat.modes()) };
    let modes = block_modes.into_iter().zip(repeat_modes).map(|(x, y)| {
        let pair = if block_first { [x, y] } else { [y, x] };
        coalesce(&Layout::from_modes(pair))
    });
    Ok(Layout::from_modes(modes.collect::<Result<Vec<_>, _>>()?))
}

/// CuTe's `blocked_product`: mode `i` is `(A_i, B_i)` coalesced — `A` as a contiguous block,
/// repeated as `B` says.
pub fn blocked_product(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    zipped_rank_product(a, b, true)
}

/// CuTe's `raked_product`: mode `i` is `(B_i, A_i)` coalesced — `A`'s elements interleaved
/// (raked) across the repetitions.
pub fn raked_product(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    zipped_rank_product(a, b, false)
}

/// The number of leading contiguous elements on which `a` and `b` agree as functions of the
/// offsets of `b` (CuTe's `max_common_vector`): the vector width usable to copy `b` to `a`.
pub fn max_common_vector(a: &Layout, b: &Layout) -> Result<i64, LayoutError> {
    let common = coalesce(&composition(a, &right_inverse(b)?)?)?;
    let (s, d) = common.leaves();
    Ok(if d[0] == 1 { s[0] } else { 1 })
}

/// CuTe's `max_common_layout`: the layout of `b`'s coordinates that `a` and `b` map identically
/// and contiguously, `1:0` if none.
pub fn max_common_layout(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    let inv_b = right_inverse(b)?;
    let common = coalesce(&composition(a, &inv_b)?)?;
    let (s, d) = common.leaves();
    if d[0] == 1 { composition(&inv_b, &Layout::int(s[0], 1)) } else { Ok(Layout::int(1, 0)) }
}

fn map_leaf_pairs(
    l: &Layout,
    mut f: impl FnMut(i64, i64) -> Result<(i64, i64), LayoutError>,
) -> Result<Layout, LayoutError> {
    let (s, d) = l.leaves();
    let mut new = Vec::with_capacity(s.len());
    for (&si, &di) in s.iter().zip(&d) {
        new.push(f(si, di)?);
    }
    let mut it_s = new.iter().map(|p| p.0);
    let mut it_d = new.iter().map(|p| p.1);
    let shape = l.shape().map_leaves(&mut |_| it_s.next().unwrap_or(0));
    let stride = l.stride().map_leaves(&mut |_| it_d.next().unwrap_or(0));
    Layout::new(shape, stride)
}

/// The layout over elements `n` times wider (CuTe's `upcast<N>`), coalesced.
pub fn upcast(l: &Layout, n: i64) -> Result<Layout, LayoutError> {
    if n < 1 {
        return Err(LayoutError::InvalidArgument("upcast factor must be positive"));
    }
    let wide = map_leaf_pairs(l, |s, d| {
        if d == 0 {
            return Ok((s, 0));
        }
        let per_step = flat::shape_div(n, d.checked_abs().ok_or(LayoutError::Overflow)?)?;
        Ok((flat::shape_div(s, per_step)?, flat::shape_div(d, n)?))
    })?;
    coalesce(&wide)
}

/// The layout over elements `n` times narrower (CuTe's `downcast<N>`), coalesced: the unit-stride
/// mode grows `n` times, every other stride is scaled by `n`.
pub fn downcast(l: &Layout, n: i64) -> Result<Layout, LayoutError> {
    if n < 1 {
        return Err(LayoutError::InvalidArgument("downcast factor must be positive"));
    }
    let (s, d) = l.leaves();
    let is_unit = |d: i64| d == 1 || d == -1;
    // A size-1 unit-stride mode only stands for the contiguous dimension when no larger one does.
    let has_long_unit = s.iter().zip(&d).any(|(&s, &d)| s > 1 && is_unit(d));
    let mut widened_short_unit = false;
    let narrow = map_leaf_pairs(l, |s, d| {
        let widen = is_unit(d) && (s > 1 || (!has_long_unit && !widened_short_unit));
        if widen {
            widened_short_unit |= s == 1;
            Ok((flat::checked_mul(s, n)?, d))
        } else {
            Ok((s, flat::checked_mul(d, n)?))
        }
    })?;
    coalesce(&narrow)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// CuTe's `recast_layout<Old, New>`: a layout over `old_bits`-wide elements re-expressed over
/// `new_bits`-wide ones.
pub fn recast_layout(l: &Layout, old_bits: i64, new_bits: i64) -> Result<Layout, LayoutError> {
    if old_bits < 1 || new_bits < 1 {
        return Err(LayoutError::InvalidArgument("element widths must be positive"));
    }
    let g = gcd(new_bits, old_bits);
    let (num, den) = (new_bits / g, old_bits / g);
    match (num, den) {
        (1, 1) => Ok(l.clone()),
        (1, den) => downcast(l, den),
        (num, 1) => upcast(l, num),
        (num, den) => downcast(&upcast(l, num)?, den),
    }
}
