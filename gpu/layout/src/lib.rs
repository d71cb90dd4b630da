//! CuTe's layout algebra in Rust.
//!
//! - [`StaticLayout`], [`Swizzle`] and [`StaticComposedLayout`] are `const`-evaluable and
//!   `no_std` without allocation: kernels build their layouts in `const` items and index through
//!   them with plain integer arithmetic.
//! - With the `alloc` feature (default): the runtime [`Layout`] over hierarchical [`IntTuple`]s
//!   with the full algebra in [`ops`] (pycute semantics), CuTe-notation [`parse`]/Display, the
//!   [`batch`] runner and [`picture`]s.
//!
//! Undefined operations return [`LayoutError`]; nothing in the algebra asserts. All arithmetic on
//! shapes, strides, indices and offsets is checked: a value that does not fit in an `i64` is
//! [`LayoutError::Overflow`], never a wrapped number or a panic.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;

/// `?` for `const fn`: unwraps `Ok` or returns the error.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Err(e),
        }
    };
}

mod error;
mod flat;
pub mod static_layout;
pub mod swizzle;

#[cfg(feature = "alloc")]
pub mod batch;
#[cfg(feature = "alloc")]
mod display;
#[cfg(feature = "alloc")]
pub mod int_tuple;
#[cfg(feature = "alloc")]
pub mod layout;
#[cfg(feature = "alloc")]
pub mod ops;
#[cfg(feature = "alloc")]
pub mod parse;
#[cfg(feature = "alloc")]
pub mod picture;

pub use error::LayoutError;
pub use static_layout::{StaticComposedLayout, StaticLayout};
pub use swizzle::Swizzle;

#[cfg(feature = "alloc")]
pub use batch::run_batch_line;
#[cfg(feature = "alloc")]
pub use int_tuple::{Coord, IntTuple};
#[cfg(feature = "alloc")]
pub use layout::{ComposedLayout, Layout};
#[cfg(feature = "alloc")]
pub use ops::Tiler;
#[cfg(feature = "alloc")]
pub use parse::ParseError;
