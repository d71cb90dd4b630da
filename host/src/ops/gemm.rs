//! D = alpha·A·B + beta·D on the Hopper GEMM kernel (gpu/kernels/src/gemm/sm90.rs).
//!
//! A is M×K, B is K×N, D is M×N row-major. The sm90 kernel reads both operands K-major through TMA: A
//! row-major and B column-major ("TN"). Every argument is checked before launch.

use cudarc::driver::sys::{CUfunction_attribute, CUtensorMapDataType};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut};
use half::{bf16, f16};
use oxtile_abi::{GEMM_SM90_128X64, GEMM_SM90_128X256, GemmTile};

use super::{input_ptr, output_ptr};
use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};
use crate::runtime::{ClusterLaunch, Gpu};
use crate::tma::{self, Tile2d};

const OP: &str = "gemm";

/// Storage order of a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    RowMajor,
    ColMajor,
}

/// Problem size: D is M×N, the contraction runs over K.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl GemmShape {
    pub const fn new(m: usize, n: usize, k: usize) -> Self {
        GemmShape { m, n, k }
    }

    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// Which sm90 kernel runs a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum Variant {
    /// The heuristic's choice for the shape.
    #[default]
    Auto,
    /// 128×256 tiles, one block each: large problems.
    Wide,
    /// 128×256 tiles in clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast.
    WideCluster2,
    /// Ablation of [`Variant::WideCluster2`] (bf16 only): the same clusters and barriers, each block loading all
    /// of B itself — separates the cost of multicast from the cost of coupling the blocks.
    WideCluster2Unshared,
    /// 128×64 tiles with an 8-stage ring: problems with too few 128×256 tiles to fill the GPU.
    Narrow,
}

impl Variant {
    /// The kernels `oxtile tune gemm` chooses among.
    pub const CANDIDATES: [Variant; 3] = [Variant::Wide, Variant::WideCluster2, Variant::Narrow];

    /// The concrete kernel for `shape` on a GPU with `sm_count` SMs.
    pub fn resolve(self, shape: GemmShape, sm_count: u32) -> Variant {
        if self != Variant::Auto {
            return self;
        }
        // Measured 2026-11-30 (docs/perf-notes.md): with under half an SM's worth of wide tiles per SM, four times
        // as many narrow ones do better; from two waves of wide tiles on, clusters sharing B by multicast win
        // (L2 → SM traffic is what limits the wide kernel); in between, single wide blocks.
        let wide_tiles =
            shape.m.div_ceil(GEMM_SM90_128X256.tile_m as usize) * shape.n.div_ceil(GEMM_SM90_128X256.tile_n as usize);
        let sms = sm_count as usize;
        if 2 * wide_tiles <= sms {
            Variant::Narrow
        } else if wide_tiles >= 2 * sms && shape.m > GEMM_SM90_128X256.tile_m as usize {
            Variant::WideCluster2
        } else {
            Variant::Wide
        }
    }

    fn tile(self) -> GemmTile {
        match self {
            Variant::Narrow => GEMM_SM90_128X64,
            _ => GEMM_SM90_128X256,
        }
    }

    fn cluster_size(self) -> u32 {
        match self {
            Variant::WideCluster2 | Variant::WideCluster2Unshared => 2,
            _ => 1,
        }
    }

    /// Blocks that share one B tile by multicast.
    fn b_sharers(self) -> u32 {
        if self == Variant::WideCluster2 { 2 } else { 1 }
    }
}

/// Operand orders, the epilogue's scalars and the kernel variant. The default is A row-major, B column-major
/// (both K-major) with D = A·B.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmOptions {
    pub a_order: Order,
    pub b_order: Order,
    pub alpha: f32,
    pub beta: f32,
    pub variant: Variant,
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            a_order: Order::RowMajor,
            b_order: Order::ColMajor,
            alpha: 1.0,
            beta: 0.0,
            variant: Variant::Auto,
        }
    }
}

/// The 16-bit input types the tensor-core kernels take.
pub trait GemmElement: cudarc::driver::DeviceRepr {
    /// `bf16` or `f16`, as tables and the tune cache write it.
    const NAME: &'static str;
    /// The kernel of each concrete variant this type has.
    const KERNELS: &'static [(Variant, Kernel)];
    const TENSOR_MAP_TYPE: CUtensorMapDataType;
}

impl GemmElement for bf16 {
    const NAME: &'static str = "bf16";
    const KERNELS: &'static [(Variant, Kernel)] = &[
        (Variant::Wide, kernels::GEMM_BF16_TN_SM90),
        (Variant::WideCluster2, kernels::GEMM_BF16_TN_C2_SM90),
        (Variant::WideCluster2Unshared, kernels::GEMM_BF16_TN_C2_UNSHARED_SM90),
        (Variant::Narrow, kernels::GEMM_BF16_TN_NARROW_SM90),
    ];
    const TENSOR_MAP_TYPE: CUtensorMapDataType = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

impl GemmElement for f16 {
    const NAME: &'static str = "f16";
    const KERNELS: &'static [(Variant, Kernel)] = &[
        (Variant::Wide, kernels::GEMM_F16_TN_SM90),
        (Variant::WideCluster2, kernels::GEMM_F16_TN_C2_SM90),
        (Variant::Narrow, kernels::GEMM_F16_TN_NARROW_SM90),
    ];
    const TENSOR_MAP_TYPE: CUtensorMapDataType = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

/// A checked GEMM bound to its operand buffers: the tensor maps are encoded and copied to the device once,
/// so repeated launches (benchmarks, iterative solvers) pay nothing but the launch.
pub struct GemmPlan<T: GemmElement> {
    shape: GemmShape,
    options: GemmOptions,
    kernel: Kernel,
    function: CudaFunction,
    tensor_maps: CudaSlice<u64>,
    a_address: u64,
    b_address: u64,
    launch: ClusterLaunch,
    _element: std::marker::PhantomData<T>,
}

impl<T: GemmElement> GemmPlan<T> {
    pub fn new(
        gpu: &Gpu,
        shape: GemmShape,
        options: GemmOptions,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
    ) -> Result<Self> {
        check_shape(shape)?;
        if (options.a_order, options.b_order) != (Order::RowMajor, Order::ColMajor) {
            return Err(Error::unsupported(
                OP,
                format!(
                    "A {:?} with B {:?}: the sm90 kernel takes both operands K-major (A row-major, B column-major)",
                    options.a_order, options.b_order
                ),
            ));
        }
        if !shape.k.is_multiple_of(8) {
            return Err(Error::unsupported(
                OP,
                format!("K = {} is not a multiple of 8: TMA needs 16-byte row strides", shape.k),
            ));
        }
        let (a_address, _a_use) = input_ptr(OP, "A", a, gpu.stream(), shape.m * shape.k, 16)?;
        let (b_address, _b_use) = input_ptr(OP, "B", b, gpu.stream(), shape.k * shape.n, 16)?;
        let variant = match options.variant {
            Variant::Auto => crate::tune::cached_gemm_variant(gpu, T::NAME, shape)?
                .unwrap_or_else(|| Variant::Auto.resolve(shape, gpu.sm_count())),
            chosen => chosen,
        };
        let (tile, cluster) = (variant.tile(), variant.cluster_size());
        let operand = |address, rows, box_rows| Tile2d {
            data_type: T::TENSOR_MAP_TYPE,
            address,
            rows: rows as u64,
            cols: shape.k as u64,
            row_stride: shape.k as u64,
            box_rows,
            box_cols: tile.tile_k,
        };
        // In a cluster each block loads (and multicasts) its share of the B tile's rows.
        let maps = [
            operand(a_address, shape.m, tile.tile_m).encode(OP)?,
            operand(b_address, shape.n, tile.tile_n / variant.b_sharers()).encode(OP)?,
        ];
        let tensor_maps = gpu.stream().clone_htod(&tma::as_words(&maps))?;

        let kernel = T::KERNELS
            .iter()
            .find(|(v, _)| *v == variant)
            .map(|(_, kernel)| *kernel)
            .ok_or_else(|| Error::unsupported(OP, format!("no {variant:?} kernel for this element type")))?;
        let function = gpu.function(kernel)?;
        function.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            tile.smem_bytes() as i32,
        )?;
        // Persistent: at most one block per SM, whole clusters, each cluster walking cluster tiles.
        let cluster_tiles = shape.m.div_ceil((tile.tile_m * cluster) as usize) * shape.n.div_ceil(tile.tile_n as usize);
        let mut launch = ClusterLaunch {
            grid_dim: (gpu.sm_count() / cluster * cluster, 1, 1),
            block_dim: (tile.threads(), 1, 1),
            cluster_dim: (cluster, 1, 1),
            shared_mem_bytes: tile.smem_bytes(),
        };
        let resident = if cluster > 1 { gpu.max_active_clusters(&function, &launch)? } else { gpu.sm_count() };
        launch.grid_dim.0 = cluster_tiles.min(resident.max(1) as usize) as u32 * cluster;
        Ok(GemmPlan {
            shape,
            options,
            kernel,
            function,
            tensor_maps,
            a_address,
            b_address,
            launch,
            _element: std::marker::PhantomData,
        })
    }

    pub fn shape(&self) -> GemmShape {
        self.shape
    }

    /// The kernel the plan launches.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Blocks in the persistent grid and blocks per cluster.
    pub fn grid(&self) -> (u32, u32) {
        (self.launch.grid_dim.0, self.launch.cluster_dim.0)
    }

    /// D = alpha·A·B + beta·D with the A and B the plan was made for.
    pub fn launch(
        &self,
        gpu: &Gpu,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        d: &mut impl DevicePtrMut<T>,
    ) -> Result<()> {
        let GemmShape { m, n, k } = self.shape;
        let (a_address, _a_use) = input_ptr(OP, "A", a, gpu.stream(), m * k, 16)?;
        let (b_address, _b_use) = input_ptr(OP, "B", b, gpu.stream(), k * n, 16)?;
        if (a_address, b_address) != (self.a_address, self.b_address) {
            return Err(Error::bad_argument(OP, "A or B is not the buffer this plan's tensor maps describe"));
        }
        let (d_address, _d_use) = output_ptr(OP, "D", d, gpu.stream(), m * n, 16)?;
        let (maps, _maps_use) = self.tensor_maps.device_ptr(gpu.stream());
        let map_b = maps + std::mem::size_of::<cudarc::driver::sys::CUtensorMap>() as u64;
        let (mut m, mut n, mut k, mut ldd) = (m as u32, n as u32, k as u32, n as u32);
        let (mut map_a, mut map_b, mut d_address) = (maps, map_b, d_address);
        let (mut alpha, mut beta) = (self.options.alpha, self.options.beta);
        let mut args = [
            arg(&mut map_a),
            arg(&mut map_b),
            arg(&mut d_address),
            arg(&mut m),
            arg(&mut n),
            arg(&mut k),
            arg(&mut ldd),
            arg(&mut alpha),
            arg(&mut beta),
        ];
        // SAFETY: arguments match the kernel's signature; the tensor maps describe A and B (checked above), D
        // holds M×N elements, 16-byte aligned; block, cluster and shared-memory sizes are the kernel's own.
        unsafe { gpu.launch_cluster(self.kernel.name, &self.function, &self.launch, &mut args) }
    }
}

/// D = alpha·A·B + beta·D, in one call (encodes the tensor maps each time; keep a [`GemmPlan`] to repeat).
pub fn gemm<T: GemmElement>(
    gpu: &Gpu,
    shape: GemmShape,
    a: &impl DevicePtr<T>,
    b: &impl DevicePtr<T>,
    d: &mut impl DevicePtrMut<T>,
    options: GemmOptions,
) -> Result<()> {
    GemmPlan::new(gpu, shape, options, a, b)?.launch(gpu, a, b, d)
}

fn arg<T>(value: &mut T) -> *mut std::ffi::c_void {
    value as *mut T as *mut std::ffi::c_void
}

fn check_shape(shape: GemmShape) -> Result<()> {
    let GemmShape { m, n, k } = shape;
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::bad_argument(OP, format!("M, N and K must be at least 1, got {m}×{n}×{k}")));
    }
    // TMA coordinates are signed 32-bit; element offsets are computed in 64 bits.
    let limit = i32::MAX as usize;
    if m > limit || n > limit || k > limit {
        return Err(Error::bad_argument(OP, format!("{m}×{n}×{k} has a dimension past 2^31 - 1")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_tiles_by_how_many_fill_the_gpu() {
        let pick = |m, n, k| Variant::Auto.resolve(GemmShape::new(m, n, k), 132);
        assert_eq!(pick(128, 8192, 8192), Variant::Narrow);
        assert_eq!(pick(1024, 1024, 1024), Variant::Narrow);
        assert_eq!(pick(2048, 2048, 2048), Variant::Wide);
        assert_eq!(pick(4096, 4096, 4096), Variant::WideCluster2);
        assert_eq!(pick(8192, 4096, 14336), Variant::WideCluster2);
        assert_eq!(Variant::Wide.resolve(GemmShape::new(1, 1, 8), 132), Variant::Wide);
    }

    #[test]
    fn rejects_empty_and_oversized_shapes() {
        assert!(check_shape(GemmShape::new(0, 8, 8)).unwrap_err().to_string().contains("at least 1"));
        assert!(check_shape(GemmShape::new(1 << 31, 8, 8)).unwrap_err().to_string().contains("2^31"));
        check_shape(GemmShape::new(4097, 4095, 4104)).unwrap();
    }
}
