//! The GPU's SM clock while a contender runs, through NVML: under the H200's 700 W cap the power-bound GEMMs run
//! as fast as their clock, and the clock is whatever the power controller grants. The same kernel reads 20% apart
//! at 1980 MHz (a turn right after a lighter one) and at ~1450 MHz (after 200 ms of itself; docs/perf-notes.md,
//! v13), so each timed turn records the clock it ran at, and a row's `MHz` says under what conditions its time was
//! taken.
//!
//! The board's energy counter is not used: on the H200 it moves in steps far coarser than a turn (most turns of
//! under 100 ms read no change at all), so it cannot rank kernels a few percent apart.
//!
//! NVML is the driver's management library (libnvidia-ml); where it cannot be loaded (no driver, a container
//! without it) the benchmarks run without the column and say so.

use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::CUdevice_attribute;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::{Device, Nvml};

use crate::runtime::Gpu;

/// NVML, initialized once per process (it is reference-counted by the driver and cheap to keep).
fn nvml() -> Result<&'static Nvml, String> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| Nvml::init().map_err(|e| format!("NVML unavailable: {e}"))).as_ref().map_err(Clone::clone)
}

/// Reads the SM clock of the GPU a [`Gpu`] runs on. Clones read the same device.
#[derive(Clone)]
pub struct ClockMeter {
    device: Arc<Device<'static>>,
}

impl ClockMeter {
    /// The meter of `gpu`'s device, found by its PCI address (CUDA's device order need not be NVML's). Fails, with
    /// the reason, where NVML is missing or cannot read the device's clock.
    pub fn open(gpu: &Gpu) -> Result<ClockMeter, String> {
        let ctx = gpu.context();
        let attribute = |a| ctx.attribute(a).map_err(|e| format!("PCI address of the device: {e}"));
        let domain = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
        let bus = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
        let slot = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
        let address = format!("{domain:08x}:{bus:02x}:{slot:02x}.0");
        let device =
            nvml()?.device_by_pci_bus_id(address.as_str()).map_err(|e| format!("NVML device {address}: {e}"))?;
        device.clock_info(Clock::SM).map_err(|e| format!("NVML SM clock of {address}: {e}"))?;
        Ok(ClockMeter { device: Arc::new(device) })
    }

    /// The SM clock now, MHz.
    fn sm_mhz(&self) -> Option<u32> {
        self.device.clock_info(Clock::SM).ok()
    }

    /// Adds a sample of the SM clock to `samples`: call while the GPU runs the launches being measured.
    pub fn sample_clock(&self, samples: &mut ClockSamples) {
        samples.sm_mhz.extend(self.sm_mhz());
    }
}

/// SM clock samples taken while some timed launches ran, or several such sets once [`merge`](Self::merge)d.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClockSamples {
    /// MHz, in the order taken.
    pub sm_mhz: Vec<u32>,
}

impl ClockSamples {
    /// Adds another set's samples to this one's.
    pub fn merge(&mut self, other: &ClockSamples) {
        self.sm_mhz.extend_from_slice(&other.sm_mhz);
    }

    /// Median of the samples, MHz.
    pub fn median_sm_mhz(&self) -> Option<f64> {
        let mut sorted: Vec<f64> = self.sm_mhz.iter().map(|&m| f64::from(m)).collect();
        sorted.sort_by(f64::total_cmp);
        (!sorted.is_empty()).then(|| super::stats::median(&sorted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_readings_keep_every_sample() {
        let mut total = ClockSamples { sm_mhz: vec![1500, 1700] };
        total.merge(&ClockSamples { sm_mhz: vec![1600, 1400] });
        assert_eq!(total.sm_mhz, [1500, 1700, 1600, 1400]);
        assert_eq!(total.median_sm_mhz(), Some(1550.0));
        assert_eq!(ClockSamples::default().median_sm_mhz(), None);
    }
}
