//! What the benchmarks need to know about the device: SMs, clock, L2, memory; the peaks derived from them.

use std::ffi::c_void;

use cudarc::driver::DevicePtrMut;
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use oxtile_abi::SM90_MAX_SMEM_PER_BLOCK;

use crate::error::{Error, Result};
use crate::kernels;
use crate::runtime::{ClusterLaunch, ClusterShape, Gpu};

/// Dense bf16/fp16 tensor-core rate of an H100/H200 SXM by NVIDIA's datasheet, in TFLOP/s: 132 SMs × 4096
/// FLOP/clock/SM × 1.83 GHz. "% peak" in every table is relative to this figure, the one the project's goals
/// quote; the header also shows the peak computed from this device's own SM count and maximum clock, which is
/// higher on an H200 (1.98 GHz: about 1070 TFLOP/s) and which no GEMM sustains.
pub const DATASHEET_DENSE_BF16_TFLOPS: f64 = 989.0;

/// Dense bf16/fp16 tensor-core FLOP per clock per SM, by compute capability, where known: Ampere A100 (8.0)
/// 2048 (312 TFLOP/s = 108 SMs × 2048 × 1.41 GHz), Hopper (9.0) 4096 (989 TFLOP/s = 132 × 4096 × 1.83 GHz).
pub fn dense_tensor_flops_per_clock_per_sm(compute_capability: (u32, u32)) -> Option<f64> {
    match compute_capability {
        (8, 0) => Some(2048.0),
        (9, 0) => Some(4096.0),
        _ => None,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    /// Maximum SM clock, kHz (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`).
    pub max_clock_khz: Option<u32>,
    /// L2 size in bytes (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`).
    pub l2_bytes: usize,
    /// Peak memory clock, kHz, and bus width, bits.
    pub memory_clock_khz: Option<u32>,
    pub memory_bus_bits: Option<u32>,
    pub total_memory: usize,
}

impl DeviceInfo {
    pub fn query(gpu: &Gpu) -> Result<DeviceInfo> {
        let ctx = gpu.context();
        // An attribute the driver does not report (or reports as 0) is unknown, not an error.
        let positive = |attribute| ctx.attribute(attribute).ok().and_then(|v| u32::try_from(v).ok()).filter(|&v| v > 0);
        Ok(DeviceInfo {
            name: gpu.name().to_string(),
            compute_capability: gpu.compute_capability(),
            sm_count: gpu.sm_count(),
            max_clock_khz: positive(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            l2_bytes: positive(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).unwrap_or(0) as usize,
            memory_clock_khz: positive(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            memory_bus_bits: positive(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
            total_memory: ctx.total_mem()?,
        })
    }

    /// SMs × maximum clock × dense FLOP/clock/SM, in TFLOP/s; `None` for an architecture not in the table.
    pub fn dense_bf16_peak_tflops(&self) -> Option<f64> {
        let per_sm = dense_tensor_flops_per_clock_per_sm(self.compute_capability)?;
        let clock_hz = self.max_clock_khz? as f64 * 1e3;
        Some(self.sm_count as f64 * clock_hz * per_sm / 1e12)
    }

    /// Memory clock × bus width × 2 (double data rate), in GB/s, as the attributes report them. A lead only:
    /// HBM parts do not always report the clock their datasheet rate assumes; the copy benchmark measures the
    /// real ceiling.
    pub fn memory_peak_gbps(&self) -> Option<f64> {
        Some(self.memory_clock_khz? as f64 * 1e3 * self.memory_bus_bits? as f64 / 8.0 * 2.0 / 1e9)
    }

    /// Two lines describing the device and its peaks, for the top of a table.
    pub fn header(&self) -> String {
        let clock = self.max_clock_khz.map(|k| format!("{} MHz", k / 1000)).unwrap_or_else(|| "unknown clock".into());
        let peak = match self.dense_bf16_peak_tflops() {
            Some(p) => format!("{p:.0} TFLOP/s at {clock}"),
            None => {
                format!("unknown for compute capability {}.{}", self.compute_capability.0, self.compute_capability.1)
            }
        };
        let memory = self.memory_peak_gbps().map(|g| format!(", memory {g:.0} GB/s by attributes")).unwrap_or_default();
        format!(
            "# {} (sm_{}{}), {} SMs, max clock {clock}, L2 {:.1} MiB, {:.1} GiB{memory}\n\
             # dense bf16 peak of this device {peak}; \"% peak\" is of the {DATASHEET_DENSE_BF16_TFLOPS} TFLOP/s datasheet figure",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sm_count,
            self.l2_bytes as f64 / (1 << 20) as f64,
            self.total_memory as f64 / (1u64 << 30) as f64,
        )
    }
}

/// How many input sets to rotate through so that together they exceed `l2_multiple` × the L2 size: at least 2,
/// at most `max_sets`, and no more than fit in `memory_budget` bytes (at least 1). A set is everything one launch
/// touches, `bytes_per_set` bytes.
pub fn rotation_sets(
    bytes_per_set: usize,
    l2_bytes: usize,
    l2_multiple: f64,
    max_sets: usize,
    memory_budget: usize,
) -> usize {
    let bytes_per_set = bytes_per_set.max(1);
    let wanted = ((l2_bytes as f64 * l2_multiple) / bytes_per_set as f64).floor() as usize + 1;
    let fit = memory_budget / bytes_per_set;
    wanted.clamp(2, max_sets.max(2)).min(fit).max(1)
}

/// The SM (`%smid`) each block of a grid of one block per SM runs on, in block order, launched in clusters of
/// `cluster` blocks by `shape` ([`ClusterShape::Plain`] only for 1); over 8 allows the non-portable cluster sizes.
/// The grid is as many blocks as are resident at once (the SM count, or the resident clusters × `cluster`), each
/// holding its SM until all have started, so the map is the block scheduler's placement of a persistent grid.
/// Blocks of one cluster share a GPC, so large clusters show which SMs do.
pub fn block_placement(gpu: &Gpu, cluster: u32, shape: ClusterShape) -> Result<Vec<u32>> {
    const OP: &str = "block_placement";
    if cluster == 0 {
        return Err(Error::bad_argument(OP, "clusters of 0 blocks"));
    }
    let function = gpu.function(kernels::BLOCK_PLACEMENT)?;
    // The most a block may ask for: no second block fits beside it.
    let smem = SM90_MAX_SMEM_PER_BLOCK;
    function.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)?;
    if cluster > 8 {
        function.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)?;
    }
    let mut launch = ClusterLaunch {
        // Whole clusters, as the occupancy query wants too.
        grid_dim: (gpu.sm_count() / cluster * cluster, 1, 1),
        block_dim: (32, 1, 1),
        cluster_dim: (cluster, 1, 1),
        shared_mem_bytes: smem,
        dependent_launch: false,
    };
    if cluster > 1 {
        launch.grid_dim.0 = gpu.max_active_clusters(&function, &launch)? * cluster;
    }
    let blocks = launch.grid_dim.0 as usize;
    if blocks == 0 {
        return Err(Error::bad_argument(OP, format!("no cluster of {cluster} blocks fits on this GPU")));
    }
    let mut sm = gpu.stream().alloc_zeros::<u32>(blocks)?;
    // Long enough for the scheduler to have placed every block before the first leaves.
    let mut hold_ns = 200_000u64;
    {
        let (mut sm_address, _use) = sm.device_ptr_mut(gpu.stream());
        let mut args = [&mut sm_address as *mut u64 as *mut c_void, &mut hold_ns as *mut u64 as *mut c_void];
        // SAFETY: the arguments match `block_placement(sm: *mut u32, hold_ns: u64)`; `sm` holds a u32 per block;
        // the grid is whole clusters.
        unsafe { gpu.launch_as(shape, kernels::BLOCK_PLACEMENT.name, &function, &launch, &mut args)? };
    }
    Ok(gpu.stream().clone_dtoh(&sm)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> DeviceInfo {
        DeviceInfo {
            name: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            max_clock_khz: Some(1_980_000),
            l2_bytes: 60 << 20,
            memory_clock_khz: Some(2_619_000),
            memory_bus_bits: Some(6144),
            total_memory: 141 << 30,
        }
    }

    #[test]
    fn hopper_peak_from_sms_and_clock() {
        let peak = h200().dense_bf16_peak_tflops().unwrap();
        assert!((peak - 1070.5).abs() < 0.5, "{peak}");
        let at_datasheet_clock = DeviceInfo { max_clock_khz: Some(1_830_000), ..h200() };
        assert!((at_datasheet_clock.dense_bf16_peak_tflops().unwrap() - DATASHEET_DENSE_BF16_TFLOPS).abs() < 1.0);
        assert_eq!(DeviceInfo { compute_capability: (8, 9), ..h200() }.dense_bf16_peak_tflops(), None);
        assert_eq!(DeviceInfo { max_clock_khz: None, ..h200() }.dense_bf16_peak_tflops(), None);
        let header = h200().header();
        assert!(header.contains("132 SMs") && header.contains("1071 TFLOP/s") && header.contains("989"), "{header}");
    }

    #[test]
    fn rotation_exceeds_three_l2s() {
        let l2 = 60 << 20;
        // 1024³ bf16: A, B, C of 2 MiB each.
        let sets = rotation_sets(6 << 20, l2, 3.0, 64, usize::MAX);
        assert!(sets * (6 << 20) > 3 * l2, "{sets}");
        assert_eq!(sets, 31);
        // Larger than the L2 on its own: still two, so consecutive launches never reuse a set.
        assert_eq!(rotation_sets(3 << 30, l2, 3.0, 64, usize::MAX), 2);
        // Capped by the count and by memory.
        assert_eq!(rotation_sets(1 << 10, l2, 3.0, 64, usize::MAX), 64);
        assert_eq!(rotation_sets(1 << 30, l2, 3.0, 64, (1 << 30) + 5), 1);
        assert_eq!(rotation_sets(1 << 30, l2, 3.0, 64, 0), 1);
    }
}
