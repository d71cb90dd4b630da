//! The libraries our kernels are measured against, in the same process.

pub mod cublas;
