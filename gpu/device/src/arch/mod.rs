//! Thin, documented wrappers over PTX instructions, one module per instruction family.
//!
//! Each wrapper cites the PTX ISA (version 9.0) section that defines its instruction by title, with the
//! anchor of its page in the ISA document. Addresses of shared memory are 32-bit `.shared::cta` window
//! addresses (what [`smem::dynamic_smem_base`] returns), never generic pointers.

pub mod atomic;
pub mod barrier;
pub mod cluster;
pub mod convert;
pub mod float;
pub mod global;
pub mod griddep;
pub mod mbarrier;
pub mod mma;
pub mod mufu;
pub mod nanosleep;
pub mod setmaxnreg;
pub mod smem;
pub mod sreg;
pub mod stmatrix;
pub mod tma;
pub mod trap;
pub mod warp;
pub mod wgmma;
