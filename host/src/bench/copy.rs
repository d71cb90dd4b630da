//! The memory-bound benchmark: our elementwise kernels' achieved bandwidth against a device-to-device copy,
//! the ceiling any streaming kernel can reach, measured in the same process.
//!
//! Bandwidth counts each byte a kernel must move once: a copy reads and writes its buffer (2 × size), axpy reads
//! x and y and writes y (3 × size), exp2 reads x and writes y (2 × size), all over the median time.

use cudarc::driver::CudaSlice;
use half::bf16;

use super::device::{DeviceInfo, rotation_sets};
use super::inputs::InputPool;
use super::report::Row;
use super::suite::size_name;
use super::timing::{TimingConfig, time_gpu};
use crate::error::{Error, Result};
use crate::ops::elementwise;
use crate::runtime::Gpu;

/// The ceiling every memory-bound row is compared with.
pub const BASELINE: &str = "memcpy_dtod";

/// Buffer sizes of the default run, each far larger than the L2.
pub const DEFAULT_SIZES: [usize; 3] = [64 << 20, 256 << 20, 1 << 30];

/// Benchmarks the copy and each elementwise kernel with buffers of `bytes` each; one row per implementation.
/// `on_step` is called before each with a short description.
pub fn bench_memory(
    gpu: &Gpu,
    info: &DeviceInfo,
    pool: &InputPool,
    bytes: usize,
    timing: &TimingConfig,
    on_step: &mut dyn FnMut(&str),
) -> Result<Vec<Row>> {
    if bytes < 16 || !bytes.is_multiple_of(16) {
        return Err(Error::bad_argument(
            "bench copy",
            format!("buffer size {bytes} is not a positive multiple of 16 bytes"),
        ));
    }
    let (free, _) = gpu.context().mem_get_info()?;
    let budget = free / 10 * 7;
    if 2 * bytes > budget {
        return Err(Error::bad_argument(
            "bench copy",
            format!("two buffers of {} need more than the {} MiB of free device memory", size_name(bytes), free >> 20),
        ));
    }
    let l2 = if info.l2_bytes > 0 { info.l2_bytes } else { 128 << 20 };
    let sets = rotation_sets(2 * bytes, l2, 3.0, 1024, budget);
    let stream = gpu.stream();
    let shape = size_name(bytes);
    let mut rows = Vec::new();
    let mut row = |name: &str, dtype: &str, moved: usize, result: Result<super::stats::Stats>| {
        let mut row = Row::new("mem", shape.clone(), name);
        row.kind = Some(if name == BASELINE { "peer" } else { "oxtile" }.into());
        row.origin = Some("in-process".into());
        row.dtype = Some(dtype.into());
        row.work = Some(moved as f64);
        row.sets = Some(sets);
        match result {
            Ok(stats) => {
                row.set_stats(&stats);
                row.gbps = Some(moved as f64 / (stats.median_ms * 1e-3) / 1e9);
            }
            Err(error) => row.error = Some(error.to_string()),
        }
        rows.push(row);
    };

    let n_f32 = bytes / 4;
    let n_bf16 = bytes / 2;
    let upload_f32 = |set: usize, which: usize| -> Result<CudaSlice<f32>> {
        Ok(stream.clone_htod(&pool.fill_f32(n_f32, InputPool::offset(set, which)))?)
    };
    let upload_bf16 = |set: usize, which: usize| -> Result<CudaSlice<bf16>> {
        Ok(stream.clone_htod(&pool.fill::<bf16>(n_bf16, InputPool::offset(set, which)))?)
    };

    on_step(&format!("{shape} {BASELINE}"));
    let result = (|| {
        let src = (0..sets).map(|s| upload_f32(s, 0)).collect::<Result<Vec<_>>>()?;
        let mut dst = (0..sets).map(|_| Ok(stream.alloc_zeros::<f32>(n_f32)?)).collect::<Result<Vec<_>>>()?;
        time_gpu(gpu, timing, |i| Ok(stream.memcpy_dtod(&src[i % sets], &mut dst[i % sets])?))
    })();
    row(BASELINE, "-", 2 * bytes, result);

    on_step(&format!("{shape} axpy_f32"));
    let result = (|| {
        let x = (0..sets).map(|s| upload_f32(s, 0)).collect::<Result<Vec<_>>>()?;
        let mut y = (0..sets).map(|s| upload_f32(s, 1)).collect::<Result<Vec<_>>>()?;
        time_gpu(gpu, timing, |i| elementwise::axpy_f32(gpu, 0.5, &x[i % sets], &mut y[i % sets]))
    })();
    row("axpy_f32", "f32", 3 * bytes, result);

    on_step(&format!("{shape} axpy_bf16"));
    let result = (|| {
        let x = (0..sets).map(|s| upload_bf16(s, 0)).collect::<Result<Vec<_>>>()?;
        let mut y = (0..sets).map(|s| upload_bf16(s, 1)).collect::<Result<Vec<_>>>()?;
        time_gpu(gpu, timing, |i| elementwise::axpy_bf16(gpu, 0.5, &x[i % sets], &mut y[i % sets]))
    })();
    row("axpy_bf16", "bf16", 3 * bytes, result);

    on_step(&format!("{shape} exp2_f32"));
    let result = (|| {
        let x = (0..sets).map(|s| upload_f32(s, 0)).collect::<Result<Vec<_>>>()?;
        let mut y = (0..sets).map(|_| Ok(stream.alloc_zeros::<f32>(n_f32)?)).collect::<Result<Vec<_>>>()?;
        time_gpu(gpu, timing, |i| elementwise::exp2_f32(gpu, &x[i % sets], &mut y[i % sets]))
    })();
    row("exp2_f32", "f32", 2 * bytes, result);
    Ok(rows)
}
