//! The GPU's clock and energy while a contender runs, through NVML: under the H200's 700 W cap the power-bound
//! GEMMs run as fast as their clock, and the clock is whatever the power controller grants. Two kernels of equal
//! cycle counts differ in time by the energy each spends per FLOP, and the same kernel reads up to ~15% apart
//! depending on what ran before it (docs/perf-notes.md, v12 and v13). So each timed turn also records the energy
//! the board used and the SM clock while it ran; a row's `MHz`, `W` and `GFLOP/J` say under what conditions its
//! time was taken.
//!
//! NVML is the driver's management library (libnvidia-ml); where it cannot be loaded (no driver, a container
//! without it) the benchmarks run without these columns and say so.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUdevice_attribute;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::{Device, Nvml};

use crate::runtime::Gpu;

/// NVML, initialized once per process (it is reference-counted by the driver and cheap to keep).
fn nvml() -> Result<&'static Nvml, String> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| Nvml::init().map_err(|e| format!("NVML unavailable: {e}"))).as_ref().map_err(Clone::clone)
}

/// Reads the energy counter and SM clock of the GPU a [`Gpu`] runs on. Clones read the same device.
#[derive(Clone)]
pub struct PowerMeter {
    device: Arc<Device<'static>>,
}

impl PowerMeter {
    /// The meter of `gpu`'s device, found by its PCI address (CUDA's device order need not be NVML's). Fails, with
    /// the reason, where NVML is missing or the device has no energy counter (before Volta).
    pub fn open(gpu: &Gpu) -> Result<PowerMeter, String> {
        let ctx = gpu.context();
        let attribute = |a| ctx.attribute(a).map_err(|e| format!("PCI address of the device: {e}"));
        let domain = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
        let bus = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
        let slot = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
        let address = format!("{domain:08x}:{bus:02x}:{slot:02x}.0");
        let device =
            nvml()?.device_by_pci_bus_id(address.as_str()).map_err(|e| format!("NVML device {address}: {e}"))?;
        device.total_energy_consumption().map_err(|e| format!("NVML energy counter of {address}: {e}"))?;
        Ok(PowerMeter { device: Arc::new(device) })
    }

    /// The board's energy counter now, in millijoules since the driver loaded.
    fn energy_mj(&self) -> Option<u64> {
        self.device.total_energy_consumption().ok()
    }

    /// The SM clock now, MHz.
    fn sm_mhz(&self) -> Option<u32> {
        self.device.clock_info(Clock::SM).ok()
    }

    /// Starts a reading over some timed launches.
    pub fn start(&self) -> PowerSpan {
        PowerSpan { energy_mj: self.energy_mj(), at: Instant::now(), sm_mhz: Vec::new() }
    }

    /// Samples the SM clock into `span`: call while the GPU runs the launches being measured.
    pub fn sample_clock(&self, span: &mut PowerSpan) {
        span.sm_mhz.extend(self.sm_mhz());
    }

    /// Ends `span` after its `launches` launches have finished. A counter that could not be read (or went
    /// backwards) leaves the energy at 0, which the reading reports as unknown.
    pub fn finish(&self, span: PowerSpan, launches: usize) -> PowerReading {
        let energy_mj = match (span.energy_mj, self.energy_mj()) {
            (Some(start), Some(end)) if end >= start => end - start,
            _ => 0,
        };
        PowerReading { energy_mj, elapsed: span.at.elapsed(), launches, sm_mhz: span.sm_mhz }
    }
}

/// A reading in progress: the energy counter and the time at its start, the clock samples so far.
pub struct PowerSpan {
    energy_mj: Option<u64>,
    at: Instant,
    sm_mhz: Vec<u32>,
}

/// Energy and clock over some timed launches, or over several such spans once [`merge`](Self::merge)d.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PowerReading {
    /// Energy the board used, millijoules.
    pub energy_mj: u64,
    /// Wall time the energy was counted over: the launches and the host's short gaps between batches.
    pub elapsed: Duration,
    pub launches: usize,
    /// SM clock samples, MHz, taken while the launches ran.
    pub sm_mhz: Vec<u32>,
}

impl PowerReading {
    /// Adds another span's energy, time, launches and clock samples to this one's.
    pub fn merge(&mut self, other: &PowerReading) {
        self.energy_mj += other.energy_mj;
        self.elapsed += other.elapsed;
        self.launches += other.launches;
        self.sm_mhz.extend_from_slice(&other.sm_mhz);
    }

    /// Mean board power over the span, watts.
    pub fn watts(&self) -> Option<f64> {
        (self.energy_mj > 0 && !self.elapsed.is_zero())
            .then(|| self.energy_mj as f64 / 1e3 / self.elapsed.as_secs_f64())
    }

    /// Joules per launch.
    pub fn joules_per_launch(&self) -> Option<f64> {
        (self.energy_mj > 0 && self.launches > 0).then(|| self.energy_mj as f64 / 1e3 / self.launches as f64)
    }

    /// Median of the clock samples, MHz.
    pub fn median_sm_mhz(&self) -> Option<f64> {
        let mut sorted: Vec<f64> = self.sm_mhz.iter().map(|&m| f64::from(m)).collect();
        sorted.sort_by(f64::total_cmp);
        (!sorted.is_empty()).then(|| super::timing::median(&sorted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_readings_add_energy_time_and_launches() {
        let span = |mj, ms, launches, mhz: &[u32]| PowerReading {
            energy_mj: mj,
            elapsed: Duration::from_millis(ms),
            launches,
            sm_mhz: mhz.to_vec(),
        };
        let mut total = span(7_000, 10, 5, &[1500, 1700]);
        total.merge(&span(3_000, 10, 5, &[1600]));
        assert_eq!(total.watts(), Some(500.0));
        assert_eq!(total.joules_per_launch(), Some(1.0));
        assert_eq!(total.median_sm_mhz(), Some(1600.0));
        // Nothing counted: no figures rather than zeros.
        let empty = PowerReading::default();
        assert_eq!((empty.watts(), empty.joules_per_launch(), empty.median_sm_mhz()), (None, None, None));
    }
}
