//! Building blocks of the attention softmax.
//!
//! - [`exp2`]: FA4's software exp2 (a polynomial on the FMA pipe beside MUFU.EX2) and the mixed application of
//!   both units to a fragment.

pub mod exp2;
