//! Warpgroup matrix multiply-accumulate on the tensor cores (sm_90a).
//! PTX ISA: "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"
//! (#asynchronous-warpgroup-level-matrix-instructions).
//!
//! A warpgroup (4 consecutive warps, the first at a warp index divisible by 4) issues `wgmma.mma_async`;
//! operands come from shared memory through 64-bit matrix descriptors, accumulators stay in registers.
//! The accumulator array must only ever be indexed by constants in fully unrolled code, or it lands in local
//! memory and ptxas serializes the pipeline.

use oxtile_layout::{StaticComposedLayout, Swizzle};

/// Matrix descriptor of a K-major operand tile stored with the 128-byte swizzle, as TMA writes it with
/// `CU_TENSOR_MAP_SWIZZLE_128B`: rows of 64 bf16 (128 bytes), 8-row swizzle atoms of 1024 bytes.
/// PTX ISA: "Matrix Descriptor Format" (#asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor).
///
/// Bits 0–13 start address >> 4; 16–29 leading-dimension byte offset >> 4 (unused for swizzled K-major, 1 by
/// convention); 32–45 stride byte offset >> 4 (1024: from one 8-row atom to the next); 62–63 swizzle mode
/// (1 = 128-byte). `addr` must keep the atom's 1024-byte phase (k-steps inside a row add 32 bytes).
#[inline(always)]
pub const fn desc_k_major_sw128(addr: u32) -> u64 {
    const SWIZZLE_128B: u64 = 1 << 62;
    const STRIDE_BYTES: u64 = 1024;
    ((addr as u64 & 0x3_ffff) >> 4) | (1 << 16) | ((STRIDE_BYTES >> 4) << 32) | SWIZZLE_128B
}

/// Matrix descriptor of an MN-major operand tile with the 128-byte swizzle, as TMA writes a box whose inner
/// dimension is M or N: each 128-byte row holds 64 consecutive M (or N) elements of one k, eight k-rows form a
/// 1024-byte swizzle atom, and the next 64 M/N elements start `mn_block_bytes` further on.
/// PTX ISA: "Major-ness supported by Strides" (#asynchronous-warpgroup-level-majorness-supported-by-strides):
/// for swizzled MN-major layouts the leading byte offset steps between 64-element MN blocks and the stride byte
/// offset between 8-deep k groups (1024 bytes here). A k16 step therefore advances `addr` by 2048 bytes.
#[inline(always)]
pub const fn desc_mn_major_sw128(addr: u32, mn_block_bytes: u32) -> u64 {
    const SWIZZLE_128B: u64 = 1 << 62;
    const K_GROUP_BYTES: u64 = 1024;
    ((addr as u64 & 0x3_ffff) >> 4)
        | (((mn_block_bytes as u64 & 0x3_ffff) >> 4) << 16)
        | ((K_GROUP_BYTES >> 4) << 32)
        | SWIZZLE_128B
}

/// TMA's 128-byte swizzle (`CU_TENSOR_MAP_SWIZZLE_128B`) in the layout algebra: `Sw<3,4,3>` on byte offsets, the
/// 16-byte chunk (bits 4..6) XORed with the row within an 8-row, 1024-byte atom (bits 7..9). The descriptor's
/// swizzle mode 1.
pub const SWIZZLE_128B: Swizzle = Swizzle::new(3, 4, 3);

/// The byte offset of (M/N index `mn`, k index `k`) in `tile` before the swizzle (which moves 16-byte chunks only
/// within a 128-byte row, so strides read here are the layout's own).
const fn unswizzled(tile: &StaticComposedLayout<4>, mn: i64, k: i64) -> i64 {
    tile.layout.crd2idx(&[mn, k])
}

/// Bytes between one k16 slice of `tile` and the next: what [`desc_advance`] adds per k-step of 16 elements.
pub const fn k16_step_bytes(tile: &StaticComposedLayout<4>) -> u32 {
    (unswizzled(tile, 0, 16) - unswizzled(tile, 0, 0)) as u32
}

/// Every field of a matrix descriptor but the start address, derived from the operand tile's shared-memory layout,
/// as CuTe's `make_gmma_desc` derives it: `tile` maps (M or N index, k index) of 16-bit elements to byte offsets,
/// with TMA's 128-byte swizzle. It must be one of the two canonical 128-byte-swizzle layouts wgmma reads, checked
/// here (in a `const`, a layout that is not fails to build):
/// - K-major: k contiguous (2 bytes), at most 64 k (one 128-byte row) per M/N index, the rows 128 bytes apart, so 8
///   of them form a 1024-byte atom: the stride byte offset, between atoms. The leading byte offset is unused
///   (1 by convention).
/// - MN-major: M/N contiguous in 64-index (128-byte) rows, one per k, 128 bytes apart: the stride byte offset
///   steps 8 k (1024 bytes), the leading byte offset from one block of 64 M/N indices to the next (in a tile of one
///   block, where the next would start: the block's k extent × 128 bytes, which wgmma never reads).
///
/// PTX ISA: "Matrix Descriptor Format" (#asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor)
/// and "Major-ness supported by Strides" (#asynchronous-warpgroup-level-majorness-supported-by-strides).
pub const fn sw128_fields(tile: &StaticComposedLayout<4>) -> u64 {
    let (swizzle, sw128) = (tile.swizzle, SWIZZLE_128B);
    let sw128 = swizzle.bits() == sw128.bits() && swizzle.base() == sw128.base() && swizzle.shift() == sw128.shift();
    assert!(sw128 && tile.offset == 0, "wgmma reads this tile only with TMA's 128-byte swizzle");
    assert!(tile.layout.rank() == 2, "an operand tile is (M or N index, k index)");
    let (mn_extent, k_extent) = (tile.layout.mode_size(0), tile.layout.mode_size(1));
    let origin = unswizzled(tile, 0, 0);
    assert!(origin == 0, "the tile starts at its first byte");
    let (leading, stride) = if unswizzled(tile, 0, 1) == 2 {
        assert!(k_extent <= 64 && k_extent % 16 == 0, "a K-major tile holds one 128-byte row of k16 slices");
        assert!(
            unswizzled(tile, 1, 0) == 128 && mn_extent % 8 == 0,
            "K-major rows are 128 bytes apart, in 8-row atoms"
        );
        assert!(mn_extent == 8 || unswizzled(tile, 8, 0) == 1024, "8-row atoms follow each other");
        (16, 1024)
    } else {
        assert!(
            unswizzled(tile, 1, 0) == 2 && unswizzled(tile, 0, 1) == 128,
            "MN-major: M/N contiguous, k rows 128 bytes apart"
        );
        assert!(mn_extent % 64 == 0 && k_extent % 16 == 0, "MN-major: whole 64-index blocks of k16 slices");
        assert!(unswizzled(tile, 0, 8) == 1024, "8 k rows form a 1024-byte atom");
        let leading = if mn_extent > 64 { unswizzled(tile, 64, 0) } else { k_extent * 128 };
        assert!(leading % 1024 == 0 && leading >= k_extent * 128, "64-index blocks are whole atoms, apart");
        (leading, 1024)
    };
    assert!(leading < 1 << 18 && stride < 1 << 18, "the offsets fit the descriptor's 14-bit fields");
    const SWIZZLE_MODE_128B: u64 = 1 << 62;
    (((leading as u64) >> 4) << 16) | (((stride as u64) >> 4) << 32) | SWIZZLE_MODE_128B
}

/// The matrix descriptor of an operand tile at shared-memory address `addr` (1024-byte aligned, or moved within an
/// atom by k-steps) whose other fields are `fields` ([`sw128_fields`] of its layout).
#[inline(always)]
pub const fn desc(addr: u32, fields: u64) -> u64 {
    fields | ((addr as u64 & 0x3_ffff) >> 4)
}

// The derivation agrees with the hand-built descriptors on the canonical tiles: a K-major 64×64 tile, and 64 k of 128
// M/N indices MN-major.
const _: () = {
    let k_major = oxtile_layout::StaticLayout::<4>::new(&[64, 64], &[128, 2]).swizzled(SWIZZLE_128B, 0);
    assert!(desc(0x4400, sw128_fields(&k_major)) == desc_k_major_sw128(0x4400));
    assert!(k16_step_bytes(&k_major) == 32);
    let mn_major = oxtile_layout::StaticLayout::<4>::grouped(&[64, 2, 64], &[2, 8192, 128], &[2, 1]);
    let mn_major = mn_major.swizzled(SWIZZLE_128B, 0);
    assert!(desc(0x8800, sw128_fields(&mn_major)) == desc_mn_major_sw128(0x8800, 8192));
    assert!(k16_step_bytes(&mn_major) == 2048);
};

/// `desc` with its start address moved `bytes` further (a multiple of 16). The start address is the low 14-bit
/// field of the low word (address >> 4) and shared-memory addresses stay below 2^18, so a 32-bit add cannot carry
/// out of the field: one integer add per wgmma instead of rebuilding the descriptor (four dependent instructions
/// on the uniform datapath, each a stall before the wgmma that reads it).
#[inline(always)]
pub const fn desc_advance(desc: u64, bytes: u32) -> u64 {
    (desc & 0xffff_ffff_0000_0000) | (desc as u32).wrapping_add(bytes >> 4) as u64
}

/// `desc` (an MN-major operand, 128-byte swizzle) with its second 64-index M/N block read `block_bytes` after its
/// start instead of where the layout puts it: the leading byte offset ([`sw128_fields`]) replaced. A wgmma with N
/// (or M) between 64 and 128 then reads its indices 64.. from that block, e.g. a block of ones that makes the extra
/// columns of D the row sums of A. `block_bytes`: a positive multiple of 16 below 2^18.
#[inline(always)]
pub const fn desc_with_leading(desc: u64, block_bytes: u32) -> u64 {
    (desc & !(0x3fff << 16)) | (((block_bytes as u64 & 0x3_ffff) >> 4) << 16)
}

/// [`desc_advance`] for a descriptor of [`desc_with_leading`]: the start address moves `bytes` on and the leading
/// byte offset `bytes` back, so the second block stays where it is (a fixed block read beside each k-step of the
/// first). Both fields are in the low word (bits 0–13 and 16–29) and stay in range (the offset must be at least
/// `bytes`), so one 32-bit add moves both.
#[inline(always)]
pub const fn desc_advance_fixed_leading(desc: u64, bytes: u32) -> u64 {
    let delta = (bytes >> 4).wrapping_sub((bytes >> 4) << 16);
    (desc & 0xffff_ffff_0000_0000) | (desc as u32).wrapping_add(delta) as u64
}

// Moving the start address and the leading byte offset together keeps every other field.
const _: () = {
    let d = desc_with_leading(desc_mn_major_sw128(0x8000, 16384), 0x2_c000 - 0x8000);
    let moved = desc_advance_fixed_leading(d, 2048);
    assert!(moved == desc_with_leading(desc_mn_major_sw128(0x8800, 16384), 0x2_c000 - 0x8800));
};

/// `wgmma.fence.sync.aligned`: orders this warpgroup's register accesses before the next `mma_async`.
#[inline(always)]
pub fn fence() {
    unsafe { core::arch::asm!("wgmma.fence.sync.aligned;", options(nostack)) };
}

/// `wgmma.commit_group.sync.aligned`: closes the group of `mma_async` issued since the last commit.
#[inline(always)]
pub fn commit_group() {
    unsafe { core::arch::asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// `wgmma.wait_group.sync.aligned N`: waits until at most `N` committed groups are still running.
///
/// ptxas schedules the wait as early as its basic block allows: math meant to run under the outstanding group
/// must end its block before the wait (a branch between them), or it runs after it. ptxas also takes a register A
/// operand as free once its wgmma issues; where it hands those registers to other values before this wait it
/// inserts a wait for every group of its own. The attention kernel's consumer loop shows both (docs/perf-notes.md,
/// attention v3; tests/static_kernels.rs checks the overlap).
#[inline(always)]
pub fn wait_group<const N: u32>() {
    unsafe { core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack)) };
}

/// Pins the registers of a fragment at this point of the instruction stream: an empty asm that claims to read
/// and write each of them. Put after [`wait_group`] (so no arithmetic on an accumulator is hoisted above the wait
/// while a wgmma may still write it) and before an `mma_async` that reads registers written just before it.
/// Takes any fragment up to 128 values (an array coerces); unrolled by `seq!`, so once inlined every element is
/// addressed by a constant and the fragment stays in registers.
#[inline(always)]
#[allow(clippy::len_zero)] // `seq!`'s copy for I = 0 tests `0 < len()`
pub fn fence_operands(fragment: &mut [f32]) {
    seq_macro::seq!(I in 0..128 {
        if I < fragment.len() {
            unsafe {
                core::arch::asm!("/* {v} */", v = inout(reg32) fragment[I], options(nostack, nomem, preserves_flags))
            };
        }
    });
}

/// Defines `fn $name::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate)`: one `wgmma.mma_async` of the
/// given shape with both operands in shared memory and f32 accumulators; `accumulate == false` overwrites `acc`
/// (D = A·B). An operand is K-major unless its flag is 1 (the instruction's `imm-trans-a` / `imm-trans-b`).
///
/// With `overwrite = $overwrite`, also `fn $overwrite::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b)`: D = A·B with
/// `acc` bound as an output only, so the values it held are dead before the instruction (the accumulate form
/// reads them, and ptxas keeps them in registers up to it even when `accumulate` is false).
macro_rules! mma_ss {
    ($(#[$doc:meta])* $name:ident, overwrite = $overwrite:ident, $shape:literal, $input:literal, [$first:literal $($rest:literal)*]) => {
        mma_ss!($(#[$doc])* $name, $shape, $input, [$first $($rest)*]);

        /// D = A·B, overwriting `acc` (see the macro's note on `overwrite`).
        ///
        /// # Safety
        /// As the accumulating form.
        #[inline(always)]
        pub unsafe fn $overwrite<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
            acc: &mut [f32; 1 + [$($rest),*].len()],
            desc_a: u64,
            desc_b: u64,
        ) {
            unsafe {
                core::arch::asm!(
                    "{{",
                    ".reg .pred accumulate;",
                    "setp.ne.b32 accumulate, {zero}, 0;",
                    concat!(
                        "wgmma.mma_async.sync.aligned.", $shape, ".f32.", $input, ".", $input, " {{",
                        "{", stringify!($first), "}" $(, ",{", stringify!($rest), "}")*,
                        "}}, {desc_a}, {desc_b}, accumulate, 1, 1, {trans_a}, {trans_b};"
                    ),
                    "}}",
                    out(reg32) acc[$first], $(out(reg32) acc[$rest],)*
                    zero = in(reg32) 0u32,
                    desc_a = in(reg64) desc_a,
                    desc_b = in(reg64) desc_b,
                    trans_a = const MN_MAJOR_A,
                    trans_b = const MN_MAJOR_B,
                    options(nostack),
                );
            }
        }
    };
    ($(#[$doc:meta])* $name:ident, $shape:literal, $input:literal, [$first:literal $($rest:literal)*]) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// All 128 threads of the warpgroup call it together after [`fence`]; the descriptors address valid,
        /// complete tiles that stay untouched until the group is waited for.
        #[inline(always)]
        pub unsafe fn $name<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
            acc: &mut [f32; 1 + [$($rest),*].len()],
            desc_a: u64,
            desc_b: u64,
            accumulate: bool,
        ) {
            unsafe {
                core::arch::asm!(
                    "{{",
                    ".reg .pred accumulate;",
                    "setp.ne.b32 accumulate, {accumulate}, 0;",
                    concat!(
                        "wgmma.mma_async.sync.aligned.", $shape, ".f32.", $input, ".", $input, " {{",
                        "{", stringify!($first), "}" $(, ",{", stringify!($rest), "}")*,
                        "}}, {desc_a}, {desc_b}, accumulate, 1, 1, {trans_a}, {trans_b};"
                    ),
                    "}}",
                    inout(reg32) acc[$first], $(inout(reg32) acc[$rest],)*
                    desc_a = in(reg64) desc_a,
                    desc_b = in(reg64) desc_b,
                    accumulate = in(reg32) accumulate as u32,
                    trans_a = const MN_MAJOR_A,
                    trans_b = const MN_MAJOR_B,
                    options(nostack),
                );
            }
        }
    };
}

mma_ss!(
    /// D(64×256, f32) += A(64×16, bf16) · B(16×256, bf16): 128 accumulators per thread.
    mma_m64n256k16_f32_bf16, "m64n256k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]
);
mma_ss!(
    /// D(64×256, f32) += A(64×16, f16) · B(16×256, f16): 128 accumulators per thread.
    mma_m64n256k16_f32_f16, "m64n256k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]
);
mma_ss!(
    /// D(64×192, f32) += A(64×16, bf16) · B(16×192, bf16): 96 accumulators per thread.
    mma_m64n192k16_f32_bf16, "m64n192k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95]
);
mma_ss!(
    /// D(64×192, f32) += A(64×16, f16) · B(16×192, f16): 96 accumulators per thread.
    mma_m64n192k16_f32_f16, "m64n192k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95]
);
mma_ss!(
    /// D(64×128, f32) += A(64×16, bf16) · B(16×128, bf16): 64 accumulators per thread.
    mma_m64n128k16_f32_bf16, overwrite = mma_m64n128k16_f32_bf16_overwrite, "m64n128k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
);
mma_ss!(
    /// D(64×128, f32) += A(64×16, f16) · B(16×128, f16): 64 accumulators per thread.
    mma_m64n128k16_f32_f16, overwrite = mma_m64n128k16_f32_f16_overwrite, "m64n128k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
);
mma_ss!(
    /// D(64×64, f32) += A(64×16, bf16) · B(16×64, bf16): 32 accumulators per thread.
    mma_m64n64k16_f32_bf16, "m64n64k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]
);
mma_ss!(
    /// D(64×64, f32) += A(64×16, f16) · B(16×64, f16): 32 accumulators per thread.
    mma_m64n64k16_f32_f16, "m64n64k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]
);
mma_ss!(
    /// D(64×80, f32) += A(64×16, bf16) · B(16×80, bf16): 40 accumulators per thread (attention's S at head dim 256).
    mma_m64n80k16_f32_bf16, overwrite = mma_m64n80k16_f32_bf16_overwrite, "m64n80k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39]
);
mma_ss!(
    /// D(64×80, f32) += A(64×16, f16) · B(16×80, f16): 40 accumulators per thread.
    mma_m64n80k16_f32_f16, overwrite = mma_m64n80k16_f32_f16_overwrite, "m64n80k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39]
);
mma_ss!(
    /// D(64×32, f32) += A(64×16, bf16) · B(16×32, bf16): 16 accumulators per thread (the attention backward's
    /// scores at head dim 256, a consumer's 64 keys × 32 queries).
    mma_m64n32k16_f32_bf16, "m64n32k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]
);
mma_ss!(
    /// D(64×32, f32) += A(64×16, f16) · B(16×32, f16): 16 accumulators per thread.
    mma_m64n32k16_f32_f16, "m64n32k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]
);

/// Defines `fn $name::<MN_MAJOR_B>(acc, a, desc_b, accumulate)`: one `wgmma.mma_async` with A from registers
/// (four packed 16-bit pairs per thread, the m64k16 A fragment, whose layout is the m64n16 accumulator's, so an
/// f32 accumulator converts to it in place) and B in shared memory (K-major unless `MN_MAJOR_B` is 1).
macro_rules! mma_rs {
    ($(#[$doc:meta])* $name:ident, $shape:literal, $input:literal, [$first:literal $($rest:literal)*]) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// All 128 threads of the warpgroup call it together after [`fence`]; the descriptor addresses a valid,
        /// complete tile, and neither it nor the `a` registers change until the group is waited for.
        #[inline(always)]
        pub unsafe fn $name<const MN_MAJOR_B: u32>(
            acc: &mut [f32; 1 + [$($rest),*].len()],
            a: &[u32; 4],
            desc_b: u64,
            accumulate: bool,
        ) {
            unsafe {
                core::arch::asm!(
                    "{{",
                    ".reg .pred accumulate;",
                    "setp.ne.b32 accumulate, {accumulate}, 0;",
                    concat!(
                        "wgmma.mma_async.sync.aligned.", $shape, ".f32.", $input, ".", $input, " {{",
                        "{", stringify!($first), "}" $(, ",{", stringify!($rest), "}")*,
                        "}}, {{{a0}, {a1}, {a2}, {a3}}}, {desc_b}, accumulate, 1, 1, {trans_b};"
                    ),
                    "}}",
                    inout(reg32) acc[$first], $(inout(reg32) acc[$rest],)*
                    a0 = in(reg32) a[0],
                    a1 = in(reg32) a[1],
                    a2 = in(reg32) a[2],
                    a3 = in(reg32) a[3],
                    desc_b = in(reg64) desc_b,
                    accumulate = in(reg32) accumulate as u32,
                    trans_b = const MN_MAJOR_B,
                    options(nostack),
                );
            }
        }
    };
}

mma_rs!(
    /// D(64×128, f32) += A(64×16, bf16, registers) · B(16×128, bf16): 64 accumulators per thread.
    mma_rs_m64n128k16_f32_bf16, "m64n128k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
);
mma_rs!(
    /// D(64×128, f32) += A(64×16, f16, registers) · B(16×128, f16): 64 accumulators per thread.
    mma_rs_m64n128k16_f32_f16, "m64n128k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
);
mma_rs!(
    /// D(64×64, f32) += A(64×16, bf16, registers) · B(16×64, bf16): 32 accumulators per thread.
    mma_rs_m64n64k16_f32_bf16, "m64n64k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]
);
mma_rs!(
    /// D(64×64, f32) += A(64×16, f16, registers) · B(16×64, f16): 32 accumulators per thread.
    mma_rs_m64n64k16_f32_f16, "m64n64k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]
);
mma_rs!(
    /// D(64×72, f32) += A(64×16, bf16, registers) · B(16×72, bf16): 36 accumulators per thread (attention's O at head
    /// dim 64 with its row sums in columns 64..72).
    mma_rs_m64n72k16_f32_bf16, "m64n72k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35]
);
mma_rs!(
    /// D(64×72, f32) += A(64×16, f16, registers) · B(16×72, f16): 36 accumulators per thread.
    mma_rs_m64n72k16_f32_f16, "m64n72k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35]
);
mma_rs!(
    /// D(64×136, f32) += A(64×16, bf16, registers) · B(16×136, bf16): 68 accumulators per thread (attention's O at
    /// head dim 128 with its row sums in columns 128..136).
    mma_rs_m64n136k16_f32_bf16, "m64n136k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67]
);
mma_rs!(
    /// D(64×136, f32) += A(64×16, f16, registers) · B(16×136, f16): 68 accumulators per thread.
    mma_rs_m64n136k16_f32_f16, "m64n136k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67]
);
mma_rs!(
    /// D(64×256, f32) += A(64×16, bf16, registers) · B(16×256, bf16): 128 accumulators per thread (attention's O at
    /// head dim 256).
    mma_rs_m64n256k16_f32_bf16, "m64n256k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]
);
mma_rs!(
    /// D(64×256, f32) += A(64×16, f16, registers) · B(16×256, f16): 128 accumulators per thread.
    mma_rs_m64n256k16_f32_f16, "m64n256k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]
);
