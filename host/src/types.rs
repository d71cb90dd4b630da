//! The types every layer shares: the element types of the tensor-core kernels and their names, and a GEMM's
//! problem shape and operand layout. Each is spelled one way: `bf16`, `f16`, `f32` for types; `tn`, `tt`, `nt`,
//! `nn` for layouts.

use cudarc::driver::sys::CUtensorMapDataType;
use half::{bf16, f16};
use serde::{Deserialize, Serialize};

/// Storage order of a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    RowMajor,
    ColMajor,
}

/// How a GEMM's A (M×K) and B (K×N) are stored, in BLAS letters, A then B: `t` = row-major, `n` = column-major;
/// D is row-major. `tn` has both operands K-major (`x @ W.T`), `tt` is torch's `a @ b`, `nt` has both MN-major.
/// (The CuTe layouts of the layout algebra are `oxtile_layout::Layout`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "bench", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum GemmLayout {
    /// A row-major, B column-major: both K-major.
    Tn,
    /// A and B row-major: torch's `a @ b`.
    Tt,
    /// A column-major, B row-major: both MN-major.
    Nt,
    /// A and B column-major.
    Nn,
}

impl GemmLayout {
    /// The four layouts, in the order tables list them.
    pub const ALL: [GemmLayout; 4] = [GemmLayout::Tn, GemmLayout::Tt, GemmLayout::Nt, GemmLayout::Nn];

    /// A's storage order.
    pub const fn a_order(self) -> Order {
        match self {
            GemmLayout::Tn | GemmLayout::Tt => Order::RowMajor,
            GemmLayout::Nt | GemmLayout::Nn => Order::ColMajor,
        }
    }

    /// B's storage order.
    pub const fn b_order(self) -> Order {
        match self {
            GemmLayout::Tt | GemmLayout::Nt => Order::RowMajor,
            GemmLayout::Tn | GemmLayout::Nn => Order::ColMajor,
        }
    }

    /// The layout of A stored in `a_order` and B in `b_order`.
    pub fn of(a_order: Order, b_order: Order) -> GemmLayout {
        let orders = |l: &GemmLayout| (l.a_order(), l.b_order()) == (a_order, b_order);
        GemmLayout::ALL.into_iter().find(orders).expect("the four layouts are the four pairs of orders")
    }

    /// Its BLAS letters, as tables, kernel names and the tune cache write it.
    pub const fn name(self) -> &'static str {
        match self {
            GemmLayout::Tn => "tn",
            GemmLayout::Tt => "tt",
            GemmLayout::Nt => "nt",
            GemmLayout::Nn => "nn",
        }
    }

    /// The layout named `name` ([`GemmLayout::name`]), if it is one.
    pub fn parse(name: &str) -> Option<GemmLayout> {
        GemmLayout::ALL.into_iter().find(|l| l.name() == name)
    }
}

impl std::fmt::Display for GemmLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// GEMM problem size: D is M×N, the contraction runs over K. Text form `MxNxK` (bench::suite).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GemmShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl GemmShape {
    pub const fn new(m: usize, n: usize, k: usize) -> Self {
        GemmShape { m, n, k }
    }

    /// 2·M·N·K: one multiply and one add per term, the count torch_reference.py and every GEMM benchmark use.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// A 16-bit input type of the tensor-core kernels, as a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "bench", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Bf16,
    /// `fp16` is accepted where a user types it (`--dtype fp16`).
    #[cfg_attr(feature = "bench", value(alias = "fp16"))]
    F16,
}

impl Dtype {
    /// `bf16` or `f16`: [`GemmElement::NAME`].
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
        }
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The 16-bit input types the tensor-core kernels (GEMM, attention) take.
pub trait GemmElement: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits {
    const DTYPE: Dtype;
    /// `bf16` or `f16`, as tables, kernel names and the tune cache write it.
    const NAME: &'static str = Self::DTYPE.name();
    const TENSOR_MAP_TYPE: CUtensorMapDataType;
}

impl GemmElement for bf16 {
    const DTYPE: Dtype = Dtype::Bf16;
    const TENSOR_MAP_TYPE: CUtensorMapDataType = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

impl GemmElement for f16 {
    const DTYPE: Dtype = Dtype::F16;
    const TENSOR_MAP_TYPE: CUtensorMapDataType = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

/// The types a GEMM's D (and the C read when beta ≠ 0) can have for inputs of type `T`: `T` itself, or f32.
pub trait GemmOutput<T: GemmElement>: cudarc::driver::DeviceRepr {
    /// `bf16`, `f16` or `f32`.
    const NAME: &'static str;
    /// D's element type in its tensor map (the TMA-store epilogue's).
    const TENSOR_MAP_TYPE: CUtensorMapDataType;
}

impl GemmOutput<bf16> for bf16 {
    const NAME: &'static str = <bf16 as GemmElement>::NAME;
    const TENSOR_MAP_TYPE: CUtensorMapDataType = <bf16 as GemmElement>::TENSOR_MAP_TYPE;
}

impl GemmOutput<f16> for f16 {
    const NAME: &'static str = <f16 as GemmElement>::NAME;
    const TENSOR_MAP_TYPE: CUtensorMapDataType = <f16 as GemmElement>::TENSOR_MAP_TYPE;
}

impl<T: GemmElement> GemmOutput<T> for f32 {
    const NAME: &'static str = "f32";
    const TENSOR_MAP_TYPE: CUtensorMapDataType = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_and_orders_correspond() {
        for layout in GemmLayout::ALL {
            assert_eq!(GemmLayout::of(layout.a_order(), layout.b_order()), layout);
            assert_eq!(GemmLayout::parse(layout.name()), Some(layout));
        }
        assert_eq!((GemmLayout::Tn.a_order(), GemmLayout::Tn.b_order()), (Order::RowMajor, Order::ColMajor));
        assert_eq!((GemmLayout::Nt.a_order(), GemmLayout::Nt.b_order()), (Order::ColMajor, Order::RowMajor));
        assert_eq!(GemmLayout::parse("nx"), None);
    }

    #[test]
    #[cfg(feature = "bench")]
    fn one_spelling_per_type() {
        use clap::ValueEnum;
        assert_eq!((<bf16 as GemmElement>::NAME, <f16 as GemmElement>::NAME), ("bf16", "f16"));
        assert_eq!(serde_json::to_string(&Dtype::F16).unwrap(), "\"f16\"");
        assert_eq!(serde_json::to_string(&GemmLayout::Nt).unwrap(), "\"nt\"");
        // What a user types: the name, and fp16 for f16.
        assert_eq!(Dtype::from_str("fp16", false), Ok(Dtype::F16));
        assert_eq!(Dtype::from_str("f16", false), Ok(Dtype::F16));
        assert_eq!(GemmLayout::from_str("tt", false), Ok(GemmLayout::Tt));
    }
}
