//! Shared by the criterion benches: a criterion [`Measurement`] that reads GPU time from CUDA events, so
//! `cargo bench` reports the time the GPU spent, not the host's.
//!
//! Criterion times a batch of iterations between `start` and `end`: here `start` records a CUDA event on the
//! GPU's stream, the iterations enqueue their launches, and `end` records a second event, waits for it and
//! returns the GPU time between the two. Launches are asynchronous, so the host runs ahead and the batch is timed
//! as the GPU ran it back to back; criterion divides by the iteration count as usual.
//!
//! Throughput: `Throughput::Bytes`/`BytesDecimal` print GB/s (decimal); `Throughput::Elements` counts
//! floating-point operations and prints FLOP/s.

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, Throughput};
use cudarc::driver::CudaEvent;
use oxtile::Gpu;
use oxtile::bench::timing::GpuClock;

/// GPU time in nanoseconds, from CUDA events.
pub struct GpuTime {
    clock: GpuClock,
}

impl GpuTime {
    pub fn new(gpu: &Gpu) -> GpuTime {
        GpuTime { clock: GpuClock::new(gpu) }
    }
}

impl Measurement for GpuTime {
    type Intermediate = CudaEvent;
    type Value = f64;

    fn start(&self) -> CudaEvent {
        self.clock.start().unwrap_or_else(|error| panic!("recording the start event: {error}"))
    }

    fn end(&self, start: CudaEvent) -> f64 {
        // Errors of the launches in the batch surface here, at the synchronize.
        self.clock.stop_ms(&start).unwrap_or_else(|error| panic!("timing the batch on the GPU: {error}")) * 1e6
    }

    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }

    fn zero(&self) -> f64 {
        0.0
    }

    fn to_f64(&self, value: &f64) -> f64 {
        *value
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &GpuTimeFormatter
    }
}

struct GpuTimeFormatter;

/// (divisor, unit) for a rate of `per_second` things per second, decimal prefixes.
fn rate_unit(per_second: f64, unit: &'static [&'static str; 5]) -> (f64, &'static str) {
    let mut scale = 1.0;
    for name in unit.iter().take(4) {
        if per_second < scale * 1e3 {
            return (scale, name);
        }
        scale *= 1e3;
    }
    (scale, unit[4])
}

impl ValueFormatter for GpuTimeFormatter {
    fn scale_values(&self, typical_ns: f64, values: &mut [f64]) -> &'static str {
        let (divisor, unit) = if typical_ns < 1e3 {
            (1.0, "ns")
        } else if typical_ns < 1e6 {
            (1e3, "µs")
        } else if typical_ns < 1e9 {
            (1e6, "ms")
        } else {
            (1e9, "s")
        };
        for value in values.iter_mut() {
            *value /= divisor;
        }
        unit
    }

    fn scale_throughputs(&self, typical_ns: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        const BYTES: [&str; 5] = ["B/s", "KB/s", "MB/s", "GB/s", "TB/s"];
        const FLOPS: [&str; 5] = ["FLOP/s", "KFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s"];
        const BITS: [&str; 5] = ["bit/s", "Kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
        let (per_iteration, units) = match *throughput {
            Throughput::Bytes(bytes) | Throughput::BytesDecimal(bytes) => (bytes as f64, &BYTES),
            Throughput::Elements(flops) | Throughput::ElementsAndBytes { elements: flops, .. } => {
                (flops as f64, &FLOPS)
            }
            Throughput::Bits(bits) => (bits as f64, &BITS),
        };
        let (divisor, unit) = rate_unit(per_iteration * 1e9 / typical_ns, units);
        for value in values.iter_mut() {
            *value = per_iteration * 1e9 / *value / divisor;
        }
        unit
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

/// GPU 0, or `None` after saying why there is none: a bench binary on a machine without a GPU prints this and
/// exits 0 (benchmarks are not tests).
pub fn gpu_or_explain(bench: &str) -> Option<Gpu> {
    match Gpu::new(0) {
        Ok(gpu) => Some(gpu),
        Err(error) => {
            eprintln!("{bench}: {error}");
            eprintln!("{bench}: these benchmarks time the GPU and there is none here; nothing to do.");
            None
        }
    }
}

/// Criterion measuring GPU time, with settings that keep a GPU suite short; the command line still overrides them.
pub fn criterion(gpu: &Gpu) -> Criterion<GpuTime> {
    Criterion::default()
        .with_measurement(GpuTime::new(gpu))
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .without_plots()
        .configure_from_args()
}
