//! Waits of one block for counts other blocks of the same grid publish (the stream-K GEMM's partial tiles; next,
//! a deterministic attention backward's turns), bounded in time so that a grid whose awaited blocks never run (not
//! all resident: another process holding SMs under MPS, a smaller green context, a dispatch order the schedule did
//! not assume) fails with an error instead of hanging.

use oxtile_abi::stream_k::{POLLS_PER_CLOCK_READ, WAIT_LIMIT_NS};

use crate::arch::{atomic, sreg, trap, warp};

/// Waits until the u32 at `count` is at least `expected`, polled with acquire loads, and traps after
/// [`WAIT_LIMIT_NS`]. The lanes of the warp leave together (a warp vote), each having acquired a large enough count
/// itself, so the warp is converged after it for `.aligned` instructions and barriers. The clock starts at the first
/// poll that finds the count short and is read again every [`POLLS_PER_CLOCK_READ`] polls: a wait that is already
/// over reads no clock. The poll count is the same in every lane and so is the timeout, voted, so the warp traps as
/// one. The host turns the trap into an error at its next synchronization.
///
/// # Safety
/// `count` is a 4-byte aligned address in global memory; every lane of the warp calls this with the same `count`
/// and `expected`.
#[inline(always)]
// `polls % N == 0`, not `is_multiple_of`: that flips a branch's layout in the PTX of every kernel that waits.
#[allow(clippy::manual_is_multiple_of)]
pub unsafe fn wait_at_least(count: *mut u32, expected: u32) {
    let mut polls = 0u32;
    let mut since = 0u64;
    while warp::any(unsafe { atomic::load_acquire_gpu(count) } < expected) {
        if polls % POLLS_PER_CLOCK_READ == 0 {
            let now = sreg::global_timer_ns();
            if polls == 0 {
                since = now;
            } else if warp::any(now.wrapping_sub(since) > WAIT_LIMIT_NS) {
                trap::trap();
            }
        }
        polls = polls.wrapping_add(1);
    }
}

/// [`wait_at_least`] with one poller per warp: lane 0 polls with acquire loads and the warp leaves together (a
/// vote), then meets at a warp barrier, which orders lane 0's acquire before every lane's later accesses. So a
/// count that N warps of other blocks publish is polled by N lanes instead of 32·N, which otherwise contend for
/// the flag's L2 line with the publishers' own additions. The publishers' side of the pattern: each warp meets at
/// a warp barrier after its stores, then one lane releases them all (the barrier orders the other lanes' stores
/// before that lane's release).
///
/// # Safety
/// As [`wait_at_least`].
#[inline(always)]
#[allow(clippy::manual_is_multiple_of)]
pub unsafe fn wait_at_least_from_first_lane(count: *mut u32, expected: u32) {
    let first = sreg::lane_id() == 0;
    let mut polls = 0u32;
    let mut since = 0u64;
    while warp::any(first && unsafe { atomic::load_acquire_gpu(count) } < expected) {
        if polls % POLLS_PER_CLOCK_READ == 0 {
            let now = sreg::global_timer_ns();
            if polls == 0 {
                since = now;
            } else if warp::any(now.wrapping_sub(since) > WAIT_LIMIT_NS) {
                trap::trap();
            }
        }
        polls = polls.wrapping_add(1);
    }
    warp::sync();
}
