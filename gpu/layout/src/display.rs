//! CuTe notation output: `(2,(3,4)):(1,(2,6))`, a rank-1 tuple as `(4)`, a wildcard as `_`.

use core::fmt;

use crate::int_tuple::{Coord, IntTuple};
use crate::ops::Tiler;
use crate::{ComposedLayout, Layout};

fn write_list<T>(
    f: &mut fmt::Formatter<'_>,
    open: char,
    items: &[T],
    close: char,
    mut each: impl FnMut(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    write!(f, "{open}")?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        each(f, item)?;
    }
    write!(f, "{close}")
}

impl fmt::Display for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(v) => write!(f, "{v}"),
            Self::Tuple(items) => write_list(f, '(', items, ')', |f, t| write!(f, "{t}")),
        }
    }
}

impl fmt::Display for Coord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(v) => write!(f, "{v}"),
            Self::Wildcard => f.write_str("_"),
            Self::Tuple(items) => write_list(f, '(', items, ')', |f, t| write!(f, "{t}")),
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.shape(), self.stride())
    }
}

impl fmt::Display for Tiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Skip => f.write_str("_"),
            Self::Layout(l) => write!(f, "{l}"),
            Self::Modes(items) => write_list(f, '[', items, ']', |f, t| write!(f, "{t}")),
        }
    }
}

impl fmt::Display for ComposedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} o {} o {}", self.swizzle, self.offset, self.layout)
    }
}

impl fmt::Debug for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
