//! The stream hold: a one-thread kernel that keeps the GPU's stream waiting while the host queues the timed
//! launches behind it, so that they run back to back however slowly the host queues them.
//!
//! Without it, a kernel shorter than the host's cost of queueing it (cuBLASLt's host path, a launch with cluster
//! attributes: both ≈ 5–30 µs) finds the GPU idle: the GPU drains the queue faster than the host fills it, and the
//! event pair around each launch measures the host's pace instead of the kernel. The hold (gpu/kernels/support/src/bench.rs)
//! polls a word of pinned host memory mapped into the GPU until the host writes it, after the last launch of the
//! batch is queued. It gives up after a timeout, which bounds the wait when the host cannot release it: a launch
//! call that itself waits for the GPU (a full launch queue; a profiler or sanitizer that serializes launches; the
//! first launch of a lazily loaded kernel) would otherwise wait forever. A hold that timed out fails the
//! measurement: its samples include the host's pace, which the hold exists to keep out.

use std::sync::Arc;
use std::sync::atomic::{Ordering, fence};
use std::time::Duration;

use cudarc::driver::sys::{self, CUdeviceptr};
use cudarc::driver::{CudaContext, CudaFunction, LaunchConfig, PushKernelArg};
use oxtile_abi::{HOLD_PENDING, HOLD_RELEASED, HOLD_TIMED_OUT};

use crate::error::{Error, Result};
use crate::kernels;
use crate::runtime::Gpu;

/// Pinned host memory mapped into the GPU's address space: u32 words that the host and a running kernel both
/// read and write (the host through volatile accesses, the kernel through system-scope ones). Freed on drop.
pub struct MappedWords {
    host: *mut u32,
    device: CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
}

impl MappedWords {
    /// `len` words, all zero.
    pub fn new(gpu: &Gpu, len: usize) -> Result<MappedWords> {
        let ctx = gpu.context().clone();
        ctx.bind_to_thread()?;
        let bytes = len.max(1) * std::mem::size_of::<u32>();
        // DEVICEMAP: the GPU addresses it directly; PORTABLE: pinned for every context, not only this one. (Under
        // unified addressing, on by default for 64-bit processes, the driver maps such memory whatever the flags;
        // they state what this relies on.) Not write-combined: the host reads the status word back, and
        // write-combined memory reads slowly on the CPU.
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: a fresh allocation; its contents are set below before anyone reads them.
        let host = unsafe { cudarc::driver::result::malloc_host(bytes, flags) }?.cast::<u32>();
        let mut device: CUdeviceptr = 0;
        // SAFETY: `host` was returned by cuMemHostAlloc with DEVICEMAP; flags must be 0.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) }.result();
        // Owned before the mapping's result is looked at, so that a failed mapping still frees the allocation.
        let words = MappedWords { host, device, len, ctx };
        mapped?;
        for index in 0..len {
            words.write(index, 0);
        }
        Ok(words)
    }

    /// The GPU's address of word `index`.
    pub fn device_address(&self, index: usize) -> u64 {
        assert!(index < self.len, "word {index} of {}", self.len);
        self.device + (index * std::mem::size_of::<u32>()) as u64
    }

    /// Word `index` as it is now in host memory (a kernel may have written it).
    pub fn read(&self, index: usize) -> u32 {
        assert!(index < self.len, "word {index} of {}", self.len);
        // SAFETY: in bounds of the live allocation; volatile, because the GPU writes it behind the compiler's back.
        unsafe { self.host.add(index).read_volatile() }
    }

    /// Writes word `index`; a kernel polling it sees the value once the store reaches memory.
    pub fn write(&self, index: usize, value: u32) {
        assert!(index < self.len, "word {index} of {}", self.len);
        // SAFETY: in bounds of the live allocation; volatile, so the store is made, here, and not merged or dropped.
        unsafe { self.host.add(index).write_volatile(value) }
    }
}

impl Drop for MappedWords {
    fn drop(&mut self) {
        // A kernel that still used the words would now read freed memory; the users synchronize before dropping.
        // Errors are recorded on the context (and surface at its next check), as cudarc does for its own frees.
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: `host` came from cuMemHostAlloc and is freed once.
        self.ctx.record_err(unsafe { cudarc::driver::result::free_host(self.host.cast()) });
    }
}

/// How the last hold ended, from the status word it writes when it exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldOutcome {
    /// The status word still holds what the host wrote before the launch: the hold has not finished (or could not
    /// write host memory).
    Pending,
    /// The host released it within the timeout.
    Released,
    /// The timeout passed before the host released it.
    TimedOut,
    /// A value the kernel never writes.
    Unknown(u32),
}

impl HoldOutcome {
    pub fn from_status(status: u32) -> HoldOutcome {
        match status {
            HOLD_PENDING => HoldOutcome::Pending,
            HOLD_RELEASED => HoldOutcome::Released,
            HOLD_TIMED_OUT => HoldOutcome::TimedOut,
            other => HoldOutcome::Unknown(other),
        }
    }

    /// `Ok` when the hold was released in time, so the `launches` timed launches queued behind it ran back to back;
    /// otherwise an error that says why their times cannot be trusted. Read after the stream synchronized.
    pub fn check(self, launches: usize, timeout: Duration) -> Result<()> {
        match self {
            HoldOutcome::Released => Ok(()),
            HoldOutcome::TimedOut => Err(Error::Timing(format!(
                "the stream hold timed out after {timeout:?} before the host had queued {launches} timed launches \
                 behind it, so the GPU ran them as the host queued them and their times include the host's pace; \
                 under a profiler or sanitizer that makes each launch wait for the GPU, time with `--timing \
                 unblocked` (TimingMode::Unblocked)"
            ))),
            HoldOutcome::Pending => Err(Error::Timing(
                "the stream hold finished without writing its status word: the GPU could not write the mapped \
                 pinned host memory, so the hold cannot have seen the host's release either"
                    .into(),
            )),
            HoldOutcome::Unknown(status) => {
                Err(Error::Timing(format!("the stream hold's status word reads {status}, a value it never writes")))
            }
        }
    }
}

/// The hold kernel and its two mapped words: the release flag the host writes and the status the kernel writes.
pub struct StreamHold {
    words: MappedWords,
    function: CudaFunction,
}

impl StreamHold {
    const RELEASE: usize = 0;
    const STATUS: usize = 1;

    pub fn new(gpu: &Gpu) -> Result<StreamHold> {
        Ok(StreamHold { words: MappedWords::new(gpu, 2)?, function: gpu.function(kernels::HOLD_STREAM)? })
    }

    /// Resets the words and launches the hold on `gpu.stream()`: work queued after it waits until
    /// [`HeldStream::release`] (or the guard's drop) or until `timeout` passes. The stream must have finished any
    /// earlier hold on these words (synchronize before holding again).
    pub fn hold(&self, gpu: &Gpu, timeout: Duration) -> Result<HeldStream<'_>> {
        self.words.write(Self::RELEASE, 0);
        self.words.write(Self::STATUS, HOLD_PENDING);
        let release = self.words.device_address(Self::RELEASE);
        let status = self.words.device_address(Self::STATUS);
        let timeout_ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        let mut launch = gpu.stream().launch_builder(&self.function);
        launch.arg(&release).arg(&status).arg(&timeout_ns);
        // SAFETY: the signature is (release: *const u32, status: *mut u32, timeout_ns: u64); both words live in
        // mapped pinned memory that outlives the kernel (the caller synchronizes before dropping `self`).
        unsafe { launch.launch(config) }
            .map_err(|source| Error::Launch { kernel: kernels::HOLD_STREAM.name, source })?;
        Ok(HeldStream { hold: self })
    }

    /// How the last hold ended; read it after the stream synchronized past the hold.
    pub fn outcome(&self) -> HoldOutcome {
        HoldOutcome::from_status(self.words.read(Self::STATUS))
    }
}

/// A launched hold not yet released. Dropping it releases it too, so an error or a panic while queueing never leaves
/// the stream waiting for the timeout.
pub struct HeldStream<'a> {
    hold: &'a StreamHold,
}

impl HeldStream<'_> {
    /// Lets the stream run: call after the last launch to time is queued. (The drop writes the release flag.)
    pub fn release(self) {}
}

impl Drop for HeldStream<'_> {
    fn drop(&mut self) {
        // The queued launches were submitted by driver calls that have returned; the fence keeps the compiler and
        // the CPU from moving the release ahead of that work.
        fence(Ordering::SeqCst);
        self.hold.words.write(StreamHold::RELEASE, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_follow_the_status_word() {
        assert_eq!(HoldOutcome::from_status(HOLD_PENDING), HoldOutcome::Pending);
        assert_eq!(HoldOutcome::from_status(HOLD_RELEASED), HoldOutcome::Released);
        assert_eq!(HoldOutcome::from_status(HOLD_TIMED_OUT), HoldOutcome::TimedOut);
        assert_eq!(HoldOutcome::from_status(7), HoldOutcome::Unknown(7));
    }

    #[test]
    fn only_a_released_hold_passes_its_check() {
        let timeout = Duration::from_millis(250);
        assert!(HoldOutcome::Released.check(32, timeout).is_ok());
        let error = HoldOutcome::TimedOut.check(32, timeout).unwrap_err();
        assert!(matches!(error, Error::Timing(_)), "{error}");
        let message = error.to_string();
        assert!(message.contains("timed out after 250ms") && message.contains("32 timed launches"), "{message}");
        assert!(message.contains("--timing unblocked"), "{message}");
        for outcome in [HoldOutcome::Pending, HoldOutcome::Unknown(7)] {
            assert!(matches!(outcome.check(1, timeout), Err(Error::Timing(_))), "{outcome:?}");
        }
    }
}
