//! `cargo bench --bench elementwise`: the elementwise kernels and a device-to-device copy (their ceiling), timed
//! on the GPU with CUDA events. Buffers rotate between two sets so the L2 never holds a launch's inputs.

mod gpu_time;

use criterion::{BenchmarkId, Throughput};
use half::bf16;
use oxtile::bench::inputs::InputPool;
use oxtile::ops::elementwise;

const SIZES_MIB: [usize; 2] = [64, 512];
const SETS: usize = 2;

fn main() {
    let Some(gpu) = gpu_time::gpu_or_explain("elementwise") else { return };
    let stream = gpu.stream();
    let pool = InputPool::new(0x5eed);
    let mut criterion = gpu_time::criterion(&gpu);
    let mut group = criterion.benchmark_group("elementwise");
    for mib in SIZES_MIB {
        let bytes = mib << 20;
        let size = format!("{mib}MiB");
        let upload_f32 = |i| stream.clone_htod(&pool.fill_f32(bytes / 4, InputPool::offset(i, 0))).expect("upload");
        let upload_bf16 =
            |i| stream.clone_htod(&pool.fill::<bf16>(bytes / 2, InputPool::offset(i, 1))).expect("upload");
        let x: Vec<_> = (0..SETS).map(upload_f32).collect();
        let mut y: Vec<_> = (0..SETS).map(|i| upload_f32(i + SETS)).collect();
        let xh: Vec<_> = (0..SETS).map(upload_bf16).collect();
        let mut yh: Vec<_> = (0..SETS).map(|i| upload_bf16(i + SETS)).collect();

        group.throughput(Throughput::BytesDecimal(2 * bytes as u64));
        group.bench_function(BenchmarkId::new("memcpy_dtod", &size), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                stream.memcpy_dtod(&x[i % SETS], &mut y[i % SETS]).expect("memcpy_dtod")
            })
        });
        group.bench_function(BenchmarkId::new("exp2_f32", &size), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                elementwise::exp2_f32(&gpu, &x[i % SETS], &mut y[i % SETS]).expect("exp2_f32")
            })
        });
        group.throughput(Throughput::BytesDecimal(3 * bytes as u64));
        group.bench_function(BenchmarkId::new("axpy_f32", &size), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                elementwise::axpy_f32(&gpu, 0.5, &x[i % SETS], &mut y[i % SETS]).expect("axpy_f32")
            })
        });
        group.bench_function(BenchmarkId::new("axpy_bf16", &size), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                elementwise::axpy_bf16(&gpu, 0.5, &xh[i % SETS], &mut yh[i % SETS]).expect("axpy_bf16")
            })
        });
    }
    group.finish();
    criterion.final_summary();
}
