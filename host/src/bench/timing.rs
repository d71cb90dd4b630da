//! GPU timing with CUDA events: warm-up, many timed launches, order statistics of the per-launch times.
//!
//! Every launch is bracketed by its own pair of events, so a sample is the GPU time of that launch alone. In
//! [`TimingMode::Queued`] (the default) the timed launches go in batches of at most [`MAX_HELD_BATCH`] behind a
//! stream hold ([`super::hold`]): a one-thread kernel keeps the stream waiting while the host queues the batch's
//! (event, launch, event) triples, then the host releases it and synchronizes. The GPU runs the batch back to back,
//! so the host's cost of queueing a launch stays out of the samples even where it exceeds the kernel's time (short
//! kernels: cuBLASLt's host path and our cluster launches take 5–30 µs, as long as a 1024³ GEMM). A hold that timed
//! out fails the measurement. [`TimingMode::Unblocked`] queues the same way without the hold, for profilers and
//! sanitizers that make every launch wait for the GPU (the hold could only time out there); short kernels then read
//! the host's pace. [`TimingMode::Synced`] waits for each launch before enqueueing the next, the way
//! torch_reference.py does, so each sample also holds the launch latency of an idle GPU (a few microseconds: it
//! matters only for the smallest problems). [`TimingMode::Batched`] is held like `Queued` but brackets each batch
//! with one pair of events, a sample being the batch's time over its launches: no event sits between two launches,
//! so a sample is what a stream of back-to-back calls costs per call. The events between launches of the other
//! modes make the GPU finish one kernel before it records, then start the next: on the H200 that adds about 2–3 µs
//! to every per-launch sample (docs/bench-harness.md), alike for every contender but a third of a 1024³ GEMM.
//!
//! [`round_robin`] plans how the benchmarks interleave their contenders: rather than all runs of one contender, then
//! all of the next, each contender gets a share of its runs in every one of several rounds, so that slow drifts of the
//! GPU's state (its clocks under a power limit, its temperature) fall on every contender alike.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use super::clocks::{ClockMeter, ClockSamples};
use super::hold::StreamHold;
use super::stats::Stats;
use crate::error::{Error, Result};
use crate::runtime::Gpu;

/// How launches are timed; see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TimingMode {
    /// Queue a batch of timed launches behind a stream hold, release it, synchronize: GPU time only.
    #[default]
    Queued,
    /// Queue every timed launch, synchronize once, without the hold: for profilers and sanitizers that serialize
    /// launches. Short kernels read the host's pace of queueing.
    Unblocked,
    /// Synchronize after every launch, as torch_reference.py does: includes each launch's latency.
    Synced,
    /// Queue batches behind a stream hold as `queued`, one pair of events around each batch: a sample is a batch's
    /// time per launch, with no event between launches.
    Batched,
}

/// Most timed launches queued behind one stream hold. The driver's launch queue is finite (about a thousand pending
/// launches is the figure commonly reported); when it is full a launch call waits for the GPU, which waits for the
/// host: a deadlock until the hold times out. A batch of 32 (event, launch, event) triples, a launch being at most a few kernels and memsets,
/// stays far below that.
pub const MAX_HELD_BATCH: usize = 32;

/// Most stream operations queued behind one stream hold (with their events): half the commonly reported queue
/// depth. A Gram Newton-Schulz plan (about forty operations a call) in batches of 32 filled the queue and timed out.
pub const MAX_HELD_OPERATIONS: usize = 512;

/// How long a hold waits for the host's release. Queueing a batch takes the host about a millisecond (32 launches of
/// 5–30 µs each): this is far beyond that, and short enough that a launch call stuck waiting for the held GPU costs
/// a second, not a hang.
pub const DEFAULT_HOLD_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimingConfig {
    /// Untimed launches first: module loading, handle set-up, clocks ramping up.
    pub warmup: usize,
    /// Timed launches; the statistics are over these.
    pub runs: usize,
    pub mode: TimingMode,
    /// [`TimingMode::Queued`]: how long the stream hold waits for the host's release before giving up.
    pub hold_timeout: Duration,
    /// Before the timed launches of every turn, after the warm-up, more untimed launches until the GPU has run them
    /// this long: the power controller then sets the clock for this kernel, not for whatever ran (or idled) before.
    pub settle: Duration,
    /// Stream operations (kernel launches, copies) one call of the timed closure queues: the held batches shrink so
    /// that a batch stays within [`MAX_HELD_OPERATIONS`] ([`TimingConfig::held_batch`]). 1 for a single kernel.
    pub operations_per_launch: usize,
}

impl TimingConfig {
    /// Most timed calls queued behind one stream hold: [`MAX_HELD_BATCH`], fewer where each call queues several
    /// operations (a Newton-Schulz plan queues about forty), so that a batch never fills the driver's queue.
    pub fn held_batch(&self) -> usize {
        (MAX_HELD_OPERATIONS / self.operations_per_launch.max(1)).clamp(1, MAX_HELD_BATCH)
    }
}

impl Default for TimingConfig {
    fn default() -> TimingConfig {
        TimingConfig {
            warmup: 10,
            runs: 50,
            mode: TimingMode::Queued,
            hold_timeout: DEFAULT_HOLD_TIMEOUT,
            settle: Duration::ZERO,
            operations_per_launch: 1,
        }
    }
}

/// Times `launch(i)` for i = 0, 1, 2, ...: `config.warmup` untimed calls, then `config.runs` calls each between a
/// pair of CUDA events on the GPU's stream, in `config.mode`. `launch` must only enqueue work on `gpu.stream()` (no
/// synchronization); `i` lets it rotate among input sets. Any error of the launches, including one raised
/// asynchronously on the GPU, fails the whole measurement, as does a stream hold that timed out.
pub fn time_gpu(gpu: &Gpu, config: &TimingConfig, launch: impl FnMut(usize) -> Result<()>) -> Result<Stats> {
    if config.runs == 0 {
        return Err(Error::bad_argument("bench", "the number of timed runs must be at least 1"));
    }
    let (samples, _) = GpuTimer::new(gpu, config)?.time(gpu, config.warmup, config.runs, None, launch)?;
    Stats::from_samples(&samples)
        .ok_or_else(|| Error::bad_argument("bench", format!("CUDA events gave unusable times: {samples:?}")))
}

/// Times one launch sequence in several calls (the rounds of [`round_robin`]), numbering its launches across them:
/// `launch(i)` gets i = 0, 1, 2, ... over all calls, warm-up launches included, so input sets keep rotating.
pub struct GpuTimer {
    mode: TimingMode,
    hold_timeout: Duration,
    settle: Duration,
    /// Most timed launches per hold ([`TimingConfig::held_batch`]).
    held_batch: usize,
    /// The stream hold, in [`TimingMode::Queued`].
    hold: Option<StreamHold>,
    /// Launches made so far, warm-up included: the next launch's index.
    launches: usize,
}

impl GpuTimer {
    pub fn new(gpu: &Gpu, config: &TimingConfig) -> Result<GpuTimer> {
        let hold = match config.mode {
            TimingMode::Queued | TimingMode::Batched => Some(StreamHold::new(gpu)?),
            TimingMode::Unblocked | TimingMode::Synced => None,
        };
        Ok(GpuTimer {
            mode: config.mode,
            hold_timeout: config.hold_timeout,
            settle: config.settle,
            held_batch: config.held_batch(),
            hold,
            launches: 0,
        })
    }

    /// `warmup` untimed launches, then more until the GPU has run them for the configuration's `settle`, then
    /// `runs` timed ones; returns the timed ones' GPU times in milliseconds, in launch order (in
    /// [`TimingMode::Batched`], one time per launch for each batch: its mean), and with a `meter` the SM clock
    /// samples taken as they ran. With a hold, the first call makes at least one warm-up launch: the first launch
    /// of a lazily loaded kernel may load its code, which waits for the stream, which would be waiting for the host.
    pub fn time(
        &mut self,
        gpu: &Gpu,
        warmup: usize,
        runs: usize,
        meter: Option<&ClockMeter>,
        mut launch: impl FnMut(usize) -> Result<()>,
    ) -> Result<(Vec<f64>, Option<ClockSamples>)> {
        let stream = gpu.stream();
        let ctx = gpu.context();
        let warmup = if self.hold.is_some() && self.launches == 0 { warmup.max(1) } else { warmup };
        for _ in 0..warmup {
            launch(self.launches)?;
            self.launches += 1;
        }
        stream.synchronize()?;
        ctx.check_err()?;
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        self.settle(gpu, &mut launch)?;
        let mut clock = meter.map(|_| ClockSamples::default());
        let max_batch = if self.hold.is_some() { self.held_batch } else { runs.max(1) };
        let plan: Vec<Range<usize>> = batches(runs, max_batch).collect();
        let batched = self.mode == TimingMode::Batched;
        // One pair of events per launch, or per batch when batched.
        let pairs = if batched { plan.len() } else { runs };
        let events =
            (0..pairs).map(|_| Ok((ctx.new_event(flags)?, ctx.new_event(flags)?))).collect::<Result<Vec<_>>>()?;
        for (index, batch) in plan.iter().enumerate() {
            let events = if batched { &events[index..index + 1] } else { &events[batch.clone()] };
            let launches = if batched { batch.len() } else { 1 };
            match &self.hold {
                Some(hold) => {
                    let held = hold.hold(gpu, self.hold_timeout)?;
                    let queued = enqueue_timed(stream, events, launches, self.mode, &mut self.launches, &mut launch);
                    held.release();
                    // The batch is running now: the clock it runs at.
                    if let (Some(meter), Some(clock)) = (meter, clock.as_mut()) {
                        meter.sample_clock(clock);
                    }
                    stream.synchronize()?;
                    ctx.check_err()?;
                    queued?;
                    hold.outcome().check(batch.len(), self.hold_timeout)?;
                }
                None => {
                    enqueue_timed(stream, events, launches, self.mode, &mut self.launches, &mut launch)?;
                    if let (Some(meter), Some(clock)) = (meter, clock.as_mut()) {
                        meter.sample_clock(clock);
                    }
                    stream.synchronize()?;
                    ctx.check_err()?;
                }
            }
        }
        if !batched {
            let samples = events.iter().map(|(start, end)| Ok(start.elapsed_ms(end)? as f64)).collect::<Result<_>>()?;
            return Ok((samples, clock));
        }
        let mut samples = Vec::with_capacity(runs);
        for ((start, end), batch) in events.iter().zip(&plan) {
            let per_launch = start.elapsed_ms(end)? as f64 / batch.len() as f64;
            samples.extend(std::iter::repeat_n(per_launch, batch.len()));
        }
        Ok((samples, clock))
    }

    /// Untimed launches until the GPU has run them for `self.settle`, in batches that double up to
    /// [`MAX_SETTLE_BATCH`] (no hold: the GPU runs each batch as the host queues it). A launch that keeps the GPU
    /// (nearly) idle would never get there: the host gives up after ten times as long.
    fn settle(&mut self, gpu: &Gpu, launch: &mut impl FnMut(usize) -> Result<()>) -> Result<()> {
        let (stream, ctx) = (gpu.stream(), gpu.context());
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let give_up = std::time::Instant::now() + 10 * self.settle;
        let mut busy = Duration::ZERO;
        let mut batch = 1;
        while busy < self.settle && std::time::Instant::now() < give_up {
            let start = stream.record_event(flags)?;
            for _ in 0..batch {
                launch(self.launches)?;
                self.launches += 1;
            }
            let end = stream.record_event(flags)?;
            end.synchronize()?;
            ctx.check_err()?;
            busy += Duration::from_secs_f64(f64::from(start.elapsed_ms(&end)?.max(0.0)) / 1e3);
            batch = (batch * 2).min(MAX_SETTLE_BATCH);
        }
        Ok(())
    }
}

/// Most settling launches queued before the host waits for them: enough that the host's waits are a small part of
/// the GPU's time for kernels of tens of microseconds, few enough to stay well inside the driver's launch queue.
pub const MAX_SETTLE_BATCH: usize = 256;

/// Queues one (start event, `per_pair` launches, end event) sequence per pair of `events`, numbering the launches
/// from `*launches`; in [`TimingMode::Synced`] waits for each before the next.
fn enqueue_timed(
    stream: &Arc<CudaStream>,
    events: &[(CudaEvent, CudaEvent)],
    per_pair: usize,
    mode: TimingMode,
    launches: &mut usize,
    launch: &mut impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    for (start, end) in events {
        start.record(stream)?;
        for _ in 0..per_pair {
            launch(*launches)?;
            *launches += 1;
        }
        end.record(stream)?;
        if mode == TimingMode::Synced {
            end.synchronize()?;
        }
    }
    Ok(())
}

/// `0..runs` cut into the fewest consecutive batches of at most `max_batch` (50 runs: 25 + 25, not 32 + 18, so no
/// batch is a short remainder).
pub fn batches(runs: usize, max_batch: usize) -> impl Iterator<Item = Range<usize>> {
    assert!(max_batch > 0, "batches of at most 0 runs");
    even_split(runs, runs.div_ceil(max_batch))
}

/// `0..total` cut into `parts` consecutive ranges whose lengths differ by at most one; none is empty when
/// `parts <= total`.
pub fn even_split(total: usize, parts: usize) -> impl Iterator<Item = Range<usize>> {
    (0..parts).map(move |part| part * total / parts..(part + 1) * total / parts)
}

/// Rounds of [`round_robin`] the benchmarks time their contenders in, unless told otherwise.
pub const DEFAULT_ROUNDS: usize = 5;

/// What [`time_in_rounds`] tells its observer: a turn about to start, or one just timed.
pub enum TurnEvent<'a> {
    Start(&'a Turn),
    /// The turn's per-launch times (ms) and, with a meter, its clock samples.
    Done(&'a Turn, &'a [f64], Option<&'a ClockSamples>),
}

/// One contender's outcome over all its turns: its statistics, and with a meter its clock samples over all
/// its turns; or the error that stopped its timing.
pub type Timed = Result<(Stats, Option<ClockSamples>)>;

/// Times the contenders of one problem in the turns of [`round_robin`]: `ready` holds the indices of those to time,
/// `launch(contender, i)` enqueues contender's launch number i (numbered across its turns, warm-up included; it
/// must only enqueue, as for [`time_gpu`]), and `observe` hears of each turn before it starts and after it is
/// timed. Returns, in the order of `ready`, each contender's outcome; a contender whose timing failed gets no
/// further turns, the others go on.
pub fn time_in_rounds(
    gpu: &Gpu,
    config: &TimingConfig,
    ready: &[usize],
    rounds: usize,
    meter: Option<&ClockMeter>,
    observe: &mut dyn FnMut(TurnEvent),
    launch: &mut dyn FnMut(usize, usize) -> Result<()>,
) -> Vec<(usize, Timed)> {
    if config.runs == 0 {
        let error = || Error::bad_argument("bench", "the number of timed runs must be at least 1");
        return ready.iter().map(|&contender| (contender, Err(error()))).collect();
    }
    /// A contender's timer (made at its first turn), its times and clock samples so far.
    struct Progress {
        timer: Option<GpuTimer>,
        samples: Vec<f64>,
        clock: Option<ClockSamples>,
    }
    let mut progress: Vec<Result<Progress>> = ready
        .iter()
        .map(|_| Ok(Progress { timer: None, samples: Vec::with_capacity(config.runs), clock: None }))
        .collect();
    for turn in round_robin(ready, config.runs, rounds, config.warmup) {
        let slot = ready.iter().position(|&c| c == turn.contender).expect("turns are of ready contenders");
        let Ok(state) = &mut progress[slot] else { continue };
        observe(TurnEvent::Start(&turn));
        let timed = match &mut state.timer {
            Some(timer) => Ok(timer),
            None => GpuTimer::new(gpu, config).map(|made| state.timer.insert(made)),
        }
        .and_then(|timer| timer.time(gpu, turn.warmup, turn.runs.len(), meter, |i| launch(turn.contender, i)));
        match timed {
            Ok((times, clock)) => {
                observe(TurnEvent::Done(&turn, &times, clock.as_ref()));
                state.samples.extend(times);
                if let Some(clock) = clock {
                    state.clock.get_or_insert_with(ClockSamples::default).merge(&clock);
                }
            }
            Err(error) => progress[slot] = Err(error),
        }
    }
    ready
        .iter()
        .zip(progress)
        .map(|(&contender, state)| {
            let outcome = state.and_then(|state| {
                let stats = Stats::from_samples(&state.samples).ok_or_else(|| {
                    Error::bad_argument("bench", format!("CUDA events gave unusable times: {:?}", state.samples))
                })?;
                Ok((stats, state.clock))
            });
            (contender, outcome)
        })
        .collect()
}

/// The rounds [`round_robin`] makes of `rounds` asked for over `runs` timed runs: at least one, and no round
/// without a run.
pub fn effective_rounds(rounds: usize, runs: usize) -> usize {
    rounds.clamp(1, runs.max(1))
}

/// One contender's turn in a round: its warm-up launches, then the timed runs with these indices among its own
/// (runs `0..runs`; its samples, in turn order, are in index order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    pub round: usize,
    /// Index of the contender in the benchmark's list.
    pub contender: usize,
    pub warmup: usize,
    pub runs: Range<usize>,
}

/// Untimed launches before a contender's turn in a later round: other contenders' kernels ran in between (their
/// data in the L2, their code in the instruction caches). A contender's first turn gets the full warm-up.
pub const ROUND_WARMUP: usize = 2;

/// The order in which the contenders of one problem are timed: `rounds` rounds (at most `runs`, at least one), in
/// each of which every contender of `ready` (the indices of those that prepared, in order) times its share of
/// `runs`, the shares differing by at most one run ([`even_split`]). A contender's first turn warms up with
/// `warmup` launches, its later ones with [`ROUND_WARMUP`] (never more than `warmup`). One round is the order of
/// timing each contender in full before the next.
///
/// Round r starts at the r-th contender of `ready` (the list rotated by r), so that over the rounds each contender
/// takes each place in the order about equally often. A fixed order gives each place its own bias under the power cap:
/// one kernel timed as two contenders of one run differed by 7% (docs/perf-notes.md, GEMM sm90 v16).
pub fn round_robin(ready: &[usize], runs: usize, rounds: usize, warmup: usize) -> Vec<Turn> {
    let rounds = effective_rounds(rounds, runs);
    let shares: Vec<Range<usize>> = even_split(runs, rounds).collect();
    let mut turns = Vec::with_capacity(shares.len() * ready.len());
    for (round, share) in shares.iter().enumerate() {
        let start = if ready.is_empty() { 0 } else { round % ready.len() };
        for &contender in ready[start..].iter().chain(&ready[..start]) {
            let warmup = if round == 0 { warmup } else { warmup.min(ROUND_WARMUP) };
            turns.push(Turn { round, contender, warmup, runs: share.clone() });
        }
    }
    turns
}

/// A stopwatch on a stream, for timing a batch of launches as a whole (criterion's measurement uses it).
///
/// It has no stream hold: criterion chooses how many iterations go between `start` and `stop_ms`, thousands for a
/// short kernel, more than the driver's launch queue takes while the GPU is held (see [`MAX_HELD_BATCH`]). Over a
/// batch that long the GPU keeps ahead of the host only when each launch runs longer than the host takes to queue
/// it, so criterion's figures for kernels of a few tens of microseconds include the host's pace.
#[derive(Clone)]
pub struct GpuClock {
    stream: Arc<CudaStream>,
}

impl GpuClock {
    pub fn new(gpu: &Gpu) -> GpuClock {
        GpuClock { stream: gpu.stream().clone() }
    }

    /// Records a start event on the stream.
    pub fn start(&self) -> Result<CudaEvent> {
        Ok(self.stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// Records an end event, waits for it, and returns the GPU time since `start` in milliseconds.
    pub fn stop_ms(&self, start: &CudaEvent) -> Result<f64> {
        let end = self.stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        end.synchronize()?;
        self.stream.context().check_err()?;
        Ok(start.elapsed_ms(&end)? as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_batches_shrink_with_the_operations_per_launch() {
        let config = |operations_per_launch| TimingConfig { operations_per_launch, ..TimingConfig::default() };
        assert_eq!(config(1).held_batch(), MAX_HELD_BATCH);
        assert_eq!(config(0).held_batch(), MAX_HELD_BATCH);
        assert_eq!(config(40).held_batch(), MAX_HELD_OPERATIONS / 40);
        assert_eq!(config(100_000).held_batch(), 1);
    }

    #[test]
    fn batches_cover_the_runs_evenly_within_the_cap() {
        let sizes = |runs, max| batches(runs, max).map(|b| b.len()).collect::<Vec<_>>();
        assert_eq!(sizes(50, 32), [25, 25]);
        assert_eq!(sizes(32, 32), [32]);
        assert_eq!(sizes(33, 32), [16, 17]);
        assert_eq!(sizes(100, 32), [25, 25, 25, 25]);
        assert_eq!(sizes(5, 32), [5]);
        assert_eq!(sizes(0, 32), Vec::<usize>::new());
        for runs in 1..200 {
            let all: Vec<Range<usize>> = batches(runs, MAX_HELD_BATCH).collect();
            assert_eq!(all.len(), runs.div_ceil(MAX_HELD_BATCH), "{runs}");
            assert_eq!(all.first().unwrap().start, 0);
            assert_eq!(all.last().unwrap().end, runs);
            assert!(all.windows(2).all(|w| w[0].end == w[1].start), "{runs}: {all:?}");
            assert!(all.iter().all(|b| !b.is_empty() && b.len() <= MAX_HELD_BATCH), "{runs}: {all:?}");
        }
    }

    #[test]
    fn even_split_differs_by_at_most_one() {
        let lengths: Vec<usize> = even_split(52, 5).map(|r| r.len()).collect();
        assert_eq!(lengths.iter().sum::<usize>(), 52);
        assert!(lengths.iter().all(|&l| l == 10 || l == 11), "{lengths:?}");
        assert_eq!(even_split(12, 5).map(|r| r.len()).collect::<Vec<_>>(), [2, 2, 3, 2, 3]);
    }

    /// The runs each contender times, in the order the plan times them.
    fn runs_of(turns: &[Turn], contender: usize) -> Vec<usize> {
        turns.iter().filter(|t| t.contender == contender).flat_map(|t| t.runs.clone()).collect()
    }

    #[test]
    fn rounds_interleave_the_contenders() {
        let turns = round_robin(&[0, 1, 2], 50, 5, 10);
        assert_eq!(turns.len(), 15);
        // Round by round, every contender in turn, the list rotated by the round.
        let order: Vec<(usize, usize)> = turns.iter().map(|t| (t.round, t.contender)).collect();
        let want: Vec<(usize, usize)> = (0..5).flat_map(|r| (0..3).map(move |i| (r, (i + r) % 3))).collect();
        assert_eq!(order, want);
        assert_eq!(turns[0], Turn { round: 0, contender: 0, warmup: 10, runs: 0..10 });
        assert_eq!(turns[3], Turn { round: 1, contender: 1, warmup: ROUND_WARMUP, runs: 10..20 });
        assert_eq!(turns[14], Turn { round: 4, contender: 0, warmup: ROUND_WARMUP, runs: 40..50 });
        // Over three rounds each contender is first, second and last once.
        for contender in 0..3 {
            let mut places: Vec<usize> = turns[..9]
                .chunks(3)
                .map(|round| round.iter().position(|t| t.contender == contender).unwrap())
                .collect();
            places.sort();
            assert_eq!(places, [0, 1, 2], "contender {contender}");
        }
        // Each contender times every run once, in order.
        for contender in 0..3 {
            assert_eq!(runs_of(&turns, contender), (0..50).collect::<Vec<_>>());
        }
    }

    #[test]
    fn uneven_runs_are_shared_out_and_every_run_is_timed_once() {
        let turns = round_robin(&[0, 1], 52, 5, 3);
        let shares: Vec<usize> = turns.iter().filter(|t| t.contender == 1).map(|t| t.runs.len()).collect();
        assert_eq!(shares.iter().sum::<usize>(), 52);
        assert!(shares.iter().all(|&s| s == 10 || s == 11), "{shares:?}");
        assert_eq!(runs_of(&turns, 0), (0..52).collect::<Vec<_>>());
        // More rounds than runs: a round per run, none empty.
        let turns = round_robin(&[0], 3, 5, 3);
        assert_eq!(turns.iter().map(|t| t.runs.clone()).collect::<Vec<_>>(), [0..1, 1..2, 2..3]);
        // A later round never warms up more than asked.
        assert!(round_robin(&[0], 10, 2, 1).iter().all(|t| t.warmup == 1));
        assert!(round_robin(&[0], 10, 2, 0).iter().all(|t| t.warmup == 0));
    }

    #[test]
    fn one_round_is_the_sequential_order() {
        let turns = round_robin(&[0, 1, 2], 50, 1, 10);
        let want: Vec<Turn> = (0..3).map(|contender| Turn { round: 0, contender, warmup: 10, runs: 0..50 }).collect();
        assert_eq!(turns, want);
        // Zero rounds means one.
        assert_eq!(round_robin(&[0, 1, 2], 50, 0, 10), want);
        assert_eq!((effective_rounds(0, 50), effective_rounds(5, 50), effective_rounds(5, 3)), (1, 5, 3));
    }

    #[test]
    fn contenders_that_failed_preparation_get_no_turns() {
        // Contender 1 failed its preparation or check: the others keep their places and their runs.
        let turns = round_robin(&[0, 2, 3], 20, 4, 5);
        assert!(turns.iter().all(|t| t.contender != 1));
        let first_round: Vec<usize> = turns.iter().filter(|t| t.round == 0).map(|t| t.contender).collect();
        assert_eq!(first_round, [0, 2, 3]);
        let second_round: Vec<usize> = turns.iter().filter(|t| t.round == 1).map(|t| t.contender).collect();
        assert_eq!(second_round, [2, 3, 0]);
        for contender in [0, 2, 3] {
            assert_eq!(runs_of(&turns, contender), (0..20).collect::<Vec<_>>());
        }
        assert!(round_robin(&[], 20, 4, 5).is_empty());
    }

    #[test]
    fn stats_refuse_empty_and_non_finite_samples() {
        assert_eq!(Stats::from_samples(&[]), None);
        assert_eq!(Stats::from_samples(&[1.0, f64::NAN]), None);
        assert_eq!(Stats::from_samples(&[1.0, f64::INFINITY]), None);
        assert_eq!(Stats::from_samples(&[-1.0]), None);
    }
}
