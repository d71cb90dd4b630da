//! Suspending a thread for a while. PTX ISA: "nanosleep" (#miscellaneous-instructions-nanosleep), sm_70 and up.

/// `nanosleep.u32`: suspends this thread for about `ns` nanoseconds (the ISA allows anywhere in [0, 2·ns], at most
/// one millisecond). A polling loop sleeps between polls so that it leaves the SM's issue slots, and the bus it
/// polls over, to others.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    unsafe { core::arch::asm!("nanosleep.u32 {ns};", ns = in(reg32) ns, options(nomem, nostack)) };
}
