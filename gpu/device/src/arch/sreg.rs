//! Special registers: thread, block and grid coordinates (PTX ISA §10, "Special Registers").

use core::arch::nvptx;

/// `%tid.x`
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    unsafe { nvptx::_thread_idx_x() as u32 }
}

/// `%ntid.x`
#[inline(always)]
pub fn block_dim_x() -> u32 {
    unsafe { nvptx::_block_dim_x() as u32 }
}

/// `%ctaid.x`
#[inline(always)]
pub fn block_idx_x() -> u32 {
    unsafe { nvptx::_block_idx_x() as u32 }
}

/// `%ctaid.y`
#[inline(always)]
pub fn block_idx_y() -> u32 {
    unsafe { nvptx::_block_idx_y() as u32 }
}

/// `%ctaid.z`
#[inline(always)]
pub fn block_idx_z() -> u32 {
    unsafe { nvptx::_block_idx_z() as u32 }
}

/// `%laneid`: this thread's lane in its warp.
#[inline(always)]
pub fn lane_id() -> u32 {
    thread_idx_x() % 32
}

/// `%nctaid.x`
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    unsafe { nvptx::_grid_dim_x() as u32 }
}

/// `%nctaid.y`
#[inline(always)]
pub fn grid_dim_y() -> u32 {
    unsafe { nvptx::_grid_dim_y() as u32 }
}

/// `%nctaid.z`
#[inline(always)]
pub fn grid_dim_z() -> u32 {
    unsafe { nvptx::_grid_dim_z() as u32 }
}

/// `%globaltimer`: a 64-bit nanosecond clock shared by the whole GPU (PTX ISA "Special Registers: %globaltimer",
/// #special-registers-globaltimer). It advances in steps coarser than its unit, so it serves timeouts, not the
/// timing of short code. Not `pure`: two reads must not be merged, and a read must not leave the loop it is in.
#[inline(always)]
pub fn global_timer_ns() -> u64 {
    let ns: u64;
    unsafe { core::arch::asm!("mov.u64 {ns}, %globaltimer;", ns = out(reg64) ns, options(nomem, nostack)) };
    ns
}

/// `%smid`: the SM this thread runs on (PTX ISA "Special Registers: %smid", #special-registers-smid). A block stays on
/// its SM, but the numbering need not be contiguous and is no stable identity across launches: for probes of where
/// blocks land, never for indexing work.
#[inline(always)]
pub fn sm_id() -> u32 {
    let id: u32;
    unsafe { core::arch::asm!("mov.u32 {id}, %smid;", id = out(reg32) id, options(nomem, nostack)) };
    id
}

/// This thread's index in a 1-D grid.
#[inline(always)]
pub fn global_thread_idx_x() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// Indices `0..n` this thread visits in a grid-stride loop over a 1-D grid.
#[inline(always)]
pub fn grid_stride(n: usize) -> impl Iterator<Item = usize> {
    let stride = grid_dim_x() as usize * block_dim_x() as usize;
    let mut next = global_thread_idx_x();
    core::iter::from_fn(move || {
        let index = next;
        next += stride;
        (index < n).then_some(index)
    })
}
