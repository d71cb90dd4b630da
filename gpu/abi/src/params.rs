//! The parameters of each kernel family, one list per kernel ([`gemm_sm90_params!`], [`attn_sm90_params!`],
//! [`attn_bwd_sm90_params!`], ...) from which both crates take them: oxtile-abi defines the `#[repr(C)]` struct the
//! host fills ([`GemmParams`], [`AttnParams`]; device addresses as `u64`, tensor maps as [`TensorMapBytes`]) and the
//! device crate declares the kernel's parameters, one per field in the same order, with the same types (pointers as
//! pointers, tensor maps as its by-value `TensorMap`). The launch passes the address of each field
//! ([`GemmParams::kernel_args`]).
//!
//! One parameter per field rather than the struct as one by-value parameter: NVPTX knows that a kernel's pointer
//! parameters address global memory (global loads, stores and atomics: `LDG`, `STG`, `REDG`) and that its scalar
//! parameters are defined values; rustc passes a by-value struct as an opaque byte array, whose pointers are generic
//! (`LD`, `ST`, `RED`) and whose fields LLVM cannot prove defined — which cost the stream-K and ping-pong GEMM kernels
//! bounds and division checks that scalar parameters let it remove, with a 296-byte local frame for their panic paths.

/// A `CUtensorMap` as the host passes it by value: 128 opaque bytes, 64-byte aligned as TMA requires.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapBytes(pub [u64; 16]);

/// Calls `$callback! { fields }` with the parameters of every Hopper GEMM kernel (gpu/kernels/gemm/src/sm90.rs), in
/// order, each `name: kind(type)`: `map()` a tensor map by value, `ptr(type)` a buffer, `val(type)` a scalar.
#[macro_export]
macro_rules! gemm_sm90_params {
    ($callback:path $(, $($arg:tt)*)?) => {
        $callback! {
            $($($arg)*)?
            /// A as stored, 128-byte swizzled: dims (K, M) with boxes of 64 × (`tile_m` / blocks sharing A) for a
            /// K-major A, dims (M, K) with boxes of 64 × 64 for an MN-major one.
            tensor_map_a: map(),
            /// B likewise: dims (K, N) and boxes of 64 × (`tile_n` / blocks sharing B), or dims (N, K) with boxes of
            /// 64 × 64.
            tensor_map_b: map(),
            /// A's map again with boxes of (M mod the box height) rows rounded up to 8 where A is K-major and that is
            /// not 0 (the last tile row's), else any map (unused).
            tensor_map_a_tail: map(),
            /// Generic address of D's tensor map in global memory (the TMA-store epilogue), or 0: D is written from
            /// registers.
            tensor_map_d: val(u64),
            /// The symmetric GEMM only (0 for the others): generic address of D's tensor map for the transposed tiles,
            /// unswizzled boxes of 16 columns × one staging row's columns of rows, one matrix deep.
            tensor_map_d_mirror: val(u64),
            /// D: M×N elements of the output type, row-major with leading dimension `ldd`, 8-byte aligned; for the
            /// symmetric GEMM `batch` such matrices, `M·ldd` elements apart.
            d: ptr(*mut u8),
            /// C, read where beta ≠ 0: D's shape, element type and leading dimension (a stack like D's for the
            /// symmetric GEMM); D itself for an in-place blend.
            c: ptr(*const u8),
            m: val(u32),
            n: val(u32),
            k: val(u32),
            /// D's leading dimension, in elements.
            ldd: val(u32),
            alpha: val(f32),
            beta: val(f32),
            /// The symmetric GEMM only (ignored by the others): added to each matrix's diagonal,
            /// D = alpha·A·B + beta·C + diagonal·I.
            diagonal: val(f32),
            /// Stream-K only (null for the others, and for a stream-K launch without a tail): one `tile_m × tile_n`
            /// f32 slot per block of the grid, 16-byte aligned.
            partials: ptr(*mut f32),
            /// Stream-K only: `sk_tiles × cluster × consumers × 4` u32, all 0 between launches.
            flags: ptr(*mut u32),
            /// Stream-K (cluster) tiles of the launch's schedule, the tail split by k-tiles; 0 for the others.
            sk_tiles: val(u32),
            /// Split-K (`StreamK::split_k`): the pieces of every tile, the grid `sk_tiles × pieces` blocks; 0 for the
            /// stream-K ranges and for the other kernels.
            split_pieces: val(u32),
            /// Matrices in the stack (the symmetric GEMM, whose tensor maps are 3-D: (inner, outer, matrix)); 1 for
            /// the others.
            batch: val(u32),
        }
    };
}

/// Calls `$callback! { fields }` with the parameters of every skinny GEMM kernel (gpu/kernels/gemm/src/skinny.rs,
/// [`crate::skinny`]), in order, as [`gemm_sm90_params!`] writes them.
#[macro_export]
macro_rules! gemm_skinny_params {
    ($callback:path $(, $($arg:tt)*)?) => {
        $callback! {
            $($($arg)*)?
            /// A: M×K row-major, 16-byte aligned, K a multiple of 8.
            a: ptr(*const u16),
            /// B: K×N as the kernel's layout says (column-major: N rows of K, K a multiple of 8; row-major: K rows of
            /// N, N a multiple of 8), 16-byte aligned.
            b: ptr(*const u16),
            /// D: M×N elements of the output type, row-major with leading dimension N.
            d: ptr(*mut u8),
            /// C, read where beta ≠ 0: D's shape and type; D itself for an in-place blend.
            c: ptr(*const u8),
            /// `SkinnySplit::slots` slots of `skinny::SLOT_FLOATS` f32, 16-byte aligned; null where groups are not
            /// split.
            partials: ptr(*mut f32),
            /// One u32 per column group, all 0 between launches; null where groups are not split.
            counters: ptr(*mut u32),
            m: val(u32),
            n: val(u32),
            k: val(u32),
            alpha: val(f32),
            beta: val(f32),
            /// `SkinnySplit::splits` and `SkinnySplit::chunks_per_split` of the launch's split.
            splits: val(u32),
            chunks_per_split: val(u32),
        }
    };
}

/// Calls `$callback! { fields }` with the parameters of every Hopper attention-forward kernel
/// (gpu/kernels/attention/src/sm90.rs), in order, as [`gemm_sm90_params!`] writes them.
#[macro_export]
macro_rules! attn_sm90_params {
    ($callback:path $(, $($arg:tt)*)?) => {
        $callback! {
            $($($arg)*)?
            /// Generic addresses of the tensor maps of q, k, v and o in global memory.
            tensor_map_q: val(u64),
            tensor_map_k: val(u64),
            tensor_map_v: val(u64),
            tensor_map_o: val(u64),
            /// The row log-sum-exp: batch·heads_q·seq_q f32.
            lse: ptr(*mut f32),
            seq_q: val(u32),
            seq_k: val(u32),
            heads_q: val(u32),
            batch: val(u32),
            /// Query heads per key/value head.
            group: val(u32),
            /// ⌈seq_q / tile_q⌉: a head's query tiles.
            q_tiles: val(u32),
            /// [`Divisor::packed`](crate::divisor::Divisor::packed) of q_tiles, of heads_q and of group: the work
            /// items' decode divides by them.
            q_tiles_divisor: val(u64),
            heads_q_divisor: val(u64),
            group_divisor: val(u64),
            /// The softmax scale times log2(e).
            scale_log2: val(f32),
            /// 1 for causal masking, else 0.
            causal: val(u32),
            /// One u32, zero at launch: the persistent blocks' work counter.
            work_counter: ptr(*mut u32),
            /// Null, or `ATTN_STATS_LEN` u32 counters.
            stats: ptr(*mut u32),
            /// q and k again, for the rare score-recompute path, with their element strides.
            q: ptr(*const u16),
            k: ptr(*const u16),
            q_batch_stride: val(u64),
            q_seq_stride: val(u64),
            q_head_stride: val(u64),
            k_batch_stride: val(u64),
            k_seq_stride: val(u64),
            k_head_stride: val(u64),
        }
    };
}

/// Calls `$callback! { fields }` with the parameters of every Hopper attention-backward kernel
/// (gpu/kernels/attention_backward/src/backward_sm90.rs), in order, as [`gemm_sm90_params!`] writes them.
#[macro_export]
macro_rules! attn_bwd_sm90_params {
    ($callback:path $(, $($arg:tt)*)?) => {
        $callback! {
            $($($arg)*)?
            /// Generic addresses of the tensor maps of q, k, v and dO in global memory.
            tensor_map_q: val(u64),
            tensor_map_k: val(u64),
            tensor_map_v: val(u64),
            tensor_map_do: val(u64),
            /// The preprocessing kernel's per-row workspaces, [batch, heads_q, padded rows] f32 each
            /// (`AttnBwdTile::padded_rows`): the forward's LSE times log2(e) (+∞ for a row without a visible key and
            /// for padding rows) and dO·O.
            lse_log2: ptr(*const f32),
            dsum: ptr(*const f32),
            /// The dQ accumulator, batch · heads_q · padded rows · head_dim f32 in `AttnBwdTile`'s tiled layout
            /// (one contiguous run per 64-row unit and 64 columns): the kernel stores dS·K (unscaled) to a tile at
            /// its first writer and adds it at every later one, one bulk store or reduce-add per run, and where
            /// `convert_dq` is 1 the last turn converts the tile into dq. Nothing needs to be in it before the
            /// launch.
            dq_accum: ptr(*mut f32),
            /// Exactly one of these two is set, each one u32 per (batch, head, 64-row unit; a query tile uses its
            /// first unit's), zeroed by the preprocessing kernel. The deterministic mode's semaphores count the
            /// consumer warpgroups whose additions to the tile have completed, and the blocks add in a fixed order
            /// (`DqOrder`; where `convert_dq` is 1, the staggered kernels only, the last turn converts the tile);
            /// otherwise the claims count the blocks that reached the tile, the first of them storing its part and
            /// publishing that, the others adding theirs after it.
            dq_semaphores: ptr(*mut u32),
            dq_claims: ptr(*mut u32),
            /// dK and dV, as k and v: [batch, seq_k, heads_kv, head_dim] with these element strides.
            dk: ptr(*mut u16),
            dv: ptr(*mut u16),
            dk_batch_stride: val(u64),
            dk_seq_stride: val(u64),
            dk_head_stride: val(u64),
            dv_batch_stride: val(u64),
            dv_seq_stride: val(u64),
            dv_head_stride: val(u64),
            /// dQ, as q: [batch, seq_q, heads_q, head_dim] with these element strides (multiples of 8, 16-byte
            /// aligned base): scale · the accumulator, written per query tile by the tile's last turn where
            /// `convert_dq` is 1 (the preprocessing kernel writes the rows no walk visits), else by the conversion
            /// kernel after this one ([`attn_bwd_convert_params!`]; `AttnBwdTile::converts_in_kernel`).
            dq: ptr(*mut u16),
            dq_batch_stride: val(u64),
            dq_seq_stride: val(u64),
            dq_head_stride: val(u64),
            /// 1 only for a `_staggered` kernel at full attention where `AttnBwdTile::converts_in_kernel` holds for
            /// its key blocks (the plain kernels never convert).
            convert_dq: val(u32),
            seq_q: val(u32),
            seq_k: val(u32),
            /// Rows of each (batch, head) in the workspaces: seq_q rounded up to whole query tiles.
            padded_rows: val(u32),
            heads_q: val(u32),
            /// Query heads per key/value head.
            group: val(u32),
            /// The softmax scale, and it times log2(e).
            scale: val(f32),
            scale_log2: val(f32),
            /// 1 for causal masking (bottom-right aligned), else 0.
            causal: val(u32),
            /// The plain kernels' launch order ([`crate::bwd_launch::BwdLaunchOrder`]): key blocks per (batch, kv
            /// head) group, the groups (kv heads × batch, the kv head fastest) and the tail groups (0: the grid's
            /// own order). The `_staggered` kernels walk whole groups in `DqSchedule`'s order (their key blocks
            /// from `key_blocks`) and ignore the tail groups.
            key_blocks: val(u32),
            groups: val(u32),
            tail_groups: val(u32),
            /// The plain kernels' split last walks ([`crate::bwd_launch::WalkSplit`]; 0: every walk whole, and
            /// `split_accum` may be null): the last `split_walks` walks of the order, each cut into `split_pieces`
            /// pieces, whose dK and dV partials go to `split_accum` instead of dK and dV: per slot (the piece's
            /// block) dK's then dV's `tile_kv × head_dim` f32, row-major, `split_walks · split_pieces` slots,
            /// 16-byte aligned. [`attn_bwd_sum_pieces_params!`]'s kernel adds them up.
            split_accum: ptr(*mut f32),
            split_walks: val(u32),
            split_pieces: val(u32),
        }
    };
}

/// Calls `$callback! { fields }` with the parameters of the attention backward's preprocessing kernels
/// (gpu/kernels/attention_backward/src/backward_sm90.rs, [`crate::AttnBwdRows`] over the padded rows), in order, as
/// [`gemm_sm90_params!`] writes them.
#[macro_export]
macro_rules! attn_bwd_preprocess_params {
    ($callback:path $(, $($arg:tt)*)?) => {
        $callback! {
            $($($arg)*)?
            /// O and dO: [batch, seq_q, heads_q, head_dim] with these element strides (multiples of 8, 16-byte
            /// aligned bases).
            o: ptr(*const u16),
            d_o: ptr(*const u16),
            o_batch_stride: val(u64),
            o_seq_stride: val(u64),
            o_head_stride: val(u64),
            d_o_batch_stride: val(u64),
            d_o_seq_stride: val(u64),
            d_o_head_stride: val(u64),
            /// The forward's row log-sum-exp: [batch, heads_q, seq_q] f32.
            lse: ptr(*const f32),
            /// Written: the main kernel's per-row workspaces ([`attn_bwd_sm90_params!`]), [batch, heads_q, padded
            /// rows] f32 each, and its flags, one u32 per 64-row unit, semaphores or claims (zeroed, unless null).
            lse_log2: ptr(*mut f32),
            dsum: ptr(*mut f32),
            dq_flags: ptr(*mut u32),
            /// dQ, as q ([`attn_bwd_sm90_params!`]): zeros written to its first `zero_rows` rows of each (batch,
            /// head) (those below seq_q).
            dq: ptr(*mut u16),
            dq_batch_stride: val(u64),
            dq_seq_stride: val(u64),
            dq_head_stride: val(u64),
            batch: val(u32),
            heads_q: val(u32),
            seq_q: val(u32),
            padded_rows: val(u32),
            /// Rows of each (batch, head) whose dQ is zero, a multiple of 64 up to `padded_rows`: the tiles no walk
            /// of the main kernel visits (`DqSchedule::unvisited_rows`; the main kernel writes every other tile).
            zero_rows: val(u32),
            /// 64, 128 or 256.
            head_dim: val(u32),
        }
    };
}

/// Calls `$callback! { fields }` with the parameters of the attention backward's dQ conversion kernels
/// (gpu/kernels/attention_backward/src/backward_sm90.rs, [`crate::AttnBwdRows`] over the seq_q rows), in order, as
/// [`gemm_sm90_params!`] writes them.
#[macro_export]
macro_rules! attn_bwd_convert_params {
    ($callback:path $(, $($arg:tt)*)?) => {
        $callback! {
            $($($arg)*)?
            /// The main kernel's dQ accumulator ([`attn_bwd_sm90_params!`]).
            dq_accum: ptr(*const f32),
            /// dQ: [batch, seq_q, heads_q, head_dim] with these element strides (multiples of 8, 16-byte aligned
            /// base), distinct elements.
            dq: ptr(*mut u16),
            dq_batch_stride: val(u64),
            dq_seq_stride: val(u64),
            dq_head_stride: val(u64),
            batch: val(u32),
            heads_q: val(u32),
            seq_q: val(u32),
            padded_rows: val(u32),
            /// Rows of each (batch, head) no walk visited (the preprocessing kernel's `zero_rows`): skipped.
            zero_rows: val(u32),
            /// 64, 128 or 256.
            head_dim: val(u32),
            /// The softmax scale (dQ = scale · the accumulator).
            scale: val(f32),
        }
    };
}

/// Calls `$callback! { fields }` with the parameters of the attention backward's piece-summing kernels
/// (gpu/kernels/attention_backward/src/backward_sm90.rs, `sum_pieces`: a thread per 4 columns of a split walk's key
/// row), in order, as [`gemm_sm90_params!`] writes them.
#[macro_export]
macro_rules! attn_bwd_sum_pieces_params {
    ($callback:path $(, $($arg:tt)*)?) => {
        $callback! {
            $($($arg)*)?
            /// The main kernel's partials ([`attn_bwd_sm90_params!`]'s `split_accum`).
            split_accum: ptr(*const f32),
            /// dK and dV, as the main kernel's.
            dk: ptr(*mut u16),
            dv: ptr(*mut u16),
            dk_batch_stride: val(u64),
            dk_seq_stride: val(u64),
            dk_head_stride: val(u64),
            dv_batch_stride: val(u64),
            dv_seq_stride: val(u64),
            dv_head_stride: val(u64),
            seq_k: val(u32),
            /// Key/value heads (a group's kv head is `group % heads_kv`, its batch `group / heads_kv`).
            heads_kv: val(u32),
            /// The main kernel's launch order ([`crate::bwd_launch::BwdLaunchOrder`]) and split
            /// ([`crate::bwd_launch::WalkSplit`]): the split walks are the order's from `whole_walks` on.
            key_blocks: val(u32),
            groups: val(u32),
            tail_groups: val(u32),
            whole_walks: val(u32),
            split_walks: val(u32),
            pieces: val(u32),
            /// The main kernel's tile: keys per walk, and the head dim (64 or 128).
            tile_kv: val(u32),
            head_dim: val(u32),
            /// The softmax scale (dK = scale · the sum).
            scale: val(f32),
        }
    };
}

/// Calls `$callback! { fields }` with the parameters of the GEMM's staging copy (gpu/kernels/support/src/staging.rs,
/// `stage_rows_b16`: every operand of a GEMM that TMA cannot read in place, host/src/ops/staging.rs), in order, as
/// [`gemm_sm90_params!`] writes them. Per operand: `rows` packed rows of `cols` 16-bit elements at `src` (any element
/// alignment), copied to rows `pitch` elements apart at `dst` (16-byte aligned, `pitch` a multiple of 8, at least
/// `cols`); `rows` = 0 for an operand read in place.
#[macro_export]
macro_rules! stage_rows_params {
    ($callback:path $(, $($arg:tt)*)?) => {
        $callback! {
            $($($arg)*)?
            a_src: ptr(*const u16),
            a_dst: ptr(*mut u16),
            a_rows: val(u32),
            a_cols: val(u32),
            a_pitch: val(u32),
            b_src: ptr(*const u16),
            b_dst: ptr(*mut u16),
            b_rows: val(u32),
            b_cols: val(u32),
            b_pitch: val(u32),
        }
    };
}

/// Defines a family's params struct from its list: each field as the host holds it, and the kernel arguments.
macro_rules! params_struct {
    ($(#[$doc:meta])* $name:ident; $($(#[$field_doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name {
            $($(#[$field_doc])* pub $field: host_type!($kind($($ty)?)),)*
        }

        impl $name {
            /// Kernel parameters.
            pub const COUNT: usize = [$(stringify!($field)),*].len();
            /// Each parameter's bytes, in order: what the kernel's signature declares (a host test compares them).
            pub const SIZES: [usize; Self::COUNT] = [$(core::mem::size_of::<host_type!($kind($($ty)?))>()),*];

            /// The address of each field, in order: the kernel parameters as `cuLaunchKernel` takes them (the launch
            /// copies each parameter's bytes from its field).
            pub fn kernel_args(&mut self) -> [*mut core::ffi::c_void; Self::COUNT] {
                [$(&raw mut self.$field as *mut core::ffi::c_void),*]
            }
        }
    };
}

/// A parameter's type in the host's struct: device addresses as `u64`.
macro_rules! host_type {
    (map()) => {
        TensorMapBytes
    };
    (ptr($ty:ty)) => {
        u64
    };
    (val($ty:ty)) => {
        $ty
    };
}

gemm_sm90_params! {
    params_struct,
    /// The parameters of a Hopper GEMM kernel: D = alpha·A·B + beta·D over M×N×K ([`gemm_sm90_params!`]).
    GemmParams;
}

gemm_skinny_params! {
    params_struct,
    /// The parameters of a skinny GEMM kernel: D = alpha·A·B + beta·D for M ≤ 16 ([`gemm_skinny_params!`]).
    SkinnyGemmParams;
}

attn_sm90_params! {
    params_struct,
    /// The parameters of a Hopper attention-forward kernel ([`attn_sm90_params!`]).
    AttnParams;
}

attn_bwd_sm90_params! {
    params_struct,
    /// The parameters of a Hopper attention-backward kernel ([`attn_bwd_sm90_params!`]).
    AttnBwdParams;
}

attn_bwd_preprocess_params! {
    params_struct,
    /// The parameters of an attention-backward preprocessing kernel ([`attn_bwd_preprocess_params!`]).
    AttnBwdPreprocessParams;
}

attn_bwd_sum_pieces_params! {
    params_struct,
    /// The parameters of an attention-backward piece-summing kernel ([`attn_bwd_sum_pieces_params!`]).
    AttnBwdSumPiecesParams;
}

attn_bwd_convert_params! {
    params_struct,
    /// The parameters of an attention-backward dQ conversion kernel ([`attn_bwd_convert_params!`]).
    AttnBwdConvertParams;
}

stage_rows_params! {
    params_struct,
    /// The parameters of the GEMM's staging copy ([`stage_rows_params!`]).
    StageRowsParams;
}

// A `CUtensorMap`: 128 bytes, 64-byte aligned.
const _: () = assert!(core::mem::size_of::<TensorMapBytes>() == 128 && core::mem::align_of::<TensorMapBytes>() == 64);
