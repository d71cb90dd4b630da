//! The skinny GEMM (gpu/kernels/gemm/src/skinny.rs): D = alpha·A·B + beta·D for M ≤ 16 with A row-major (layouts tn
//! and tt), the decode-sized problems whose time is B's bytes. [`GemmPlan`](super::gemm::GemmPlan) runs it for
//! [`Variant::Auto`](super::gemm::Variant::Auto) where it applies ([`applies`]); the split of the work between blocks
//! is `oxtile_abi::skinny`'s, and a plan that splits column groups owns a workspace (a slot per block, a counter per
//! group) that every launch leaves with its counters at zero.

use std::sync::{Mutex, MutexGuard, PoisonError};

use cudarc::driver::{CudaFunction, CudaSlice, DevicePtrMut};
use oxtile_abi::skinny::{self, SkinnySplit};
use oxtile_abi::{GEMM_SM90_64X128, SkinnyGemmParams};

use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};
use crate::runtime::{ClusterLaunch, ClusterShape, Gpu};
use crate::types::{GemmElement, GemmLayout, GemmOutput, GemmShape, Order};

const OP: &str = "gemm";

/// Whether the skinny kernel computes `shape` in `layout` for `input` → `output`: at most [`skinny::MAX_M`] rows, A
/// row-major, and a kernel for the types.
pub fn applies(shape: GemmShape, layout: GemmLayout, (input, output): (&str, &str)) -> bool {
    shape.m <= skinny::MAX_M as usize
        && layout.a_order() == Order::RowMajor
        && kernels::find_gemm_skinny(input, output, layout).is_some()
}

/// Deepest K at which [`pays`] takes the skinny kernel for a column-major B (layout tn): there each lane reads its
/// columns K elements apart, and from K = 12288 on the skinny kernel lost to the tiles (4096×12288 and 4096×14336:
/// 0.82–0.90 of the best cuBLAS peer against the tiles' 0.88–0.91), while at K = 7168 it won (0.89–0.92 against
/// 0.86). A row-major B won at every K measured (up to 14336).
pub const COLUMN_MAJOR_B_MAX_K: usize = 8192;

/// Whether the skinny kernel pays for `shape` in `layout` (where it applies) on a GPU of `sms` SMs, which
/// [`Variant::Auto`](super::gemm::Variant::Auto) runs it by unless the 64×64 tiles split over K there
/// (`Variant::splits_narrow_tiles`): where the wgmma tiles would keep at most a quarter of the SMs streaming B (N ≤ 33
/// 64×128 tiles on the H200), and, for a column-major B, K ≤ [`COLUMN_MAJOR_B_MAX_K`]. There the tiles need split-K
/// over many blocks, whose fixup costs microseconds, while the skinny kernel spreads the columns over every SM and adds
/// up its splits in one pass. With more tiles, the tiles stream B through TMA faster than the skinny kernel's 16-byte
/// loads (3.6–4.0 against 4.0–4.2 TB/s on 100+ MB problems) and win.
///
/// Measured on the H200 (docs/perf-notes.md, "Session 30"; ratio to the best cuBLAS peer, M ≤ 16): N = 576 and 1536
/// at K = 7168 0.68–0.77 → 0.74–0.97 (the tiles split K); N = 4096 0.83–0.93 → 0.89–0.98; N = 5120–10240 in layout tn
/// mostly lower with the skinny kernel (0.76–0.90 against 0.85–1.02), so not taken there. Since then the 64×64 tiles
/// split over K beat it over most of this region (`SkinnyChoice::WherePays` says where Auto takes them instead).
pub fn pays(shape: GemmShape, layout: GemmLayout, sms: u32) -> bool {
    let few_tiles = 4 * shape.n.div_ceil(GEMM_SM90_64X128.tile_n as usize) <= sms as usize;
    few_tiles && (layout.b_order() == Order::RowMajor || shape.k <= COLUMN_MAJOR_B_MAX_K)
}

/// A checked skinny GEMM bound to its A and B (see [`applies`]; the caller checked the shape and layout).
pub(crate) struct SkinnyPlan {
    shape: GemmShape,
    alpha: f32,
    beta: f32,
    kernel: Kernel,
    function: CudaFunction,
    split: SkinnySplit,
    launch: ClusterLaunch,
    workspace: Mutex<Option<SkinnyWorkspace>>,
}

/// The split groups' slots and counters, zeroed once; every launch leaves the counters at zero.
pub(crate) struct SkinnyWorkspace {
    partials: CudaSlice<f32>,
    counters: CudaSlice<u32>,
}

impl SkinnyPlan {
    /// The plan for `T` → `O` in `layout`; the caller checked the shape and layout.
    pub(crate) fn new<T: GemmElement, O: GemmOutput<T>>(
        gpu: &Gpu,
        shape: GemmShape,
        layout: GemmLayout,
        (alpha, beta): (f32, f32),
        dependent_launch: bool,
    ) -> Result<Self> {
        let kernel = kernels::find_gemm_skinny(T::NAME, O::NAME, layout)
            .filter(|_| applies(shape, layout, (T::NAME, O::NAME)))
            .ok_or_else(|| {
                Error::unsupported(OP, format!("no skinny kernel for {shape:?} {} → {} in {layout}", T::NAME, O::NAME))
            })?
            .kernel;
        let split = SkinnySplit::new(shape.n as u32, shape.k as u32, gpu.sm_count());
        let function = gpu.function(kernel)?;
        let launch = ClusterLaunch {
            grid_dim: (split.grid(), 1, 1),
            block_dim: (skinny::THREADS, 1, 1),
            cluster_dim: (1, 1, 1),
            shared_mem_bytes: skinny::SMEM_BYTES,
            dependent_launch,
        };
        Ok(SkinnyPlan { shape, alpha, beta, kernel, function, split, launch, workspace: Mutex::new(None) })
    }

    pub(crate) fn kernel(&self) -> Kernel {
        self.kernel
    }

    pub(crate) fn split(&self) -> SkinnySplit {
        self.split
    }

    /// The counters as the GPU holds them once the stream's work is done: every launch must leave them all 0. Empty
    /// while the plan has no workspace. For tests.
    pub(crate) fn counters(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        let workspace = self.workspace.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(match &*workspace {
            Some(buffers) => gpu.stream().clone_dtoh(&buffers.counters)?,
            None => Vec::new(),
        })
    }

    /// The workspace, allocated on first use; `None` where no column group is split.
    pub(crate) fn workspace(&self, gpu: &Gpu) -> Result<Option<MutexGuard<'_, Option<SkinnyWorkspace>>>> {
        if self.split.slots() == 0 {
            return Ok(None);
        }
        let mut workspace = self.workspace.lock().unwrap_or_else(PoisonError::into_inner);
        if workspace.is_none() {
            let floats = self.split.slots() as usize * skinny::SLOT_FLOATS as usize;
            let counters = self.split.groups as usize;
            let fail = |what, bytes| move |source| Error::Workspace { op: OP, what, bytes, source };
            // SAFETY: a slot is read only by the last block of its group, after every block of the group wrote its
            // slot in the same launch (the counter orders them); nothing reads an unwritten element.
            let partials =
                unsafe { gpu.stream().alloc::<f32>(floats) }.map_err(fail("skinny GEMM partial sums", 4 * floats))?;
            let counters =
                gpu.stream().alloc_zeros::<u32>(counters).map_err(fail("skinny GEMM counters", 4 * counters))?;
            *workspace = Some(SkinnyWorkspace { partials, counters });
        }
        Ok(Some(workspace))
    }

    /// D = alpha·A·B + beta·D for the A, B and D at these addresses, checked by the caller (`GemmPlan::launch`): A and
    /// B the plan's, D of M×N output elements, 16-byte aligned, disjoint from them, all in the GPU's context.
    pub(crate) fn launch(&self, gpu: &Gpu, a_address: u64, b_address: u64, d_address: u64) -> Result<()> {
        let GemmShape { m, n, k } = self.shape;
        // The workspace with write intent: the kernel writes the slots and counts and resets the counters, so this
        // launch waits for every earlier use of the workspace, on any stream, and later uses wait for it.
        let mut workspace = self.workspace(gpu)?;
        let (partials, counters) = match workspace.as_deref_mut().and_then(Option::as_mut) {
            Some(SkinnyWorkspace { partials, counters }) => {
                (Some(partials.device_ptr_mut(gpu.stream())), Some(counters.device_ptr_mut(gpu.stream())))
            }
            None => (None, None),
        };
        let mut params = SkinnyGemmParams {
            a: a_address,
            b: b_address,
            d: d_address,
            // beta·C blends D's old contents.
            c: d_address,
            partials: partials.as_ref().map_or(0, |(address, _)| *address),
            counters: counters.as_ref().map_or(0, |(address, _)| *address),
            m: m as u32,
            n: n as u32,
            k: k as u32,
            alpha: self.alpha,
            beta: self.beta,
            splits: self.split.splits,
            chunks_per_split: self.split.chunks_per_split,
        };
        // SAFETY: the arguments are the kernel's, one per field of `SkinnyGemmParams` (the list the kernel's signature
        // is declared from). A (M×K, row-major), B (K×N in the kernel's layout) and D (M×N of its output type) hold
        // their elements, 16-byte aligned, in the GPU's context, D sharing no byte with A or B (`GemmPlan::launch`), with
        // M ≤ 16 and the contiguous dimensions multiples of 8 (`applies` and `check_layout`); the split is
        // `SkinnySplit::new`'s for N and K and the grid its; where it splits groups, the workspace has its slots and
        // counters (zeroed at allocation, left at zero by every launch), taken with write intent above.
        let mut args = params.kernel_args();
        unsafe { gpu.launch_as(ClusterShape::Plain, self.kernel.name, &self.function, &self.launch, &mut args) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_to_at_most_16_rows_of_a_row_major_a() {
        let shape = |m| GemmShape::new(m, 4096, 4096);
        for layout in [GemmLayout::Tn, GemmLayout::Tt] {
            for types in [("bf16", "bf16"), ("bf16", "f32"), ("f16", "f16"), ("f16", "f32")] {
                assert!(applies(shape(1), layout, types) && applies(shape(16), layout, types), "{layout} {types:?}");
                assert!(!applies(shape(17), layout, types), "{layout} {types:?}");
            }
        }
        // A column-major: no kernel reads it.
        for layout in [GemmLayout::Nt, GemmLayout::Nn] {
            assert!(!applies(shape(1), layout, ("bf16", "bf16")), "{layout}");
        }
    }

    #[test]
    fn pays_where_the_tiles_would_keep_at_most_a_quarter_of_the_sms_streaming() {
        let n = |n| GemmShape::new(1, n, 7168);
        for layout in [GemmLayout::Tn, GemmLayout::Tt] {
            // 132 SMs: up to 33 tiles of 128 columns.
            assert!(pays(n(576), layout, 132) && pays(n(4096), layout, 132) && pays(n(4224), layout, 132));
            assert!(!pays(n(4225), layout, 132) && !pays(n(5120), layout, 132) && !pays(n(57344), layout, 132));
            // Fewer SMs, fewer columns.
            assert!(pays(n(2048), layout, 64) && !pays(n(2049), layout, 64));
        }
        // Deep K: a row-major B still, a column-major one not.
        let deep = GemmShape::new(1, 4096, 12288);
        assert!(pays(deep, GemmLayout::Tt, 132) && !pays(deep, GemmLayout::Tn, 132));
        assert!(pays(GemmShape::new(1, 4096, COLUMN_MAJOR_B_MAX_K), GemmLayout::Tn, 132));
    }
}
