//! Kernels the benchmark harness launches around the timed ones.

use oxtile_abi::{HOLD_RELEASED, HOLD_TIMED_OUT};

use crate::arch::atomic::{load_relaxed_sys, store_relaxed_sys};
use crate::arch::nanosleep::nanosleep;
use crate::arch::sreg::{block_idx_x, global_timer_ns, sm_id, thread_idx_x};

/// Sleep between two polls of the release word. Each poll is a read across the bus to host memory; a few
/// microseconds between them costs nothing measured (the timed work starts only after the hold ends) and keeps
/// the bus quiet while the host queues.
const POLL_INTERVAL_NS: u32 = 2_000;

/// Holds its stream: one thread polls `release` (host memory mapped into the GPU) until the host writes a nonzero
/// value there, or until `timeout_ns` have passed on %globaltimer, then writes [`HOLD_RELEASED`] or
/// [`HOLD_TIMED_OUT`] to `status` and exits.
///
/// The host launches it, queues every timed launch behind it while the GPU waits, then releases it: the queued
/// work then runs back to back however slowly the host queued it. The timeout bounds the wait when the host cannot
/// release it (blocked in a launch call that waits for the GPU: a full launch queue, a profiler that serializes
/// launches), and the status tells the host that its timings then include the host's own pace.
///
/// # Safety
/// `release` and `status` are 4-byte aligned addresses of u32 the GPU can access (mapped pinned host memory);
/// launch with one thread.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hold_stream(release: *const u32, status: *mut u32, timeout_ns: u64) {
    let start = global_timer_ns();
    let outcome = loop {
        if unsafe { load_relaxed_sys(release) } != 0 {
            break HOLD_RELEASED;
        }
        if global_timer_ns().wrapping_sub(start) >= timeout_ns {
            break HOLD_TIMED_OUT;
        }
        nanosleep(POLL_INTERVAL_NS);
    };
    unsafe { store_relaxed_sys(status, outcome) };
}
oxtile_device::launch_bounds!(hold_stream, max_threads = 1, min_blocks = 1);

/// Records where each block of a 1-D grid runs: `sm[block] = %smid`. Each block then stays `hold_ns` on
/// %globaltimer, so that with one block per SM (the host asks for enough dynamic shared memory) the whole grid is
/// resident at once and no block reuses a finished block's SM: the map is the block scheduler's placement, as a
/// persistent GEMM grid of one block per SM meets it.
///
/// # Safety
/// `sm` holds one u32 per block of the grid.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn block_placement(sm: *mut u32, hold_ns: u64) {
    if thread_idx_x() == 0 {
        let start = global_timer_ns();
        unsafe { *sm.add(block_idx_x() as usize) = sm_id() };
        while global_timer_ns().wrapping_sub(start) < hold_ns {
            nanosleep(POLL_INTERVAL_NS);
        }
    }
}
oxtile_device::launch_bounds!(block_placement, max_threads = 32, min_blocks = 1);
