//! Hierarchical integer tuples (`IntTuple`) and coordinates with wildcards (`Coord`).

use alloc::vec::Vec;
use core::slice;

use crate::LayoutError;
use crate::flat;

/// An integer or a tuple of `IntTuple`s, e.g. `(2,(3,4))`. `Debug` prints CuTe notation too.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum IntTuple {
    Int(i64),
    Tuple(Vec<IntTuple>),
}

impl From<i64> for IntTuple {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl<const K: usize> From<[i64; K]> for IntTuple {
    fn from(v: [i64; K]) -> Self {
        Self::Tuple(v.into_iter().map(Self::Int).collect())
    }
}

impl IntTuple {
    /// A tuple of the given elements.
    pub fn tuple(items: impl IntoIterator<Item = IntTuple>) -> Self {
        Self::Tuple(items.into_iter().collect())
    }

    pub fn is_int(&self) -> bool {
        matches!(self, Self::Int(_))
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Self::Int(v) => Some(*v),
            Self::Tuple(_) => None,
        }
    }

    /// Number of top-level elements; an integer has rank 1.
    pub fn rank(&self) -> usize {
        self.modes().len()
    }

    /// Nesting depth; an integer has depth 0.
    pub fn depth(&self) -> usize {
        match self {
            Self::Int(_) => 0,
            Self::Tuple(v) => 1 + v.iter().map(Self::depth).max().unwrap_or(0),
        }
    }

    /// The top-level elements; an integer is its own single element.
    pub fn modes(&self) -> &[IntTuple] {
        match self {
            Self::Int(_) => slice::from_ref(self),
            Self::Tuple(v) => v,
        }
    }

    /// Element `i` (for an integer only `i == 0`, itself).
    pub fn get(&self, i: usize) -> Option<&IntTuple> {
        self.modes().get(i)
    }

    /// Product of all leaves; [`LayoutError::Overflow`] where it does not fit in an `i64`.
    pub fn product(&self) -> Result<i64, LayoutError> {
        match self {
            Self::Int(v) => Ok(*v),
            Self::Tuple(items) => items.iter().try_fold(1i64, |acc, t| flat::checked_mul(acc, t.product()?)),
        }
    }

    /// The leaves, depth first.
    pub fn flatten(&self) -> Vec<i64> {
        let mut out = Vec::new();
        self.push_leaves(&mut out);
        out
    }

    pub(crate) fn push_leaves(&self, out: &mut Vec<i64>) {
        match self {
            Self::Int(v) => out.push(*v),
            Self::Tuple(items) => items.iter().for_each(|t| t.push_leaves(out)),
        }
    }

    pub fn leaf_count(&self) -> usize {
        match self {
            Self::Int(_) => 1,
            Self::Tuple(items) => items.iter().map(Self::leaf_count).sum(),
        }
    }

    /// Same tree structure (leaves may differ).
    pub fn congruent(&self, other: &IntTuple) -> bool {
        match (self, other) {
            (Self::Int(_), Self::Int(_)) => true,
            (Self::Tuple(a), Self::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.congruent(y)),
            _ => false,
        }
    }

    /// Exclusive prefix product congruent to `self`: the column-major strides of a shape.
    /// [`LayoutError::Overflow`] where a stride does not fit in an `i64` (the product of all
    /// leaves, which no stride needs, may).
    pub fn prefix_product(&self) -> Result<IntTuple, LayoutError> {
        let mut acc = Some(1i64);
        let mut overflow = false;
        let out = self.map_leaves(&mut |s| {
            let Some(d) = acc else {
                overflow = true;
                return 0;
            };
            acc = d.checked_mul(s);
            d
        });
        if overflow { Err(LayoutError::Overflow) } else { Ok(out) }
    }

    /// The same structure with every leaf replaced by `f(leaf)`, leaves visited depth first.
    pub fn map_leaves(&self, f: &mut impl FnMut(i64) -> i64) -> IntTuple {
        match self {
            Self::Int(v) => Self::Int(f(*v)),
            Self::Tuple(items) => Self::Tuple(items.iter().map(|t| t.map_leaves(f)).collect()),
        }
    }
}

/// A coordinate that may hold the wildcard `_` (pycute's `None`) for slicing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Coord {
    Int(i64),
    Wildcard,
    Tuple(Vec<Coord>),
}

impl From<IntTuple> for Coord {
    fn from(t: IntTuple) -> Self {
        match t {
            IntTuple::Int(v) => Self::Int(v),
            IntTuple::Tuple(items) => Self::Tuple(items.into_iter().map(Self::from).collect()),
        }
    }
}

impl From<i64> for Coord {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl Coord {
    pub fn has_wildcard(&self) -> bool {
        match self {
            Self::Int(_) => false,
            Self::Wildcard => true,
            Self::Tuple(items) => items.iter().any(Self::has_wildcard),
        }
    }

    /// The coordinate as an `IntTuple`, `None` if it holds a wildcard.
    pub fn to_int_tuple(&self) -> Option<IntTuple> {
        match self {
            Self::Int(v) => Some(IntTuple::Int(*v)),
            Self::Wildcard => None,
            Self::Tuple(items) => items.iter().map(Self::to_int_tuple).collect::<Option<Vec<_>>>().map(IntTuple::Tuple),
        }
    }
}
