//! The tensor memory accelerator: bulk tensor copies described by a `CUtensorMap`.
//! PTX ISA: "cp.async.bulk.tensor" (#data-movement-and-conversion-instructions-cp-async-bulk-tensor),
//! "cp.async.bulk" (#data-movement-and-conversion-instructions-cp-async-bulk), "cp.reduce.async.bulk"
//! (#data-movement-and-conversion-instructions-cp-reduce-async-bulk), "cp.async.bulk.commit_group" / "cp.async.bulk.wait_group"
//! (#data-movement-and-conversion-instructions-cp-async-bulk-commit-group, -wait-group) and
//! "prefetch.tensormap" (#data-movement-and-conversion-instructions-prefetch-prefetchu).
//!
//! Tensor maps are built on the host (`cuTensorMapEncodeTiled`). Every wrapper takes a map's generic address; the map
//! may sit in global memory, or be a kernel parameter passed by value ([`TensorMap`], [`param_address!`]), as CUDA
//! C++'s `__grid_constant__` maps are: the launch brings it along, so a kernel's first TMA does not wait for it from
//! DRAM. The PTX ISA allows both ("the generic address of the opaque tensor-map object which resides in .param space
//! or .const space or .global space").

/// A `CUtensorMap` passed by value as a kernel parameter: 128 opaque bytes. TMA wants it 64-byte aligned, which
/// rustc cannot say of a parameter (it allows 16), so the builder raises every 128-byte parameter's alignment to 64
/// in the PTX. Never read or borrow it in Rust: that copies it to local memory. Take [`param_address!`] instead.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct TensorMap(pub [u64; 16]);

/// The generic address of parameter `$index` (from 0) of kernel `$kernel` (or of the kernel exported as `name = …`), a
/// by-value [`TensorMap`]: `cvta.param.u64` on the parameter's PTX symbol, `{kernel}_param_{index}` (the kernel's
/// symbol: `no_mangle` or `export_name`). PTX ISA: "cvta" (#data-movement-and-conversion-instructions-cvta) and
/// "Kernel Function Parameters" (#kernel-function-parameters), PTX 7.7, sm_70 and up.
#[macro_export]
macro_rules! param_address {
    ($kernel:ident, $index:literal) => {
        $crate::arch::tma::param_address!(name = stringify!($kernel), $index)
    };
    (name = $name:expr, $index:literal) => {{
        let address: u64;
        // SAFETY: names a parameter of the kernel this expands in; reads nothing.
        unsafe {
            core::arch::asm!(
                concat!("cvta.param.u64 {address}, ", $name, "_param_", stringify!($index), ";"),
                address = out(reg64) address, options(pure, nomem, nostack));
        }
        address
    }};
}
pub use crate::param_address;

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
/// `tensor_map` is the generic address of a valid tensor map; `dst` has room for the box with the map's
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

/// Stores the box at shared address `src` to coordinates (`x` innermost, `y`) of a 2-D tensor
/// (`cp.async.bulk.tensor.2d.global.shared::cta.bulk_group`); parts of the box outside the tensor are not
/// written. Completion is tracked by [`commit_group`] / [`wait_group_read`].
///
/// # Safety
/// As [`store_4d`].
#[inline(always)]
pub unsafe fn store_2d(tensor_map: u64, x: i32, y: i32, src: u32) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{map}, {{{x}, {y}}}], [{src}];",
            map = in(reg64) tensor_map, x = in(reg32) x, y = in(reg32) y, src = in(reg32) src, options(nostack));
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

/// As [`load_2d`] for a 3-D tensor: the box at coordinates (`x` innermost, `y`, `z`), e.g. a stack of matrices seen
/// as (column, row, matrix) with boxes one matrix deep. The box lands in shared memory as a 2-D box of the same
/// extents would.
///
/// # Safety
/// As [`load_2d`].
#[inline(always)]
pub unsafe fn load_3d(dst: u32, tensor_map: u64, x: i32, y: i32, z: i32, bar: u32) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [{map}, {{{x}, {y}, {z}}}], [{bar}];",
            dst = in(reg32) dst, map = in(reg64) tensor_map, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z,
            bar = in(reg32) bar, options(nostack));
    }
}

/// As [`store_2d`] for a 3-D tensor: the box at shared address `src` to coordinates (`x` innermost, `y`, `z`)
/// (`cp.async.bulk.tensor.3d.global.shared::cta.bulk_group`); parts of the box outside the tensor are not written.
///
/// # Safety
/// As [`store_4d`].
#[inline(always)]
pub unsafe fn store_3d(tensor_map: u64, x: i32, y: i32, z: i32, src: u32) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [{map}, {{{x}, {y}, {z}}}], [{src}];",
            map = in(reg64) tensor_map, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, src = in(reg32) src,
            options(nostack));
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

/// Copies `bytes` contiguous bytes from global address `src` to shared address `dst` and signals them to the
/// mbarrier `bar` (`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`): the non-tensor bulk copy,
/// no tensor map. PTX ISA: "cp.async.bulk" (#data-movement-and-conversion-instructions-cp-async-bulk).
///
/// # Safety
/// `src` and `dst` are 16-byte aligned, `bytes` a multiple of 16; `src` holds `bytes` readable bytes and `dst` has
/// room for them; `bar` expects these bytes.
#[inline(always)]
pub unsafe fn load_bulk(dst: u32, src: *const u8, bytes: u32, bar: u32) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [{src}], {bytes}, [{bar}];",
            dst = in(reg32) dst, src = in(reg64) src, bytes = in(reg32) bytes, bar = in(reg32) bar, options(nostack));
    }
}

/// Stores the box at shared address `src` to coordinates (`c0` innermost, `c1`, `c2`, `c3`) of a 4-D tensor
/// (`cp.async.bulk.tensor.4d.global.shared::cta.bulk_group`); parts of the box outside the tensor are not
/// written. Completion is tracked by [`commit_group`] / [`wait_group_read`].
///
/// # Safety
/// `tensor_map` is the generic address of a valid tensor map; `src` holds the box in the map's layout and swizzle and
/// was made visible to the async proxy (`fence.proxy.async.shared::cta` after the writes).
#[inline(always)]
pub unsafe fn store_4d(tensor_map: u64, c0: i32, c1: i32, c2: i32, c3: i32, src: u32) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [{map}, {{{c0}, {c1}, {c2}, {c3}}}], [{src}];",
            map = in(reg64) tensor_map, c0 = in(reg32) c0, c1 = in(reg32) c1, c2 = in(reg32) c2, c3 = in(reg32) c3,
            src = in(reg32) src, options(nostack));
    }
}

/// `cp.async.bulk.commit_group`: closes the group of bulk stores this thread issued since the last commit.
#[inline(always)]
pub fn commit_group() {
    unsafe { core::arch::asm!("cp.async.bulk.commit_group;", options(nostack)) };
}

/// `cp.async.bulk.wait_group.read N`: waits until at most `N` of this thread's committed bulk groups may still
/// read their shared-memory source (the source may be overwritten then; the global writes may still be running).
#[inline(always)]
pub fn wait_group_read<const N: u32>() {
    unsafe { core::arch::asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack)) };
}

/// `cp.async.bulk.wait_group N`: waits until at most `N` of this thread's committed bulk groups are pending, the
/// others complete: their shared-memory reads done and their writes to global memory performed. Those writes were
/// made by the async proxy: before a generic-proxy release is to carry them to another thread, follow this with
/// [`crate::arch::atomic::fence_proxy_async_global`].
#[inline(always)]
pub fn wait_group<const N: u32>() {
    unsafe { core::arch::asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack)) };
}

/// `cp.async.bulk.global.shared::cta.bulk_group`: copies the `bytes` bytes at shared address `src` to global
/// address `dst`, in the async proxy: the non-tensor bulk copy (PTX ISA "cp.async.bulk",
/// #data-movement-and-conversion-instructions-cp-async-bulk; PTX 8.0, sm_90), one instruction for a contiguous run.
/// Completion is tracked by [`commit_group`] and [`wait_group_read`] (the source may be rewritten) or
/// [`wait_group`] (the writes are performed).
///
/// # Safety
/// `src` and `dst` are 16-byte aligned, `bytes` a multiple of 16; `dst` holds `bytes` bytes in global memory that
/// nothing else accesses until a wait shows the writes performed, and `src` as many in this block's shared memory,
/// written before by this thread or made visible to the async proxy (`fence.proxy.async.shared::cta` after the
/// writes, then a barrier with this thread), and not rewritten before a wait shows the group has read it.
#[inline(always)]
pub unsafe fn store_bulk(dst: *mut u8, src: u32, bytes: u32) {
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.global.shared::cta.bulk_group [{dst}], [{src}], {bytes};",
            dst = in(reg64) dst, src = in(reg32) src, bytes = in(reg32) bytes, options(nostack));
    }
}

/// `cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32`: adds the `bytes / 4` f32 at shared address `src`
/// element-wise to the f32 at global address `dst`, in the async proxy: the non-tensor bulk reduction (PTX ISA
/// "cp.reduce.async.bulk", #data-movement-and-conversion-instructions-cp-reduce-async-bulk; PTX 8.0, sm_90), one
/// instruction for a contiguous run instead of a `red` per element. Each element's addition is atomic, with no
/// order among them or against other threads' accesses; completion is tracked by [`commit_group`] and
/// [`wait_group_read`] (the source may be rewritten) or [`wait_group`] (the additions are performed).
///
/// # Safety
/// `src` and `dst` are 16-byte aligned, `bytes` a multiple of 16; `dst` holds `bytes` bytes of f32 in global memory
/// and `src` as many in this block's shared memory, written before by this thread or made visible to the async
/// proxy (`fence.proxy.async.shared::cta` after the writes, then a barrier with this thread), and not rewritten
/// before a wait shows the group has read it.
#[inline(always)]
pub unsafe fn reduce_add_bulk_f32(dst: *mut f32, src: u32, bytes: u32) {
    unsafe {
        core::arch::asm!(
            "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [{dst}], [{src}], {bytes};",
            dst = in(reg64) dst, src = in(reg32) src, bytes = in(reg32) bytes, options(nostack));
    }
}
