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
    Ok(vec![
        Box::new(OxtileSm90::new()),
        Box::new(OxtileSm90::tuned()),
        Box::new(OxtileSm90::variant("oxtile-wide", Variant::Wide)),
        Box::new(OxtileSm90::variant("oxtile-wide-c2", Variant::WideCluster2)),
        Box::new(OxtileSm90::variant("oxtile-wide-c2-unshared", Variant::WideCluster2Unshared)),
        Box::new(OxtileSm90::variant("oxtile-narrow", Variant::Narrow)),
        Box::new(OxtileSm90::variant("oxtile-narrow-c2", Variant::NarrowCluster2)),
        Box::new(OxtileSm90::variant("oxtile-flat", Variant::Flat)),
        Box::new(OxtileSm90::variant("oxtile-flat-sk", Variant::FlatStreamK)),
        Box::new(OxtileSm90::variant("oxtile-square", Variant::Square)),
        Box::new(OxtileSm90::variant("oxtile-square-c2", Variant::SquareCluster2)),
        Box::new(OxtileSm90::variant("oxtile-square-sk", Variant::SquareStreamK)),
        Box::new(OxtileSm90::through_cluster_path("oxtile-narrow-cluster-path", Variant::Narrow)),
        Box::new(OxtileSm90::without_dependent_launch("oxtile-no-pdl", Variant::Auto)),
        Box::new(OxtileSm90::variant("oxtile-pingpong", Variant::PingPong)),
        Box::new(OxtileSm90::variant("oxtile-pingpong-c2", Variant::PingPongCluster2)),
        Box::new(OxtileSm90::variant("oxtile-streamk", Variant::StreamK)),
        Box::new(OxtileSm90::variant("oxtile-streamk-c2", Variant::StreamKCluster2)),
    ])
}

/// The in-process peers, the reference first: cuBLASLt (heuristic's best algorithm, 32 MiB workspace), cuBLASLt
/// autotuned over the heuristic's first few algorithms, then cublasGemmEx.
pub fn peer_contenders(gpu: &Gpu) -> Result<Vec<Box<dyn GemmContender>>> {
    Ok(vec![Box::new(CublasLt::new(gpu)?), Box::new(CublasLt::tuned(gpu)?), Box::new(CublasGemmEx::new(gpu)?)])
}
