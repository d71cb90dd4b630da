//! Warp-level matrix multiply-accumulate: `mma.sync`, the tensor-core instruction whose operands live in the registers
//! of one warp. PTX ISA: "Warp-level Matrix Multiply-Accumulate Instructions" (#warp-level-matrix-instructions), its
//! "mma" (#warp-level-matrix-instructions-mma) and the m16n8k16 fragments of "Matrix Fragments for mma.m16n8k16 with
//! floating point type" (#warp-level-matrix-fragment-mma-16816-float).
//!
//! The m16n8k16 fragments, with `g` = lane / 4 and `q` = lane % 4 (each register two 16-bit elements, the lower one
//! first):
//! - A (16×16, row): `a[0]` = A[g][2q, 2q+1], `a[1]` = A[g+8][2q, 2q+1], `a[2]` = A[g][2q+8, 2q+9],
//!   `a[3]` = A[g+8][2q+8, 2q+9];
//! - B (16×8, col): `b[0]` = B[2q, 2q+1][g], `b[1]` = B[2q+8, 2q+9][g];
//! - C and D (16×8, f32): `d[0..2]` = D[g][2q, 2q+1], `d[2..4]` = D[g+8][2q, 2q+1].
//!
//! The instruction is `.sync.aligned`: every lane of the warp executes the same `mma` together (the builder marks the
//! asm convergent, so LLVM does not split it between branches).

/// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`: `d` += A·B for bf16 A (16×16) and B (16×8) in f32.
#[inline(always)]
pub fn m16n8k16_f32_bf16(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    unsafe {
        core::arch::asm!(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            options(pure, nomem, nostack),
        );
    }
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: `d` += A·B for f16 A (16×16) and B (16×8) in f32.
#[inline(always)]
pub fn m16n8k16_f32_f16(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    unsafe {
        core::arch::asm!(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            options(pure, nomem, nostack),
        );
    }
}
