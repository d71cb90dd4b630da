//! GEMM kernels. `sm90` holds the Hopper data path (TMA → shared-memory ring → wgmma → registers → global);
//! `schedule` maps a persistent block's work items to output tiles.

pub mod schedule;
pub mod sm90;
