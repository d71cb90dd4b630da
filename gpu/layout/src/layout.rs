//! The runtime layout: a congruent pair of hierarchical shape and stride.

use alloc::vec::Vec;

use crate::flat::{checked_add, checked_mul, floor_div, py_mod};
use crate::int_tuple::{Coord, IntTuple};
use crate::{LayoutError, StaticLayout, Swizzle};

/// `shape:stride`, a function from coordinates (or 1-D indices) to offsets. `Debug` prints
/// CuTe notation too.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: IntTuple,
    stride: IntTuple,
}

impl Layout {
    /// `shape:stride`; they must be congruent and every shape entry positive.
    pub fn new(shape: IntTuple, stride: IntTuple) -> Result<Self, LayoutError> {
        if !shape.congruent(&stride) {
            return Err(LayoutError::NotCongruent);
        }
        if let Some(bad) = shape.flatten().into_iter().find(|&s| s < 1) {
            return Err(LayoutError::NonPositiveShape(bad));
        }
        Ok(Self { shape, stride })
    }

    /// The integer-shaped layout `shape:stride`.
    pub fn int(shape: i64, stride: i64) -> Self {
        Self { shape: IntTuple::Int(shape), stride: IntTuple::Int(stride) }
    }

    /// The compact column-major layout of `shape` (pycute's `Layout(shape)`);
    /// [`LayoutError::Overflow`] where a stride does not fit in an `i64`.
    pub fn col_major(shape: IntTuple) -> Result<Self, LayoutError> {
        let stride = shape.prefix_product()?;
        Ok(Self { shape, stride })
    }

    /// `make_layout(modes...)`: each layout becomes one top-level mode.
    pub fn from_modes(modes: impl IntoIterator<Item = Layout>) -> Self {
        let (shape, stride): (Vec<_>, Vec<_>) = modes.into_iter().map(|l| (l.shape, l.stride)).unzip();
        Self { shape: IntTuple::Tuple(shape), stride: IntTuple::Tuple(stride) }
    }

    /// pycute's result convention for a flat list of modes: one mode is integer-shaped.
    pub(crate) fn from_flat(s: &[i64], d: &[i64]) -> Self {
        if s.len() == 1 {
            Self::int(s[0], d[0])
        } else {
            Self {
                shape: IntTuple::Tuple(s.iter().copied().map(IntTuple::Int).collect()),
                stride: IntTuple::Tuple(d.iter().copied().map(IntTuple::Int).collect()),
            }
        }
    }

    pub fn shape(&self) -> &IntTuple {
        &self.shape
    }

    pub fn stride(&self) -> &IntTuple {
        &self.stride
    }

    pub fn into_parts(self) -> (IntTuple, IntTuple) {
        (self.shape, self.stride)
    }

    /// Number of top-level modes (an integer-shaped layout has rank 1).
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    pub fn depth(&self) -> usize {
        self.shape.depth()
    }

    /// Size of the domain; [`LayoutError::Overflow`] where it does not fit in an `i64`.
    pub fn size(&self) -> Result<i64, LayoutError> {
        self.shape.product()
    }

    /// Size of the codomain, `L(size - 1) + 1`; [`LayoutError::Overflow`] where the size or the
    /// offset does not fit in an `i64`.
    pub fn cosize(&self) -> Result<i64, LayoutError> {
        checked_add(self.call(self.size()? - 1)?, 1)
    }

    /// Top-level mode `i` (an integer-shaped layout is its own mode 0).
    pub fn mode(&self, i: usize) -> Option<Layout> {
        Some(Self { shape: self.shape.get(i)?.clone(), stride: self.stride.get(i)?.clone() })
    }

    /// The top-level modes.
    pub fn modes(&self) -> Vec<Layout> {
        self.shape
            .modes()
            .iter()
            .zip(self.stride.modes())
            .map(|(s, d)| Self { shape: s.clone(), stride: d.clone() })
            .collect()
    }

    /// Leaf shapes and strides, depth first.
    pub fn leaves(&self) -> (Vec<i64>, Vec<i64>) {
        (self.shape.flatten(), self.stride.flatten())
    }

    /// `Layout(flatten(shape), flatten(stride))`: always a tuple of leaves.
    pub fn flatten(&self) -> Layout {
        let (s, d) = self.leaves();
        Self {
            shape: IntTuple::Tuple(s.into_iter().map(IntTuple::Int).collect()),
            stride: IntTuple::Tuple(d.into_iter().map(IntTuple::Int).collect()),
        }
    }

    /// Pads with `1:0` modes up to rank `rank` (CuTe's `append<R>`).
    pub fn append_to_rank(&self, rank: usize) -> Layout {
        let mut modes = self.modes();
        while modes.len() < rank {
            modes.push(Self::int(1, 0));
        }
        if modes.len() == self.rank() && self.shape.is_int() {
            return self.clone();
        }
        Self::from_modes(modes)
    }

    /// The offset of 1-D index `idx` (colexicographic; the last mode takes any remainder);
    /// [`LayoutError::Overflow`] where the offset does not fit in an `i64`.
    pub fn call(&self, idx: i64) -> Result<i64, LayoutError> {
        // For an integer coordinate pycute's hierarchical split always leaves the remainder to
        // the very last leaf, so a flat walk over the leaves is the same function.
        let mut walk = LeafWalk { idx, leaves_left: self.shape.leaf_count(), offset: 0 };
        walk.visit(&self.shape, &self.stride)?;
        Ok(walk.offset)
    }

    /// The offset of a coordinate: an integer (1-D) or a tuple congruent to the shape at the
    /// levels it spells out, each integer in it being a 1-D index of the sub-shape it meets.
    pub fn crd2idx(&self, crd: &IntTuple) -> Result<i64, LayoutError> {
        crd2idx(crd, &self.shape, &self.stride)
    }

    /// The natural (shape-congruent) coordinate of 1-D index `idx` (each leaf `idx // stride %
    /// shape` with the column-major strides); [`LayoutError::Overflow`] where such a stride does
    /// not fit in an `i64`.
    pub fn idx2crd(&self, idx: i64) -> Result<IntTuple, LayoutError> {
        let pstride = self.shape.prefix_product()?;
        idx2crd(idx, &self.shape, &pstride)
    }

    /// The sub-layout of the modes where `crd` has the wildcard `_`.
    pub fn slice(&self, crd: &Coord) -> Result<Layout, LayoutError> {
        Ok(Self {
            shape: IntTuple::Tuple(slice_tuple(crd, &self.shape)?),
            stride: IntTuple::Tuple(slice_tuple(crd, &self.stride)?),
        })
    }

    /// [`Layout::slice`] plus the offset of the fixed part of `crd` (wildcards read as 0).
    pub fn slice_and_offset(&self, crd: &Coord) -> Result<(Layout, i64), LayoutError> {
        Ok((self.slice(crd)?, crd2idx_wild(crd, &self.shape, &self.stride)?))
    }

    /// `swizzle ∘ offset ∘ self`.
    pub fn swizzled(self, swizzle: Swizzle, offset: i64) -> ComposedLayout {
        ComposedLayout { swizzle, offset, layout: self }
    }

    /// The const form: each top-level mode becomes one group of leaves.
    pub fn to_static<const N: usize>(&self) -> Result<StaticLayout<N>, LayoutError> {
        let (shapes, strides) = self.leaves();
        let groups: Vec<usize> = self.shape.modes().iter().map(IntTuple::leaf_count).collect();
        StaticLayout::try_grouped(&shapes, &strides, &groups)
    }

    /// The runtime form of a const layout (a single leaf becomes an integer-shaped layout).
    pub fn from_static<const N: usize>(layout: &StaticLayout<N>) -> Layout {
        let (s, d) = (layout.leaf_shapes(), layout.leaf_strides());
        if layout.leaf_count() == 1 {
            return Self::int(s[0], d[0]);
        }
        Self::from_modes((0..layout.rank()).map(|k| {
            let (start, end) = layout.mode_leaves(k);
            Self::from_flat(&s[start..end], &d[start..end])
        }))
    }
}

impl<const N: usize> From<&StaticLayout<N>> for Layout {
    fn from(layout: &StaticLayout<N>) -> Self {
        Self::from_static(layout)
    }
}

struct LeafWalk {
    idx: i64,
    leaves_left: usize,
    offset: i64,
}

impl LeafWalk {
    fn visit(&mut self, shape: &IntTuple, stride: &IntTuple) -> Result<(), LayoutError> {
        match (shape, stride) {
            (IntTuple::Int(s), IntTuple::Int(d)) => {
                self.leaves_left -= 1;
                let coord = if self.leaves_left == 0 { self.idx } else { py_mod(self.idx, *s)? };
                self.offset = checked_add(self.offset, checked_mul(coord, *d)?)?;
                self.idx = floor_div(self.idx, *s)?;
            }
            (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) => {
                for (s, d) in ss.iter().zip(ds) {
                    self.visit(s, d)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn crd2idx_int(crd: i64, shape: &IntTuple, stride: &IntTuple) -> Result<i64, LayoutError> {
    match (shape, stride) {
        (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) if !ss.is_empty() => {
            let mut crd = crd;
            let mut result = 0i64;
            for (s, d) in ss.iter().zip(ds).take(ss.len() - 1) {
                let p = s.product()?;
                result = checked_add(result, crd2idx_int(py_mod(crd, p)?, s, d)?)?;
                crd = floor_div(crd, p)?;
            }
            checked_add(result, crd2idx_int(crd, &ss[ss.len() - 1], &ds[ds.len() - 1])?)
        }
        (IntTuple::Int(_), IntTuple::Int(d)) => checked_mul(crd, *d),
        _ => Ok(0),
    }
}

fn crd2idx(crd: &IntTuple, shape: &IntTuple, stride: &IntTuple) -> Result<i64, LayoutError> {
    match crd {
        IntTuple::Int(c) => crd2idx_int(*c, shape, stride),
        IntTuple::Tuple(cs) => match (shape, stride) {
            (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) if cs.len() == ss.len() => {
                cs.iter().zip(ss).zip(ds).try_fold(0i64, |acc, ((c, s), d)| checked_add(acc, crd2idx(c, s, d)?))
            }
            _ => Err(LayoutError::NotCongruent),
        },
    }
}

fn crd2idx_wild(crd: &Coord, shape: &IntTuple, stride: &IntTuple) -> Result<i64, LayoutError> {
    match crd {
        Coord::Wildcard => Ok(0),
        Coord::Int(c) => crd2idx_int(*c, shape, stride),
        Coord::Tuple(cs) => match (shape, stride) {
            (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) if cs.len() == ss.len() => {
                cs.iter().zip(ss).zip(ds).try_fold(0i64, |acc, ((c, s), d)| checked_add(acc, crd2idx_wild(c, s, d)?))
            }
            _ => Err(LayoutError::NotCongruent),
        },
    }
}

fn idx2crd(idx: i64, shape: &IntTuple, pstride: &IntTuple) -> Result<IntTuple, LayoutError> {
    match (shape, pstride) {
        (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) => {
            Ok(IntTuple::Tuple(ss.iter().zip(ds).map(|(s, d)| idx2crd(idx, s, d)).collect::<Result<_, _>>()?))
        }
        (IntTuple::Int(s), IntTuple::Int(d)) => Ok(IntTuple::Int(py_mod(floor_div(idx, *d)?, *s)?)),
        _ => Ok(IntTuple::Int(0)),
    }
}

/// pycute's `slice_`: keep the parts of `target` paired with a wildcard, one level flattened.
fn slice_tuple(crd: &Coord, target: &IntTuple) -> Result<Vec<IntTuple>, LayoutError> {
    match crd {
        Coord::Wildcard => Ok(alloc::vec![target.clone()]),
        Coord::Int(_) => Ok(Vec::new()),
        Coord::Tuple(cs) => match target {
            IntTuple::Tuple(ts) if ts.len() == cs.len() => {
                let mut out = Vec::new();
                for (c, t) in cs.iter().zip(ts) {
                    out.extend(slice_tuple(c, t)?);
                }
                Ok(out)
            }
            _ => Err(LayoutError::NotCongruent),
        },
    }
}

/// `swizzle ∘ offset ∘ layout`, CuTe's `ComposedLayout` as used for swizzled shared memory.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ComposedLayout {
    pub swizzle: Swizzle,
    pub offset: i64,
    pub layout: Layout,
}

impl ComposedLayout {
    /// The swizzled offset of 1-D index `idx`.
    pub fn call(&self, idx: i64) -> Result<i64, LayoutError> {
        Ok(self.swizzle.apply(checked_add(self.offset, self.layout.call(idx)?)?))
    }

    /// The swizzled offset of a coordinate.
    pub fn crd2idx(&self, crd: &IntTuple) -> Result<i64, LayoutError> {
        Ok(self.swizzle.apply(checked_add(self.offset, self.layout.crd2idx(crd)?)?))
    }

    pub fn size(&self) -> Result<i64, LayoutError> {
        self.layout.size()
    }
}
