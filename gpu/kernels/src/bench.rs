//! Kernels the benchmark harness launches around the timed ones.

use oxtile_abi::{HOLD_RELEASED, HOLD_TIMED_OUT};

use crate::arch::atomic::{load_relaxed_sys, store_relaxed_sys};
use crate::arch::nanosleep::nanosleep;
use crate::arch::sreg::global_timer_ns;

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
crate::launch_bounds!(hold_stream, max_threads = 1, min_blocks = 1);
