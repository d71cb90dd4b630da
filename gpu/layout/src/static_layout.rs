//! Layouts that live in `const` context: fixed-capacity flat leaf modes grouped into top-level
//! modes. Everything here is `const fn`, so a kernel that indexes through a `const` layout is
//! left with plain integer arithmetic. Results follow the same cores as the runtime
//! [`Layout`](crate::Layout); the only hierarchy kept is the top-level grouping, which is what
//! decides the per-mode functions (deeper nesting only renames the same colexicographic order).

use crate::flat;
use crate::{LayoutError, Swizzle};

/// Unwraps arithmetic that the bounds invariant of [`StaticLayout`] keeps inside `i64`, or that
/// the caller asked for outside the layout's domain (a compile error in `const`).
const fn exact(result: Result<i64, LayoutError>) -> i64 {
    match result {
        Ok(v) => v,
        Err(_) => panic!("layout arithmetic overflows i64 (index or coordinate outside the layout)"),
    }
}

/// Room for intermediate results (e.g. the `n + 1` modes of a complement) of const operations.
pub const SCRATCH: usize = 64;

/// A layout of at most `N` leaf modes, grouped into top-level modes.
///
/// Invariant, kept by every constructor and operation: the size and the cosize fit in an `i64`
/// (`1 + Σ (s_i - 1)·|d_i| <= i64::MAX`), so [`size`](Self::size), [`cosize`](Self::cosize),
/// [`mode_size`](Self::mode_size) and offsets of indices inside the domain are exact with plain
/// arithmetic; a layout that would break it is [`LayoutError::Overflow`] where it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StaticLayout<const N: usize> {
    shape: [i64; N],
    stride: [i64; N],
    leaves: usize,
    /// `ends[k]` is one past the last leaf of top-level mode `k`.
    ends: [usize; N],
    rank: usize,
    /// The product of the leaf shapes, kept as leaves are pushed.
    size: i64,
    /// `1 + Σ (s_i - 1)·|d_i|`, kept as leaves are pushed: every offset of the domain lies
    /// strictly within `±cospan`, so it and the cosize fit in an `i64`.
    cospan: i64,
}

impl<const N: usize> StaticLayout<N> {
    const EMPTY: Self = Self { shape: [0; N], stride: [0; N], leaves: 0, ends: [0; N], rank: 0, size: 1, cospan: 1 };

    /// A flat layout, one top-level mode per entry. Panics (a compile error in `const`) on
    /// mismatched lengths, more than `N` modes, or a shape entry below 1.
    pub const fn new(shape: &[i64], stride: &[i64]) -> Self {
        Self::expect(Self::try_new(shape, stride))
    }

    /// Fallible [`StaticLayout::new`].
    pub const fn try_new(shape: &[i64], stride: &[i64]) -> Result<Self, LayoutError> {
        if shape.len() != stride.len() || shape.is_empty() {
            return Err(LayoutError::NotCongruent);
        }
        let mut out = Self::EMPTY;
        let mut i = 0;
        while i < shape.len() {
            if shape[i] < 1 {
                return Err(LayoutError::NonPositiveShape(shape[i]));
            }
            tri!(out.push_leaf(shape[i], stride[i]));
            out.end_mode();
            i += 1;
        }
        Ok(out)
    }

    /// A nested layout: `groups[k]` consecutive leaves form top-level mode `k`, e.g.
    /// `grouped(&[2,4,8], &[4,1,8], &[2,1])` is `((2,4),8):((4,1),8)`.
    pub const fn grouped(shape: &[i64], stride: &[i64], groups: &[usize]) -> Self {
        Self::expect(Self::try_grouped(shape, stride, groups))
    }

    /// Fallible [`StaticLayout::grouped`].
    pub const fn try_grouped(shape: &[i64], stride: &[i64], groups: &[usize]) -> Result<Self, LayoutError> {
        let flat = tri!(Self::try_new(shape, stride));
        let mut out = Self::EMPTY;
        let mut leaf = 0;
        let mut g = 0;
        while g < groups.len() {
            if groups[g] == 0 {
                return Err(LayoutError::NotCongruent);
            }
            let mut j = 0;
            while j < groups[g] {
                if leaf >= flat.leaves {
                    return Err(LayoutError::NotCongruent);
                }
                tri!(out.push_leaf(flat.shape[leaf], flat.stride[leaf]));
                leaf += 1;
                j += 1;
            }
            out.end_mode();
            g += 1;
        }
        if leaf != flat.leaves {
            return Err(LayoutError::NotCongruent);
        }
        Ok(out)
    }

    /// Column-major (left-most mode fastest) compact layout of `shape`. Panics (a compile error
    /// in `const`) like [`StaticLayout::new`], and when the size overflows `i64`.
    pub const fn col_major(shape: &[i64]) -> Self {
        let mut stride = [0i64; N];
        let mut acc = 1;
        let mut i = 0;
        while i < shape.len() && i < N {
            stride[i] = acc;
            acc = exact(flat::checked_mul(acc, shape[i]));
            i += 1;
        }
        Self::new(shape, stride.split_at(shape.len()).0)
    }

    /// Row-major (right-most mode fastest) compact layout of `shape`. Panics (a compile error
    /// in `const`) like [`StaticLayout::new`], and when the size overflows `i64`.
    pub const fn row_major(shape: &[i64]) -> Self {
        let mut stride = [0i64; N];
        let mut acc = 1;
        let mut i = shape.len();
        while i > 0 {
            i -= 1;
            if i < N {
                stride[i] = acc;
            }
            acc = exact(flat::checked_mul(acc, shape[i]));
        }
        Self::new(shape, stride.split_at(shape.len()).0)
    }

    /// Unwraps a const operation's result; panics with the error kind (a compile error in `const`).
    pub const fn expect(result: Result<Self, LayoutError>) -> Self {
        match result {
            Ok(l) => l,
            Err(LayoutError::Capacity { .. }) => panic!("const layout capacity exceeded"),
            Err(LayoutError::StrideDivisibility { .. }) => {
                panic!("composition undefined: stride divisibility fails")
            }
            Err(LayoutError::ShapeDivisibility { .. }) => {
                panic!("composition undefined: shape divisibility fails")
            }
            Err(LayoutError::NotInjective) => panic!("complement undefined: layout not injective"),
            Err(LayoutError::NoLeftInverse) => panic!("left inverse undefined"),
            Err(LayoutError::NonPositiveShape(_)) => panic!("shape entries must be positive"),
            Err(LayoutError::NotCongruent) => panic!("shape, stride and grouping must agree"),
            Err(LayoutError::Overflow) => panic!("layout size or offsets overflow i64"),
            Err(_) => panic!("layout operation undefined"),
        }
    }

    /// The one place leaves are added: keeps the capacity and the bounds invariant, with two
    /// checked products and a checked sum per leaf.
    const fn push_leaf(&mut self, s: i64, d: i64) -> Result<(), LayoutError> {
        if self.leaves >= N {
            return Err(LayoutError::Capacity { capacity: N, needed: self.leaves + 1 });
        }
        if s < 1 {
            return Err(LayoutError::NonPositiveShape(s));
        }
        // A size-1 leaf adds no offset, whatever its stride (`|i64::MIN|` included).
        let reach = if s == 1 {
            0
        } else {
            match d.checked_abs() {
                Some(step) => tri!(flat::checked_mul(s - 1, step)),
                None => return Err(LayoutError::Overflow),
            }
        };
        let size = tri!(flat::checked_mul(self.size, s));
        let cospan = tri!(flat::checked_add(self.cospan, reach));
        self.shape[self.leaves] = s;
        self.stride[self.leaves] = d;
        self.leaves += 1;
        self.size = size;
        self.cospan = cospan;
        Ok(())
    }

    /// Closes the current top-level mode (a no-op when no leaf was pushed since the last one).
    const fn end_mode(&mut self) {
        let start = if self.rank == 0 { 0 } else { self.ends[self.rank - 1] };
        if self.leaves > start {
            self.ends[self.rank] = self.leaves;
            self.rank += 1;
        }
    }

    /// Appends `n` flat modes, each as its own top-level mode.
    const fn push_flat_modes(&mut self, s: &[i64], d: &[i64], n: usize) -> Result<(), LayoutError> {
        let mut i = 0;
        while i < n {
            tri!(self.push_leaf(s[i], d[i]));
            self.end_mode();
            i += 1;
        }
        Ok(())
    }

    /// Appends `n` flat modes into the current (still open) top-level mode.
    const fn push_leaves(&mut self, s: &[i64], d: &[i64], n: usize) -> Result<(), LayoutError> {
        let mut i = 0;
        while i < n {
            tri!(self.push_leaf(s[i], d[i]));
            i += 1;
        }
        Ok(())
    }

    const fn from_flat(s: &[i64], d: &[i64], n: usize) -> Result<Self, LayoutError> {
        let mut out = Self::EMPTY;
        tri!(out.push_flat_modes(s, d, n));
        Ok(out)
    }

    /// Number of top-level modes.
    pub const fn rank(&self) -> usize {
        self.rank
    }

    /// Number of leaf (integer) modes.
    pub const fn leaf_count(&self) -> usize {
        self.leaves
    }

    /// The used leaf shapes.
    pub const fn leaf_shapes(&self) -> &[i64] {
        self.shape.split_at(self.leaves).0
    }

    /// The used leaf strides.
    pub const fn leaf_strides(&self) -> &[i64] {
        self.stride.split_at(self.leaves).0
    }

    /// The leaf range `[start, end)` of top-level mode `k`.
    pub const fn mode_leaves(&self, k: usize) -> (usize, usize) {
        assert!(k < self.rank, "mode index out of range");
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        (start, self.ends[k])
    }

    /// Top-level mode `k` as a layout whose modes are its leaves.
    pub const fn mode(&self, k: usize) -> Self {
        let (start, end) = self.mode_leaves(k);
        let mut out = Self::EMPTY;
        let mut i = start;
        while i < end {
            // A part of a layout that keeps the invariant keeps it too.
            if out.push_leaf(self.shape[i], self.stride[i]).is_err() {
                panic!("a mode of a const layout is within its bounds");
            }
            out.end_mode();
            i += 1;
        }
        out
    }

    /// The same leaves, each its own top-level mode.
    pub const fn flatten(&self) -> Self {
        let mut out = *self;
        out.rank = 0;
        let mut i = 0;
        while i < self.leaves {
            out.ends[i] = i + 1;
            i += 1;
        }
        out.rank = self.leaves;
        out
    }

    /// All leaves as one top-level mode.
    pub const fn group_all(&self) -> Self {
        let mut out = *self;
        out.ends = [0; N];
        out.ends[0] = self.leaves;
        out.rank = 1;
        out
    }

    /// Size of the domain.
    pub const fn size(&self) -> i64 {
        self.size
    }

    /// Size of top-level mode `k`.
    pub const fn mode_size(&self, k: usize) -> i64 {
        let (start, end) = self.mode_leaves(k);
        let mut p = 1;
        let mut i = start;
        while i < end {
            p = exact(flat::checked_mul(p, self.shape[i]));
            i += 1;
        }
        p
    }

    /// Size of the codomain: `L(size - 1) + 1`.
    pub const fn cosize(&self) -> i64 {
        self.call(self.size() - 1) + 1
    }

    /// The offset of 1-D (colexicographic) index `idx`. Exact for `0 <= idx < size`; panics
    /// (a compile error in `const`) where an index outside the domain overflows, see
    /// [`StaticLayout::try_call`].
    pub const fn call(&self, idx: i64) -> i64 {
        exact(self.try_call(idx))
    }

    /// [`StaticLayout::call`] for any index: [`LayoutError::Overflow`] where the offset does not
    /// fit in an `i64`.
    pub const fn try_call(&self, idx: i64) -> Result<i64, LayoutError> {
        flat::eval(&self.shape, &self.stride, self.leaves, idx)
    }

    /// [`StaticLayout::call`] in 32-bit arithmetic, for device index math: the offset modulo
    /// 2^32 (wrapping by design, so it costs what the kernel's own index math would).
    pub const fn index_u32(&self, mut idx: u32) -> u32 {
        let mut r = 0u32;
        let mut i = 0;
        while i + 1 < self.leaves {
            let (c, rest) = split_u32(idx, self.shape[i]);
            r = r.wrapping_add(c.wrapping_mul(self.stride[i] as u32));
            idx = rest;
            i += 1;
        }
        r.wrapping_add(idx.wrapping_mul(self.stride[self.leaves - 1] as u32))
    }

    /// [`StaticLayout::crd2idx`] in 32-bit arithmetic, for device index math: a kernel indexing a tile by
    /// (row, column) gets exactly `row * d0 + col * d1` when each mode is one leaf.
    pub const fn crd2idx_u32(&self, crd: &[u32]) -> u32 {
        assert!(crd.len() == self.rank, "coordinate rank must equal layout rank");
        let mut r = 0u32;
        let mut k = 0;
        while k < self.rank {
            let (start, end) = self.mode_leaves(k);
            let mut idx = crd[k];
            let mut i = start;
            while i + 1 < end {
                let (c, rest) = split_u32(idx, self.shape[i]);
                r = r.wrapping_add(c.wrapping_mul(self.stride[i] as u32));
                idx = rest;
                i += 1;
            }
            r = r.wrapping_add(idx.wrapping_mul(self.stride[end - 1] as u32));
            k += 1;
        }
        r
    }

    /// The offset of a coordinate given as one 1-D index per top-level mode. Exact for
    /// coordinates inside the modes; panics (a compile error in `const`) where one outside
    /// overflows, see [`StaticLayout::try_crd2idx`].
    pub const fn crd2idx(&self, crd: &[i64]) -> i64 {
        assert!(crd.len() == self.rank, "coordinate rank must equal layout rank");
        exact(self.try_crd2idx(crd))
    }

    /// [`StaticLayout::crd2idx`] for any coordinate: [`LayoutError::RankMismatch`] for a
    /// coordinate of another rank, [`LayoutError::Overflow`] where the offset does not fit.
    pub const fn try_crd2idx(&self, crd: &[i64]) -> Result<i64, LayoutError> {
        if crd.len() != self.rank {
            return Err(LayoutError::RankMismatch { layout_rank: self.rank, tiler_rank: crd.len() });
        }
        let mut r = 0;
        let mut k = 0;
        while k < self.rank {
            let (start, end) = self.mode_leaves(k);
            let s = self.shape.split_at(end).0.split_at(start).1;
            let d = self.stride.split_at(end).0.split_at(start).1;
            r = tri!(flat::checked_add(r, tri!(flat::eval(s, d, end - start, crd[k]))));
            k += 1;
        }
        Ok(r)
    }

    /// The per-top-level-mode coordinate of 1-D index `idx` (entries past `rank` are 0).
    pub const fn idx2crd(&self, idx: i64) -> [i64; N] {
        let mut out = [0; N];
        let mut below = 1;
        let mut k = 0;
        while k < self.rank {
            let size = self.mode_size(k);
            out[k] = (idx / below) % size;
            // The product of the mode sizes is the size, which fits (bounds invariant).
            below = exact(flat::checked_mul(below, size));
            k += 1;
        }
        out
    }

    /// The per-leaf coordinate of 1-D index `idx` (entries past the leaf count are 0).
    pub const fn idx2leaf_crd(&self, idx: i64) -> [i64; N] {
        let mut out = [0; N];
        let mut below = 1;
        let mut i = 0;
        while i < self.leaves {
            out[i] = (idx / below) % self.shape[i];
            below = exact(flat::checked_mul(below, self.shape[i]));
            i += 1;
        }
        out
    }

    /// `make_layout(self, other)`: a rank-2 layout, each argument's leaves forming one mode.
    pub const fn pair(&self, other: &Self) -> Result<Self, LayoutError> {
        let mut out = Self::EMPTY;
        tri!(out.push_leaves(&self.shape, &self.stride, self.leaves));
        out.end_mode();
        tri!(out.push_leaves(&other.shape, &other.stride, other.leaves));
        out.end_mode();
        Ok(out)
    }

    /// The top-level modes of `self` followed by those of `other`.
    pub const fn concat(&self, other: &Self) -> Result<Self, LayoutError> {
        let mut out = *self;
        let mut k = 0;
        while k < other.rank {
            let (start, end) = other.mode_leaves(k);
            let mut i = start;
            while i < end {
                tri!(out.push_leaf(other.shape[i], other.stride[i]));
                i += 1;
            }
            out.end_mode();
            k += 1;
        }
        Ok(out)
    }

    /// Merges leaves while keeping the function; the result is flat. Merged shapes are products
    /// of leaf shapes, which fit (bounds invariant).
    pub const fn coalesce(&self) -> Self {
        let (mut s, mut d) = (self.shape, self.stride);
        let n = match flat::coalesce_in_place(&mut s, &mut d, self.leaves) {
            Ok(n) => n,
            Err(e) => return Self::expect(Err(e)),
        };
        Self::expect(Self::from_flat(&s, &d, n))
    }

    /// Drops stride-0 and size-1 leaves, then coalesces.
    pub const fn filter(&self) -> Self {
        let (mut s, mut d) = (self.shape, self.stride);
        let n = match flat::filter_in_place(&mut s, &mut d, self.leaves) {
            Ok(n) => n,
            Err(e) => return Self::expect(Err(e)),
        };
        Self::expect(Self::from_flat(&s, &d, n))
    }

    /// Appends the leaves of `A ∘ (b_s:b_d)` to the open mode of `out`; `a` is coalesced.
    const fn push_composed(
        out: &mut Self,
        a_s: &[i64],
        a_d: &[i64],
        a_n: usize,
        b_s: i64,
        b_d: i64,
    ) -> Result<usize, LayoutError> {
        let (mut rs, mut rd) = ([0i64; SCRATCH], [0i64; SCRATCH]);
        let n = tri!(flat::compose_mode(a_s, a_d, a_n, b_s, b_d, &mut rs, &mut rd));
        tri!(out.push_leaves(&rs, &rd, n));
        Ok(n)
    }

    /// `self ∘ b`, by top-level mode of `b`. A `b` of one leaf gives pycute's rank-1 result with
    /// each resulting leaf as a top-level mode.
    pub const fn composition<const M: usize>(&self, b: &StaticLayout<M>) -> Result<Self, LayoutError> {
        let (mut a_s, mut a_d) = (self.shape, self.stride);
        let a_n = tri!(flat::coalesce_in_place(&mut a_s, &mut a_d, self.leaves));
        let mut out = Self::EMPTY;
        if b.leaves == 1 {
            let (mut rs, mut rd) = ([0i64; SCRATCH], [0i64; SCRATCH]);
            let n = tri!(flat::compose_mode(&a_s, &a_d, a_n, b.shape[0], b.stride[0], &mut rs, &mut rd));
            tri!(out.push_flat_modes(&rs, &rd, n));
            return Ok(out);
        }
        let mut k = 0;
        while k < b.rank {
            let (start, end) = b.mode_leaves(k);
            let mut i = start;
            while i < end {
                tri!(Self::push_composed(&mut out, &a_s, &a_d, a_n, b.shape[i], b.stride[i]));
                i += 1;
            }
            out.end_mode();
            k += 1;
        }
        Ok(out)
    }

    /// `complement(self, cotarget)`: the ordered layout filling the gaps of `self` up to `cotarget`.
    pub const fn complement(&self, cotarget: i64) -> Result<Self, LayoutError> {
        // The complement needs one mode more than the layout, in the fixed scratch room.
        if self.leaves >= SCRATCH {
            return Err(LayoutError::Capacity { capacity: SCRATCH, needed: self.leaves + 1 });
        }
        let (mut s, mut d) = ([0i64; SCRATCH], [0i64; SCRATCH]);
        let mut i = 0;
        while i < self.leaves {
            s[i] = self.shape[i];
            d[i] = self.stride[i];
            i += 1;
        }
        let n = tri!(flat::complement_in_place(&mut s, &mut d, self.leaves, cotarget));
        Self::from_flat(&s, &d, n)
    }

    /// pycute's right inverse: `self(R(i)) == i` for `i < size(R)`.
    pub const fn right_inverse(&self) -> Self {
        let (mut s, mut d, mut r) = (self.shape, self.stride, [0i64; N]);
        let n = match flat::right_inverse_in_place(&mut s, &mut d, &mut r, self.leaves) {
            Ok(n) => n,
            Err(e) => return Self::expect(Err(e)),
        };
        Self::expect(Self::from_flat(&s, &d, n))
    }

    /// pycute's left inverse `right_inverse((self, complement(self)))`: `R(self(i)) == i`.
    pub const fn left_inverse(&self) -> Result<Self, LayoutError> {
        // The complement needs one mode more than the layout, in the fixed scratch room.
        if self.leaves >= SCRATCH {
            return Err(LayoutError::Capacity { capacity: SCRATCH, needed: self.leaves + 1 });
        }
        let (mut s, mut d) = ([0i64; SCRATCH], [0i64; SCRATCH]);
        let mut i = 0;
        while i < self.leaves {
            s[i] = self.shape[i];
            d[i] = self.stride[i];
            i += 1;
        }
        let c = match self.complement(1) {
            Ok(c) => c,
            Err(LayoutError::NotInjective) => return Err(LayoutError::NoLeftInverse),
            Err(e) => return Err(e),
        };
        let mut n = self.leaves;
        let mut j = 0;
        while j < c.leaves {
            if n >= SCRATCH {
                return Err(LayoutError::Capacity { capacity: SCRATCH, needed: n + 1 });
            }
            s[n] = c.shape[j];
            d[n] = c.stride[j];
            n += 1;
            j += 1;
        }
        let mut scratch = [0i64; SCRATCH];
        tri!(flat::sort_for_right_inverse(&mut s, &mut d, &mut scratch, n));
        let mut l_modes = 0;
        let mut i = 0;
        while i < self.leaves {
            if self.shape[i] != 1 {
                l_modes += 1;
            }
            i += 1;
        }
        let proven = flat::chain_covers(&s, &d, &scratch, n, self.size, l_modes);
        let m = tri!(flat::right_inverse_sorted(&mut s, &mut d, &scratch, n));
        if !proven && !tri!(flat::is_left_inverse(&self.shape, &self.stride, self.leaves, &s, &d, m)) {
            return Err(LayoutError::NoLeftInverse);
        }
        Self::from_flat(&s, &d, m)
    }

    /// `logical_divide(self, b)` = `self ∘ (b, complement(b, size(self)))`: mode 0 indexes within
    /// a tile, mode 1 over tiles.
    pub const fn logical_divide<const M: usize>(&self, b: &StaticLayout<M>) -> Result<Self, LayoutError> {
        let (mut a_s, mut a_d) = (self.shape, self.stride);
        let a_n = tri!(flat::coalesce_in_place(&mut a_s, &mut a_d, self.leaves));
        let mut out = Self::EMPTY;
        tri!(Self::push_divided(&mut out, &a_s, &a_d, a_n, self.size(), b));
        Ok(out)
    }

    /// Pushes `A ∘ b` as one mode, then `A ∘ complement(b, size_a)` as another.
    const fn push_divided<const M: usize>(
        out: &mut Self,
        a_s: &[i64],
        a_d: &[i64],
        a_n: usize,
        size_a: i64,
        b: &StaticLayout<M>,
    ) -> Result<(), LayoutError> {
        let mut i = 0;
        while i < b.leaves {
            tri!(Self::push_composed(out, a_s, a_d, a_n, b.shape[i], b.stride[i]));
            i += 1;
        }
        out.end_mode();
        let c = tri!(b.complement(size_a));
        let mut j = 0;
        while j < c.leaves {
            tri!(Self::push_composed(out, a_s, a_d, a_n, c.shape[j], c.stride[j]));
            j += 1;
        }
        out.end_mode();
        Ok(())
    }

    /// `zipped_divide(self, (tiles[0], tiles[1], ...))`: mode 0 gathers the tiles of the first
    /// `tiles.len()` modes, mode 1 the rests and the untouched modes.
    pub const fn zipped_divide<const M: usize>(&self, tiles: &[StaticLayout<M>]) -> Result<Self, LayoutError> {
        if tiles.len() > self.rank {
            return Err(LayoutError::RankMismatch { layout_rank: self.rank, tiler_rank: tiles.len() });
        }
        let mut tile_part = Self::EMPTY;
        let mut rest_part = Self::EMPTY;
        let mut k = 0;
        while k < tiles.len() {
            let divided = tri!(self.mode(k).logical_divide(&tiles[k]));
            let (t0, t1) = divided.mode_leaves(0);
            let (r0, r1) = divided.mode_leaves(1);
            let ds = divided.shape.split_at(t1).0.split_at(t0).1;
            let dd = divided.stride.split_at(t1).0.split_at(t0).1;
            tri!(tile_part.push_leaves(ds, dd, t1 - t0));
            let rs = divided.shape.split_at(r1).0.split_at(r0).1;
            let rd = divided.stride.split_at(r1).0.split_at(r0).1;
            tri!(rest_part.push_leaves(rs, rd, r1 - r0));
            k += 1;
        }
        while k < self.rank {
            let (start, end) = self.mode_leaves(k);
            let s = self.shape.split_at(end).0.split_at(start).1;
            let d = self.stride.split_at(end).0.split_at(start).1;
            tri!(rest_part.push_leaves(s, d, end - start));
            k += 1;
        }
        tile_part.pair(&rest_part)
    }

    /// `logical_product(self, b)` = `(self, complement(self, size(self)*cosize(b)) ∘ b)`.
    pub const fn logical_product<const M: usize>(&self, b: &StaticLayout<M>) -> Result<Self, LayoutError> {
        let cotarget = tri!(flat::checked_mul(self.size(), b.cosize()));
        let c = tri!(self.complement(cotarget));
        let mut out = Self::EMPTY;
        tri!(out.push_leaves(&self.shape, &self.stride, self.leaves));
        out.end_mode();
        let mut i = 0;
        while i < b.leaves {
            tri!(Self::push_composed(&mut out, &c.shape, &c.stride, c.leaves, b.shape[i], b.stride[i]));
            i += 1;
        }
        out.end_mode();
        Ok(out)
    }

    /// `swizzle ∘ offset ∘ self`, as CuTe's `ComposedLayout` for swizzled shared memory.
    pub const fn swizzled(self, swizzle: Swizzle, offset: i64) -> StaticComposedLayout<N> {
        StaticComposedLayout { swizzle, offset, layout: self }
    }
}

/// `(idx % shape, idx / shape)` for a 32-bit index and a positive shape that may exceed `u32`
/// (then the whole index is the coordinate). With a `const` layout the comparison folds away.
const fn split_u32(idx: u32, shape: i64) -> (u32, u32) {
    if shape > u32::MAX as i64 {
        (idx, 0)
    } else {
        let s = shape as u32;
        (idx % s, idx / s)
    }
}

/// `swizzle ∘ offset ∘ layout` in const form: `index(c) = swizzle(offset + layout(c))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StaticComposedLayout<const N: usize> {
    pub swizzle: Swizzle,
    pub offset: i64,
    pub layout: StaticLayout<N>,
}

impl<const N: usize> StaticComposedLayout<N> {
    /// The swizzled offset of 1-D index `idx`; panics (a compile error in `const`) where the
    /// offset overflows `i64`, see [`StaticComposedLayout::try_call`].
    pub const fn call(&self, idx: i64) -> i64 {
        exact(self.try_call(idx))
    }

    /// [`StaticComposedLayout::call`], [`LayoutError::Overflow`] where the offset does not fit.
    pub const fn try_call(&self, idx: i64) -> Result<i64, LayoutError> {
        Ok(self.swizzle.apply(tri!(flat::checked_add(self.offset, tri!(self.layout.try_call(idx))))))
    }

    /// The swizzled offset of a per-top-level-mode coordinate; panics (a compile error in
    /// `const`) where the offset overflows `i64`.
    pub const fn crd2idx(&self, crd: &[i64]) -> i64 {
        assert!(crd.len() == self.layout.rank, "coordinate rank must equal layout rank");
        exact(self.try_crd2idx(crd))
    }

    /// [`StaticComposedLayout::crd2idx`] as a `Result`, like [`StaticLayout::try_crd2idx`].
    pub const fn try_crd2idx(&self, crd: &[i64]) -> Result<i64, LayoutError> {
        Ok(self.swizzle.apply(tri!(flat::checked_add(self.offset, tri!(self.layout.try_crd2idx(crd))))))
    }

    /// [`StaticComposedLayout::call`] in 32-bit arithmetic.
    pub const fn index_u32(&self, idx: u32) -> u32 {
        self.swizzle.apply_u32((self.offset as u32).wrapping_add(self.layout.index_u32(idx)))
    }

    /// [`StaticComposedLayout::crd2idx`] in 32-bit arithmetic.
    pub const fn crd2idx_u32(&self, crd: &[u32]) -> u32 {
        self.swizzle.apply_u32((self.offset as u32).wrapping_add(self.layout.crd2idx_u32(crd)))
    }
}

impl StaticLayout<6> {
    /// The `wgmma.m64nNk16` f32 accumulator fragment as a TV layout
    /// `((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))` from (thread, value) to the column-major
    /// index of the 64xN tile (128 threads, `N/2` values each).
    pub const fn wgmma_accumulator_tv(n: i64) -> Result<Self, LayoutError> {
        if n < 8 || n > 256 || n % 8 != 0 {
            return Err(LayoutError::InvalidArgument("wgmma N is a multiple of 8 in 8..=256"));
        }
        Self::try_grouped(&[4, 8, 4, 2, 2, n / 8], &[128, 1, 16, 64, 8, 512], &[3, 3])
    }
}
