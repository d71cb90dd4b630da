//! Exchange and synchronization within a warp. PTX ISA: "shfl.sync"
//! (#data-movement-and-conversion-instructions-shfl-sync), "vote.sync"
//! (#parallel-synchronization-and-communication-instructions-vote-sync) and "bar.warp.sync"
//! (#parallel-synchronization-and-communication-instructions-bar-warp-sync).

/// `shfl.sync.bfly.b32` over the full warp: the value of lane `lane ^ lane_mask`.
#[inline(always)]
pub fn shfl_xor(value: f32, lane_mask: u32) -> f32 {
    let out: f32;
    unsafe {
        core::arch::asm!("shfl.sync.bfly.b32 {out}, {v}, {m}, 0x1f, 0xffffffff;", out = out(reg32) out,
            v = in(reg32) value, m = in(reg32) lane_mask, options(nostack, nomem));
    }
    out
}

/// `shfl.sync.idx.b32` from lane 0 over the full warp: lane 0's `value` in every lane. The compiler then knows the
/// result is the same across the warp, so code that branches on it stays warp-uniform (e.g. a warp index computed
/// from `%tid.x`, which ptxas otherwise treats as varying per thread).
#[inline(always)]
pub fn broadcast_first(value: u32) -> u32 {
    let out: u32;
    unsafe {
        core::arch::asm!("shfl.sync.idx.b32 {out}, {v}, 0, 0x1f, 0xffffffff;", out = out(reg32) out,
            v = in(reg32) value, options(nostack, nomem));
    }
    out
}

/// `elect.sync` over the full warp: true in exactly one lane (the lowest active one). Unlike a test of the lane
/// index, the compiler knows that one lane is chosen, so a copy issued under it needs no loop over lanes.
#[inline(always)]
pub fn elect_one() -> bool {
    let out: u32;
    unsafe {
        core::arch::asm!(
            "{{",
            ".reg .pred p;",
            "elect.sync _|p, 0xffffffff;",
            "selp.u32 {out}, 1, 0, p;",
            "}}",
            out = out(reg32) out, options(nostack, nomem));
    }
    out != 0
}

/// `vote.sync.any.pred` over the full warp: whether `predicate` holds in any lane.
#[inline(always)]
pub fn any(predicate: bool) -> bool {
    let out: u32;
    unsafe {
        core::arch::asm!(
            "{{",
            ".reg .pred p, q;",
            "setp.ne.u32 p, {v}, 0;",
            "vote.sync.any.pred q, p, 0xffffffff;",
            "selp.u32 {out}, 1, 0, q;",
            "}}",
            out = out(reg32) out, v = in(reg32) predicate as u32, options(nostack, nomem));
    }
    out != 0
}

/// `bar.warp.sync 0xffffffff`: waits until every lane of the warp reaches it (`__syncwarp`), and orders their memory
/// accesses around it. For a point that all lanes must have passed before one of them goes on, e.g. a flag read by
/// every lane that is then reset.
#[inline(always)]
pub fn sync() {
    unsafe { core::arch::asm!("bar.warp.sync 0xffffffff;", options(nostack)) };
}
