//! Attention forward on the Hopper kernel (gpu/kernels/attention/src/sm90.rs), and the plain GPU reference kernel
//! (gpu/kernels/attention/src/reference.rs) the tests compare it with on large shapes.
//!
//! Tensors are BSHD like flash-attn: q [batch, seq_q, heads_q, head_dim], k and v [batch, seq_k, heads_kv,
//! head_dim], O like q, with head_dim contiguous and any element strides for batch, seq and head ([`Strides`];
//! packed BSHD by default). heads_q is a multiple of heads_kv (GQA; MQA when heads_kv = 1): query head h reads
//! key/value head h / (heads_q / heads_kv). Causal masking is bottom-right aligned: query row i sees keys
//! j ≤ i + seq_k − seq_q. Outputs: O in the inputs' type and LSE, the natural-log log-sum-exp of each row's
//! scaled scores, f32 contiguous [batch, heads_q, seq_q]. A row that sees no key gets O = 0 and LSE = −∞.
//!
//! Every argument is checked before any launch, each failure a typed [`Error`] that says what is wrong.

use std::sync::Mutex;

use cudarc::driver::sys::{CUfunction_attribute, CUtensorMap};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use half::{bf16, f16};
use oxtile_abi::divisor::Divisor;
use oxtile_abi::{
    ATTN_SM90_TILES, ATTN_STATS_LEN, ATTN_STATS_RECOMPUTED, ATTN_STATS_RESCALED, ATTN_STATS_WARP_TILES, AttnParams,
    AttnTile,
};

use super::{check_align, check_context, check_disjoint, strided_ptr, strided_ptr_mut};
use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};
use crate::runtime::{ClusterLaunch, ClusterShape, Gpu};
use crate::tma::{self, Tile4d};
use crate::types::GemmElement;

const OP: &str = "attention";
const REFERENCE_OP: &str = "attention_reference";

/// Problem size. Query rows are `seq_q` per (batch, query head), keys `seq_k` per (batch, kv head).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttnShape {
    pub batch: usize,
    pub seq_q: usize,
    pub seq_k: usize,
    pub heads_q: usize,
    pub heads_kv: usize,
    pub head_dim: usize,
}

impl AttnShape {
    pub const fn new(
        batch: usize,
        seq_q: usize,
        seq_k: usize,
        heads_q: usize,
        heads_kv: usize,
        head_dim: usize,
    ) -> AttnShape {
        AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim }
    }

    /// Query heads per kv head.
    pub fn group(&self) -> usize {
        self.heads_q / self.heads_kv.max(1)
    }

    /// Query rows over all batches and heads: the length of LSE.
    pub fn rows(&self) -> usize {
        self.batch * self.heads_q * self.seq_q
    }

    /// 4·B·Hq·Sq·Sk·D (two products of 2·Sq·Sk·D per head), halved when causal: the count flash-attn and
    /// torch_reference.py report, whatever the exact share of visible keys.
    pub fn flops(&self, causal: bool) -> f64 {
        let full = 4.0
            * self.batch as f64
            * self.heads_q as f64
            * self.seq_q as f64
            * self.seq_k as f64
            * self.head_dim as f64;
        if causal { full / 2.0 } else { full }
    }
}

impl std::fmt::Display for AttnShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim } = self;
        write!(f, "b{batch} sq{seq_q} sk{seq_k} hq{heads_q} hkv{heads_kv} d{head_dim}")
    }
}

/// Element strides of one BSHD tensor; head_dim is contiguous (stride 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Strides {
    pub batch: usize,
    pub seq: usize,
    pub head: usize,
}

impl Strides {
    /// Packed [batch, seq, heads, head_dim].
    pub const fn packed(seq: usize, heads: usize, head_dim: usize) -> Strides {
        Strides { batch: seq * heads * head_dim, seq: heads * head_dim, head: head_dim }
    }

    /// Element offset of (batch, seq, head, 0).
    pub fn offset(&self, batch: usize, seq: usize, head: usize) -> usize {
        batch * self.batch + seq * self.seq + head * self.head
    }

    /// The TMA map of a BSHD tensor of `T` at `address` with these strides, `seq` positions of `heads` heads of
    /// `shape.head_dim` columns: boxes of 64 columns (one 128-byte swizzled row, the attention kernels' column
    /// block) by `rows` positions of one head.
    pub(crate) fn tile<T: AttnElement>(
        &self,
        shape: AttnShape,
        address: u64,
        seq: usize,
        heads: usize,
        rows: u32,
    ) -> Tile4d {
        Tile4d {
            data_type: T::TENSOR_MAP_TYPE,
            address,
            dims: [shape.head_dim as u64, heads as u64, seq as u64, shape.batch as u64],
            strides: [self.head as u64, self.seq as u64, self.batch as u64],
            boxes: [AttnTile::BOX_COLS, 1, rows, 1],
        }
    }

    /// Elements from the tensor's first to one past its last, for `batch × seq × heads × head_dim`: how long its
    /// buffer must be. `None` on overflow.
    pub fn extent(&self, batch: usize, seq: usize, heads: usize, head_dim: usize) -> Option<usize> {
        let last = |count: usize, stride: usize| count.checked_sub(1)?.checked_mul(stride);
        last(batch, self.batch)?
            .checked_add(last(seq, self.seq)?)?
            .checked_add(last(heads, self.head)?)?
            .checked_add(head_dim)
    }

    /// Whether distinct (batch, seq, head, d) reach distinct elements: sorted by stride, every dimension that
    /// has more than one index steps past everything the smaller ones span. Outputs must be; inputs may repeat.
    pub fn is_injective(&self, batch: usize, seq: usize, heads: usize, head_dim: usize) -> bool {
        let mut dims = [(1, head_dim), (self.batch, batch), (self.seq, seq), (self.head, heads)];
        dims.sort_by_key(|&(stride, count)| (stride, count));
        let mut span = 0usize;
        for (stride, count) in dims.into_iter().filter(|&(_, count)| count > 1) {
            if stride <= span {
                return false;
            }
            span = match (count - 1).checked_mul(stride).and_then(|s| s.checked_add(span)) {
                Some(span) => span,
                None => return false,
            };
        }
        true
    }
}

/// Strides of the four tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttnStrides {
    pub q: Strides,
    pub k: Strides,
    pub v: Strides,
    pub o: Strides,
}

impl AttnStrides {
    /// Every tensor packed BSHD.
    pub fn packed(shape: AttnShape) -> AttnStrides {
        let q = Strides::packed(shape.seq_q, shape.heads_q, shape.head_dim);
        let kv = Strides::packed(shape.seq_k, shape.heads_kv, shape.head_dim);
        AttnStrides { q, k: kv, v: kv, o: q }
    }
}

/// Which Hopper kernel runs a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum AttnVariant {
    /// The kernel as tuned: lazy rescaling, ping-pong, exponentials by MUFU.EX2 (at head dim 64 an eighth of them
    /// by a polynomial on the FMA pipe, FlashAttention-4's split; docs/perf-notes.md has the measurements).
    #[default]
    Auto,
    /// Ablation (bf16, head dim 128): FlashAttention-4's split, a quarter of the exponentials by the polynomial.
    Poly,
    /// Ablation (bf16, head dim 64): every exponential by MUFU.EX2.
    Mufu,
    /// Ablation (bf16, head dim 128): rescale the output whenever a row maximum grows, as FlashAttention-2 does.
    Eager,
    /// Ablation (bf16, head dim 128): the two consumer warpgroups issue their matrix work whenever ready instead
    /// of taking turns.
    NoPingpong,
    /// Ablation (bf16, head dim 128): each key tile's exponentials against the row maximum already applied,
    /// beside (not after) the search for the tile's own maximum; scores recomputed when it grew too far.
    Speculate,
}

impl AttnVariant {
    pub const ALL: [AttnVariant; 6] = [
        AttnVariant::Auto,
        AttnVariant::Poly,
        AttnVariant::Mufu,
        AttnVariant::Eager,
        AttnVariant::NoPingpong,
        AttnVariant::Speculate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AttnVariant::Auto => "auto",
            AttnVariant::Poly => "poly",
            AttnVariant::Mufu => "mufu",
            AttnVariant::Eager => "eager",
            AttnVariant::NoPingpong => "nopingpong",
            AttnVariant::Speculate => "spec",
        }
    }
}

/// Mask, scale, kernel variant and strides. The default: no mask, scale 1/√head_dim, [`AttnVariant::Auto`],
/// packed BSHD.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AttnOptions {
    pub causal: bool,
    /// Softmax scale; `None` is 1/√head_dim.
    pub scale: Option<f32>,
    pub variant: AttnVariant,
    /// `None` is [`AttnStrides::packed`].
    pub strides: Option<AttnStrides>,
}

impl AttnOptions {
    pub fn causal() -> AttnOptions {
        AttnOptions { causal: true, ..AttnOptions::default() }
    }

    /// The softmax scale for `head_dim`.
    pub fn scale_for(&self, head_dim: usize) -> f32 {
        self.scale.unwrap_or(1.0 / (head_dim as f32).sqrt())
    }

    pub fn strides_for(&self, shape: AttnShape) -> AttnStrides {
        self.strides.unwrap_or_else(|| AttnStrides::packed(shape))
    }
}

/// The Hopper backward's main kernels of one element type and head dim.
#[derive(Clone, Copy, Debug)]
pub struct BackwardKernels {
    /// Adds dQ in any order, or (given semaphores) in the ascending order of gpu/abi/src/dq_order.rs.
    pub plain: Kernel,
    /// Deterministic only, in the staggered order.
    pub staggered: Kernel,
}

/// The 16-bit input types the attention kernels take (the GEMM's, with their tensor-map types).
pub trait AttnElement: GemmElement + Copy {
    /// (head_dim, variant, kernel) for every Hopper kernel this type has.
    const ATTN_KERNELS: &'static [(usize, AttnVariant, Kernel)];
    /// (head_dim, kernel) of the plain GPU reference.
    const REFERENCE_KERNELS: &'static [(usize, Kernel)];
    /// (head_dim, kernel) of the plain GPU reference of the backward.
    const BACKWARD_REFERENCE_KERNELS: &'static [(usize, Kernel)];
    /// The Hopper backward's main kernels per head dim, its preprocessing kernel, and the dQ conversion kernel where
    /// the main kernel does not convert.
    const BACKWARD_KERNELS: &'static [(usize, BackwardKernels)];
    const BACKWARD_PREPROCESS_KERNEL: Kernel;
    const BACKWARD_CONVERT_DQ_KERNEL: Kernel;
    const BACKWARD_SUM_PIECES_KERNEL: Kernel;
}

impl AttnElement for bf16 {
    const ATTN_KERNELS: &'static [(usize, AttnVariant, Kernel)] = &[
        (128, AttnVariant::Auto, kernels::ATTN_FWD_BF16_D128_SM90),
        (128, AttnVariant::Poly, kernels::ATTN_FWD_BF16_D128_POLY_SM90),
        (128, AttnVariant::Eager, kernels::ATTN_FWD_BF16_D128_EAGER_SM90),
        (128, AttnVariant::NoPingpong, kernels::ATTN_FWD_BF16_D128_NOPINGPONG_SM90),
        (128, AttnVariant::Speculate, kernels::ATTN_FWD_BF16_D128_SPEC_SM90),
        (64, AttnVariant::Auto, kernels::ATTN_FWD_BF16_D64_SM90),
        (64, AttnVariant::Mufu, kernels::ATTN_FWD_BF16_D64_MUFU_SM90),
        (256, AttnVariant::Auto, kernels::ATTN_FWD_BF16_D256_SM90),
    ];
    const REFERENCE_KERNELS: &'static [(usize, Kernel)] = &[
        (128, kernels::ATTN_REFERENCE_BF16_D128),
        (64, kernels::ATTN_REFERENCE_BF16_D64),
        (256, kernels::ATTN_REFERENCE_BF16_D256),
    ];
    const BACKWARD_REFERENCE_KERNELS: &'static [(usize, Kernel)] = &[
        (128, kernels::ATTN_BWD_REFERENCE_BF16_D128),
        (64, kernels::ATTN_BWD_REFERENCE_BF16_D64),
        (256, kernels::ATTN_BWD_REFERENCE_BF16_D256),
    ];
    const BACKWARD_KERNELS: &'static [(usize, BackwardKernels)] = &[
        (
            128,
            BackwardKernels {
                plain: kernels::ATTN_BWD_BF16_D128_SM90,
                staggered: kernels::ATTN_BWD_BF16_D128_STAGGERED_SM90,
            },
        ),
        (
            64,
            BackwardKernels {
                plain: kernels::ATTN_BWD_BF16_D64_SM90,
                staggered: kernels::ATTN_BWD_BF16_D64_STAGGERED_SM90,
            },
        ),
        (
            256,
            BackwardKernels {
                plain: kernels::ATTN_BWD_BF16_D256_SM90,
                staggered: kernels::ATTN_BWD_BF16_D256_STAGGERED_SM90,
            },
        ),
    ];
    const BACKWARD_PREPROCESS_KERNEL: Kernel = kernels::ATTN_BWD_PREPROCESS_BF16;
    const BACKWARD_CONVERT_DQ_KERNEL: Kernel = kernels::ATTN_BWD_CONVERT_DQ_BF16;
    const BACKWARD_SUM_PIECES_KERNEL: Kernel = kernels::ATTN_BWD_SUM_PIECES_BF16;
}

impl AttnElement for f16 {
    const ATTN_KERNELS: &'static [(usize, AttnVariant, Kernel)] = &[
        (128, AttnVariant::Auto, kernels::ATTN_FWD_F16_D128_SM90),
        (64, AttnVariant::Auto, kernels::ATTN_FWD_F16_D64_SM90),
        (256, AttnVariant::Auto, kernels::ATTN_FWD_F16_D256_SM90),
    ];
    const REFERENCE_KERNELS: &'static [(usize, Kernel)] = &[
        (128, kernels::ATTN_REFERENCE_F16_D128),
        (64, kernels::ATTN_REFERENCE_F16_D64),
        (256, kernels::ATTN_REFERENCE_F16_D256),
    ];
    const BACKWARD_REFERENCE_KERNELS: &'static [(usize, Kernel)] = &[
        (128, kernels::ATTN_BWD_REFERENCE_F16_D128),
        (64, kernels::ATTN_BWD_REFERENCE_F16_D64),
        (256, kernels::ATTN_BWD_REFERENCE_F16_D256),
    ];
    const BACKWARD_KERNELS: &'static [(usize, BackwardKernels)] = &[
        (
            128,
            BackwardKernels {
                plain: kernels::ATTN_BWD_F16_D128_SM90,
                staggered: kernels::ATTN_BWD_F16_D128_STAGGERED_SM90,
            },
        ),
        (
            64,
            BackwardKernels {
                plain: kernels::ATTN_BWD_F16_D64_SM90,
                staggered: kernels::ATTN_BWD_F16_D64_STAGGERED_SM90,
            },
        ),
        (
            256,
            BackwardKernels {
                plain: kernels::ATTN_BWD_F16_D256_SM90,
                staggered: kernels::ATTN_BWD_F16_D256_STAGGERED_SM90,
            },
        ),
    ];
    const BACKWARD_PREPROCESS_KERNEL: Kernel = kernels::ATTN_BWD_PREPROCESS_F16;
    const BACKWARD_CONVERT_DQ_KERNEL: Kernel = kernels::ATTN_BWD_CONVERT_DQ_F16;
    const BACKWARD_SUM_PIECES_KERNEL: Kernel = kernels::ATTN_BWD_SUM_PIECES_F16;
}

/// What [`check_problem`] says of a head dim the kernels do not take.
const HEAD_DIMS: &str = "the kernels take 64, 128 or 256";

/// The tile of the Hopper kernels for `head_dim` (oxtile-abi's `ATTN_SM90_D64`, `_D128`, `_D256`).
pub fn tile_for(head_dim: usize) -> Option<AttnTile> {
    ATTN_SM90_TILES.into_iter().find(|tile| tile.head_dim as usize == head_dim)
}

/// The Hopper kernel for `T`, `head_dim` and `variant`, or why there is none.
pub fn kernel_for<T: AttnElement>(head_dim: usize, variant: AttnVariant) -> Result<Kernel> {
    T::ATTN_KERNELS.iter().find(|(d, v, _)| (*d, *v) == (head_dim, variant)).map(|(_, _, k)| *k).ok_or_else(|| {
        let message = if T::ATTN_KERNELS.iter().any(|(d, _, _)| *d == head_dim) {
            format!(
                "no {} kernel for {} with head dim {head_dim} (the ablations are bf16: mufu at head dim 64; poly, eager, \
                 nopingpong and spec at 128)",
                variant.name(),
                T::NAME
            )
        } else {
            format!("head dim {head_dim}: {HEAD_DIMS}")
        };
        Error::unsupported(OP, message)
    })
}

/// A problem that passed every check that needs no buffer: what a launch needs, derived once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckedProblem {
    pub shape: AttnShape,
    pub strides: AttnStrides,
    pub causal: bool,
    pub scale: f32,
    /// scale · log2(e): the kernels work in base 2.
    pub scale_log2: f32,
    /// Elements each tensor's buffer must hold at least (q, k, v, o).
    pub extents: [usize; 4],
}

impl CheckedProblem {
    /// Checks `shape` and `options` for any kernel of this module (head dim, counts, strides, 32-bit limits,
    /// scale); no GPU needed.
    pub fn new(shape: AttnShape, options: &AttnOptions) -> Result<CheckedProblem> {
        check_problem(OP, shape, options)
    }
}

pub(crate) fn check_problem(op: &'static str, shape: AttnShape, options: &AttnOptions) -> Result<CheckedProblem> {
    let bad = |message: String| Err(Error::bad_argument(op, message));
    let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim } = shape;
    if [batch, seq_q, seq_k, heads_q, heads_kv, head_dim].contains(&0) {
        return bad(format!("every dimension must be at least 1, got {shape}"));
    }
    if tile_for(head_dim).is_none() {
        return Err(Error::unsupported(op, format!("head dim {head_dim}: {HEAD_DIMS}")));
    }
    if !heads_q.is_multiple_of(heads_kv) {
        return bad(format!("heads_q {heads_q} is not a multiple of heads_kv {heads_kv}"));
    }
    // TMA coordinates are signed 32-bit.
    let coordinate = i32::MAX as usize;
    if seq_q > coordinate || seq_k > coordinate {
        return bad(format!("seq_q {seq_q} and seq_k {seq_k} must each be below 2^31 (TMA coordinates)"));
    }
    // LSE, the reference's row index and the persistent kernel's work items (query tiles × heads × batch) are
    // counted in 32 bits; no buffer that large fits a GPU anyway.
    if shape.rows() > u32::MAX as usize {
        return bad(format!("{} query rows: batch × heads_q × seq_q must be below 2^32", shape.rows()));
    }

    let strides = options.strides_for(shape);
    let tensors = [
        ("q", strides.q, seq_q, heads_q),
        ("k", strides.k, seq_k, heads_kv),
        ("v", strides.v, seq_k, heads_kv),
        ("o", strides.o, seq_q, heads_q),
    ];
    let mut extents = [0usize; 4];
    for (slot, (name, s, seq, heads)) in tensors.into_iter().enumerate() {
        // TMA reads q, k, v and writes o: strides of whole 16-byte units, 8 elements of 16 bits.
        for (what, stride) in [("batch", s.batch), ("seq", s.seq), ("head", s.head)] {
            if !stride.is_multiple_of(8) {
                return bad(format!("{name}'s {what} stride {stride} is not a multiple of 8 elements (16 bytes)"));
            }
            if stride as u128 * 2 >= 1 << 40 {
                return bad(format!(
                    "{name}'s {what} stride {stride} reaches 2^40 bytes, past what a tensor map encodes"
                ));
            }
        }
        extents[slot] = s
            .extent(batch, seq, heads, head_dim)
            .ok_or_else(|| Error::bad_argument(op, format!("{name}'s strides overflow the address space")))?;
    }
    // Inputs may repeat elements (a broadcast is well defined); two output elements on one address would race.
    let o = strides.o;
    if !o.is_injective(batch, seq_q, heads_q, head_dim) {
        return bad(format!("o's strides {o:?} map two output elements to one address"));
    }
    let scale = options.scale_for(head_dim);
    let scale_log2 = scale * std::f32::consts::LOG2_E;
    if !scale.is_finite() || !scale_log2.is_finite() {
        return bad(format!("softmax scale {scale} is not finite (or overflows once multiplied by log2 e)"));
    }
    // The kernels keep raw scores and their row maximum, scaling inside the exponential's FFMA: that needs the
    // maximum of scale·s to be scale · max(s), i.e. a positive scale (0 would also make −∞ · 0 = NaN of masked keys).
    if scale <= 0.0 {
        return Err(Error::unsupported(op, format!("softmax scale {scale}: the kernels take positive scales")));
    }
    Ok(CheckedProblem { shape, strides, causal: options.causal, scale, scale_log2, extents })
}

/// Rescaling counters of one launch with statistics: see [`oxtile_abi::ATTN_STATS_RESCALED`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RescaleStats {
    /// (warp, key tile after the first) pairs in which the warp rescaled its output and row sums.
    pub rescaled: u64,
    /// All such pairs.
    pub warp_tiles: u64,
    /// (thread, key tile after the first) pairs whose scores were recomputed: a row maximum grew by more than
    /// [`oxtile_abi::ATTN_SPECULATION_LIMIT_LOG2`] within one tile.
    pub recomputed: u64,
}

impl RescaleStats {
    pub fn from_counters(counters: &[u32]) -> RescaleStats {
        RescaleStats {
            rescaled: counters[ATTN_STATS_RESCALED] as u64,
            warp_tiles: counters[ATTN_STATS_WARP_TILES] as u64,
            recomputed: counters[ATTN_STATS_RECOMPUTED] as u64,
        }
    }

    /// rescaled / warp_tiles; 0 when the launch had a single key tile.
    pub fn fraction(&self) -> f64 {
        if self.warp_tiles == 0 { 0.0 } else { self.rescaled as f64 / self.warp_tiles as f64 }
    }
}

/// A checked attention launch bound to its q, k and v buffers: the tensor maps are encoded and copied to the
/// device once, so repeated launches pay nothing but the launch.
pub struct AttnPlan<T: AttnElement> {
    problem: CheckedProblem,
    tile: AttnTile,
    kernel: Kernel,
    function: CudaFunction,
    tensor_maps: CudaSlice<u64>,
    /// q, k, v and o: the buffers the tensor maps describe.
    bound: [u64; 4],
    /// Persistent blocks: one per SM, or fewer when there are fewer work items.
    blocks: u32,
    /// The kernel's work-item counter, zeroed before every launch (blocks claim items from it).
    work_counter: Mutex<CudaSlice<u32>>,
    _element: std::marker::PhantomData<T>,
}

impl<T: AttnElement> AttnPlan<T> {
    pub fn new(
        gpu: &Gpu,
        shape: AttnShape,
        options: AttnOptions,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        o: &mut impl DevicePtrMut<T>,
    ) -> Result<Self> {
        let problem = check_problem(OP, shape, &options)?;
        let kernel = kernel_for::<T>(shape.head_dim, options.variant)?;
        let tile = tile_for(shape.head_dim).expect("check_problem refuses other head dims");
        let stream = gpu.stream();
        let [q_len, k_len, v_len, o_len] = problem.extents;
        let (q_address, _q_use) = strided_ptr(OP, "q", q, stream, q_len, 16)?;
        let (k_address, _k_use) = strided_ptr(OP, "k", k, stream, k_len, 16)?;
        let (v_address, _v_use) = strided_ptr(OP, "v", v, stream, v_len, 16)?;
        let (o_address, _o_use) = strided_ptr_mut(OP, "o", o, stream, o_len, 16)?;
        let AttnStrides { q: qs, k: ks, v: vs, o: os } = problem.strides;
        let maps = [
            qs.tile::<T>(shape, q_address, shape.seq_q, shape.heads_q, tile.tile_q).encode(OP)?,
            ks.tile::<T>(shape, k_address, shape.seq_k, shape.heads_kv, tile.tile_kv).encode(OP)?,
            vs.tile::<T>(shape, v_address, shape.seq_k, shape.heads_kv, tile.tile_kv).encode(OP)?,
            // Each consumer warpgroup stores its own rows.
            os.tile::<T>(shape, o_address, shape.seq_q, shape.heads_q, tile.consumer_rows()).encode(OP)?,
        ];
        let tensor_maps = stream.clone_htod(&tma::as_words(&maps))?;
        let function = gpu.function(kernel)?;
        function.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            tile.smem_bytes() as i32,
        )?;
        Ok(AttnPlan {
            problem,
            tile,
            kernel,
            function,
            tensor_maps,
            bound: [q_address, k_address, v_address, o_address],
            blocks: Self::persistent_blocks(gpu.sm_count(), &problem, tile),
            work_counter: Mutex::new(stream.alloc_zeros::<u32>(1)?),
            _element: std::marker::PhantomData,
        })
    }

    pub fn problem(&self) -> &CheckedProblem {
        &self.problem
    }

    /// The kernel the plan launches.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Work items (query tiles × heads_q × batch) and the persistent grid over them: one block per SM (the
    /// kernel's shared memory allows no second), fewer when there are fewer items.
    fn persistent_blocks(sm_count: u32, problem: &CheckedProblem, tile: AttnTile) -> u32 {
        let shape = problem.shape;
        let works = shape.seq_q.div_ceil(tile.tile_q as usize) * shape.heads_q * shape.batch;
        works.min(sm_count as usize) as u32
    }

    /// Blocks of the (1-D, persistent) grid.
    pub fn grid(&self) -> (u32, u32, u32) {
        (self.blocks, 1, 1)
    }

    /// O and LSE of the q, k and v the plan was made for.
    pub fn launch(
        &self,
        gpu: &Gpu,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        o: &mut impl DevicePtrMut<T>,
        lse: &mut impl DevicePtrMut<f32>,
    ) -> Result<()> {
        self.enqueue(gpu, q, k, v, o, lse, None)
    }

    /// As [`launch`](Self::launch), and the kernel adds its rescaling counters to `stats`
    /// ([`ATTN_STATS_LEN`] u32: zero them first to read one launch's).
    #[allow(clippy::too_many_arguments)]
    pub fn launch_with_stats(
        &self,
        gpu: &Gpu,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        o: &mut impl DevicePtrMut<T>,
        lse: &mut impl DevicePtrMut<f32>,
        stats: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.enqueue(gpu, q, k, v, o, lse, Some(stats))
    }

    #[allow(clippy::too_many_arguments)]
    fn enqueue(
        &self,
        gpu: &Gpu,
        q: &impl DevicePtr<T>,
        k: &impl DevicePtr<T>,
        v: &impl DevicePtr<T>,
        o: &mut impl DevicePtrMut<T>,
        lse: &mut impl DevicePtrMut<f32>,
        stats: Option<&mut CudaSlice<u32>>,
    ) -> Result<()> {
        let stream = gpu.stream();
        let p = &self.problem;
        let [q_len, k_len, v_len, o_len] = p.extents;
        let (q_address, _q_use) = strided_ptr(OP, "q", q, stream, q_len, 16)?;
        let (k_address, _k_use) = strided_ptr(OP, "k", k, stream, k_len, 16)?;
        let (v_address, _v_use) = strided_ptr(OP, "v", v, stream, v_len, 16)?;
        let (o_address, _o_use) = strided_ptr_mut(OP, "o", o, stream, o_len, 16)?;
        if [q_address, k_address, v_address, o_address] != self.bound {
            return Err(Error::bad_argument(OP, "q, k, v or o is not the buffer this plan's tensor maps describe"));
        }
        let rows = p.shape.rows();
        let lse_len = lse.len();
        if lse_len != rows {
            return Err(Error::bad_argument(OP, format!("lse has {lse_len} elements, expected {rows}")));
        }
        check_context(OP, "lse", lse.stream().context(), stream.context())?;
        let (lse_address, _lse_use) = lse.device_ptr_mut(stream);
        check_align(OP, "lse", lse_address, 4)?;
        let element = std::mem::size_of::<T>();
        let inputs =
            [("q", q_address, q_len * element), ("k", k_address, k_len * element), ("v", v_address, v_len * element)];
        check_disjoint(OP, ("o", o_address, o_len * element), &inputs)?;
        check_disjoint(OP, ("lse", lse_address, rows * 4), &inputs)?;
        check_disjoint(OP, ("lse", lse_address, rows * 4), &[("o", o_address, o_len * element)])?;
        let (stats_address, _stats_use) = match stats {
            Some(stats) => {
                if stats.len() != ATTN_STATS_LEN {
                    return Err(Error::bad_argument(
                        OP,
                        format!("stats has {} counters, expected {ATTN_STATS_LEN}", stats.len()),
                    ));
                }
                check_context(OP, "stats", stats.context(), stream.context())?;
                let (address, guard) = stats.device_ptr_mut(stream);
                (address, Some(guard))
            }
            None => (0u64, None),
        };

        let (maps, _maps_use) = self.tensor_maps.device_ptr(stream);
        let map_bytes = std::mem::size_of::<CUtensorMap>() as u64;
        let [map_q, map_k, map_v, map_o] = [0, 1, 2, 3].map(|i| maps + i * map_bytes);
        let shape = p.shape;
        let mut work_counter = self.work_counter.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        stream.memset_zeros(&mut *work_counter)?;
        let (work_counter_address, _work_counter_use) = work_counter.device_ptr_mut(stream);
        let (q_strides, k_strides) = (p.strides.q, p.strides.k);
        // Every dimension is at least 1 (`check_problem`), so each has its divisor.
        let divisor = |what: &str, value: usize| {
            Divisor::new(value as u32)
                .map(Divisor::packed)
                .ok_or_else(|| Error::bad_argument(OP, format!("{what} is 0: the kernel divides by it")))
        };
        let q_tiles = shape.seq_q.div_ceil(self.tile.tile_q as usize);
        let mut params = AttnParams {
            tensor_map_q: map_q,
            tensor_map_k: map_k,
            tensor_map_v: map_v,
            tensor_map_o: map_o,
            lse: lse_address,
            seq_q: shape.seq_q as u32,
            seq_k: shape.seq_k as u32,
            heads_q: shape.heads_q as u32,
            batch: shape.batch as u32,
            group: shape.group() as u32,
            q_tiles: q_tiles as u32,
            q_tiles_divisor: divisor("seq_q", q_tiles)?,
            heads_q_divisor: divisor("heads_q", shape.heads_q)?,
            group_divisor: divisor("heads_q / heads_kv", shape.group())?,
            scale_log2: p.scale_log2,
            causal: p.causal as u32,
            work_counter: work_counter_address,
            stats: stats_address,
            // q and k again, for the kernel's rare score-recompute path.
            q: q_address,
            k: k_address,
            q_batch_stride: q_strides.batch as u64,
            q_seq_stride: q_strides.seq as u64,
            q_head_stride: q_strides.head as u64,
            k_batch_stride: k_strides.batch as u64,
            k_seq_stride: k_strides.seq as u64,
            k_head_stride: k_strides.head as u64,
        };
        let launch = ClusterLaunch {
            grid_dim: self.grid(),
            block_dim: (self.tile.threads(), 1, 1),
            cluster_dim: (1, 1, 1),
            shared_mem_bytes: self.tile.smem_bytes(),
            dependent_launch: false,
        };
        // SAFETY: the arguments are the kernel's, one per field of `AttnParams` (the list in oxtile-abi that the
        // kernel's signature is declared from). The tensor maps describe q, k, v and o (checked above) with boxes the
        // kernel's tile expects; o holds every element its strides address, injectively, 16-byte aligned, and overlaps
        // no input; lse holds one f32 per query row; q and k (their strides checked above) again for the recompute
        // path; the work counter is one u32 zeroed on this stream just before; stats is null or ATTN_STATS_LEN
        // counters; block and shared memory are the tile's own, the shared-memory limit raised in `new`; single
        // blocks, without programmatic dependent launch (the kernel does not wait for the grid before it).
        let mut args = params.kernel_args();
        unsafe { gpu.launch_as(ClusterShape::Plain, self.kernel.name, &self.function, &launch, &mut args) }
    }
}

/// O and LSE in one call (encodes the tensor maps each time; keep an [`AttnPlan`] to repeat).
#[allow(clippy::too_many_arguments)]
pub fn attention<T: AttnElement>(
    gpu: &Gpu,
    shape: AttnShape,
    q: &impl DevicePtr<T>,
    k: &impl DevicePtr<T>,
    v: &impl DevicePtr<T>,
    o: &mut impl DevicePtrMut<T>,
    lse: &mut impl DevicePtrMut<f32>,
    options: AttnOptions,
) -> Result<()> {
    AttnPlan::new(gpu, shape, options, q, k, v, o)?.launch(gpu, q, k, v, o, lse)
}

/// As [`attention`], and returns the launch's rescaling counters (waits for the launch to finish).
#[allow(clippy::too_many_arguments)]
pub fn attention_with_stats<T: AttnElement>(
    gpu: &Gpu,
    shape: AttnShape,
    q: &impl DevicePtr<T>,
    k: &impl DevicePtr<T>,
    v: &impl DevicePtr<T>,
    o: &mut impl DevicePtrMut<T>,
    lse: &mut impl DevicePtrMut<f32>,
    options: AttnOptions,
) -> Result<RescaleStats> {
    let plan = AttnPlan::new(gpu, shape, options, q, k, v, o)?;
    let mut stats = gpu.stream().alloc_zeros::<u32>(ATTN_STATS_LEN)?;
    plan.launch_with_stats(gpu, q, k, v, o, lse, &mut stats)?;
    Ok(RescaleStats::from_counters(&gpu.stream().clone_dtoh(&stats)?))
}

/// The kernel of `kernels` ((head_dim, kernel) pairs: a reference kernel per head dim) for `head_dim`.
pub(crate) fn reference_kernel(op: &'static str, kernels: &[(usize, Kernel)], head_dim: usize) -> Result<Kernel> {
    kernels
        .iter()
        .find(|(d, _)| *d == head_dim)
        .map(|(_, k)| *k)
        .ok_or_else(|| Error::unsupported(op, format!("head dim {head_dim}")))
}

/// Rows per block of the reference kernel (one per warp).
const REFERENCE_THREADS: u32 = 256;

/// The plain GPU reference: O (f32, packed [batch, seq_q, heads_q, head_dim] whatever `options.strides.o`
/// says), optionally `o_magnitude` (same layout: Σ_j p_j·|v_jd|, what rounding errors in O scale with) and LSE,
/// in f32 arithmetic, one warp per query row. Reads q, k, v as [`attention`] does (same checks, same mask,
/// scale and grouping); `options.variant` is ignored.
#[allow(clippy::too_many_arguments)]
pub fn attention_reference<T: AttnElement>(
    gpu: &Gpu,
    shape: AttnShape,
    q: &impl DevicePtr<T>,
    k: &impl DevicePtr<T>,
    v: &impl DevicePtr<T>,
    o: &mut impl DevicePtrMut<f32>,
    o_magnitude: Option<&mut CudaSlice<f32>>,
    lse: &mut impl DevicePtrMut<f32>,
    options: AttnOptions,
) -> Result<()> {
    let p = check_problem(REFERENCE_OP, shape, &options)?;
    let kernel = reference_kernel(REFERENCE_OP, T::REFERENCE_KERNELS, shape.head_dim)?;
    let stream = gpu.stream();
    let [q_len, k_len, v_len, _] = p.extents;
    let (q_address, _q_use) = strided_ptr(REFERENCE_OP, "q", q, stream, q_len, 16)?;
    let (k_address, _k_use) = strided_ptr(REFERENCE_OP, "k", k, stream, k_len, 16)?;
    let (v_address, _v_use) = strided_ptr(REFERENCE_OP, "v", v, stream, v_len, 16)?;
    let rows = shape.rows();
    let o_len = rows * shape.head_dim;
    let exact = |what: &str, have: usize, want: usize| {
        if have == want {
            Ok(())
        } else {
            Err(Error::bad_argument(REFERENCE_OP, format!("{what} has {have} elements, expected {want}")))
        }
    };
    exact("o", o.len(), o_len)?;
    exact("lse", lse.len(), rows)?;
    let element = std::mem::size_of::<T>();
    let inputs =
        [("q", q_address, q_len * element), ("k", k_address, k_len * element), ("v", v_address, v_len * element)];
    check_context(REFERENCE_OP, "o", o.stream().context(), stream.context())?;
    check_context(REFERENCE_OP, "lse", lse.stream().context(), stream.context())?;
    let (o_address, _o_use) = o.device_ptr_mut(stream);
    let (lse_address, _lse_use) = lse.device_ptr_mut(stream);
    check_align(REFERENCE_OP, "o", o_address, 16)?;
    check_align(REFERENCE_OP, "lse", lse_address, 4)?;
    check_disjoint(REFERENCE_OP, ("o", o_address, o_len * 4), &inputs)?;
    check_disjoint(REFERENCE_OP, ("lse", lse_address, rows * 4), &inputs)?;
    check_disjoint(REFERENCE_OP, ("lse", lse_address, rows * 4), &[("o", o_address, o_len * 4)])?;
    let (magnitude_address, _magnitude_use) = match o_magnitude {
        Some(m) => {
            exact("o_magnitude", m.len(), o_len)?;
            check_context(REFERENCE_OP, "o_magnitude", m.context(), stream.context())?;
            let (address, guard) = m.device_ptr_mut(stream);
            check_align(REFERENCE_OP, "o_magnitude", address, 16)?;
            let outputs = [("o", o_address, o_len * 4), ("lse", lse_address, rows * 4)];
            check_disjoint(REFERENCE_OP, ("o_magnitude", address, o_len * 4), &inputs)?;
            check_disjoint(REFERENCE_OP, ("o_magnitude", address, o_len * 4), &outputs)?;
            (address, Some(guard))
        }
        None => (0u64, None),
    };

    let function = gpu.function(kernel)?;
    let (batch, seq_q, seq_k, heads_q, group) =
        (shape.batch as u32, shape.seq_q as u32, shape.seq_k as u32, shape.heads_q as u32, shape.group() as u32);
    let s = |strides: Strides| [strides.batch as u64, strides.seq as u64, strides.head as u64];
    let [qb, qs, qh] = s(p.strides.q);
    let [kb, ks, kh] = s(p.strides.k);
    let [vb, vs, vh] = s(p.strides.v);
    let causal = p.causal as u32;
    let mut launch = stream.launch_builder(&function);
    launch
        .arg(&q_address)
        .arg(&k_address)
        .arg(&v_address)
        .arg(&o_address)
        .arg(&magnitude_address)
        .arg(&lse_address)
        .arg(&batch)
        .arg(&seq_q)
        .arg(&seq_k)
        .arg(&heads_q)
        .arg(&group)
        .arg(&qb)
        .arg(&qs)
        .arg(&qh)
        .arg(&kb)
        .arg(&ks)
        .arg(&kh)
        .arg(&vb)
        .arg(&vs)
        .arg(&vh)
        .arg(&p.scale_log2)
        .arg(&causal);
    let rows_per_block = (REFERENCE_THREADS / 32) as usize;
    let config = LaunchConfig {
        grid_dim: (rows.div_ceil(rows_per_block) as u32, 1, 1),
        block_dim: (REFERENCE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments match the kernel's signature in order and type; q, k and v hold every element their
    // strides address, 16-byte aligned with 8-element strides; o, o_magnitude (or null) and lse are packed, of the
    // lengths the kernel writes, and overlap nothing else.
    unsafe { launch.launch(config) }.map(drop).map_err(|source| Error::Launch { kernel: kernel.name, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> AttnShape {
        AttnShape::new(2, 77, 129, 8, 2, 128)
    }

    fn refused(shape: AttnShape, options: AttnOptions) -> String {
        CheckedProblem::new(shape, &options).unwrap_err().to_string()
    }

    #[test]
    fn packed_strides_and_extents() {
        let s = shape();
        let strides = AttnStrides::packed(s);
        assert_eq!(strides.q, Strides { batch: 77 * 8 * 128, seq: 8 * 128, head: 128 });
        assert_eq!(strides.k, Strides { batch: 129 * 2 * 128, seq: 2 * 128, head: 128 });
        let checked = CheckedProblem::new(s, &AttnOptions::default()).unwrap();
        assert_eq!(checked.extents, [2 * 77 * 8 * 128, 2 * 129 * 2 * 128, 2 * 129 * 2 * 128, 2 * 77 * 8 * 128]);
        assert!((checked.scale - 1.0 / 128f32.sqrt()).abs() < 1e-7);
        assert!((checked.scale_log2 - checked.scale * std::f32::consts::LOG2_E).abs() < 1e-7);
        assert_eq!(s.group(), 4);
        assert_eq!(s.rows(), 2 * 8 * 77);
        assert_eq!(AttnShape::new(1, 4, 4, 1, 1, 64).flops(false), 4.0 * 16.0 * 64.0);
        assert_eq!(AttnShape::new(1, 4, 4, 1, 1, 64).flops(true), 2.0 * 16.0 * 64.0);
    }

    #[test]
    fn a_slice_of_packed_qkv_is_accepted() {
        // q, k, v as views of one [batch, seq, heads_q + 2 heads_kv, d] tensor: seq stride 12 · 128.
        let s = AttnShape::new(2, 100, 100, 8, 2, 128);
        let row = (8 + 2 + 2) * 128;
        let qkv = Strides { batch: 100 * row, seq: row, head: 128 };
        let strides = AttnStrides { q: qkv, k: qkv, v: qkv, o: Strides::packed(100, 8, 128) };
        let checked =
            CheckedProblem::new(s, &AttnOptions { strides: Some(strides), ..AttnOptions::default() }).unwrap();
        // q reaches the end of its last head in the last row: the whole qkv tensor but the k and v heads after it.
        assert_eq!(checked.extents[0], 2 * 100 * row - 4 * 128);
    }

    #[test]
    fn bad_shapes_are_refused_with_reasons() {
        let o = AttnOptions::default();
        assert!(refused(AttnShape { batch: 0, ..shape() }, o).contains("at least 1"));
        assert!(refused(AttnShape { seq_k: 0, ..shape() }, o).contains("at least 1"));
        let err = CheckedProblem::new(AttnShape { head_dim: 96, ..shape() }, &o).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }) && err.to_string().contains("64, 128 or 256"), "{err}");
        for head_dim in [32, 192, 512] {
            let err = CheckedProblem::new(AttnShape { head_dim, ..shape() }, &o).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }), "{head_dim}: {err}");
        }
        CheckedProblem::new(AttnShape { head_dim: 256, ..shape() }, &o).unwrap();
        assert!(refused(AttnShape { heads_q: 6, heads_kv: 4, ..shape() }, o).contains("not a multiple of heads_kv"));
        assert!(refused(AttnShape { seq_q: 1 << 31, ..shape() }, o).contains("2^31"));
        let rows = AttnShape::new(65_535, 1 << 17, 1, 1024, 1, 64);
        assert!(refused(rows, o).contains("below 2^32"));
    }

    #[test]
    fn bad_strides_and_scales_are_refused() {
        let s = shape();
        let with = |f: &dyn Fn(&mut AttnStrides)| {
            let mut strides = AttnStrides::packed(s);
            f(&mut strides);
            AttnOptions { strides: Some(strides), ..AttnOptions::default() }
        };
        assert!(refused(s, with(&|st| st.q.seq += 4)).contains("q's seq stride 1028 is not a multiple of 8"));
        assert!(refused(s, with(&|st| st.o.head = 64)).contains("two output elements"));
        // Inputs may overlap themselves: reading one element twice is well defined.
        CheckedProblem::new(s, &with(&|st| st.v.head = 64)).unwrap();
        assert!(refused(s, with(&|st| st.o.head = 0)).contains("two output elements"));
        // Heads of o interleaved with sequence positions of the same batch: injective only if they do not collide.
        assert!(refused(s, with(&|st| st.o.seq = 128)).contains("two output elements"));
        // Swapped seq and head strides (BHSD-like) are a legal layout.
        let bhsd = with(&|st| st.o = Strides { batch: 77 * 8 * 128, seq: 128, head: 77 * 128 });
        CheckedProblem::new(s, &bhsd).unwrap();
        let huge = with(&|st| st.o = Strides { batch: 1 << 40, seq: 1 << 30, head: 128 });
        assert!(refused(s, huge).contains("2^40 bytes"));
        let nan = AttnOptions { scale: Some(f32::NAN), ..AttnOptions::default() };
        assert!(refused(s, nan).contains("not finite"));
        let overflowing = AttnOptions { scale: Some(f32::MAX), ..AttnOptions::default() };
        assert!(refused(s, overflowing).contains("not finite"));
        // Zero and negative scales (uniform or reversed attention) are typed errors, not wrong answers.
        for scale in [0.0, -0.5] {
            let err =
                CheckedProblem::new(s, &AttnOptions { scale: Some(scale), ..AttnOptions::default() }).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }) && err.to_string().contains("positive"), "{err}");
        }
    }

    #[test]
    fn injectivity() {
        let packed = Strides::packed(5, 3, 64);
        assert!(packed.is_injective(2, 5, 3, 64));
        assert!(!Strides { head: 32, ..packed }.is_injective(2, 5, 3, 64));
        // A dimension of one index may have any stride.
        assert!(Strides { batch: 0, ..packed }.is_injective(1, 5, 3, 64));
        assert!(!Strides { batch: 0, ..packed }.is_injective(2, 5, 3, 64));
        // Padded rows are fine.
        assert!(Strides { batch: 10_000, seq: 256, head: 72 }.is_injective(2, 5, 3, 64));
    }

    #[test]
    fn kernels_per_type_head_dim_and_variant() {
        assert_eq!(kernel_for::<bf16>(128, AttnVariant::Auto).unwrap(), kernels::ATTN_FWD_BF16_D128_SM90);
        assert_eq!(kernel_for::<bf16>(128, AttnVariant::Eager).unwrap(), kernels::ATTN_FWD_BF16_D128_EAGER_SM90);
        assert_eq!(kernel_for::<bf16>(128, AttnVariant::Poly).unwrap(), kernels::ATTN_FWD_BF16_D128_POLY_SM90);
        assert_eq!(kernel_for::<bf16>(64, AttnVariant::Mufu).unwrap(), kernels::ATTN_FWD_BF16_D64_MUFU_SM90);
        assert_eq!(kernel_for::<f16>(64, AttnVariant::Auto).unwrap(), kernels::ATTN_FWD_F16_D64_SM90);
        let err = kernel_for::<f16>(128, AttnVariant::Eager).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }) && err.to_string().contains("ablations"), "{err}");
        assert!(kernel_for::<bf16>(64, AttnVariant::Eager).is_err());
        assert_eq!(kernel_for::<bf16>(256, AttnVariant::Auto).unwrap(), kernels::ATTN_FWD_BF16_D256_SM90);
        assert_eq!(kernel_for::<f16>(256, AttnVariant::Auto).unwrap(), kernels::ATTN_FWD_F16_D256_SM90);
        assert!(kernel_for::<bf16>(256, AttnVariant::Poly).unwrap_err().to_string().contains("ablations"));
        assert!(kernel_for::<bf16>(192, AttnVariant::Auto).unwrap_err().to_string().contains("64, 128 or 256"));
        // Every head dim a kernel takes has its tile, and every tile its kernels and references in both types.
        for &(d, _, _) in bf16::ATTN_KERNELS.iter().chain(f16::ATTN_KERNELS) {
            assert!(tile_for(d).is_some(), "{d}");
        }
        for tile in ATTN_SM90_TILES {
            let d = tile.head_dim as usize;
            assert!(
                kernel_for::<bf16>(d, AttnVariant::Auto).is_ok() && kernel_for::<f16>(d, AttnVariant::Auto).is_ok()
            );
            assert!(reference_kernel(OP, bf16::REFERENCE_KERNELS, d).is_ok());
            assert!(reference_kernel(OP, f16::REFERENCE_KERNELS, d).is_ok());
        }
        for &(_, _, kernel) in bf16::ATTN_KERNELS.iter().chain(f16::ATTN_KERNELS) {
            assert!(kernels::ALL.contains(&kernel), "{kernel:?} is not registered");
        }
    }

    #[test]
    fn rescale_fraction() {
        let stats = RescaleStats::from_counters(&[3, 12, 5]);
        assert_eq!(stats, RescaleStats { rescaled: 3, warp_tiles: 12, recomputed: 5 });
        assert_eq!(stats.fraction(), 0.25);
        assert_eq!(RescaleStats::default().fraction(), 0.0);
    }
}
