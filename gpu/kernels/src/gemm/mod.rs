//! GEMM kernels. `sm90` holds the Hopper data path (TMA → shared-memory ring → wgmma → registers → global); the order
//! in which a persistent block visits output tiles is oxtile-abi's `raster`, shared with the host.

pub mod sm90;
