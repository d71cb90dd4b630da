//! oxtile: GPU kernels written in pure Rust for NVIDIA Hopper, with a safe host API.
//!
//! - [`Gpu`] opens a device, owns a stream and loads the embedded PTX once.
//! - [`ops`] holds the typed launch wrappers; every argument is checked before launch.
//! - [`reference`] holds float64 CPU references the GPU results are compared with.
//! - [`exp2`] mirrors the attention softmax's software exp2 on the CPU, with the derivation of its polynomial.
//! - [`external`] wraps device memory another library allocated (PyTorch tensors) for the ops.
//! - [`kernels`] lists the kernels and their PTX; [`inspect`] assembles that PTX with ptxas for static checks.
//! - [`types`] holds what every layer shares: element types, GEMM layouts and shapes.
//! - [`tune_cache`] reads (and [`tune`] fills) the measured GEMM kernel choices.
//! - [`verify`] checks every kernel against its reference; [`bench`] times kernels beside cuBLAS.
//!
//! Features: `bench` (the harness, [`bench`] and [`tune`], with the cuBLAS peers, reports, plots and NVML clock
//! readings) and `cli` (the `oxtile` command on top of it; the default). `default-features = false` builds the
//! library alone, as the Python package does.
//!
//! The modules are layered, each importing only those below it (docs/design.md; tests/layering.rs checks it).

#[cfg(feature = "bench")]
pub mod bench;
pub mod error;
pub mod exp2;
pub mod external;
pub mod inspect;
pub mod kernels;
pub mod ops;
pub mod reference;
pub mod runtime;
pub mod tma;
#[cfg(feature = "bench")]
pub mod tune;
pub mod tune_cache;
pub mod types;
pub mod verify;

pub use error::{Error, Result};
pub use runtime::Gpu;
