//! The tensor memory accelerator: bulk tensor copies described by a `CUtensorMap`.
//! PTX ISA: "cp.async.bulk.tensor" (#data-movement-and-conversion-instructions-cp-async-bulk-tensor) and
//! "prefetch.tensormap" (#data-movement-and-conversion-instructions-prefetch-prefetchu).
//!
//! Tensor maps are built on the host (`cuTensorMapEncodeTiled`) and live in global memory; kernels get
//! their generic address (Rust cannot pass a 64-byte aligned `__grid_constant__` parameter).

/// `prefetch.tensormap`: brings a tensor map into the descriptor cache before its first use.
#[inline(always)]
pub fn prefetch_tensormap(tensor_map: u64) {
    unsafe { core::arch::asm!("prefetch.tensormap [{map}];", map = in(reg64) tensor_map, options(nostack)) };
}

/// Loads the box at coordinates (`x` innermost, `y`) of a 2-D tensor into shared memory at `dst` and
/// signals its bytes to the mbarrier `bar` (`cp.async.bulk.tensor.2d ... mbarrier::complete_tx::bytes`).
/// Out-of-bounds parts of the box are zero-filled.
///
/// # Safety
/// `tensor_map` is a valid tensor map in global memory; `dst` has room for the box with the map's
/// alignment (1024 bytes for 128-byte swizzle); `bar` expects these bytes.
#[inline(always)]
pub unsafe fn load_2d(dst: u32, tensor_map: u64, x: i32, y: i32, bar: u32) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [{map}, {{{x}, {y}}}], [{bar}];",
            dst = in(reg32) dst, map = in(reg64) tensor_map, x = in(reg32) x, y = in(reg32) y, bar = in(reg32) bar,
            options(nostack));
    }
}

/// As [`load_2d`], but the box lands at the same shared-memory offset `dst` in every block of the cluster
/// whose bit is set in `block_mask`, each signalling its own barrier at offset `bar`
/// (`.multicast::cluster`).
///
/// # Safety
/// As [`load_2d`], in every block of the mask; each of their barriers expects these bytes.
#[inline(always)]
pub unsafe fn load_2d_multicast(dst: u32, tensor_map: u64, x: i32, y: i32, bar: u32, block_mask: u16) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [{dst}], [{map}, {{{x}, {y}}}], [{bar}], {mask};",
            dst = in(reg32) dst, map = in(reg64) tensor_map, x = in(reg32) x, y = in(reg32) y, bar = in(reg32) bar,
            mask = in(reg16) block_mask, options(nostack));
    }
}

/// As [`load_2d`] for a 4-D tensor: the box at coordinates (`c0` innermost, `c1`, `c2`, `c3`), e.g. an attention
/// operand [batch, seq, head, dim] seen as dims (dim, head, seq, batch). The box lands in shared memory packed in
/// dimension order, so a box of (64, 1, rows, 1) is `rows` 128-byte rows.
///
/// # Safety
/// As [`load_2d`].
#[inline(always)]
pub unsafe fn load_4d(dst: u32, tensor_map: u64, c0: i32, c1: i32, c2: i32, c3: i32, bar: u32) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [{map}, {{{c0}, {c1}, {c2}, {c3}}}], [{bar}];",
            dst = in(reg32) dst, map = in(reg64) tensor_map, c0 = in(reg32) c0, c1 = in(reg32) c1, c2 = in(reg32) c2,
            c3 = in(reg32) c3, bar = in(reg32) bar, options(nostack));
    }
}
