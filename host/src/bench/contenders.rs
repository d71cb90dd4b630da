//! The GEMM contenders `oxtile bench gemm` and the criterion GEMM bench time: our kernels and the in-process peers.

use super::gemm::GemmContender;
use super::oxtile::OxtileSm90;
use super::peers::cublas::{self, CublasGemmEx, CublasLt};
use crate::error::Result;
use crate::kernels::Variant;
use crate::runtime::Gpu;

/// The peer every ratio is taken against.
pub const BASELINE: &str = cublas::CUBLASLT;

/// Our GEMM kernels, benchmarked beside the peers: each implements [`GemmContender`] (see
/// [`OxtileSm90`]) and is listed here; every `oxtile bench gemm` run and the criterion GEMM bench
/// then time it, and the harness checks its output against cuBLASLt's.
pub fn oxtile_contenders(gpu: &Gpu) -> Result<Vec<Box<dyn GemmContender>>> {
    let _ = gpu;
    let mut contenders: Vec<Box<dyn GemmContender>> = vec![Box::new(OxtileSm90::new()), Box::new(OxtileSm90::tuned())];
    // Every configuration of the GEMM table, forced, under its label.
    for &variant in Variant::CONFIGURED {
        contenders.push(Box::new(OxtileSm90::variant(variant.contender(), variant)));
    }
    contenders.push(Box::new(OxtileSm90::through_cluster_path("oxtile-narrow-cluster-path", Variant::Narrow)));
    contenders.push(Box::new(OxtileSm90::without_dependent_launch("oxtile-no-pdl", Variant::Auto)));
    contenders.push(Box::new(OxtileSm90::skinny("oxtile-skinny")));
    contenders.push(Box::new(OxtileSm90::without_skinny("oxtile-no-skinny")));
    Ok(contenders)
}

/// The in-process peers, the reference first: cuBLASLt (heuristic's best algorithm, 32 MiB workspace), cuBLASLt
/// autotuned over the heuristic's first few algorithms, then cublasGemmEx.
pub fn peer_contenders(gpu: &Gpu) -> Result<Vec<Box<dyn GemmContender>>> {
    Ok(vec![Box::new(CublasLt::new(gpu)?), Box::new(CublasLt::tuned(gpu)?), Box::new(CublasGemmEx::new(gpu)?)])
}
