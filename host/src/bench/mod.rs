//! The benchmark harness behind `oxtile bench` and `cargo bench`.
//!
//! - [`stats`]: the median and percentiles of a set of timings.
//! - [`timing`]: CUDA-event timing (warm-up, many launches, their statistics), the round-robin order of
//!   contenders, and [`timing::GpuClock`], the stopwatch criterion's GPU measurement uses.
//! - [`hold`]: the stream hold that keeps the GPU waiting while the host queues the timed launches.
//! - [`suite`]: shapes, their parsing and FLOP counts, the default suites (the same as
//!   ../shared/bench/torch_reference.py's).
//! - [`device`]: SM count, clock and L2 size from the device; the dense peak; how many input sets to rotate.
//! - [`inputs`]: the pool of random values every benchmark's input sets are drawn from.
//! - [`outputs`]: how far an output is from the reference output, the bound per type, the poison.
//! - [`gemm`]: the [`gemm::GemmContender`] interface our GEMM and the peers implement, input sets, the output
//!   cross-check, one row per contender and problem.
//! - [`oxtile`]: our GEMM kernels as contenders.
//! - [`peers`]: cuBLASLt and cublasGemmEx.
//! - [`contenders`]: the lists of GEMM contenders `oxtile bench gemm` times, and the baseline of its ratios.
//! - [`attention`]: our attention kernels (the kernel and its ablations) timed and checked against the GPU
//!   reference, with their rescale counts, beside torch_reference.py's cuDNN and FlashAttention-2 rows.
//! - [`copy`]: elementwise kernels against the device-to-device copy ceiling.
//! - [`exp2`]: exponential throughput of MUFU.EX2, the software exp2 polynomial, and mixes of the two.
//! - [`clocks`]: the SM clock during each timed turn, through NVML.
//! - [`report`]: rows, the table, JSON and CSV, and the merge of torch_reference.py's rows.
//! - [`plot`]: an SVG of TFLOP/s against problem size.

pub mod attention;
pub mod clocks;
pub mod contenders;
pub mod copy;
pub mod device;
pub mod exp2;
pub mod gemm;
pub mod hold;
pub mod inputs;
pub mod ns;
pub mod outputs;
pub mod oxtile;
pub mod peers;
pub mod plot;
pub mod report;
pub mod stats;
pub mod suite;
pub mod sweep;
pub mod timing;

pub use device::{DATASHEET_DENSE_BF16_TFLOPS, DeviceInfo};
pub use gemm::{GemmContender, GemmProblem, Operands};
pub use report::Row;
pub use stats::Stats;
pub use suite::{AttnShape, GemmShape, ShapeError};
pub use timing::{TimingConfig, TimingMode};
