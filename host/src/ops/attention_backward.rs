//! Attention backward: the gradients dQ, dK and dV of [`super::attention`]'s forward from its O and LSE.
//!
//! - [`attention_backward`] and [`AttnBwdPlan`]: the Hopper kernels (gpu/kernels/attention_backward, backward_sm90.rs):
//!   a preprocessing kernel (D = dO·O per row, the LSE in log2 units, the tiles' flags zeroed, zeros for dQ's rows
//!   no walk visits), the main kernel (a walk per 128 keys of a key/value head, 64 at head dim 256: dK and dV in
//!   registers, dQ stored to an f32 accumulator in global memory by each tile's first writer and added by the
//!   others; a block per walk, or for full attention a GPU's worth of blocks walking them in turn, a short last
//!   round split into pieces whose dK and dV partials one more kernel adds up), and the conversion of the
//!   accumulator to dQ (by the main kernel itself in the staggered deterministic kernels at full attention,
//!   [`AttnBwdPlan::converts_in_kernel`]). The plan owns the workspaces.
//!   Head dims 64, 128 and 256.
//! - [`attention_backward_reference`]: the plain GPU reference (f32 arithmetic, one warp per output row:
//!   gpu/kernels/attention_backward/src/reference_backward.rs), which the float64 CPU reference
//!   (`reference::attention_backward`) checks on small problems and which checks the Hopper kernels on large ones.
//!
//! Layouts as the forward's: q, k, v, O BSHD with `options.strides` (packed by default); dO has O's strides, dQ
//! q's, dK k's and dV v's (each output's strides must map distinct elements to distinct addresses). Every argument
//! is checked before any launch, each failure a typed [`Error`].

use std::sync::Mutex;

use cudarc::driver::sys::{CUfunction_attribute, CUtensorMap};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use oxtile_abi::bwd_launch::{BwdLaunchOrder, WalkSplit};
pub use oxtile_abi::dq_order::DqOrder;
use oxtile_abi::dq_order::DqSchedule;
use oxtile_abi::{
    ATTN_BWD_SM90_D64, ATTN_BWD_SM90_TILES, AttnBwdConvertParams, AttnBwdParams, AttnBwdPreprocessParams, AttnBwdRows,
    AttnBwdSumPiecesParams, AttnBwdTile, BwdSplit,
};

use super::attention::{
    AttnElement, AttnOptions, AttnShape, AttnStrides, BackwardKernels, CheckedProblem, Strides, check_problem,
    reference_kernel,
};
use super::{check_disjoint, input_ptr, output_ptr, strided_ptr, strided_ptr_mut};
use crate::error::{Error, Result};
use crate::kernels::Kernel;
use crate::runtime::{ClusterLaunch, ClusterShape, Gpu};
use crate::tma;

const OP: &str = "attention_backward";
const REFERENCE_OP: &str = "attention_backward_reference";

/// Checks a backward problem: the forward's checks ([`CheckedProblem::new`]), then what only the backward needs:
/// dQ, dK and dV (with q's, k's and v's strides) map distinct elements to distinct addresses, and the main kernel's
/// walks (key tiles × kv heads × batch) number below 2^31.
/// No GPU needed.
pub fn check_backward(shape: AttnShape, options: &AttnOptions) -> Result<CheckedProblem> {
    let p = check_problem(OP, shape, options)?;
    let AttnStrides { q, k, v, .. } = p.strides;
    let (batch, d) = (shape.batch, shape.head_dim);
    let outputs = [
        ("dq", "q", q, shape.seq_q, shape.heads_q),
        ("dk", "k", k, shape.seq_k, shape.heads_kv),
        ("dv", "v", v, shape.seq_k, shape.heads_kv),
    ];
    for (name, input, strides, seq, heads) in outputs {
        if !strides.is_injective(batch, seq, heads, d) {
            return Err(Error::bad_argument(
                OP,
                format!("{name} takes {input}'s strides {strides:?}, which map two of its elements to one address"),
            ));
        }
    }
    // The main kernels count their walks in 31 bits (one grid dimension; a walk index plus the grid stays in 32).
    let (key_blocks, heads_kv, batch_u32) = main_grid(shape, tile_for(d));
    if (key_blocks as u64) * (heads_kv as u64) * (batch_u32 as u64) > i32::MAX as u64 {
        return Err(Error::bad_argument(
            OP,
            format!("key tiles {key_blocks} × heads_kv {heads_kv} × batch {batch} must be below 2^31"),
        ));
    }
    // The row kernels count the padded rows of all (batch, head) pairs, and each pair's row threads, in 32 bits.
    if padded_rows_total(shape) > u32::MAX as usize {
        return Err(Error::bad_argument(OP, "batch × heads_q × padded seq_q must be below 2^32"));
    }
    let rows = AttnBwdRows { rows: padded_rows(shape) as u32, head_dim: d as u32, batch_heads: 1 };
    if !rows.fits_u32() {
        return Err(Error::bad_argument(
            OP,
            format!("padded seq_q × head_dim / 8 must be below 2^32 (seq_q {})", shape.seq_q),
        ));
    }
    Ok(p)
}

/// The Hopper tile of a head dim the backward takes (`kernels_for` has refused any other first; 64 otherwise).
fn tile_for(head_dim: usize) -> AttnBwdTile {
    ATTN_BWD_SM90_TILES.into_iter().find(|tile| tile.head_dim as usize == head_dim).unwrap_or(ATTN_BWD_SM90_D64)
}

/// The main kernels of element type `T` at the problem's head dim.
fn kernels_for<T: AttnElement>(shape: AttnShape) -> Result<BackwardKernels> {
    T::BACKWARD_KERNELS
        .iter()
        .find(|(d, _)| *d == shape.head_dim)
        .map(|(_, k)| *k)
        .ok_or_else(|| Error::unsupported(OP, format!("head dim {}", shape.head_dim)))
}

/// The staggered order's schedule of a problem's (batch, key/value head) groups, as the `_staggered` kernels
/// build it from their parameters.
fn staggered_schedule(shape: AttnShape, causal: bool) -> DqSchedule {
    let tile = tile_for(shape.head_dim);
    let (seq_q, seq_k) = (shape.seq_q as u32, shape.seq_k as u32);
    DqSchedule {
        order: DqOrder::Staggered,
        causal,
        key_blocks: seq_k.div_ceil(tile.tile_kv),
        q_tiles: tile.padded_rows(seq_q) / tile.tile_q,
        tile_q: tile.tile_q,
        tile_kv: tile.tile_kv,
        seq_q,
        seq_k,
    }
}

/// Why a checked problem cannot take the staggered order, or None if it can: the kernel's 32-bit arithmetic must
/// hold ([`DqSchedule::fits_u32`]), and every key block of one (batch, key/value head) must be resident at once,
/// since blocks also wait for blocks launched after them (gpu/abi/src/dq_order.rs), unless the grid launches the
/// key blocks in the turns' order ([`DqSchedule::waits_only_for_earlier_launches`]). The walks are launched
/// key block fastest, so the blocks of a group are dispatched together; with `key_blocks` no larger than what the
/// occupancy API says the GPU holds at once, a group whose first blocks wait gets the rest as the groups before it
/// (which wait only among themselves) finish, and full attention's persistent launch holds whole groups on the
/// blocks of each round ([`BwdLaunchOrder::launched_blocks`]). Work on other streams that keeps SMs busy delays
/// those blocks; a block waiting past the bounded wait's limit traps (an error, never a hang). Where it asks the
/// occupancy API, raises `function`'s dynamic shared-memory limit to the tile's first, as the occupancy depends on it.
fn staggered_refusal(gpu: &Gpu, function: &CudaFunction, shape: AttnShape, causal: bool) -> Result<Option<String>> {
    let schedule = staggered_schedule(shape, causal);
    if !schedule.fits_u32() {
        return Ok(Some(format!(
            "{} key blocks × {} query tiles: past the staggered order's 32-bit arithmetic",
            schedule.key_blocks, schedule.q_tiles
        )));
    }
    if schedule.waits_only_for_earlier_launches() {
        return Ok(None);
    }
    let tile = tile_for(shape.head_dim);
    function.set_attribute(
        CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        tile.smem_bytes() as i32,
    )?;
    let per_sm =
        function.occupancy_max_active_blocks_per_multiprocessor(tile.threads(), tile.smem_bytes() as usize, None)?;
    let capacity = per_sm.saturating_mul(gpu.sm_count());
    if schedule.key_blocks > capacity {
        return Ok(Some(format!(
            "{} key blocks per key/value head, but only {capacity} blocks are resident at once",
            schedule.key_blocks
        )));
    }
    Ok(None)
}

/// Rows per (batch, head) in the workspaces: seq_q rounded up to whole query tiles (`AttnBwdTile::padded_rows`,
/// in `usize` so that a seq_q near 2^32 cannot wrap before `check_backward` refuses it).
fn padded_rows(shape: AttnShape) -> usize {
    let tile_q = tile_for(shape.head_dim).tile_q as usize;
    shape.seq_q.div_ceil(tile_q) * tile_q
}

/// Rows of the per-row workspaces over all batches and heads.
fn padded_rows_total(shape: AttnShape) -> usize {
    shape.batch * shape.heads_q * padded_rows(shape)
}

/// The backward's scratch memory: per padded query row, its LSE in log2 units and D = dO·O, and the f32 dQ
/// accumulator.
struct Workspace {
    lse_log2: CudaSlice<f32>,
    dsum: CudaSlice<f32>,
    dq_accum: CudaSlice<f32>,
    /// A flag per (batch, head, 64-row unit), a query tile using its first unit's: the deterministic mode's
    /// semaphores (a tile counts its turns on it), otherwise the tiles' claims (the first block to reach a tile
    /// stores its dQ part, the others add theirs once that is complete).
    dq_flags: CudaSlice<u32>,
    /// The split last walks' dK/dV partials, a slot per piece ([`WalkSplit`]), or None where no walk is split.
    split: Option<CudaSlice<f32>>,
}

/// The main kernel's walks: (key tiles, kv heads, batch). (`check_backward` holds their product below 2^31.)
fn main_grid(shape: AttnShape, tile: AttnBwdTile) -> (u32, u32, u32) {
    let key_tiles = shape.seq_k.div_ceil(tile.tile_kv as usize);
    (key_tiles.min(u32::MAX as usize) as u32, shape.heads_kv as u32, shape.batch as u32)
}

/// A checked backward launch bound to its q, k, v and dO buffers: the tensor maps are encoded and copied to the
/// device once and the workspaces allocated once, so repeated launches pay nothing but the two to four launches. One
/// launch at a time uses the workspaces (a lock; launches are ordered on the plan's stream anyway).
pub struct AttnBwdPlan<T: AttnElement> {
    problem: CheckedProblem,
    tile: AttnBwdTile,
    kernel: Kernel,
    function: CudaFunction,
    preprocess: CudaFunction,
    convert: CudaFunction,
    sum_pieces: CudaFunction,
    tensor_maps: CudaSlice<u64>,
    /// q, k, v and dO: the buffers the tensor maps describe.
    bound: [u64; 4],
    workspace: Mutex<Workspace>,
    /// The deterministic mode's order of the dQ additions; None: any order.
    order: Option<DqOrder>,
    /// The order in which the main kernel's blocks take their key blocks ([`Self::launch_order`]).
    launch_order: BwdLaunchOrder,
    /// The main kernel's grid ([`Self::grid`]).
    grid: (u32, u32, u32),
    /// The plain kernels' split last walks ([`Self::walk_split`]).
    walk_split: WalkSplit,
    _element: std::marker::PhantomData<T>,
}

impl<T: AttnElement> AttnBwdPlan<T> {
    /// A plan whose launches add dQ's parts in whatever order the blocks finish them (the fastest; dQ may differ
    /// in its last bits between launches, dK and dV never do).
    pub fn new(
        gpu: &Gpu,
        shape: AttnShape,
        options: AttnOptions,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        d_o: &impl DevicePtr<T>,
    ) -> Result<Self> {
        Self::build(gpu, shape, options, q, k, v, d_o, None)
    }

    /// As [`new`](Self::new), in the deterministic mode: the blocks add their parts of each dQ tile in a fixed
    /// order, each waiting at a semaphore per (batch, head, query tile) for the ones before it, so dQ comes out bit
    /// for bit the same from every launch. The order is [`DqOrder::Staggered`] where the problem allows it (its
    /// 32-bit arithmetic holds, and every key block of a key/value head is resident at once, up to the GPU's
    /// resident blocks × the block's keys, some 17k keys on an H200 at head dims 64 and 128, 8k at 256; causal at
    /// head dims 64 and 256 needs no residency: [`DqSchedule::launches_descending`]), else [`DqOrder::Ascending`],
    /// whose waits cost more where many blocks share a query tile.
    #[allow(clippy::too_many_arguments)]
    pub fn new_deterministic(
        gpu: &Gpu,
        shape: AttnShape,
        options: AttnOptions,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        d_o: &impl DevicePtr<T>,
    ) -> Result<Self> {
        let problem = check_backward(shape, &options)?;
        let staggered = gpu.function(kernels_for::<T>(shape)?.staggered)?;
        let order = match staggered_refusal(gpu, &staggered, shape, problem.causal)? {
            None => DqOrder::Staggered,
            Some(_) => DqOrder::Ascending,
        };
        Self::build(gpu, shape, options, q, k, v, d_o, Some(order))
    }

    /// As [`new_deterministic`](Self::new_deterministic) in the given order; [`DqOrder::Staggered`] where the
    /// problem does not allow it is refused ([`Error::Unsupported`], saying why).
    #[allow(clippy::too_many_arguments)]
    pub fn new_deterministic_in(
        gpu: &Gpu,
        shape: AttnShape,
        options: AttnOptions,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        d_o: &impl DevicePtr<T>,
        order: DqOrder,
    ) -> Result<Self> {
        Self::build(gpu, shape, options, q, k, v, d_o, Some(order))
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        gpu: &Gpu,
        shape: AttnShape,
        options: AttnOptions,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        d_o: &impl DevicePtr<T>,
        order: Option<DqOrder>,
    ) -> Result<Self> {
        let problem = check_backward(shape, &options)?;
        let kernels = kernels_for::<T>(shape)?;
        let kernel = if order == Some(DqOrder::Staggered) { kernels.staggered } else { kernels.plain };
        let tile = tile_for(shape.head_dim);
        let function = gpu.function(kernel)?;
        if order == Some(DqOrder::Staggered)
            && let Some(why) = staggered_refusal(gpu, &function, shape, problem.causal)?
        {
            return Err(Error::unsupported(OP, format!("the staggered dQ order: {why}")));
        }
        let stream = gpu.stream();
        let [q_len, k_len, v_len, o_len] = problem.extents;
        let (q_address, _q_use) = strided_ptr(OP, "q", q, stream, q_len, 16)?;
        let (k_address, _k_use) = strided_ptr(OP, "k", k, stream, k_len, 16)?;
        let (v_address, _v_use) = strided_ptr(OP, "v", v, stream, v_len, 16)?;
        let (d_o_address, _d_o_use) = strided_ptr(OP, "d_o", d_o, stream, o_len, 16)?;
        let AttnStrides { q: qs, k: ks, v: vs, o: os } = problem.strides;
        // The forward's column blocks (`Strides::tile`'s boxes).
        const { assert!(AttnBwdTile::BOX_COLS == oxtile_abi::AttnTile::BOX_COLS) };
        let maps = [
            qs.tile::<T>(shape, q_address, shape.seq_q, shape.heads_q, tile.tile_q).encode(OP)?,
            ks.tile::<T>(shape, k_address, shape.seq_k, shape.heads_kv, tile.tile_kv).encode(OP)?,
            vs.tile::<T>(shape, v_address, shape.seq_k, shape.heads_kv, tile.tile_kv).encode(OP)?,
            os.tile::<T>(shape, d_o_address, shape.seq_q, shape.heads_q, tile.tile_q).encode(OP)?,
        ];
        let tensor_maps = stream.clone_htod(&tma::as_words(&maps))?;
        function.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            tile.smem_bytes() as i32,
        )?;
        let (key_blocks, heads_kv, batch) = main_grid(shape, tile);
        // The launch order's tail: blocks the GPU holds at once (the occupancy API, the shared-memory limit set).
        let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(
            tile.threads(),
            tile.smem_bytes() as usize,
            None,
        )?;
        let staggered = order == Some(DqOrder::Staggered);
        let resident = per_sm.max(1).saturating_mul(gpu.sm_count());
        let launch_order =
            BwdLaunchOrder::for_launch(problem.causal && !staggered, key_blocks, heads_kv * batch, resident);
        // Persistent blocks, and a split last round where it pays, only where the walks are equally long (full
        // attention), none waits for another (not deterministic) and the consumers split the keys; persistent
        // whole groups in the staggered deterministic order of full attention.
        let walks = key_blocks * heads_kv * batch;
        let q_tiles = (padded_rows(shape) / tile.tile_q as usize) as u32;
        let walk_split = if BwdLaunchOrder::persistent(problem.causal, order.is_some()) {
            WalkSplit::for_launch(walks, q_tiles, shape.group() as u32, resident, tile.split == BwdSplit::Keys)
        } else {
            let launched = launch_order.launched_blocks(problem.causal, order, resident);
            WalkSplit { walks, launched, q_tiles, split_walks: 0, pieces: 1 }
        };
        let grid = (walk_split.launched, 1, 1);
        let rows = padded_rows_total(shape);
        let units = rows / AttnBwdTile::DQ_UNIT_ROWS as usize;
        let workspace = Workspace {
            lse_log2: stream.alloc_zeros::<f32>(rows)?,
            dsum: stream.alloc_zeros::<f32>(rows)?,
            dq_accum: stream.alloc_zeros::<f32>(rows * shape.head_dim)?,
            dq_flags: stream.alloc_zeros::<u32>(units)?,
            split: match (walk_split.split_walks as usize, walk_split.pieces as usize) {
                (0, _) => None,
                (walks, pieces) => {
                    Some(stream.alloc_zeros::<f32>(walks * pieces * tile.tile_kv as usize * shape.head_dim * 2)?)
                }
            },
        };
        Ok(AttnBwdPlan {
            problem,
            tile,
            kernel,
            function,
            preprocess: gpu.function(T::BACKWARD_PREPROCESS_KERNEL)?,
            convert: gpu.function(T::BACKWARD_CONVERT_DQ_KERNEL)?,
            sum_pieces: gpu.function(T::BACKWARD_SUM_PIECES_KERNEL)?,
            tensor_maps,
            bound: [q_address, k_address, v_address, d_o_address],
            workspace: Mutex::new(workspace),
            order,
            launch_order,
            grid,
            walk_split,
            _element: std::marker::PhantomData,
        })
    }

    /// Whether dQ is accumulated in a fixed order ([`new_deterministic`](Self::new_deterministic)).
    pub fn is_deterministic(&self) -> bool {
        self.order.is_some()
    }

    /// The deterministic mode's order of the dQ additions, or None.
    pub fn dq_order(&self) -> Option<DqOrder> {
        self.order
    }

    pub fn problem(&self) -> &CheckedProblem {
        &self.problem
    }

    /// The main kernel the plan launches.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The main kernel's grid: blocks along x, each walking every x-th walk of the launch order, then perhaps a
    /// piece of a split walk ([`Self::walk_split`]): a GPU's worth for full attention (whole groups in the
    /// staggered deterministic order, [`BwdLaunchOrder::launched_blocks`]), else one per walk.
    pub fn grid(&self) -> (u32, u32, u32) {
        self.grid
    }

    /// The order in which the main kernel's blocks take their walks: causal plain kernels' last groups longest walk
    /// first ([`BwdLaunchOrder::for_launch`] over the blocks the GPU holds at once); the `_staggered` kernels
    /// (whose key blocks' order is their schedule's) and full attention in the walks' own order.
    pub fn launch_order(&self) -> BwdLaunchOrder {
        self.launch_order
    }

    /// The plain kernels' walks over the grid: how many of the last are split into pieces across every block
    /// ([`WalkSplit::for_launch`]: full attention outside the deterministic mode, at head dims 64 and 128, where
    /// the last round is short).
    pub fn walk_split(&self) -> WalkSplit {
        self.walk_split
    }

    /// dQ, dK and dV (in the input type, with q's, k's and v's strides) for the q, k, v and dO the plan was made
    /// for, from the forward's output `o` and row log-sum-exp `lse` (natural log, [batch, heads_q, seq_q]).
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        gpu: &Gpu,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        o: &impl DevicePtr<T>,
        lse: &impl DevicePtr<f32>,
        d_o: &impl DevicePtr<T>,
        dq: &mut impl DevicePtrMut<T>,
        dk: &mut impl DevicePtrMut<T>,
        dv: &mut impl DevicePtrMut<T>,
    ) -> Result<()> {
        let stream = gpu.stream();
        let p = &self.problem;
        let shape = p.shape;
        let [q_len, k_len, v_len, o_len] = p.extents;
        let (q_address, _q_use) = strided_ptr(OP, "q", q, stream, q_len, 16)?;
        let (k_address, _k_use) = strided_ptr(OP, "k", k, stream, k_len, 16)?;
        let (v_address, _v_use) = strided_ptr(OP, "v", v, stream, v_len, 16)?;
        let (o_address, _o_use) = strided_ptr(OP, "o", o, stream, o_len, 16)?;
        let (d_o_address, _d_o_use) = strided_ptr(OP, "d_o", d_o, stream, o_len, 16)?;
        if [q_address, k_address, v_address, d_o_address] != self.bound {
            return Err(Error::bad_argument(OP, "q, k, v or d_o is not the buffer this plan's tensor maps describe"));
        }
        let rows = shape.rows();
        let (lse_address, _lse_use) = input_ptr(OP, "lse", lse, stream, rows, 4)?;
        let (dq_address, _dq_use) = strided_ptr_mut(OP, "dq", dq, stream, q_len, 16)?;
        let (dk_address, _dk_use) = strided_ptr_mut(OP, "dk", dk, stream, k_len, 16)?;
        let (dv_address, _dv_use) = strided_ptr_mut(OP, "dv", dv, stream, v_len, 16)?;
        let element = std::mem::size_of::<T>();
        let inputs = [
            ("q", q_address, q_len * element),
            ("k", k_address, k_len * element),
            ("v", v_address, v_len * element),
            ("o", o_address, o_len * element),
            ("lse", lse_address, rows * 4),
            ("d_o", d_o_address, o_len * element),
        ];
        let outputs = [
            ("dq", dq_address, q_len * element),
            ("dk", dk_address, k_len * element),
            ("dv", dv_address, v_len * element),
        ];
        for (n, output) in outputs.iter().enumerate() {
            check_disjoint(OP, *output, &inputs)?;
            check_disjoint(OP, *output, &outputs[n + 1..])?;
        }

        let mut workspace = self.workspace.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Workspace { lse_log2, dsum, dq_accum, dq_flags, split } = &mut *workspace;
        let (lse_log2_address, _lse_log2_use) = lse_log2.device_ptr_mut(stream);
        let (dsum_address, _dsum_use) = dsum.device_ptr_mut(stream);
        let (dq_accum_address, _dq_accum_use) = dq_accum.device_ptr_mut(stream);
        let (flags_address, _flags_use) = dq_flags.device_ptr_mut(stream);
        // The flags are the deterministic mode's semaphores or else the claims.
        let (semaphores_address, claims_address) =
            if self.order.is_some() { (flags_address, 0) } else { (0, flags_address) };
        let (split_accum, _split_use) = match split {
            Some(accum) => {
                let (address, guard) = accum.device_ptr_mut(stream);
                (address, Some(guard))
            }
            None => (0u64, None),
        };
        let padded = padded_rows(shape) as u32;
        let (batch, heads_q, seq_q, head_dim) =
            (shape.batch as u32, shape.heads_q as u32, shape.seq_q as u32, shape.head_dim as u32);
        let s = |strides: Strides| [strides.batch as u64, strides.seq as u64, strides.head as u64];
        let AttnStrides { q: qs, k: ks, v: vs, o: os } = p.strides;

        // 1. D, the log2-unit LSE, the zeroed flags, and zeros for dQ's rows no walk visits (under the mask the
        // tiles before key block 0's first, in every order): head_dim / 8 threads per padded row. Each visited
        // tile's first writer (first turn, or first claim) stores its part, so nothing zeroes the accumulator.
        let zero_rows = staggered_schedule(shape, p.causal).unvisited_rows();
        let [ob, osq, oh] = s(os);
        let [qb, qsq, qh] = s(qs);
        let batch_heads = (shape.batch * shape.heads_q) as u64;
        let mut preprocess = AttnBwdPreprocessParams {
            o: o_address,
            d_o: d_o_address,
            o_batch_stride: ob,
            o_seq_stride: osq,
            o_head_stride: oh,
            d_o_batch_stride: ob,
            d_o_seq_stride: osq,
            d_o_head_stride: oh,
            lse: lse_address,
            lse_log2: lse_log2_address,
            dsum: dsum_address,
            dq_flags: flags_address,
            dq: dq_address,
            dq_batch_stride: qb,
            dq_seq_stride: qsq,
            dq_head_stride: qh,
            batch,
            heads_q,
            seq_q,
            padded_rows: padded,
            zero_rows,
            head_dim,
        };
        let rows = AttnBwdRows { rows: padded, head_dim, batch_heads };
        let mut args = preprocess.kernel_args();
        // SAFETY: the arguments are the kernel's, one per field of `AttnBwdPreprocessParams` (the list its signature
        // is declared from). o and d_o hold every element their (checked, 8-element) strides address from 16-byte
        // aligned bases, and dq (written below zero_rows) every element q's strides address, injectively, 16-byte
        // aligned, overlapping nothing; lse holds one f32 per query row; the workspaces hold the padded rows (the
        // flags one u32 per 64 rows) and belong to this plan alone; the grid is `AttnBwdRows::grid` over the padded
        // rows, whose x index `check_backward` has held to 32 bits.
        unsafe {
            gpu.launch_as(
                ClusterShape::Plain,
                T::BACKWARD_PREPROCESS_KERNEL.name,
                &self.preprocess,
                &plain_launch(rows.grid(), AttnBwdRows::THREADS),
                &mut args,
            )?
        };

        // 2. dK, dV and the dQ accumulator (and dQ itself where the main kernel converts it).
        let (maps, _maps_use) = self.tensor_maps.device_ptr(stream);
        let map_bytes = std::mem::size_of::<CUtensorMap>() as u64;
        let [map_q, map_k, map_v, map_do] = [0, 1, 2, 3].map(|i| maps + i * map_bytes);
        let [kb, ksq, kh] = s(ks);
        let [vb, vsq, vh] = s(vs);
        let mut params = AttnBwdParams {
            tensor_map_q: map_q,
            tensor_map_k: map_k,
            tensor_map_v: map_v,
            tensor_map_do: map_do,
            lse_log2: lse_log2_address,
            dsum: dsum_address,
            dq_accum: dq_accum_address,
            dq_semaphores: semaphores_address,
            dq_claims: claims_address,
            dk: dk_address,
            dv: dv_address,
            dk_batch_stride: kb,
            dk_seq_stride: ksq,
            dk_head_stride: kh,
            dv_batch_stride: vb,
            dv_seq_stride: vsq,
            dv_head_stride: vh,
            dq: dq_address,
            dq_batch_stride: qb,
            dq_seq_stride: qsq,
            dq_head_stride: qh,
            convert_dq: self.converts_in_kernel() as u32,
            seq_q,
            seq_k: shape.seq_k as u32,
            padded_rows: padded,
            heads_q,
            group: shape.group() as u32,
            scale: p.scale,
            scale_log2: p.scale_log2,
            causal: p.causal as u32,
            key_blocks: self.launch_order.key_blocks,
            groups: self.launch_order.groups,
            tail_groups: self.launch_order.tail_groups,
            split_accum,
            split_walks: self.walk_split.split_walks,
            split_pieces: self.walk_split.pieces,
        };
        let launch = ClusterLaunch {
            grid_dim: self.grid(),
            block_dim: (self.tile.threads(), 1, 1),
            cluster_dim: (1, 1, 1),
            shared_mem_bytes: self.tile.smem_bytes(),
            dependent_launch: false,
        };
        // SAFETY: the arguments are the kernel's, one per field of `AttnBwdParams` (the list in oxtile-abi that the
        // kernel's signature is declared from). The tensor maps describe q, k, v and d_o (checked above) with the
        // boxes the kernel's tile expects; the workspaces were written by the preprocessing kernel just before on
        // this stream (the flags passed as exactly one of the semaphores, in the deterministic mode, and the
        // claims); dk and dv, and dq (written where `convert_dq` is 1, a staggered kernel only), hold every element
        // their strides address, injectively, 16-byte aligned, and overlap nothing; the launch order's key blocks and groups are (key tiles, kv heads × batch), below 2^31
        // walks (`check_backward`), the grid along x the plan's `WalkSplit::launched` (at most one block per walk,
        // a multiple of the key blocks in the staggered kernels' persistent launch, or a GPU's worth where the last
        // round is split, `split_accum` then holding a slot per piece), with the tile's threads and shared memory
        // (the limit raised in `build`).
        let mut args = params.kernel_args();
        unsafe { gpu.launch_as(ClusterShape::Plain, self.kernel.name, &self.function, &launch, &mut args)? };

        // 2b. The split walks' dK and dV from their pieces' partials: a thread per 4 columns of a key row.
        let split = self.walk_split;
        if split.split_walks > 0 {
            let mut sum = AttnBwdSumPiecesParams {
                split_accum,
                dk: dk_address,
                dv: dv_address,
                dk_batch_stride: kb,
                dk_seq_stride: ksq,
                dk_head_stride: kh,
                dv_batch_stride: vb,
                dv_seq_stride: vsq,
                dv_head_stride: vh,
                seq_k: shape.seq_k as u32,
                heads_kv: shape.heads_kv as u32,
                key_blocks: self.launch_order.key_blocks,
                groups: self.launch_order.groups,
                tail_groups: self.launch_order.tail_groups,
                whole_walks: split.whole_walks(),
                split_walks: split.split_walks,
                pieces: split.pieces,
                tile_kv: self.tile.tile_kv,
                head_dim,
                scale: p.scale,
            };
            let threads = split.split_walks * self.tile.tile_kv * head_dim / 4;
            let launch = plain_launch((threads.div_ceil(SUM_PIECES_THREADS), 1, 1), SUM_PIECES_THREADS);
            let mut args = sum.kernel_args();
            // SAFETY: the arguments are the kernel's, one per field of `AttnBwdSumPiecesParams`; split_accum holds
            // the partials the main kernel just stored on this stream for this split (its slots sized in `build`),
            // dk and dv as the main kernel's, the order and split the main kernel's; a thread per 4 columns of each
            // split walk's key rows.
            unsafe {
                gpu.launch_as(
                    ClusterShape::Plain,
                    T::BACKWARD_SUM_PIECES_KERNEL.name,
                    &self.sum_pieces,
                    &launch,
                    &mut args,
                )?
            };
        }

        if self.converts_in_kernel() {
            return Ok(());
        }

        // 3. Where the main kernel does not convert: dQ = scale · the accumulator, head_dim / 8 threads per query row.
        let mut convert = AttnBwdConvertParams {
            dq_accum: dq_accum_address,
            dq: dq_address,
            dq_batch_stride: qb,
            dq_seq_stride: qsq,
            dq_head_stride: qh,
            batch,
            heads_q,
            seq_q,
            padded_rows: padded,
            zero_rows,
            head_dim,
            scale: p.scale,
        };
        let rows = AttnBwdRows { rows: seq_q, head_dim, batch_heads };
        let mut args = convert.kernel_args();
        // SAFETY: the arguments are the kernel's, one per field of `AttnBwdConvertParams`; dq_accum holds the
        // padded rows the main kernel accumulated (every visited tile; the rows below zero_rows, which no walk
        // visits, are skipped); dq holds every element q's strides address, injectively, 16-byte aligned, and
        // overlaps nothing; the grid is `AttnBwdRows::grid` over the seq_q rows.
        unsafe {
            gpu.launch_as(
                ClusterShape::Plain,
                T::BACKWARD_CONVERT_DQ_KERNEL.name,
                &self.convert,
                &plain_launch(rows.grid(), AttnBwdRows::THREADS),
                &mut args,
            )
        }
    }

    /// Whether the main kernel converts each dQ tile at its last turn ([`AttnBwdTile::converts_in_kernel`] at the
    /// visits a query tile takes, every key block at full attention), else a conversion kernel runs after it.
    pub fn converts_in_kernel(&self) -> bool {
        // The staggered kernels at full attention, whose tiles' last turns rotate over a group's blocks (in the
        // ascending order, and the staggered order under the mask, one block takes every tile's last turn and
        // would convert them all; outside the deterministic mode no block knows it adds last).
        let rotates = !self.problem.causal && self.order == Some(DqOrder::Staggered);
        rotates && self.tile.converts_in_kernel(self.launch_order.key_blocks)
    }
}

/// Threads per block of the piece-summing kernel.
const SUM_PIECES_THREADS: u32 = 256;

/// The launch of a backward row or piece-summing kernel: `grid_dim` blocks of `threads`, no cluster, no shared memory.
fn plain_launch(grid_dim: (u32, u32, u32), threads: u32) -> ClusterLaunch {
    ClusterLaunch {
        grid_dim,
        block_dim: (threads, 1, 1),
        cluster_dim: (1, 1, 1),
        shared_mem_bytes: 0,
        dependent_launch: false,
    }
}

/// dQ, dK and dV in one call (encodes the tensor maps and allocates the workspaces each time; keep an
/// [`AttnBwdPlan`] to repeat). See [`AttnBwdPlan::launch`].
#[allow(clippy::too_many_arguments)]
pub fn attention_backward<T: AttnElement>(
    gpu: &Gpu,
    shape: AttnShape,
    q: &impl DevicePtr<T>,
    k: &impl DevicePtr<T>,
    v: &impl DevicePtr<T>,
    o: &impl DevicePtr<T>,
    lse: &impl DevicePtr<f32>,
    d_o: &impl DevicePtr<T>,
    dq: &mut impl DevicePtrMut<T>,
    dk: &mut impl DevicePtrMut<T>,
    dv: &mut impl DevicePtrMut<T>,
    options: AttnOptions,
) -> Result<()> {
    AttnBwdPlan::new(gpu, shape, options, q, k, v, d_o)?.launch(gpu, q, k, v, o, lse, d_o, dq, dk, dv)
}

/// Threads per block of the reference kernel: 8 warps, one output row each.
const REFERENCE_THREADS: u32 = 256;

/// dQ, dK and dV (f32, packed: dQ as q, dK and dV as k and v) of the forward whose output `o` and row log-sum-exp
/// `lse` (natural log, [batch, heads_q, seq_q], as [`super::attention::attention`] writes it) were computed from
/// `q`, `k`, `v`, for the upstream gradient `d_o` (as `o`), by the plain GPU reference kernel. Every tensor is
/// packed BSHD (`options.strides` must be `None` or the packed strides); `options.variant` is ignored. Shapes,
/// mask, scale and grouping as the forward's.
#[allow(clippy::too_many_arguments)]
pub fn attention_backward_reference<T: AttnElement>(
    gpu: &Gpu,
    shape: AttnShape,
    q: &impl DevicePtr<T>,
    k: &impl DevicePtr<T>,
    v: &impl DevicePtr<T>,
    o: &impl DevicePtr<T>,
    lse: &impl DevicePtr<f32>,
    d_o: &impl DevicePtr<T>,
    dq: &mut impl DevicePtrMut<f32>,
    dk: &mut impl DevicePtrMut<f32>,
    dv: &mut impl DevicePtrMut<f32>,
    options: AttnOptions,
) -> Result<()> {
    let p = check_problem(REFERENCE_OP, shape, &options)?;
    if p.strides != AttnStrides::packed(shape) {
        return Err(Error::unsupported(REFERENCE_OP, "the backward reference takes packed BSHD tensors only"));
    }
    let kernel = reference_kernel(REFERENCE_OP, T::BACKWARD_REFERENCE_KERNELS, shape.head_dim)?;
    let stream = gpu.stream();
    let rows = shape.rows();
    let (q_len, kv_len) = (rows * shape.head_dim, shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim);
    let element = std::mem::size_of::<T>();
    // The kernel reads each lane's elements as 4-byte words.
    let (q_address, _q_use) = input_ptr(REFERENCE_OP, "q", q, stream, q_len, 4)?;
    let (k_address, _k_use) = input_ptr(REFERENCE_OP, "k", k, stream, kv_len, 4)?;
    let (v_address, _v_use) = input_ptr(REFERENCE_OP, "v", v, stream, kv_len, 4)?;
    let (o_address, _o_use) = input_ptr(REFERENCE_OP, "o", o, stream, q_len, 4)?;
    let (lse_address, _lse_use) = input_ptr(REFERENCE_OP, "lse", lse, stream, rows, 4)?;
    let (d_o_address, _d_o_use) = input_ptr(REFERENCE_OP, "d_o", d_o, stream, q_len, 4)?;
    let (dq_address, _dq_use) = output_ptr(REFERENCE_OP, "dq", dq, stream, q_len, 4)?;
    let (dk_address, _dk_use) = output_ptr(REFERENCE_OP, "dk", dk, stream, kv_len, 4)?;
    let (dv_address, _dv_use) = output_ptr(REFERENCE_OP, "dv", dv, stream, kv_len, 4)?;
    let inputs = [
        ("q", q_address, q_len * element),
        ("k", k_address, kv_len * element),
        ("v", v_address, kv_len * element),
        ("o", o_address, q_len * element),
        ("lse", lse_address, rows * 4),
        ("d_o", d_o_address, q_len * element),
    ];
    let outputs = [("dq", dq_address, q_len * 4), ("dk", dk_address, kv_len * 4), ("dv", dv_address, kv_len * 4)];
    for (n, output) in outputs.iter().enumerate() {
        check_disjoint(REFERENCE_OP, *output, &inputs)?;
        check_disjoint(REFERENCE_OP, *output, &outputs[n + 1..])?;
    }
    // One warp per query row and per key row, counted in 32 bits by the kernel's grid.
    let warps = rows + shape.batch * shape.seq_k * shape.heads_kv;
    let warps_per_block = (REFERENCE_THREADS / 32) as usize;
    let blocks = u32::try_from(warps.div_ceil(warps_per_block)).map_err(|_| {
        Error::bad_argument(
            REFERENCE_OP,
            format!("{warps} rows: too many for one grid of {warps_per_block}-row blocks"),
        )
    })?;

    let function = gpu.function(kernel)?;
    let (batch, seq_q, seq_k, heads_q, group) =
        (shape.batch as u32, shape.seq_q as u32, shape.seq_k as u32, shape.heads_q as u32, shape.group() as u32);
    let causal = p.causal as u32;
    let mut launch = stream.launch_builder(&function);
    launch
        .arg(&q_address)
        .arg(&k_address)
        .arg(&v_address)
        .arg(&o_address)
        .arg(&d_o_address)
        .arg(&lse_address)
        .arg(&dq_address)
        .arg(&dk_address)
        .arg(&dv_address)
        .arg(&batch)
        .arg(&seq_q)
        .arg(&seq_k)
        .arg(&heads_q)
        .arg(&group)
        .arg(&p.scale)
        .arg(&causal);
    let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (REFERENCE_THREADS, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the arguments match the kernel's signature in order and type; every tensor is packed with the
    // lengths the kernel reads or writes, 4-byte aligned, and the outputs overlap nothing.
    unsafe { launch.launch(config) }.map(drop).map_err(|source| Error::Launch { kernel: kernel.name, source })
}

#[cfg(test)]
mod tests {
    use oxtile_abi::{ATTN_BWD_SM90_D128, ATTN_BWD_SM90_D256};

    use super::*;

    fn refused(shape: AttnShape, options: AttnOptions) -> Error {
        check_backward(shape, &options).unwrap_err()
    }

    #[test]
    fn padded_rows_cover_whole_query_tiles() {
        // Head dim 128: 64-row query tiles; head dim 64: 128-row ones.
        assert_eq!(padded_rows(AttnShape::new(1, 1, 1, 1, 1, 128)), 64);
        assert_eq!(padded_rows(AttnShape::new(1, 64, 1, 1, 1, 128)), 64);
        assert_eq!(padded_rows(AttnShape::new(1, 65, 1, 1, 1, 128)), 128);
        assert_eq!(padded_rows(AttnShape::new(1, 1, 1, 1, 1, 64)), 128);
        assert_eq!(padded_rows(AttnShape::new(1, 129, 1, 1, 1, 64)), 256);
        assert_eq!(padded_rows_total(AttnShape::new(2, 77, 5, 3, 1, 128)), 2 * 3 * 128);
        assert_eq!(padded_rows_total(AttnShape::new(2, 77, 5, 3, 1, 64)), 2 * 3 * 128);
    }

    #[test]
    fn row_kernel_grids_cover_every_row_with_whole_warps() {
        // The row kernels' mapping, simulated: thread x of block (bx, by) takes row x / row_threads, columns
        // 8 · (x % row_threads) .. + 8, of pairs by, by + grid.y, ... (gpu/kernels/attention_backward, backward_sm90.rs).
        for (seq_q, head_dim, batch_heads) in [(1, 64, 1), (77, 128, 3), (129, 64, 2), (200, 256, 70_000)] {
            let padded = padded_rows(AttnShape::new(1, seq_q, 1, 1, 1, head_dim)) as u32;
            let head_dim = head_dim as u32;
            let row_threads = AttnBwdRows::row_threads(head_dim);
            for (rows, exact) in [(padded, true), (seq_q as u32, false)] {
                let grid = AttnBwdRows { rows, head_dim, batch_heads }.grid();
                assert!(grid.1 as u64 <= batch_heads && grid.1 <= AttnBwdRows::MAX_GRID_Y && grid.2 == 1);
                let threads = grid.0 * AttnBwdRows::THREADS;
                // The padded rows exactly (so a warp never holds a thread past them), the real ones at least.
                assert!(if exact { threads == rows * row_threads } else { threads >= rows * row_threads });
                let mut covered = vec![0u8; (rows * head_dim) as usize];
                for x in 0..threads {
                    let (row, column) = (x / row_threads, 8 * (x % row_threads));
                    if row < rows {
                        // A row's threads share a warp.
                        assert_eq!(x / 32, (row * row_threads) / 32);
                        for c in column..column + 8 {
                            covered[(row * head_dim + c) as usize] += 1;
                        }
                    }
                }
                assert!(covered.iter().all(|&n| n == 1));
                // The pairs: each once, over the y blocks.
                let visits: u64 =
                    (0..grid.1 as u64).map(|by| (by..batch_heads).step_by(grid.1 as usize).count() as u64).sum();
                assert_eq!(visits, batch_heads);
            }
        }
    }

    #[test]
    fn backward_problems_are_checked_before_any_launch() {
        let shape = AttnShape::new(2, 77, 129, 8, 2, 128);
        check_backward(shape, &AttnOptions::causal()).unwrap();
        // The forward's checks.
        assert!(matches!(
            refused(AttnShape { head_dim: 96, ..shape }, AttnOptions::default()),
            Error::Unsupported { .. }
        ));
        assert!(matches!(
            refused(AttnShape { heads_q: 6, heads_kv: 4, ..shape }, AttnOptions::default()),
            Error::BadArgument { .. }
        ));
        // An input broadcast over heads is fine for the forward, but its gradient would race.
        let mut strides = AttnStrides::packed(shape);
        strides.k.head = 0;
        let broadcast = AttnOptions { strides: Some(strides), ..AttnOptions::default() };
        CheckedProblem::new(shape, &broadcast).unwrap();
        let err = refused(shape, broadcast);
        assert!(matches!(err, Error::BadArgument { .. }) && err.to_string().contains("dk takes k's strides"), "{err}");
        // No grid dimension limits batch or heads: the main kernels' grids are one-dimensional and the row kernels
        // loop over (batch, head) pairs past 65535 (`AttnBwdRows::grid`).
        for shape in [AttnShape::new(70_000, 1, 1, 1, 1, 64), AttnShape::new(1, 1, 1, 70_000, 70_000, 64)] {
            check_backward(shape, &AttnOptions::default()).unwrap();
        }
        // The main kernel's walks in 31 bits.
        let err = refused(AttnShape::new(40_000, 1, 1, 60_000, 60_000, 64), AttnOptions::default());
        assert!(err.to_string().contains("below 2^31"), "{err}");
        // The row kernels' 32-bit thread index: padded seq_q · head_dim / 8.
        let err = refused(AttnShape::new(1, 1 << 27, 1, 1, 1, 256), AttnOptions::default());
        assert!(err.to_string().contains("head_dim / 8"), "{err}");
    }

    #[test]
    fn tiles_fit_the_workspaces_and_every_dq_run_is_added_to() {
        for (tile, head_dim) in [(ATTN_BWD_SM90_D128, 128), (ATTN_BWD_SM90_D64, 64), (ATTN_BWD_SM90_D256, 256)] {
            assert_eq!(tile.head_dim, head_dim);
            assert_eq!(tile_for(head_dim as usize), tile);
            // Whole query tiles are whole units of the dQ accumulator and of the flags.
            assert_eq!(tile.padded_rows(1), tile.tile_q);
            assert!(tile.tile_q.is_multiple_of(AttnBwdTile::DQ_UNIT_ROWS));
            // Every run of a query tile's dQ accumulator is added to exactly once per block: the consumers split
            // the tile's pieces (or, at head dim 256, the columns).
            let runs = tile.tile_q / AttnBwdTile::DQ_UNIT_ROWS * tile.column_blocks();
            let mut additions = vec![0u32; runs as usize];
            for consumer in 0..tile.consumers {
                for piece in 0..tile.dq_pieces() {
                    additions[tile.dq_run(consumer, piece) as usize] += 1;
                }
            }
            assert!(additions.iter().all(|&n| n == 1), "head dim {head_dim}: {additions:?}");
        }
    }
}
