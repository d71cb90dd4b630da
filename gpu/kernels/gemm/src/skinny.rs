//! The skinny GEMM: D = alpha·A·B + beta·D for M ≤ 16 (decode-sized problems), a stream of B past a few rows of A.
//! What it computes and how the work is split between blocks: `oxtile_abi::skinny`.
//!
//! Each warp owns the block's 64 columns over some k-chunks of 32. Per chunk each lane loads 16 bytes of each of its
//! eight columns (B column-major) or rows (B row-major) of B and 16 bytes of A's rows g and g + 8, straight into
//! registers, and issues sixteen `mma.sync` m16n8k16 (two k-steps × eight n8 fragments). K is permuted within a
//! chunk so that every load is 16 bytes wide: in k-step s, the fragment's logical k pairs (2q, 2q+1) and (2q+8, 2q+9)
//! are the chunk's physical k 8q+4s+{0,1} and 8q+4s+{2,3}, for A and B alike (a sum over k does not care which k is
//! which). With B row-major a lane's 16 bytes are eight columns of one k: lane (g, q) loads rows 8q..8q+8 at columns
//! 8g..8g+8, and its fragment j holds column 8g + j, the pairs along k put together by byte permutes.
//!
//! Then the block's warps add up their fragments through shared memory in warp order, and where the column group is
//! split between blocks, each block stores that sum to its workspace slot and the last to count in adds up the slots
//! in split order and writes D: deterministic, and no block waits.

use oxtile_abi::skinny::{CHUNK_K, COLUMNS, MAX_M, SLOT_FLOATS, SMEM_BYTES, SkinnySplit, THREADS, WARPS};
use seq_macro::seq;

use oxtile_device::arch::{atomic, barrier, convert, global, griddep, mma, smem, sreg};
use oxtile_device::opaque::opaque_here;

/// The 16-bit input type: which `mma.sync` multiplies it.
trait Input {
    fn mma(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]);
}

struct Bf16;
struct F16;

impl Input for Bf16 {
    #[inline(always)]
    fn mma(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
        mma::m16n8k16_f32_bf16(d, a, b)
    }
}

impl Input for F16 {
    #[inline(always)]
    fn mma(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
        mma::m16n8k16_f32_f16(d, a, b)
    }
}

/// D's element type: how one element is read (beta·C) and written.
trait Output {
    type Bits: Copy;
    fn to_f32(bits: Self::Bits) -> f32;
    fn from_f32(value: f32) -> Self::Bits;
}

struct OutF32;

impl Output for Bf16 {
    type Bits = u16;
    #[inline(always)]
    fn to_f32(bits: u16) -> f32 {
        convert::bf16_to_f32(bits)
    }
    #[inline(always)]
    fn from_f32(value: f32) -> u16 {
        convert::pack_bf16x2(value, 0.0) as u16
    }
}

impl Output for F16 {
    type Bits = u16;
    #[inline(always)]
    fn to_f32(bits: u16) -> f32 {
        convert::f16_to_f32(bits)
    }
    #[inline(always)]
    fn from_f32(value: f32) -> u16 {
        convert::pack_f16x2(value, 0.0) as u16
    }
}

impl Output for OutF32 {
    type Bits = f32;
    #[inline(always)]
    fn to_f32(bits: f32) -> f32 {
        bits
    }
    #[inline(always)]
    fn from_f32(value: f32) -> f32 {
        value
    }
}

/// The kernel's parameters, as `oxtile_abi::gemm_skinny_params!` documents them.
struct Params {
    a: *const u16,
    b: *const u16,
    d: *mut u8,
    c: *const u8,
    partials: *mut f32,
    counters: *mut u32,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    splits: u32,
    chunks_per_split: u32,
}

/// One lane's loads of one k-chunk: 16 bytes of A's rows g and g + 8, and 16 bytes of each of its eight columns (B
/// column-major) or rows (B row-major) of B; zeros where they lie outside the matrices.
struct Chunk {
    a: [[u32; 4]; 2],
    b: [[u32; 4]; 8],
}

/// The lane's place in its warp's fragments: g = lane / 4, q = lane % 4.
#[derive(Clone, Copy)]
struct Lane {
    g: u32,
    q: u32,
}

impl Chunk {
    /// Loads chunk `chunk` of the column group starting at column `n0`, where `wanted` (else zeros).
    ///
    /// # Safety
    /// `p` describes A and B as the kernel's safety section says.
    #[inline(always)]
    unsafe fn load<const B_K_MAJOR: bool>(p: &Params, chunk: u32, wanted: bool, n0: u32, lane: Lane) -> Chunk {
        let Lane { g, q } = lane;
        // K is a multiple of 8, so a lane's 8 elements of K lie wholly inside or wholly outside.
        let k = chunk * CHUNK_K + 8 * q;
        let k_in = wanted && k < p.k;
        // The strides through a side-effecting `mov`: otherwise LLVM hoists each of the eight column (or row)
        // offsets out of the chunk loop and holds them, 64 bits each, across it (ptxas then spills at the two-block
        // register cap); recomputed here they are one IMAD each.
        let (k_len, n_len) = (opaque_here(p.k) as usize, opaque_here(p.n) as usize);
        let a_row = |row: u32| {
            if row < p.m && k_in {
                unsafe { global::load_u32x4_nc(p.a.add(row as usize * k_len + k as usize)) }
            } else {
                [0; 4]
            }
        };
        let a = [a_row(g), a_row(g + 8)];
        let mut b = [[0u32; 4]; 8];
        seq!(J in 0..8 {
            if B_K_MAJOR {
                // Column n0 + 8J + g, k .. k + 8.
                let column = n0 + 8 * J + g;
                if column < p.n && k_in {
                    b[J] = unsafe { global::load_u32x4_stream(p.b.add(column as usize * k_len + k as usize)) };
                }
            } else {
                // Row k + J, columns n0 + 8g .. + 8 (N is a multiple of 8: wholly inside or outside).
                let column = n0 + 8 * g;
                if column < p.n && k_in {
                    b[J] = unsafe { global::load_u32x4_stream(p.b.add((k + J) as usize * n_len + column as usize)) };
                }
            }
        });
        Chunk { a, b }
    }

    /// Adds the chunk's products to the warp's eight m16n8 fragments (`acc[j]`: columns 8j.. of the group for B
    /// column-major, column 8g' + j held by lane group g' for B row-major).
    #[inline(always)]
    fn multiply<I: Input, const B_K_MAJOR: bool>(&self, acc: &mut [[f32; 4]; 8]) {
        let (a, b) = (&self.a, &self.b);
        seq!(S in 0..2 {
            // Physical k 8q+4S+{0,1} and 8q+4S+{2,3}: words 2S and 2S + 1 of the lane's 16 bytes.
            let a_fragment = [a[0][2 * S], a[1][2 * S], a[0][2 * S + 1], a[1][2 * S + 1]];
            seq!(J in 0..8 {
                let b_fragment = if B_K_MAJOR {
                    [b[J][2 * S], b[J][2 * S + 1]]
                } else {
                    // Column j of rows 4S .. 4S + 4 of the lane's eight: element j of each, paired along k.
                    let word = J / 2;
                    let (r0, r1, r2, r3) = (b[4 * S][word], b[4 * S + 1][word], b[4 * S + 2][word], b[4 * S + 3][word]);
                    if J % 2 == 0 {
                        [(r0 & 0xffff) | (r1 << 16), (r2 & 0xffff) | (r3 << 16)]
                    } else {
                        [(r0 >> 16) | (r1 & 0xffff_0000), (r2 >> 16) | (r3 & 0xffff_0000)]
                    }
                };
                I::mma(&mut acc[J], a_fragment, b_fragment);
            });
        });
    }
}

/// Where accumulator register `r` (fragment r / 4, value r % 4) of lane (g, q) lies in the group's 16 × 64 block:
/// (row, column).
#[inline(always)]
const fn fragment_position<const B_K_MAJOR: bool>(r: u32, g: u32, q: u32) -> (u32, u32) {
    let (j, value) = (r / 4, r % 4);
    let row = g + 8 * (value / 2);
    let column_in_fragment = 2 * q + value % 2;
    let column = if B_K_MAJOR { 8 * j + column_in_fragment } else { 8 * column_in_fragment + j };
    (row, column)
}

/// The skinny GEMM's block (see the module comment).
///
/// # Safety
/// As the exported kernels' safety sections say.
#[inline(always)]
unsafe fn skinny<I: Input, O: Output, const B_K_MAJOR: bool>(p: Params) {
    let thread = sreg::thread_idx_x();
    let (warp, lane) = (thread / 32, thread % 32);
    let fragment_lane = Lane { g: lane / 4, q: lane % 4 };
    // At least 1 (the host's split always is): no division by zero to guard.
    let splits = p.splits.max(1);
    let split = SkinnySplit { groups: p.n.div_ceil(COLUMNS), splits, chunks_per_split: p.chunks_per_split };
    let chunks = p.k.div_ceil(CHUNK_K);
    let block = sreg::block_idx_x();
    let (group, first, end) = split.block(block, chunks);
    let n0 = group * COLUMNS;

    // Launched as a programmatic dependent: A and B may be the kernel ahead's outputs.
    griddep::wait();
    let mut acc = [[0f32; 4]; 8];
    // Two adjacent chunks in flight per warp (128 bytes of each column of a column-major B). The bounds depend on the
    // warp only, so every `mma.sync` runs on a whole warp.
    let mut chunk = first + 2 * warp;
    while chunk < end {
        let next = chunk + 1;
        let this_chunk = unsafe { Chunk::load::<B_K_MAJOR>(&p, chunk, true, n0, fragment_lane) };
        // Predicated loads rather than a branch around them: one straight path holds fewer registers.
        let next_chunk = unsafe { Chunk::load::<B_K_MAJOR>(&p, next, next < end, n0, fragment_lane) };
        this_chunk.multiply::<I, B_K_MAJOR>(&mut acc);
        next_chunk.multiply::<I, B_K_MAJOR>(&mut acc);
        chunk += 2 * WARPS;
    }
    griddep::launch_dependents();

    // The block's sum over its warps: each warp's registers to shared memory, register-major and lane-minor, then
    // each thread adds up 4 consecutive positions over the warps, in warp order.
    let base = smem::dynamic_smem_base();
    seq!(R in 0..32 {
        let at = base + ((warp * 32 + R) * 32 + lane) * 4;
        unsafe { smem::store_u32(at, acc[R / 4][R % 4].to_bits()) };
    });
    barrier::sync_threads();
    let position = 4 * thread;
    let mut sum = [0f32; 4];
    for w in 0..WARPS {
        let (lo, hi) = unsafe { smem::load_f32x2(base + (w * SLOT_FLOATS + position) * 4) };
        let (lo2, hi2) = unsafe { smem::load_f32x2(base + (w * SLOT_FLOATS + position + 2) * 4) };
        sum = [sum[0] + lo, sum[1] + hi, sum[2] + lo2, sum[3] + hi2];
    }
    // Positions 4t .. 4t + 4: register r = t / 8 of lanes 4(t % 8) .. + 4, i.e. g = t % 8 and q = 0..4: one row.
    let (r, g) = (thread / 8, thread % 8);
    let row = fragment_position::<B_K_MAJOR>(r, g, 0).0;
    let live = row < p.m;

    if splits > 1 {
        let slot = |block: u32| unsafe { p.partials.add(block as usize * SLOT_FLOATS as usize + position as usize) };
        if live {
            unsafe { global::store_f32x4(slot(block), sum) };
        }
        // Every thread's slot stores happen before thread 0's release (the barrier orders them), and the block that
        // counts last reads the slots after its acquire (the barrier again).
        barrier::sync_threads();
        // The group from its first column, which the epilogue keeps anyway (hidden from LLVM, which would fold the
        // division back into the group): holding the group across the loop as well cost the row-major kernels a
        // spill at the two-block register cap.
        let counter = unsafe { p.counters.add((opaque_here(n0) / COLUMNS) as usize) };
        let last = thread == 0 && unsafe { atomic::atom_acq_rel_gpu_add(counter, 1) } == splits - 1;
        if !barrier::named_any::<THREADS>(1, last) {
            return;
        }
        if thread == 0 {
            // Every block of the group has counted: none touches the counter again in this launch.
            unsafe { atomic::store_relaxed_gpu(counter, 0) };
        }
        if !live {
            return;
        }
        // All slots of the group in flight at once (at most MAX_SPLITS), added in split order.
        let first_block = block - block % splits;
        let mut slots = [[0f32; 4]; oxtile_abi::skinny::MAX_SPLITS as usize];
        seq!(S in 0..16 {
            if S < splits {
                slots[S] = unsafe { global::load_f32x4_cg(slot(first_block + S)) };
            }
        });
        sum = [0.0; 4];
        seq!(S in 0..16 {
            if S < splits {
                sum = [sum[0] + slots[S][0], sum[1] + slots[S][1], sum[2] + slots[S][2], sum[3] + slots[S][3]];
            }
        });
    }
    if !live {
        return;
    }
    let d = p.d as *mut O::Bits;
    let c = p.c as *const O::Bits;
    seq!(Q in 0..4 {
        let column = n0 + fragment_position::<B_K_MAJOR>(r, g, Q).1;
        if column < p.n {
            let at = row as usize * p.n as usize + column as usize;
            let mut value = p.alpha * sum[Q];
            if p.beta != 0.0 {
                value += p.beta * O::to_f32(unsafe { *c.add(at) });
            }
            unsafe { *d.add(at) = O::from_f32(value) };
        }
    });
}

// The block's warps fill the shared-memory sum and the slot of 16 rows × 64 columns exactly.
const _: () =
    assert!(SMEM_BYTES == WARPS * 32 * 32 * 4 && SLOT_FLOATS == MAX_M * COLUMNS && THREADS * 4 == SLOT_FLOATS);
const _: () = assert!(oxtile_abi::skinny::MAX_SPLITS == 16);

/// The input type's marker.
macro_rules! skinny_input {
    (bf16) => {
        Bf16
    };
    (f16) => {
        F16
    };
}

/// The output type's marker.
macro_rules! skinny_output {
    (bf16) => {
        Bf16
    };
    (f16) => {
        F16
    };
    (f32) => {
        OutF32
    };
}

/// Whether B is column-major (K-major) in a layout.
macro_rules! skinny_b_k_major {
    (tn) => {
        true
    };
    (tt) => {
        false
    };
}

/// Defines every kernel of `oxtile_abi::for_each_gemm_skinny_kernel!` that belongs in this crate's module
/// (`oxtile_abi::gemm_sm90_module!`: all of them are in `gemm`'s).
macro_rules! skinny_kernels {
    ($($input:ident -> $output:ident, $layout:ident;)*) => {
        $(oxtile_abi::gemm_sm90_module! { $layout, in_this_module!(
            const _: () = {
                oxtile_abi::gemm_skinny_params! {
                    skinny_kernel_fn,
                    (oxtile_abi::gemm_sm90_kernel_name!($input -> $output, $layout, "skinny"), $input, $output, $layout)
                }
                oxtile_device::launch_bounds!(
                    name = oxtile_abi::gemm_sm90_kernel_name!($input -> $output, $layout, "skinny"),
                    max_threads = 256,
                    min_blocks = 2
                );
                assert!(THREADS == 256);
            };
        ) })*
    };
}

/// [`skinny_kernels!`]'s function: one parameter per field of the list, in its order.
macro_rules! skinny_kernel_fn {
    (($name:expr, $input:ident, $output:ident, $layout:ident) $($(#[$doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        /// The skinny GEMM for this input, output and layout (see the module comment).
        ///
        /// # Safety
        /// The parameters are as `oxtile_abi::gemm_skinny_params!` documents them: M ≤ 16; A, B, D (and C where
        /// beta ≠ 0) hold their M×K, K×N and M×N elements, D shares no byte with A or B; `splits` and
        /// `chunks_per_split` are a `SkinnySplit` of N and K, whose grid the launch has, with 256 threads and
        /// `skinny::SMEM_BYTES` of dynamic shared memory; where `splits` > 1, the workspace has a slot per block and
        /// a counter per column group, the counters 0, and no other launch uses it at the same time.
        #[unsafe(export_name = $name)]
        unsafe extern "ptx-kernel" fn kernel($($field: device_param!($kind($($ty)?)),)*) {
            let params = Params { $($field,)* };
            unsafe { skinny::<skinny_input!($input), skinny_output!($output), { skinny_b_k_major!($layout) }>(params) }
        }
    };
}

oxtile_abi::for_each_gemm_skinny_kernel! { skinny_kernels }
