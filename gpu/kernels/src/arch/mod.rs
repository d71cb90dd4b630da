//! Thin, documented wrappers over PTX instructions, one module per instruction family.
//!
//! Each wrapper names the PTX ISA section (PTX ISA 9.0 numbering) that defines its instruction.

pub mod convert;
pub mod mufu;
pub mod sreg;
