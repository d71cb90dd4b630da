//! Warp-collective stores of 8×8 matrices of 16-bit elements from registers to shared memory.
//! PTX ISA: 9.7.14.5.16 "Warp-level matrix store instruction: stmatrix" (#warp-level-matrix-instructions-stmatrix).
//!
//! Register side: for each of the four 8×8 matrices of an `.x4`, lane `l` holds one 32-bit register with the
//! elements (row `l / 4`, columns `2·(l % 4)` and `+1`), the lower column in the low half — the same pairs a
//! wgmma accumulator fragment gives each lane in one 8×8 block (8 rows by 8 columns of its warp's 16 rows). Address
//! side: lanes `8i .. 8i + 7` each give the shared address of one 16-byte row (rows 0..7) of matrix `i`, so rows
//! may lie anywhere, e.g. in a swizzled layout, as long as each is 16-byte aligned and holds 8 consecutive elements.

/// The (row, column) of the 16×16 block whose 16-byte row lane `lane` addresses in [`store_x4`] when the four
/// matrices tile it column block by column block: matrix 0 = rows 0..7 and matrix 1 = rows 8..15 of columns
/// 0..7, matrices 2 and 3 the same rows of columns 8..15. That is the order of a wgmma accumulator fragment's
/// registers over two neighbouring 8-column blocks (rows r and r + 8 of the first block, then of the second).
#[inline(always)]
pub const fn x4_row_of_16x16(lane: u32) -> (u32, u32) {
    let (matrix, row) = (lane / 8, lane % 8);
    (8 * (matrix % 2) + row, 8 * (matrix / 2))
}

/// `stmatrix.sync.aligned.m8n8.x4.shared.b16`: the warp stores four 8×8 matrices of 16-bit elements, register
/// `fragments[i]` of each lane holding its pair of matrix `i` (see the module documentation); `row_address` is
/// this lane's row, of matrix `lane / 8`.
///
/// # Safety
/// Every lane of the warp executes it together (`.sync.aligned`: not under lane-divergent control flow);
/// `row_address` is a 16-byte aligned shared-window address with 16 bytes that no other thread accesses
/// concurrently.
#[inline(always)]
pub unsafe fn store_x4(row_address: u32, fragments: [u32; 4]) {
    unsafe {
        core::arch::asm!(
            "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{addr}], {{{r0}, {r1}, {r2}, {r3}}};",
            addr = in(reg32) row_address, r0 = in(reg32) fragments[0], r1 = in(reg32) fragments[1],
            r2 = in(reg32) fragments[2], r3 = in(reg32) fragments[3], options(nostack, preserves_flags));
    }
}

/// `stmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: as [`store_x4`], each matrix stored transposed: the 16-byte row
/// that lane `8i + r` addresses receives column `r` of matrix `i` (its 8 elements from rows 0..7, the lanes' pairs
/// read down the column), so the rows given are the transposed matrix's rows.
///
/// # Safety
/// As [`store_x4`].
#[inline(always)]
pub unsafe fn store_x4_trans(row_address: u32, fragments: [u32; 4]) {
    unsafe {
        core::arch::asm!(
            "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [{addr}], {{{r0}, {r1}, {r2}, {r3}}};",
            addr = in(reg32) row_address, r0 = in(reg32) fragments[0], r1 = in(reg32) fragments[1],
            r2 = in(reg32) fragments[2], r3 = in(reg32) fragments[3], options(nostack, preserves_flags));
    }
}
