//! Building blocks of the attention softmax.
//!
//! - [`exp2`]: FA4's software exp2 (a polynomial on the FMA pipe beside MUFU.EX2), its accuracy kernel and its
//!   throughput microbenchmark kernels.

pub mod exp2;
