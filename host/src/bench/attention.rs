//! The attention benchmark: our Hopper kernel and its two ablations, timed as the GEMM contenders are, beside the
//! cuDNN and FlashAttention-2 rows ../shared/bench/torch_reference.py writes (`--peers`).
//!
//! Problems are torch_reference.py's `B,H,S,D,full|causal` (heads_q = heads_kv = H, seq_q = seq_k = S); our
//! tensors are packed BSHD (torch's are BHSD: the layout does not change the work). Each contender's launches
//! rotate through enough input sets (q, k, v, O, LSE) to exceed 3× the L2; TFLOP/s = 4·B·H·S²·D (halved when
//! causal) over the median time, the count torch_reference.py uses, so rows line up with the peers'.
//!
//! Output check: every contender's O and LSE on input set 0 (poisoned first) against the plain GPU reference
//! kernel (f32): O by max |out − ref| / max |ref| with GEMM's bounds (2^-6 bf16, 2^-9 f16), LSE by max
//! |out − ref| under the same figure (its error is about the 16-bit rounding, in absolute terms), every element
//! finite. With statistics on, one extra launch on set 0 counts the rescales: the fraction of (warp, key tile
//! after the first) steps in which a warp rescaled its output.

use cudarc::driver::CudaSlice;
use half::{bf16, f16};

use super::device::{DATASHEET_DENSE_BF16_TFLOPS, DeviceInfo, rotation_sets};
use super::inputs::InputPool;
use super::outputs::{compare_outputs, poison};
use super::report::{BenchObserver, Row, TurnRecord};
use super::suite::AttnShape as SuiteShape;
use super::timing::{DEFAULT_ROUNDS, TimingConfig, TurnEvent, effective_rounds, time_in_rounds};
use crate::error::{Error, Result};
use crate::ops::attention::{self, AttnElement, AttnOptions, AttnPlan, AttnShape, AttnVariant, RescaleStats};
use crate::ops::attention_backward::{AttnBwdPlan, DqOrder, attention_backward_reference};
use crate::runtime::Gpu;
use crate::types::Dtype;
use crate::verify::CheckValue;

/// The peer ratios are taken against (a torch_reference.py row).
pub const BASELINE: &str = "cudnn";

/// One of our attention kernels in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttnContender {
    pub name: &'static str,
    pub variant: AttnVariant,
}

/// The library's kernel as users get it, then the ablations: the other exponential split (polynomial at head dim
/// 128, MUFU only at 64), eager rescaling, no ping-pong, speculative exponentials.
pub const CONTENDERS: [AttnContender; 6] = [
    AttnContender { name: "oxtile", variant: AttnVariant::Auto },
    AttnContender { name: "oxtile-poly", variant: AttnVariant::Poly },
    AttnContender { name: "oxtile-mufu", variant: AttnVariant::Mufu },
    AttnContender { name: "oxtile-eager", variant: AttnVariant::Eager },
    AttnContender { name: "oxtile-nopingpong", variant: AttnVariant::NoPingpong },
    AttnContender { name: "oxtile-spec", variant: AttnVariant::Speculate },
];

/// One attention problem to benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttnBenchProblem {
    pub shape: SuiteShape,
    pub dtype: Dtype,
}

impl AttnBenchProblem {
    /// The shape as the library takes it: as many kv heads as query heads, as many keys as queries.
    pub fn attn_shape(&self) -> AttnShape {
        let s = self.shape;
        AttnShape::new(s.batch, s.seq, s.seq, s.heads, s.heads, s.head_dim)
    }

    /// Elements of q (and of k, v and O).
    pub fn tensor_len(&self) -> usize {
        let s = self.shape;
        s.batch * s.seq * s.heads * s.head_dim
    }

    /// Bytes of q, k, v, O and LSE: what one launch touches at least once.
    pub fn bytes_per_set(&self) -> usize {
        4 * self.tensor_len() * 2 + self.attn_shape().rows() * 4
    }

    pub fn flops(&self) -> f64 {
        self.shape.flops()
    }

    /// Why `contender` cannot run this problem, if it cannot.
    pub fn supports(&self, contender: &AttnContender) -> std::result::Result<(), String> {
        let d = self.shape.head_dim;
        let found = match self.dtype {
            Dtype::Bf16 => attention::kernel_for::<bf16>(d, contender.variant),
            Dtype::F16 => attention::kernel_for::<f16>(d, contender.variant),
        };
        found.map(drop).map_err(|e| match e {
            Error::Unsupported { message, .. } => message,
            other => other.to_string(),
        })
    }
}

impl std::fmt::Display for AttnBenchProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.shape, self.dtype.name())
    }
}

#[derive(Clone, Copy, Debug)]
pub struct AttnBenchConfig {
    pub timing: TimingConfig,
    /// The contenders of a problem take turns in this many rounds ([`super::timing::round_robin`]).
    pub rounds: usize,
    /// Compare every contender's output with the GPU reference's.
    pub check: bool,
    /// One more launch per contender with the rescale counters on.
    pub stats: bool,
    /// Rotate through enough input sets to exceed this many L2s.
    pub l2_multiple: f64,
    pub max_sets: usize,
}

impl Default for AttnBenchConfig {
    fn default() -> AttnBenchConfig {
        AttnBenchConfig {
            timing: TimingConfig::default(),
            rounds: DEFAULT_ROUNDS,
            check: true,
            stats: true,
            l2_multiple: 3.0,
            max_sets: 1024,
        }
    }
}

/// Runs every contender on `problem`; one row each, in order (with its error when it does not support the problem
/// or fails). As for GEMM, each contender is prepared and checked, one after another, then those prepared are timed
/// in `config.rounds` rounds (with the observer's clock meter if it has one), then each counts its rescales.
/// `observer` hears of each contender's preparation and each of its turns before they run, and of each turn's
/// figures after.
pub fn bench_attn(
    gpu: &Gpu,
    info: &DeviceInfo,
    pool: &InputPool,
    problem: &AttnBenchProblem,
    contenders: &[AttnContender],
    config: &AttnBenchConfig,
    observer: &mut dyn BenchObserver,
) -> Result<Vec<Row>> {
    match problem.dtype {
        Dtype::Bf16 => bench_typed::<bf16>(gpu, info, pool, problem, contenders, config, observer),
        Dtype::F16 => bench_typed::<f16>(gpu, info, pool, problem, contenders, config, observer),
    }
}

/// The input and output buffers of one launch.
struct Set<T> {
    q: CudaSlice<T>,
    k: CudaSlice<T>,
    v: CudaSlice<T>,
    o: CudaSlice<T>,
    lse: CudaSlice<f32>,
}

/// The GPU reference's O and LSE on set 0.
struct Reference {
    o: Vec<f32>,
    lse: Vec<f32>,
}

fn bench_typed<T: AttnElement + CheckValue>(
    gpu: &Gpu,
    info: &DeviceInfo,
    pool: &InputPool,
    problem: &AttnBenchProblem,
    contenders: &[AttnContender],
    config: &AttnBenchConfig,
    observer: &mut dyn BenchObserver,
) -> Result<Vec<Row>> {
    let stream = gpu.stream();
    let (free, _) = gpu.context().mem_get_info()?;
    // Room for the reference's f32 outputs and the check's copies.
    let budget = free / 10 * 6;
    let reference_bytes = problem.tensor_len() * 4 + problem.attn_shape().rows() * 4;
    if problem.bytes_per_set() + reference_bytes > budget {
        return Err(Error::bad_argument(
            "bench attn",
            format!(
                "{problem} needs {} MiB, {} MiB of device memory is free",
                problem.bytes_per_set() >> 20,
                free >> 20
            ),
        ));
    }
    let l2 = if info.l2_bytes > 0 { info.l2_bytes } else { 128 << 20 };
    let count =
        rotation_sets(problem.bytes_per_set(), l2, config.l2_multiple, config.max_sets, budget - reference_bytes);
    let len = problem.tensor_len();
    let mut sets = Vec::with_capacity(count);
    for set in 0..count {
        // Offsets 1_000_003 apart in an odd-length pool: no two tensors of any set are the same window.
        let upload = |which: usize| stream.clone_htod(&pool.fill::<T>(len, InputPool::offset(3 * set + which, 0)));
        sets.push(Set {
            q: upload(0)?,
            k: upload(1)?,
            v: upload(2)?,
            o: stream.alloc_zeros::<T>(len)?,
            lse: stream.alloc_zeros::<f32>(problem.attn_shape().rows())?,
        });
    }
    let reference = if config.check { Some(gpu_reference(gpu, problem, &sets[0])?) } else { None };
    stream.synchronize()?;

    let mut rows = Vec::with_capacity(contenders.len());
    // Per contender: a plan per set, once prepared.
    let mut plans: Vec<Option<Vec<AttnPlan<T>>>> = Vec::with_capacity(contenders.len());
    let mut ready = Vec::with_capacity(contenders.len());
    for (index, contender) in contenders.iter().enumerate() {
        observer.step(&format!("{problem} {}: check", contender.name));
        let mut row = Row::new("attn", problem.shape.to_string(), contender.name);
        row.kind = Some("oxtile".into());
        row.origin = Some("in-process".into());
        row.dtype = Some(problem.dtype.name().into());
        row.work = Some(problem.flops());
        row.sets = Some(count);
        let mut prepared = None;
        match problem.supports(contender) {
            Err(reason) => row.error = Some(format!("unsupported: {reason}")),
            Ok(()) => match prepare_and_check::<T>(gpu, problem, contender, &mut sets, reference.as_ref()) {
                Ok((contender_plans, check)) => {
                    if let Some((o_rel, lse_abs, not_finite)) = check {
                        row.max_rel_err = Some(o_rel);
                        let bound = problem.dtype.check_bound();
                        row.check = Some(if not_finite > 0 {
                            format!("FAIL: {not_finite} not finite")
                        } else if o_rel > bound {
                            "FAIL".into()
                        } else if lse_abs > bound {
                            format!("FAIL: lse off by {lse_abs:.2e}")
                        } else {
                            "ok".into()
                        });
                    }
                    prepared = Some(contender_plans);
                    ready.push(index);
                }
                Err(error) => row.error = Some(error.to_string()),
            },
        }
        plans.push(prepared);
        rows.push(row);
    }

    let rounds = effective_rounds(config.rounds, config.timing.runs);
    let meter = observer.meter();
    let timed = time_in_rounds(
        gpu,
        &config.timing,
        &ready,
        config.rounds,
        meter.as_ref(),
        &mut |event| match event {
            TurnEvent::Start(turn) => observer.step(&format!(
                "{problem} {}: round {}/{rounds}",
                contenders[turn.contender].name,
                turn.round + 1
            )),
            TurnEvent::Done(turn, times, clock) => {
                observer.turn_done(&TurnRecord::new(&rows[turn.contender], turn.round, times, clock))
            }
        },
        &mut |contender, i| {
            let s = i % count;
            let set = &mut sets[s];
            let plan = &plans[contender].as_ref().expect("only prepared contenders are timed")[s];
            plan.launch(gpu, &set.q, &set.k, &set.v, &mut set.o, &mut set.lse)
        },
    );
    for (contender, stats) in timed {
        let row = &mut rows[contender];
        let stats = stats.and_then(|(stats, clock)| {
            let rescale = match (&plans[contender], config.stats) {
                (Some(contender_plans), true) => Some(count_rescales(gpu, &contender_plans[0], &mut sets[0])?),
                _ => None,
            };
            Ok((stats, clock, rescale))
        });
        match stats {
            Ok((stats, clock, rescale)) => {
                row.set_stats(&stats);
                if let Some(clock) = &clock {
                    row.set_clock(clock);
                }
                let tflops = problem.flops() / (stats.median_ms * 1e-3) / 1e12;
                row.tflops = Some(tflops);
                row.pct_peak = Some(100.0 * tflops / DATASHEET_DENSE_BF16_TFLOPS);
                row.rescale = rescale.map(|s| s.fraction());
            }
            Err(error) => row.error = Some(error.to_string()),
        }
    }
    Ok(rows)
}

fn gpu_reference<T: AttnElement>(gpu: &Gpu, problem: &AttnBenchProblem, set: &Set<T>) -> Result<Reference> {
    let stream = gpu.stream();
    let shape = problem.attn_shape();
    let mut o = stream.alloc_zeros::<f32>(problem.tensor_len())?;
    let mut lse = stream.alloc_zeros::<f32>(shape.rows())?;
    let options = AttnOptions { causal: problem.shape.causal, ..AttnOptions::default() };
    attention::attention_reference(gpu, shape, &set.q, &set.k, &set.v, &mut o, None, &mut lse, options)?;
    Ok(Reference { o: stream.clone_dtoh(&o)?, lse: stream.clone_dtoh(&lse)? })
}

/// max |O − ref| / max |ref|, max |LSE − ref|, and the non-finite elements of O and LSE, of one contender's output.
type AttnCheck = (f64, f64, usize);

/// Makes `contender`'s plans (one per set: a plan's tensor maps hold its set's addresses) and, given the GPU
/// reference's output, checks the contender's output on set 0 against it.
fn prepare_and_check<T: AttnElement + CheckValue>(
    gpu: &Gpu,
    problem: &AttnBenchProblem,
    contender: &AttnContender,
    sets: &mut [Set<T>],
    reference: Option<&Reference>,
) -> Result<(Vec<AttnPlan<T>>, Option<AttnCheck>)> {
    let stream = gpu.stream();
    let shape = problem.attn_shape();
    let options = AttnOptions { causal: problem.shape.causal, variant: contender.variant, ..AttnOptions::default() };
    let plans = sets
        .iter_mut()
        .map(|s| AttnPlan::<T>::new(gpu, shape, options, &s.q, &s.k, &s.v, &mut s.o))
        .collect::<Result<Vec<_>>>()?;

    let check = match reference {
        Some(reference) => {
            let set = &mut sets[0];
            poison(gpu, &mut set.o)?;
            poison(gpu, &mut set.lse)?;
            plans[0].launch(gpu, &set.q, &set.k, &set.v, &mut set.o, &mut set.lse)?;
            let o: Vec<f32> = stream.clone_dtoh(&set.o)?.into_iter().map(|v| v.to_f64() as f32).collect();
            let lse = stream.clone_dtoh(&set.lse)?;
            gpu.context().check_err()?;
            let diff = compare_outputs(&o, &reference.o);
            let (lse_abs, lse_bad) = lse_difference(&lse, &reference.lse);
            Some((diff.max_rel, lse_abs, diff.not_finite + diff.reference_not_finite + lse_bad))
        }
        None => None,
    };
    Ok((plans, check))
}

/// One more launch of `plan` on `set`, with the kernel's rescale counters on.
fn count_rescales<T: AttnElement>(gpu: &Gpu, plan: &AttnPlan<T>, set: &mut Set<T>) -> Result<RescaleStats> {
    let stream = gpu.stream();
    let mut counters = stream.alloc_zeros::<u32>(oxtile_abi::ATTN_STATS_LEN)?;
    plan.launch_with_stats(gpu, &set.q, &set.k, &set.v, &mut set.o, &mut set.lse, &mut counters)?;
    Ok(RescaleStats::from_counters(&stream.clone_dtoh(&counters)?))
}

/// max |out − ref| over rows both have finite, and how many rows differ in finiteness or are NaN. Rows without
/// keys are −∞ in both (none in the suite, whose problems are square).
pub fn lse_difference(out: &[f32], reference: &[f32]) -> (f64, usize) {
    let mut max = 0f64;
    let mut bad = 0;
    for (&o, &r) in out.iter().zip(reference) {
        if o.is_finite() && r.is_finite() {
            max = max.max((o as f64 - r as f64).abs());
        } else if !(o == f32::NEG_INFINITY && r == f32::NEG_INFINITY) {
            bad += 1;
        }
    }
    (max, bad)
}

/// How a backward row makes its plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackwardMode {
    /// `AttnBwdPlan::new`: dQ added in any order.
    Plain,
    /// `AttnBwdPlan::new_deterministic`: the staggered order where the problem allows it, else ascending.
    Deterministic,
    /// `AttnBwdPlan::new_deterministic_in` this order (a row of its own, to compare the orders in one process).
    DeterministicIn(DqOrder),
}

/// The backward's rows (`oxtile bench attn --backward`): our Hopper backward alone, as it comes, in its
/// deterministic mode, and in that mode's ascending order.
pub const BACKWARD_CONTENDERS: [(&str, BackwardMode); 3] = [
    ("oxtile-bwd", BackwardMode::Plain),
    ("oxtile-bwd-det", BackwardMode::Deterministic),
    ("oxtile-bwd-det-asc", BackwardMode::DeterministicIn(DqOrder::Ascending)),
];

/// The backward's check bound: max |out − ref| / max |ref| per gradient (tests/attention_backward.rs says why).
pub fn backward_check_bound(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::Bf16 => 2f64.powi(-6),
        Dtype::F16 => 2f64.powi(-8),
    }
}

/// The backward of one problem (`oxtile bench attn --backward`): the forward kernel's O and LSE per input set, then
/// our backward (preprocessing, main kernel, dQ conversion) timed in rounds as the forward's contenders are, its
/// dQ, dK and dV on set 0 (poisoned first) checked against the plain GPU reference backward. FLOPs: 2.5 × the
/// forward's (five products against two), halved when causal.
pub fn bench_attn_backward(
    gpu: &Gpu,
    info: &DeviceInfo,
    pool: &InputPool,
    problem: &AttnBenchProblem,
    contenders: &[(&'static str, BackwardMode)],
    config: &AttnBenchConfig,
    observer: &mut dyn BenchObserver,
) -> Result<Vec<Row>> {
    match problem.dtype {
        Dtype::Bf16 => backward_typed::<bf16>(gpu, info, pool, problem, contenders, config, observer),
        Dtype::F16 => backward_typed::<f16>(gpu, info, pool, problem, contenders, config, observer),
    }
}

/// One backward launch's buffers: the forward's inputs and outputs, dO, and the gradients.
struct BackwardSet<T> {
    q: CudaSlice<T>,
    k: CudaSlice<T>,
    v: CudaSlice<T>,
    o: CudaSlice<T>,
    lse: CudaSlice<f32>,
    d_o: CudaSlice<T>,
    dq: CudaSlice<T>,
    dk: CudaSlice<T>,
    dv: CudaSlice<T>,
}

fn backward_typed<T: AttnElement + CheckValue>(
    gpu: &Gpu,
    info: &DeviceInfo,
    pool: &InputPool,
    problem: &AttnBenchProblem,
    contenders: &[(&'static str, BackwardMode)],
    config: &AttnBenchConfig,
    observer: &mut dyn BenchObserver,
) -> Result<Vec<Row>> {
    let stream = gpu.stream();
    let shape = problem.attn_shape();
    let len = problem.tensor_len();
    let options = AttnOptions { causal: problem.shape.causal, ..AttnOptions::default() };
    let (free, _) = gpu.context().mem_get_info()?;
    let budget = free / 10 * 6;
    // Per set: 8 tensors of the input type and LSE; the plan's workspaces (f32 dQ, two rows) and the reference's
    // three f32 gradients once.
    let set_bytes = 8 * len * std::mem::size_of::<T>() + shape.rows() * 4;
    let fixed_bytes = 2 * len * 4 + 3 * len * 4;
    if set_bytes + fixed_bytes > budget {
        return Err(Error::bad_argument(
            "bench attn --backward",
            format!(
                "{problem} needs {} MiB, {} MiB of device memory is free",
                (set_bytes + fixed_bytes) >> 20,
                free >> 20
            ),
        ));
    }
    let l2 = if info.l2_bytes > 0 { info.l2_bytes } else { 128 << 20 };
    let count = rotation_sets(set_bytes, l2, config.l2_multiple, config.max_sets, budget - fixed_bytes);
    let mut sets = Vec::with_capacity(count);
    for set in 0..count {
        let upload = |which: usize| stream.clone_htod(&pool.fill::<T>(len, InputPool::offset(4 * set + which, 0)));
        let (q, k, v, d_o) = (upload(0)?, upload(1)?, upload(2)?, upload(3)?);
        let mut o = stream.alloc_zeros::<T>(len)?;
        let mut lse = stream.alloc_zeros::<f32>(shape.rows())?;
        attention::attention::<T>(gpu, shape, &q, &k, &v, &mut o, &mut lse, options)?;
        let (dq, dk, dv) =
            (stream.alloc_zeros::<T>(len)?, stream.alloc_zeros::<T>(len)?, stream.alloc_zeros::<T>(len)?);
        sets.push(BackwardSet { q, k, v, o, lse, d_o, dq, dk, dv });
    }
    stream.synchronize()?;

    let mut rows = Vec::new();
    let mut plans: Vec<Vec<AttnBwdPlan<T>>> = Vec::new();
    let mut ready = Vec::new();
    for (index, &(name, mode)) in contenders.iter().enumerate() {
        observer.step(&format!("{problem} {name}: check"));
        let mut row = Row::new("attn-bwd", problem.shape.to_string(), name);
        row.kind = Some("oxtile".into());
        row.origin = Some("in-process".into());
        row.dtype = Some(problem.dtype.name().into());
        row.work = Some(2.5 * problem.flops());
        row.sets = Some(count);
        let made = sets
            .iter()
            .map(|s| {
                let (q, k, v, d_o) = (&s.q, &s.k, &s.v, &s.d_o);
                match mode {
                    BackwardMode::Plain => AttnBwdPlan::<T>::new(gpu, shape, options, q, k, v, d_o),
                    BackwardMode::Deterministic => {
                        AttnBwdPlan::<T>::new_deterministic(gpu, shape, options, q, k, v, d_o)
                    }
                    BackwardMode::DeterministicIn(order) => {
                        AttnBwdPlan::<T>::new_deterministic_in(gpu, shape, options, q, k, v, d_o, order)
                    }
                }
            })
            .collect::<Result<Vec<_>>>();
        match made.and_then(|made| {
            let check =
                if config.check { Some(check_backward::<T>(gpu, &made[0], &mut sets[0], options)?) } else { None };
            Ok((made, check))
        }) {
            Ok((made, check)) => {
                if let Some((max_rel, not_finite)) = check {
                    row.max_rel_err = Some(max_rel);
                    row.check = Some(if not_finite > 0 {
                        format!("FAIL: {not_finite} not finite")
                    } else if max_rel > backward_check_bound(problem.dtype) {
                        "FAIL".into()
                    } else {
                        "ok".into()
                    });
                }
                plans.push(made);
                ready.push(index);
            }
            Err(error) => {
                row.error = Some(error.to_string());
                plans.push(Vec::new());
            }
        }
        rows.push(row);
    }

    let rounds = effective_rounds(config.rounds, config.timing.runs);
    let meter = observer.meter();
    let timed = time_in_rounds(
        gpu,
        &config.timing,
        &ready,
        config.rounds,
        meter.as_ref(),
        &mut |event| match event {
            TurnEvent::Start(turn) => {
                observer.step(&format!("{problem} {}: round {}/{rounds}", contenders[turn.contender].0, turn.round + 1))
            }
            TurnEvent::Done(turn, times, clock) => {
                observer.turn_done(&TurnRecord::new(&rows[turn.contender], turn.round, times, clock))
            }
        },
        &mut |contender, i| {
            let s = i % count;
            let set = &mut sets[s];
            plans[contender][s].launch(
                gpu,
                &set.q,
                &set.k,
                &set.v,
                &set.o,
                &set.lse,
                &set.d_o,
                &mut set.dq,
                &mut set.dk,
                &mut set.dv,
            )
        },
    );
    for (contender, stats) in timed {
        let row = &mut rows[contender];
        match stats {
            Ok((stats, clock)) => {
                row.set_stats(&stats);
                if let Some(clock) = &clock {
                    row.set_clock(clock);
                }
                let tflops = 2.5 * problem.flops() / (stats.median_ms * 1e-3) / 1e12;
                row.tflops = Some(tflops);
                row.pct_peak = Some(100.0 * tflops / DATASHEET_DENSE_BF16_TFLOPS);
            }
            Err(error) => row.error = Some(error.to_string()),
        }
    }
    Ok(rows)
}

/// One launch of `plan` on `set` (outputs poisoned first) against the plain GPU reference backward: the largest
/// max |out − ref| / max |ref| over dQ, dK and dV, and the non-finite elements.
fn check_backward<T: AttnElement + CheckValue>(
    gpu: &Gpu,
    plan: &AttnBwdPlan<T>,
    set: &mut BackwardSet<T>,
    options: AttnOptions,
) -> Result<(f64, usize)> {
    let stream = gpu.stream();
    let shape = plan.problem().shape;
    poison(gpu, &mut set.dq)?;
    poison(gpu, &mut set.dk)?;
    poison(gpu, &mut set.dv)?;
    plan.launch(gpu, &set.q, &set.k, &set.v, &set.o, &set.lse, &set.d_o, &mut set.dq, &mut set.dk, &mut set.dv)?;
    let (q_len, kv_len) = (set.dq.len(), set.dk.len());
    let (mut rq, mut rk, mut rv) =
        (stream.alloc_zeros::<f32>(q_len)?, stream.alloc_zeros::<f32>(kv_len)?, stream.alloc_zeros::<f32>(kv_len)?);
    attention_backward_reference::<T>(
        gpu, shape, &set.q, &set.k, &set.v, &set.o, &set.lse, &set.d_o, &mut rq, &mut rk, &mut rv, options,
    )?;
    let widen = |x: &CudaSlice<T>| -> Result<Vec<f32>> {
        Ok(stream.clone_dtoh(x)?.into_iter().map(|v| v.to_f64() as f32).collect())
    };
    let (mut max_rel, mut not_finite) = (0f64, 0);
    for (ours, reference) in [(&set.dq, &rq), (&set.dk, &rk), (&set.dv, &rv)] {
        let diff = compare_outputs(&widen(ours)?, &stream.clone_dtoh(reference)?);
        max_rel = max_rel.max(diff.max_rel);
        not_finite += diff.not_finite + diff.reference_not_finite;
    }
    gpu.context().check_err()?;
    Ok((max_rel, not_finite))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str, dtype: Dtype) -> AttnBenchProblem {
        AttnBenchProblem { shape: text.parse().unwrap(), dtype }
    }

    #[test]
    fn problems_map_to_library_shapes_and_sizes() {
        let p = problem("4,16,8192,128,causal", Dtype::Bf16);
        assert_eq!(p.attn_shape(), AttnShape::new(4, 8192, 8192, 16, 16, 128));
        assert_eq!(p.tensor_len(), 4 * 8192 * 16 * 128);
        assert_eq!(p.bytes_per_set(), 4 * p.tensor_len() * 2 + 4 * 16 * 8192 * 4);
        assert_eq!(p.flops(), p.attn_shape().flops(true));
        assert_eq!(p.to_string(), "4,16,8192,128,causal bf16");
        // The suite's tensors are 128 MiB each: even a single set is past the L2, so two rotate.
        for shape in super::super::suite::attn_suite() {
            let p = AttnBenchProblem { shape, dtype: Dtype::Bf16 };
            assert_eq!(rotation_sets(p.bytes_per_set(), 60 << 20, 3.0, 1024, usize::MAX), 2, "{shape}");
        }
    }

    #[test]
    fn ablations_run_where_their_kernels_exist() {
        let supported = |p: &AttnBenchProblem| CONTENDERS.map(|c| p.supports(&c).is_ok());
        // oxtile, -poly, -mufu, -eager, -nopingpong, -spec
        assert_eq!(supported(&problem("2,16,4096,128,full", Dtype::Bf16)), [true, true, false, true, true, true]);
        assert_eq!(supported(&problem("2,32,4096,64,full", Dtype::Bf16)), [true, false, true, false, false, false]);
        assert_eq!(supported(&problem("2,16,4096,128,causal", Dtype::F16)), [true, false, false, false, false, false]);
        let d64 = problem("2,32,4096,64,full", Dtype::Bf16);
        assert!(d64.supports(&CONTENDERS[3]).unwrap_err().contains("ablations"));
        assert_eq!(supported(&problem("4,16,8192,256,full", Dtype::Bf16)), [true, false, false, false, false, false]);
        assert_eq!(supported(&problem("4,16,8192,256,causal", Dtype::F16)), [true, false, false, false, false, false]);
        let odd = problem("2,16,4096,96,causal", Dtype::Bf16);
        assert!(odd.supports(&CONTENDERS[0]).unwrap_err().contains("64, 128 or 256"));
    }

    #[test]
    fn lse_differences_count_mismatched_infinities() {
        let reference = [1.0, 2.0, f32::NEG_INFINITY];
        assert_eq!(lse_difference(&[1.0, 2.5, f32::NEG_INFINITY], &reference), (0.5, 0));
        assert_eq!(lse_difference(&[1.0, f32::NAN, 0.0], &reference), (0.0, 2));
    }
}
