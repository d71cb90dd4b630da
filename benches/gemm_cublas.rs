//! `cargo bench --bench gemm_cublas`: the GEMM contenders (cuBLASLt, cublasGemmEx and oxtile's sm90 GEMM) in
//! layout `tn` (A row-major, B column-major; `oxtile bench gemm --layout` times the others), timed on the GPU with
//! CUDA events. Input sets rotate so together they exceed three L2s. Throughput is in FLOP/s (2·M·N·K per launch).
//! The output check is `oxtile bench gemm`'s job; this measures only.

mod gpu_time;

use criterion::{BenchmarkId, Throughput};
use half::bf16;
use oxtile::bench::contenders;
use oxtile::bench::device::{DeviceInfo, rotation_sets};
use oxtile::bench::gemm::{GemmProblem, Operands};
use oxtile::bench::inputs::InputPool;
use oxtile::bench::suite::GemmShape;
use oxtile::types::{Dtype, GemmLayout};

const SHAPES: [GemmShape; 3] =
    [GemmShape::new(4096, 4096, 4096), GemmShape::new(8192, 8192, 8192), GemmShape::new(4096, 14336, 4096)];

fn main() {
    let Some(gpu) = gpu_time::gpu_or_explain("gemm_cublas") else { return };
    let info = DeviceInfo::query(&gpu).expect("device attributes");
    let stream = gpu.stream();
    let pool = InputPool::new(0x5eed);
    let mut contenders = contenders::peer_contenders(&gpu).expect("cuBLAS");
    contenders.extend(contenders::oxtile_contenders(&gpu).expect("oxtile GEMM"));
    let mut criterion = gpu_time::criterion(&gpu);
    let mut group = criterion.benchmark_group("gemm_bf16_tn");
    for shape in SHAPES {
        let problem = GemmProblem { shape, dtype: Dtype::Bf16, layout: GemmLayout::Tn };
        let sets = rotation_sets(problem.bytes_per_set(), info.l2_bytes, 3.0, 64, usize::MAX);
        let a: Vec<_> = (0..sets)
            .map(|i| stream.clone_htod(&pool.fill::<bf16>(problem.a_len(), InputPool::offset(i, 0))).expect("upload"))
            .collect();
        let b: Vec<_> = (0..sets)
            .map(|i| stream.clone_htod(&pool.fill::<bf16>(problem.b_len(), InputPool::offset(i, 1))).expect("upload"))
            .collect();
        let mut c: Vec<_> = (0..sets).map(|_| stream.alloc_zeros::<bf16>(problem.c_len()).expect("alloc")).collect();
        group.throughput(Throughput::Elements(problem.flops() as u64));
        for contender in contenders.iter_mut() {
            if let Err(reason) = contender.supports(&problem) {
                eprintln!("{} skips {problem}: {reason}", contender.name());
                continue;
            }
            contender.prepare(&gpu, &problem).expect("prepare");
            for s in 0..sets {
                contender.bind(&gpu, &problem, Operands::Bf16 { a: &a[s], b: &b[s], c: &mut c[s] }).expect("bind");
            }
            let name = contender.name().to_string();
            group.bench_function(BenchmarkId::new(name, shape.to_string()), |bencher| {
                let mut i = 0;
                bencher.iter(|| {
                    i += 1;
                    let s = i % sets;
                    let operands = Operands::Bf16 { a: &a[s], b: &b[s], c: &mut c[s] };
                    contender.launch(&gpu, &problem, operands).expect("GEMM launch")
                })
            });
        }
    }
    group.finish();
    criterion.final_summary();
}
