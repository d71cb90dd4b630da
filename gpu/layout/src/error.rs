//! The single error type of the algebra: plain data, so it exists without `alloc` and in `const fn`.

use core::fmt;

/// Why a layout operation is not defined for its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutError {
    /// Shape and stride (or a coordinate and a shape) do not have the same nesting.
    NotCongruent,
    /// A tiler or profile has more modes than the layout it applies to.
    RankMismatch { layout_rank: usize, tiler_rank: usize },
    /// Composition: a mode of A's shape and B's running stride divide neither each other.
    StrideDivisibility { shape: i64, stride: i64 },
    /// Composition: B's remaining shape is not divisible by the part A's mode can hold.
    ShapeDivisibility { shape: i64, divisor: i64 },
    /// Complement: two modes of the layout overlap, so it is not injective.
    NotInjective,
    /// Left inverse: the layout is not injective, or no layout inverts it from the left.
    NoLeftInverse,
    /// A shape entry is not positive where one must be.
    NonPositiveShape(i64),
    /// A recast or swizzle parameter is out of its range.
    InvalidArgument(&'static str),
    /// A const layout would need more leaf modes than its capacity.
    Capacity { capacity: usize, needed: usize },
    /// A coordinate uses the wildcard `_` where a full coordinate is needed.
    UnexpectedWildcard,
    /// An intermediate value does not fit in an `i64`.
    Overflow,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NotCongruent => f.write_str("shape and stride (or coordinate) are not congruent"),
            Self::RankMismatch { layout_rank, tiler_rank } => {
                write!(f, "tiler/profile of rank {tiler_rank} is longer than the layout of rank {layout_rank}")
            }
            Self::StrideDivisibility { shape, stride } => {
                write!(f, "composition undefined: stride {stride} and shape {shape} divide neither each other")
            }
            Self::ShapeDivisibility { shape, divisor } => {
                write!(f, "composition undefined: remaining shape {shape} is not divisible by {divisor}")
            }
            Self::NotInjective => f.write_str("complement undefined: the layout is not injective"),
            Self::NoLeftInverse => f.write_str("left inverse undefined: the layout is not injective"),
            Self::NonPositiveShape(s) => write!(f, "shape entry {s} is not positive"),
            Self::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Self::Capacity { capacity, needed } => {
                write!(f, "const layout capacity {capacity} exceeded (needs {needed} modes)")
            }
            Self::UnexpectedWildcard => f.write_str("coordinate contains '_' (use slice)"),
            Self::Overflow => f.write_str("integer overflow"),
        }
    }
}

impl core::error::Error for LayoutError {}
