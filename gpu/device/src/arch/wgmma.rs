//! Warpgroup matrix multiply-accumulate on the tensor cores (sm_90a).
//! PTX ISA: "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"
//! (#asynchronous-warpgroup-level-matrix-instructions).
//!
//! A warpgroup (4 consecutive warps, the first at a warp index divisible by 4) issues `wgmma.mma_async`;
//! operands come from shared memory through 64-bit matrix descriptors, accumulators stay in registers.
//! The accumulator array must only ever be indexed by constants in fully unrolled code, or it lands in local
//! memory and ptxas serializes the pipeline.

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

/// `desc` with its start address moved `bytes` further (a multiple of 16). The start address is the low 14-bit
/// field of the low word (address >> 4) and shared-memory addresses stay below 2^18, so a 32-bit add cannot carry
/// out of the field: one integer add per wgmma instead of rebuilding the descriptor (four dependent instructions
/// on the uniform datapath, each a stall before the wgmma that reads it).
#[inline(always)]
pub const fn desc_advance(desc: u64, bytes: u32) -> u64 {
    (desc & 0xffff_ffff_0000_0000) | (desc as u32).wrapping_add(bytes >> 4) as u64
}

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
    /// D(64×256, f32) += A(64×16, bf16, registers) · B(16×256, bf16): 128 accumulators per thread (attention's O at
    /// head dim 256).
    mma_rs_m64n256k16_f32_bf16, "m64n256k16", "bf16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]
);
mma_rs!(
    /// D(64×256, f32) += A(64×16, f16, registers) · B(16×256, f16): 128 accumulators per thread.
    mma_rs_m64n256k16_f32_f16, "m64n256k16", "f16", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]
);
