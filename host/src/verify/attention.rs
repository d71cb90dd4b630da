//! Attention forward on the GPU against references: the Hopper kernel against the float64 CPU reference (small
//! problems) or the plain GPU reference kernel (large ones), and the GPU reference itself against float64.
//!
//! Every check draws fresh N(0, 1) inputs (or takes given ones), lays them out as the case says (packed, views of
//! one packed qkv tensor, or padded rows whose gaps hold NaN), poisons O and LSE, runs, and then requires that
//! every element of O and LSE was written, that nothing between O's elements changed, and that each element is
//! within its error bound.
//!
//! # Error bounds
//!
//! O_d = Σ_j p_j·v_jd with p_j = 2^(s_j − m) / l. Write M_d = Σ_j p_j·|v_jd| (≥ |O_d|; the float64 reference
//! and the GPU reference both return it) and n for the keys the row sees. The Hopper kernel
//! - computes each score s_j = scale·q·k_j in f32 from exact 16-bit products, with an error of at most
//!   ε = scale·‖q‖·max_j‖k_j‖·(D + 4)·2^-22: the classic f32 dot-product bound γ_D·Σ|q_i k_ji| (Cauchy–Schwarz
//!   bounds the sum by ‖q‖·‖k_j‖), with 4× headroom for the tensor core's accumulation order, plus the rounding
//!   of the scale multiplication and of s_j − m. Each p_j then carries a relative error e^ε − 1 ≈ ε; an error in
//!   the maximum m cancels between numerator and sum.
//! - computes 2^x by MUFU (2^-22) or the polynomial (8.6e-5 < 2^-13; `oxtile_abi::exp2`).
//! - rounds P to the 16-bit type before P·V: relative u (bf16 keeps 8 significant bits, u = 2^-8; f16 11,
//!   u = 2^-11). Where it is f16, terms below 2^-14 become subnormal, with absolute error up to 2^-25 each
//!   (in units of the running maximum, which is never above the true one, so at most 2^-25 of the true-max
//!   scale); bf16 has f32's range.
//! - accumulates P·V, the row sum and the rescales in f32: at most (n + tiles + 4) roundings of 2^-22 (again
//!   4× the f32 unit for the tensor core) relative to the sums of magnitudes.
//! - rounds O once to the 16-bit type: relative u of |O_d| ≤ M_d.
//!
//! With δ = u + e_exp + ε the relative error of each term (numerator and sum alike), the quotient errs by at most
//! 2δ·M_d, the output rounding adds u·M_d: |O − O_ref| ≤ (3u + 2e_exp + 2ε + acc)·M_d + [f16] 2^-25·n·max_j|v_jd|,
//! times 1 + 2^-4 for the second-order terms dropped. LSE = m + ln l errs by the relative error of l
//! (u + e_exp + ε, whether l sums rounded or unrounded terms), its accumulation, and the rounding of the log:
//! |LSE − LSE_ref| ≤ u + e_exp + ε + acc/2 + 2^-20 + 2^-21·(|LSE| + log2 n), with the same headroom.
//!
//! Against the GPU reference, that kernel's own error adds to the bound: another ε, 2^-21 for its two MUFU
//! exponentials, and f32 accumulation (2^-23 a term). A row that sees no key must be exactly O = 0, LSE = −∞.

use cudarc::driver::{CudaSlice, DevicePtr};

use rayon::prelude::*;

use super::{CheckElement, CheckReport, PlannedCheck};
use crate::error::{Error, Result};
use crate::ops::attention::{
    self, AttnElement, AttnOptions, AttnPlan, AttnShape, AttnStrides, AttnVariant, RescaleStats, Strides,
};
use crate::reference::attention::{AttnProblem, visible_keys};
use crate::reference::{self, Comparison, POISON_F32};
use crate::runtime::Gpu;

/// Keys per step of the Hopper kernels, the narrowest of their tiles (80 at head dim 256): the count of rescales in
/// the accumulation bound (more steps, a looser bound, for the wider tiles).
const TILE_KV: usize = {
    let (tiles, mut i, mut narrowest) = (oxtile_abi::ATTN_SM90_TILES, 0, u32::MAX);
    while i < tiles.len() {
        if tiles[i].tile_kv < narrowest {
            narrowest = tiles[i].tile_kv;
        }
        i += 1;
    }
    narrowest as usize
};
/// Upper bound of the software exp2's relative error (its f32 evaluation levels at 8.57e-5).
const EXP_POLY_BOUND: f64 = 1.0 / 8192.0;
/// Headroom for the second-order terms the bounds drop.
const HEADROOM: f64 = 1.0625;

/// How a case lays its tensors out in device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaseLayout {
    /// Each tensor packed BSHD in its own buffer.
    Packed,
    /// q, k and v views of one packed [batch, seq, heads_q + 2·heads_kv, head_dim] tensor (seq_q = seq_k), O in
    /// BHSD order (heads outermost within a batch, as torch's transposed tensors).
    Qkv,
    /// Each tensor in its own buffer with padding after every head row, sequence position and batch: the gaps of
    /// the inputs hold NaN (a kernel reading them would show it in O) and those of O must keep their poison.
    Padded,
}

impl CaseLayout {
    pub fn name(self) -> &'static str {
        match self {
            CaseLayout::Packed => "packed",
            CaseLayout::Qkv => "qkv",
            CaseLayout::Padded => "padded",
        }
    }
}

/// One problem to check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttnCase {
    pub shape: AttnShape,
    pub causal: bool,
    pub scale: Option<f32>,
    pub variant: AttnVariant,
    pub layout: CaseLayout,
}

impl AttnCase {
    /// No mask, default scale, [`AttnVariant::Auto`], packed.
    pub const fn new(shape: AttnShape) -> AttnCase {
        AttnCase { shape, causal: false, scale: None, variant: AttnVariant::Auto, layout: CaseLayout::Packed }
    }

    pub const fn causal(self, causal: bool) -> AttnCase {
        AttnCase { causal, ..self }
    }

    pub fn variant(self, variant: AttnVariant) -> AttnCase {
        AttnCase { variant, ..self }
    }

    pub fn layout(self, layout: CaseLayout) -> AttnCase {
        AttnCase { layout, ..self }
    }

    pub fn scale(self, scale: f32) -> AttnCase {
        AttnCase { scale: Some(scale), ..self }
    }

    /// The strides of the layout and where each tensor starts in its buffer.
    pub fn placement(&self) -> Result<Placement> {
        let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = self.shape;
        Ok(match self.layout {
            CaseLayout::Packed => {
                Placement { strides: AttnStrides::packed(self.shape), qkv_shared: false, offsets: [0; 3], o_padding: 0 }
            }
            CaseLayout::Qkv => {
                if seq_q != seq_k {
                    return Err(Error::bad_argument(
                        "attention check",
                        format!("a packed qkv tensor needs seq_q = seq_k, got {seq_q} and {seq_k}"),
                    ));
                }
                let row = (heads_q + 2 * heads_kv) * d;
                let qkv = Strides { batch: seq_q * row, seq: row, head: d };
                let o = Strides { batch: heads_q * seq_q * d, seq: d, head: seq_q * d };
                Placement {
                    strides: AttnStrides { q: qkv, k: qkv, v: qkv, o },
                    qkv_shared: true,
                    offsets: [0, heads_q * d, (heads_q + heads_kv) * d],
                    o_padding: 0,
                }
            }
            CaseLayout::Padded => {
                let padded = |seq: usize, heads: usize| {
                    let head = d + 8;
                    let seq_stride = heads * head + 16;
                    Strides { batch: seq * seq_stride + 24, seq: seq_stride, head }
                };
                let _ = batch;
                Placement {
                    strides: AttnStrides {
                        q: padded(seq_q, heads_q),
                        k: padded(seq_k, heads_kv),
                        v: padded(seq_k, heads_kv),
                        o: padded(seq_q, heads_q),
                    },
                    qkv_shared: false,
                    offsets: [0; 3],
                    // Trailing elements after O's last one, which must keep their poison too.
                    o_padding: 40,
                }
            }
        })
    }

    pub fn options(&self) -> Result<AttnOptions> {
        Ok(AttnOptions {
            causal: self.causal,
            scale: self.scale,
            variant: self.variant,
            strides: Some(self.placement()?.strides),
        })
    }

    /// E.g. `2x77/129 h8/2 d128 causal bf16 qkv poly`.
    pub fn describe(&self, dtype: &str) -> String {
        let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim } = self.shape;
        let mut text = format!(
            "{batch}x{seq_q}/{seq_k} h{heads_q}/{heads_kv} d{head_dim} {} {dtype} {}",
            if self.causal { "causal" } else { "full" },
            self.layout.name()
        );
        if self.variant != AttnVariant::Auto {
            text += &format!(" {}", self.variant.name());
        }
        if let Some(scale) = self.scale {
            text += &format!(" scale={scale}");
        }
        text
    }
}

/// Where a case's tensors live: their strides, whether q, k, v share one buffer (at `offsets`), and padding after O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub strides: AttnStrides,
    pub qkv_shared: bool,
    pub offsets: [usize; 3],
    pub o_padding: usize,
}

/// q, k and v as packed BSHD values (q [batch, seq_q, heads_q, head_dim], k and v [batch, seq_k, heads_kv,
/// head_dim]), before rounding to the element type.
#[derive(Clone, Debug, PartialEq)]
pub struct AttnInputs {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
}

impl AttnInputs {
    /// Fresh N(0, 1) values.
    pub fn random(shape: AttnShape, seed: u64) -> AttnInputs {
        let q_len = shape.batch * shape.seq_q * shape.heads_q * shape.head_dim;
        let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
        AttnInputs {
            q: reference::randn(q_len, 1.0, seed),
            k: reference::randn(kv_len, 1.0, seed ^ 0x6b),
            v: reference::randn(kv_len, 1.0, seed ^ 0x76),
        }
    }
}

/// Which result the kernel's output is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Against {
    /// The float64 CPU reference ([`crate::reference::attention`]): every row, small problems.
    Float64,
    /// The plain GPU reference kernel ([`attention::attention_reference`]), f32.
    GpuReference,
}

/// The outcome of one check.
#[derive(Clone, Debug)]
pub struct AttnCheck {
    pub kernel: &'static str,
    pub problem: String,
    /// max |O − O_ref| / bound over all elements (passes at ≤ 1); `not_finite` counts elements of O that are
    /// not finite or were not written, plus elements between O's that were written.
    pub o: Comparison,
    /// As `o` for LSE; `not_finite` counts elements that are NaN, poison, or infinite where the reference is
    /// finite (or finite where it is −∞).
    pub lse: Comparison,
    /// Largest absolute differences, for the record.
    pub o_max_abs_error: f64,
    pub lse_max_abs_error: f64,
    /// Elements between O's (padding) that no longer hold the poison.
    pub written_outside: usize,
    /// The kernel's rescaling counters, when the check asked for them.
    pub stats: Option<RescaleStats>,
}

impl AttnCheck {
    pub fn passed(&self) -> bool {
        self.o.passes(1.0) && self.lse.passes(1.0)
    }

    /// Two rows for [`CheckReport::table`]: O and LSE, their error as a fraction of the bound (bound 1).
    pub fn reports(&self) -> [CheckReport; 2] {
        let report = |what: &str, comparison: Comparison| CheckReport {
            kernel: self.kernel,
            problem: format!("{} {what}/bound", self.problem),
            comparison,
            bound: 1.0,
        };
        [report("O", self.o), report("LSE", self.lse)]
    }
}

impl std::fmt::Display for AttnCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: O error {:.3} of its bound (max abs {:.3e}, worst element {}), {} bad; LSE error {:.3} of its \
             bound (max abs {:.3e}, worst row {}), {} bad; {} written outside O",
            self.kernel,
            self.problem,
            self.o.max_rel_error,
            self.o_max_abs_error,
            self.o.worst_index,
            self.o.not_finite,
            self.lse.max_rel_error,
            self.lse_max_abs_error,
            self.lse.worst_index,
            self.lse.not_finite,
            self.written_outside
        )?;
        if let Some(stats) = self.stats {
            write!(f, "; rescaled {}/{} warp-tiles", stats.rescaled, stats.warp_tiles)?;
        }
        Ok(())
    }
}

/// The error model of one comparison; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ErrorModel {
    /// Rounding of P and O to 16 bits (0 for an f32 result).
    unit: f64,
    /// Relative error of the exponentials.
    exp: f64,
    /// How many independent score computations err (1 per kernel compared).
    scores: f64,
    /// Relative error per f32 accumulation step.
    accumulate: f64,
    /// Absolute error per P·V term from f16 subnormals.
    underflow: f64,
}

impl ErrorModel {
    fn hopper<T: CheckElement>() -> ErrorModel {
        let f16 = T::NAME == "f16";
        ErrorModel {
            unit: if f16 { 2f64.powi(-11) } else { 2f64.powi(-8) },
            exp: EXP_POLY_BOUND,
            scores: 1.0,
            accumulate: 2f64.powi(-22),
            underflow: if f16 { 2f64.powi(-25) } else { 0.0 },
        }
    }

    fn gpu_reference() -> ErrorModel {
        ErrorModel { unit: 0.0, exp: 2f64.powi(-21), scores: 1.0, accumulate: 2f64.powi(-23), underflow: 0.0 }
    }

    /// Both kernels' errors: the distance between their results.
    fn plus(self, other: ErrorModel) -> ErrorModel {
        ErrorModel {
            unit: self.unit + other.unit,
            exp: self.exp + other.exp,
            scores: self.scores + other.scores,
            accumulate: self.accumulate + other.accumulate,
            underflow: self.underflow + other.underflow,
        }
    }

    /// Bound on |O_d − O_ref| for a row that sees `keys` keys with score error `eps`, given M_d and max_j |v_jd|.
    fn o_bound(&self, keys: usize, eps: f64, magnitude: f64, v_max: f64) -> f64 {
        let steps = (keys + keys.div_ceil(TILE_KV) + 4) as f64;
        let relative = 3.0 * self.unit + 2.0 * self.exp + 2.0 * self.scores * eps + 2.0 * self.accumulate * steps;
        HEADROOM * (relative * magnitude + self.underflow * keys as f64 * v_max)
    }

    /// Bound on |LSE − LSE_ref|.
    fn lse_bound(&self, keys: usize, eps: f64, lse: f64) -> f64 {
        let steps = (keys + keys.div_ceil(TILE_KV) + 4) as f64;
        let log = 2f64.powi(-20) + 2f64.powi(-21) * (lse.abs() + (keys as f64 + 1.0).log2());
        HEADROOM * (self.unit + self.exp + self.scores * eps + self.accumulate * steps + log)
    }
}

/// What the output is compared with: packed O [batch, seq_q, heads_q, head_dim] with its magnitudes M_d, LSE.
struct Expected {
    o: Vec<f64>,
    magnitude: Vec<f64>,
    lse: Vec<f64>,
}

/// Per-row and per-column input norms the bounds need.
struct Norms {
    /// ‖q‖ per packed q row.
    q_row: Vec<f64>,
    /// max_j ‖k_j‖ per (batch, kv head).
    k_max: Vec<f64>,
    /// max_j |v_jd| per (batch, kv head, d).
    v_max: Vec<f64>,
}

impl Norms {
    fn of(shape: AttnShape, q: &[f64], k: &[f64], v: &[f64]) -> Norms {
        let AttnShape { batch, seq_k, heads_kv, head_dim: d, .. } = shape;
        let q_row = q.chunks(d).map(|row| row.iter().map(|x| x * x).sum::<f64>().sqrt()).collect();
        let mut k_max = vec![0f64; batch * heads_kv];
        let mut v_max = vec![0f64; batch * heads_kv * d];
        for b in 0..batch {
            for j in 0..seq_k {
                for h in 0..heads_kv {
                    let at = ((b * seq_k + j) * heads_kv + h) * d;
                    let norm = k[at..at + d].iter().map(|x| x * x).sum::<f64>().sqrt();
                    k_max[b * heads_kv + h] = k_max[b * heads_kv + h].max(norm);
                    for e in 0..d {
                        let slot = &mut v_max[(b * heads_kv + h) * d + e];
                        *slot = slot.max(v[at + e].abs());
                    }
                }
            }
        }
        Norms { q_row, k_max, v_max }
    }
}

/// The values of a packed BSHD tensor written into `buffer` at `offset` with `strides`.
fn scatter<T: Copy>(
    values: &[T],
    buffer: &mut [T],
    offset: usize,
    strides: Strides,
    (batch, seq, heads, d): (usize, usize, usize, usize),
) {
    for b in 0..batch {
        for s in 0..seq {
            for h in 0..heads {
                let from = ((b * seq + s) * heads + h) * d;
                let to = offset + strides.offset(b, s, h);
                buffer[to..to + d].copy_from_slice(&values[from..from + d]);
            }
        }
    }
}

/// A case's inputs on the device in its layout, and on the host as the float64 values the kernels see.
struct Prepared<T> {
    options: AttnOptions,
    placement: Placement,
    checked: attention::CheckedProblem,
    /// q, k, v rounded to `T` and widened, packed BSHD.
    host: [Vec<f64>; 3],
    device: Vec<CudaSlice<T>>,
}

impl<T: CheckElement + AttnElement> Prepared<T> {
    fn new(gpu: &Gpu, case: &AttnCase, inputs: &AttnInputs) -> Result<Prepared<T>> {
        let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = case.shape;
        let placement = case.placement()?;
        let options = case.options()?;
        let checked = attention::CheckedProblem::new(case.shape, &options)?;
        let [q_extent, k_extent, v_extent, _] = checked.extents;
        // Round to the element type; the references see exactly these values.
        let round = |values: &[f32]| -> Vec<T> { values.iter().map(|&x| T::from_f32(x)).collect() };
        let tensors = [round(&inputs.q), round(&inputs.k), round(&inputs.v)];
        // Unaddressed elements hold NaN.
        let [q_offset, k_offset, v_offset] = placement.offsets;
        let mut buffers: Vec<Vec<T>> = if placement.qkv_shared {
            vec![vec![T::POISON; (q_offset + q_extent).max(k_offset + k_extent).max(v_offset + v_extent)]]
        } else {
            vec![vec![T::POISON; q_extent], vec![T::POISON; k_extent], vec![T::POISON; v_extent]]
        };
        let s = placement.strides;
        let dims = [(batch, seq_q, heads_q, d), (batch, seq_k, heads_kv, d), (batch, seq_k, heads_kv, d)];
        for (t, (values, strides)) in tensors.iter().zip([s.q, s.k, s.v]).enumerate() {
            let buffer = if placement.qkv_shared { 0 } else { t };
            scatter(values, &mut buffers[buffer], placement.offsets[t], strides, dims[t]);
        }
        let stream = gpu.stream();
        let device = buffers.iter().map(|b| stream.clone_htod(b)).collect::<Result<Vec<_>, _>>()?;
        let host = tensors.map(|values| values.iter().map(|x| x.to_f64()).collect());
        Ok(Prepared { options, placement, checked, host, device })
    }

    /// The device view of tensor `t` (0 q, 1 k, 2 v).
    fn view(&self, t: usize) -> cudarc::driver::CudaView<'_, T> {
        let buffer = if self.placement.qkv_shared { 0 } else { t };
        self.device[buffer].slice(self.placement.offsets[t]..)
    }

    fn problem(&self, case: &AttnCase) -> AttnProblem {
        AttnProblem { shape: case.shape, causal: case.causal, scale: self.checked.scale as f64 }
    }

    fn norms(&self, shape: AttnShape) -> Norms {
        Norms::of(shape, &self.host[0], &self.host[1], &self.host[2])
    }
}

/// Checks the Hopper kernel of `case` on fresh random inputs; see the module documentation.
pub fn check<T: CheckElement + AttnElement>(
    gpu: &Gpu,
    case: &AttnCase,
    against: Against,
    seed: u64,
) -> Result<AttnCheck> {
    check_inputs::<T>(gpu, case, &AttnInputs::random(case.shape, seed), against, false)
}

/// Checks the Hopper kernel of `case` on `inputs`; with `stats`, the launch also counts rescales.
pub fn check_inputs<T: CheckElement + AttnElement>(
    gpu: &Gpu,
    case: &AttnCase,
    inputs: &AttnInputs,
    against: Against,
    stats: bool,
) -> Result<AttnCheck> {
    let shape = case.shape;
    let AttnShape { batch, seq_q, heads_q, head_dim: d, .. } = shape;
    let prepared = Prepared::<T>::new(gpu, case, inputs)?;
    let (q, k, v) = (prepared.view(0), prepared.view(1), prepared.view(2));
    let stream = gpu.stream();
    let o_strides = prepared.placement.strides.o;
    let mut o_dev = stream.clone_htod(&vec![T::POISON; prepared.checked.extents[3] + prepared.placement.o_padding])?;
    let mut lse_dev = stream.clone_htod(&vec![POISON_F32; shape.rows()])?;
    let plan = AttnPlan::<T>::new(gpu, shape, prepared.options, &q, &k, &v, &mut o_dev)?;
    let stats = if stats {
        let mut counters = stream.alloc_zeros::<u32>(oxtile_abi::ATTN_STATS_LEN)?;
        plan.launch_with_stats(gpu, &q, &k, &v, &mut o_dev, &mut lse_dev, &mut counters)?;
        Some(RescaleStats::from_counters(&stream.clone_dtoh(&counters)?))
    } else {
        plan.launch(gpu, &q, &k, &v, &mut o_dev, &mut lse_dev)?;
        None
    };
    let o_out = stream.clone_dtoh(&o_dev)?;
    let lse_out = stream.clone_dtoh(&lse_dev)?;

    let problem = prepared.problem(case);
    let (expected, model) = match against {
        Against::Float64 => {
            let [q64, k64, v64] = &prepared.host;
            let exact = reference::attention::attention(&problem, q64, k64, v64);
            (Expected { o: exact.o, magnitude: exact.o_magnitude, lse: exact.lse }, ErrorModel::hopper::<T>())
        }
        Against::GpuReference => {
            let expected = run_gpu_reference(gpu, shape, &prepared.options, &q, &k, &v)?;
            (expected, ErrorModel::hopper::<T>().plus(ErrorModel::gpu_reference()))
        }
    };
    let rows = all_rows(shape);
    let o_row = |b: usize, i: usize, h: usize| {
        let at = o_strides.offset(b, i, h);
        o_out[at..at + d].iter().map(|x| x.to_f64()).collect::<Vec<f64>>()
    };
    let mut result = compare(&problem, &prepared.norms(shape), &expected, model, &rows, o_row, &lse_out);
    // Every element O's strides do not address must still hold the poison, bit for bit.
    let mut addressed = vec![false; o_out.len()];
    for b in 0..batch {
        for i in 0..seq_q {
            for h in 0..heads_q {
                let at = o_strides.offset(b, i, h);
                addressed[at..at + d].iter_mut().for_each(|x| *x = true);
            }
        }
    }
    let poison = T::POISON.to_bits();
    result.written_outside =
        o_out.iter().zip(&addressed).filter(|(x, addressed)| !**addressed && x.to_bits() != poison).count();
    result.o.not_finite += result.written_outside;
    result.kernel = plan.kernel().name;
    result.problem = case.describe(T::NAME);
    result.stats = stats;
    Ok(result)
}

/// The GPU reference kernel on device inputs: packed O, magnitudes and LSE, widened.
fn run_gpu_reference<T: AttnElement>(
    gpu: &Gpu,
    shape: AttnShape,
    options: &AttnOptions,
    q: &impl DevicePtr<T>,
    k: &impl DevicePtr<T>,
    v: &impl DevicePtr<T>,
) -> Result<Expected> {
    let stream = gpu.stream();
    let rows = shape.rows();
    let mut o = stream.clone_htod(&vec![POISON_F32; rows * shape.head_dim])?;
    let mut magnitude = stream.clone_htod(&vec![POISON_F32; rows * shape.head_dim])?;
    let mut lse = stream.clone_htod(&vec![POISON_F32; rows])?;
    attention::attention_reference(gpu, shape, q, k, v, &mut o, Some(&mut magnitude), &mut lse, *options)?;
    let widen = |x: Vec<f32>| x.into_iter().map(f64::from).collect::<Vec<f64>>();
    Ok(Expected {
        o: widen(stream.clone_dtoh(&o)?),
        magnitude: widen(stream.clone_dtoh(&magnitude)?),
        lse: widen(stream.clone_dtoh(&lse)?),
    })
}

/// Every (batch, query row, head).
fn all_rows(shape: AttnShape) -> Vec<(usize, usize, usize)> {
    let AttnShape { batch, seq_q, heads_q, .. } = shape;
    (0..batch).flat_map(|b| (0..seq_q).flat_map(move |i| (0..heads_q).map(move |h| (b, i, h)))).collect()
}

/// Compares the given (batch, query row, head) rows: `o_row(b, i, h)` gives the output's head_dim values of a
/// row, `lse` the output LSE [batch, heads_q, seq_q]; `expected` is packed. A non-finite expected value (a broken
/// reference) fails too.
fn compare(
    problem: &AttnProblem,
    norms: &Norms,
    expected: &Expected,
    model: ErrorModel,
    rows: &[(usize, usize, usize)],
    o_row: impl Fn(usize, usize, usize) -> Vec<f64>,
    lse: &[f32],
) -> AttnCheck {
    let AttnShape { seq_q, seq_k, heads_q, heads_kv, head_dim: d, .. } = problem.shape;
    let group = heads_q / heads_kv;
    let mut o_cmp = Comparison::default();
    let mut lse_cmp = Comparison::default();
    let (mut o_abs, mut lse_abs) = (0f64, 0f64);
    for &(b, i, h) in rows {
        let keys = visible_keys(seq_q, seq_k, problem.causal, i);
        let kv = b * heads_kv + h / group;
        let packed_row = (b * seq_q + i) * heads_q + h;
        let eps = problem.scale.abs() * norms.q_row[packed_row] * norms.k_max[kv] * (d + 4) as f64 * 2f64.powi(-22);
        for (e, out) in o_row(b, i, h).into_iter().enumerate() {
            let index = packed_row * d + e;
            let (want, magnitude) = (expected.o[index], expected.magnitude[index]);
            if !out.is_finite() || !want.is_finite() || !magnitude.is_finite() {
                o_cmp.not_finite += 1;
                continue;
            }
            let err = (out - want).abs();
            o_abs = o_abs.max(err);
            let ratio = ratio(err, model.o_bound(keys, eps, magnitude, norms.v_max[kv * d + e]));
            if ratio > o_cmp.max_rel_error {
                o_cmp.max_rel_error = ratio;
                o_cmp.worst_index = index;
            }
        }
        let row = (b * heads_q + h) * seq_q + i;
        let (out, want) = (lse[row] as f64, expected.lse[row]);
        if want == f64::NEG_INFINITY || out == f64::NEG_INFINITY {
            // Exactly the rows without keys, and only those, are −∞.
            if out != want || keys != 0 {
                lse_cmp.not_finite += 1;
            }
            continue;
        }
        if !out.is_finite() || !want.is_finite() {
            lse_cmp.not_finite += 1;
            continue;
        }
        let err = (out - want).abs();
        lse_abs = lse_abs.max(err);
        let ratio = ratio(err, model.lse_bound(keys, eps, want));
        if ratio > lse_cmp.max_rel_error {
            lse_cmp.max_rel_error = ratio;
            lse_cmp.worst_index = row;
        }
    }
    AttnCheck {
        kernel: "",
        problem: String::new(),
        o: o_cmp,
        lse: lse_cmp,
        o_max_abs_error: o_abs,
        lse_max_abs_error: lse_abs,
        written_outside: 0,
        stats: None,
    }
}

/// err / bound, where a zero bound admits only an exact result.
fn ratio(err: f64, bound: f64) -> f64 {
    if err == 0.0 {
        0.0
    } else if bound > 0.0 {
        err / bound
    } else {
        f64::INFINITY
    }
}

/// The GPU reference kernel of `case` (its layout and strides; the variant is ignored) against float64 on fresh
/// random inputs: every row, or the first and last and `sample_rows` random ones. Every element of its outputs
/// must be written either way.
pub fn check_gpu_reference<T: CheckElement + AttnElement>(
    gpu: &Gpu,
    case: &AttnCase,
    sample_rows: Option<usize>,
    seed: u64,
) -> Result<AttnCheck> {
    use rand::{Rng, SeedableRng};

    let shape = case.shape;
    let AttnShape { batch, seq_q, seq_k, heads_q, head_dim: d, .. } = shape;
    let prepared = Prepared::<T>::new(gpu, case, &AttnInputs::random(shape, seed))?;
    let got =
        run_gpu_reference(gpu, shape, &prepared.options, &prepared.view(0), &prepared.view(1), &prepared.view(2))?;

    let problem = prepared.problem(case);
    let rows = match sample_rows {
        None => all_rows(shape),
        Some(count) => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5a3);
            let mut rows = vec![(0, 0, 0), (batch - 1, seq_q - 1, heads_q - 1)];
            rows.extend(
                (0..count)
                    .map(|_| (rng.random_range(0..batch), rng.random_range(0..seq_q), rng.random_range(0..heads_q))),
            );
            rows
        }
    };
    // The float64 rows, where `compare` reads them; rows not chosen are never looked at.
    let mut expected =
        Expected { o: vec![0.0; got.o.len()], magnitude: vec![0.0; got.o.len()], lse: vec![0.0; got.lse.len()] };
    let [q64, k64, v64] = &prepared.host;
    let computed: Vec<_> = rows
        .par_iter()
        .map(|&(b, i, h)| reference::attention::attention_row(&problem, q64, k64, v64, b, h, i))
        .collect();
    for (&(b, i, h), row) in rows.iter().zip(computed) {
        let at = ((b * seq_q + i) * heads_q + h) * d;
        expected.o[at..at + d].copy_from_slice(&row.o);
        expected.magnitude[at..at + d].copy_from_slice(&row.o_magnitude);
        expected.lse[(b * heads_q + h) * seq_q + i] = row.lse;
    }
    let lse: Vec<f32> = got.lse.iter().map(|&x| x as f32).collect();
    let o_row = |b: usize, i: usize, h: usize| {
        let at = ((b * seq_q + i) * heads_q + h) * d;
        got.o[at..at + d].to_vec()
    };
    let mut result =
        compare(&problem, &prepared.norms(shape), &expected, ErrorModel::gpu_reference(), &rows, o_row, &lse);
    // Unwritten (poisoned) elements anywhere, sampled or not.
    let sampled: std::collections::HashSet<_> = rows.iter().copied().collect();
    for (b, i, h) in all_rows(shape).into_iter().filter(|r| !sampled.contains(r)) {
        let at = ((b * seq_q + i) * heads_q + h) * d;
        result.o.not_finite += got.o[at..at + d].iter().filter(|x| !x.is_finite()).count();
        let out = got.lse[(b * heads_q + h) * seq_q + i];
        let keys = visible_keys(seq_q, seq_k, case.causal, i);
        if out.is_nan() || out == f64::INFINITY || (out == f64::NEG_INFINITY) != (keys == 0) {
            result.lse.not_finite += 1;
        }
    }
    result.kernel = T::REFERENCE_KERNELS.iter().find(|(hd, _)| *hd == d).map_or("-", |(_, k)| k.name);
    result.problem = format!("{} vs f64 ({} rows)", case.describe(T::NAME), rows.len());
    Ok(result)
}

/// The element type of a standard check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    Bf16,
    F16,
}

/// The Hopper kernel's checks of `oxtile check`, as (case, element type, what it is compared with, seed offset):
/// each kernel on a few odd shapes against float64 (masked rows, GQA, views of a packed qkv tensor, padded
/// layouts), and one larger problem against the GPU reference.
pub fn standard_cases() -> Vec<(AttnCase, Element, Against, u64)> {
    use Against::{Float64, GpuReference};
    use Element::{Bf16, F16};
    let case = |b, sq, sk, hq, hkv, d| AttnCase::new(AttnShape::new(b, sq, sk, hq, hkv, d));
    let mut cases = vec![
        (case(2, 200, 200, 8, 2, 128).causal(true).layout(CaseLayout::Qkv), Bf16, Float64, 0),
        (case(1, 383, 129, 4, 4, 128).causal(true).layout(CaseLayout::Padded), Bf16, Float64, 1),
        (case(1, 1, 1, 2, 2, 64), Bf16, Float64, 2),
        (case(2, 129, 77, 4, 1, 64).causal(true), Bf16, Float64, 3),
        (case(2, 77, 300, 4, 1, 64), F16, Float64, 4),
        (case(1, 256, 256, 4, 2, 128).causal(true), F16, Float64, 5),
    ];
    for variant in [AttnVariant::Poly, AttnVariant::Eager, AttnVariant::NoPingpong, AttnVariant::Speculate] {
        cases.push((case(1, 256, 300, 2, 2, 128).causal(true).variant(variant), Bf16, Float64, 6));
    }
    cases.push((case(2, 129, 200, 4, 2, 64).causal(true).variant(AttnVariant::Mufu), Bf16, Float64, 9));
    // Head dim 256 (80-key tiles): ragged in both lengths, grouped heads, seq_q ≠ seq_k both ways.
    cases.push((case(1, 200, 77, 4, 2, 256).causal(true), Bf16, Float64, 10));
    cases.push((case(2, 129, 200, 2, 1, 256), F16, Float64, 11));
    cases.push((case(1, 2048, 2048, 4, 4, 128).causal(true), Bf16, GpuReference, 7));
    cases
}

/// The GPU reference's check of `oxtile check`: (case, sampled rows, seed offset), bf16.
pub const STANDARD_REFERENCE_CHECK: (AttnCase, usize, u64) =
    (AttnCase::new(AttnShape::new(1, 1024, 1024, 4, 2, 128)).causal(true), 64, 8);

/// The attention checks of `oxtile check` ([`standard_cases`], then [`STANDARD_REFERENCE_CHECK`]) as steps of a
/// sweep, with inputs drawn from `seed` plus each one's offset.
pub fn standard_plan(seed: u64) -> Vec<PlannedCheck> {
    let mut plan: Vec<PlannedCheck> = standard_cases()
        .into_iter()
        .map(|(case, element, against, offset)| match element {
            Element::Bf16 => planned::<half::bf16>(case, against, seed + offset),
            Element::F16 => planned::<half::f16>(case, against, seed + offset),
        })
        .collect();
    let (case, rows, offset) = STANDARD_REFERENCE_CHECK;
    let work =
        inputs_len(case.shape) + rows as u64 * reference_work(case.shape, case.causal) / case.shape.rows() as u64;
    plan.push(PlannedCheck::new(format!("attention reference {} vs f64", case.describe("bf16")), work, move |gpu| {
        Ok(check_gpu_reference::<half::bf16>(gpu, &case, Some(rows), seed + offset)?.reports().to_vec())
    }));
    plan
}

/// [`check`] as a step of a sweep: its cost is the inputs drawn plus the float64 reference, or the comparison
/// with the GPU reference.
fn planned<T: CheckElement + AttnElement>(case: AttnCase, against: Against, seed: u64) -> PlannedCheck {
    let work = inputs_len(case.shape)
        + match against {
            Against::Float64 => reference_work(case.shape, case.causal),
            Against::GpuReference => 4 * (case.shape.rows() * case.shape.head_dim) as u64,
        };
    PlannedCheck::new(format!("attention {}", case.describe(T::NAME)), work, move |gpu| {
        Ok(check::<T>(gpu, &case, against, seed)?.reports().to_vec())
    })
}

/// Values of q, k and v.
pub fn inputs_len(shape: AttnShape) -> u64 {
    let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = shape;
    (batch * (seq_q * heads_q + 2 * seq_k * heads_kv) * d) as u64
}

/// Float64 operations of the reference over every row: a score, an exponential and two output terms per
/// visible key and element.
pub fn reference_work(shape: AttnShape, causal: bool) -> u64 {
    let AttnShape { batch, seq_q, seq_k, heads_q, head_dim: d, .. } = shape;
    let keys: usize = (0..seq_q).map(|i| visible_keys(seq_q, seq_k, causal, i)).sum();
    (3 * batch * heads_q * keys * d) as u64
}

#[cfg(test)]
mod tests {
    //! The bounds against CPU emulations of the two kernels' arithmetic: a correct emulation must pass, one with
    //! a typical bug must fail. No GPU needed.

    use half::{bf16, f16};

    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Bug {
        None,
        /// Every causal row sees one key too many.
        MaskOffByOne,
        /// The output and sum are not multiplied when the maximum moves.
        NoRescale,
        /// e^x where 2^x belongs: the softmax of the wrong scale.
        NaturalExp,
        /// The last key of every tile after the first is dropped.
        DropsTileEnd,
    }

    /// The Hopper kernel's arithmetic on the CPU: tiles of `TILE_KV` keys, f32 scores from exact products, lazy
    /// rescaling at 8 log2 units, the polynomial exp2 (the device's, bit for bit), P rounded to `T` before P·V,
    /// O rounded to `T`.
    fn emulate_hopper<T: CheckElement>(
        problem: &AttnProblem,
        q: &[f64],
        k: &[f64],
        v: &[f64],
        bug: Bug,
    ) -> (Vec<f64>, Vec<f32>) {
        let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = problem.shape;
        let scale_log2 = problem.scale as f32 * std::f32::consts::LOG2_E;
        let mut o = vec![0.0; batch * seq_q * heads_q * d];
        let mut lse = vec![0f32; batch * heads_q * seq_q];
        for (b, i, h) in all_rows(problem.shape) {
            let kv = h / (heads_q / heads_kv);
            let mut keys = visible_keys(seq_q, seq_k, problem.causal, i);
            if bug == Bug::MaskOffByOne && problem.causal {
                keys = (keys + 1).min(seq_k);
            }
            let q_row = &q[((b * seq_q + i) * heads_q + h) * d..][..d];
            let kv_row = |j: usize| ((b * seq_k + j) * heads_kv + kv) * d;
            let (mut max, mut sum) = (f32::NEG_INFINITY, 0f32);
            let mut acc = vec![0f32; d];
            for start in (0..keys).step_by(TILE_KV) {
                let mut end = (start + TILE_KV).min(keys);
                if bug == Bug::DropsTileEnd && start > 0 {
                    end -= 1;
                }
                let scores: Vec<f32> = (start..end)
                    .map(|j| {
                        let dot = q_row
                            .iter()
                            .zip(&k[kv_row(j)..][..d])
                            .fold(0f32, |s, (a, b)| (*a as f32).mul_add(*b as f32, s));
                        dot * scale_log2
                    })
                    .collect();
                let tile_max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                if tile_max > max + oxtile_abi::ATTN_RESCALE_THRESHOLD_LOG2 {
                    let correction = if max == f32::NEG_INFINITY { 0.0 } else { (max - tile_max).exp2() };
                    if bug != Bug::NoRescale {
                        sum *= correction;
                        acc.iter_mut().for_each(|a| *a *= correction);
                    }
                    max = tile_max;
                }
                for (j, s) in (start..end).zip(scores) {
                    let p = if bug == Bug::NaturalExp { (s - max).exp() } else { crate::exp2::exp2_poly(s - max) };
                    sum += p;
                    let p16 = T::from_f32(p).to_f64() as f32;
                    for (a, value) in acc.iter_mut().zip(&v[kv_row(j)..][..d]) {
                        *a = p16.mul_add(*value as f32, *a);
                    }
                }
            }
            let at = ((b * seq_q + i) * heads_q + h) * d;
            let row = (b * heads_q + h) * seq_q + i;
            if keys == 0 {
                lse[row] = f32::NEG_INFINITY;
                continue;
            }
            for e in 0..d {
                o[at + e] = T::from_f32(acc[e] / sum).to_f64();
            }
            lse[row] = (max + sum.log2()) * std::f32::consts::LN_2;
        }
        (o, lse)
    }

    /// The GPU reference's arithmetic: one key at a time, f32, exact exp2.
    fn emulate_gpu_reference(problem: &AttnProblem, q: &[f64], k: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f32>) {
        let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = problem.shape;
        let scale_log2 = problem.scale as f32 * std::f32::consts::LOG2_E;
        let mut o = vec![0.0; batch * seq_q * heads_q * d];
        let mut lse = vec![f32::NEG_INFINITY; batch * heads_q * seq_q];
        for (b, i, h) in all_rows(problem.shape) {
            let kv = h / (heads_q / heads_kv);
            let keys = visible_keys(seq_q, seq_k, problem.causal, i);
            let q_row = &q[((b * seq_q + i) * heads_q + h) * d..][..d];
            let (mut max, mut sum) = (f32::NEG_INFINITY, 0f32);
            let mut acc = vec![0f32; d];
            for j in 0..keys {
                let at = ((b * seq_k + j) * heads_kv + kv) * d;
                let dot = q_row.iter().zip(&k[at..at + d]).fold(0f32, |s, (a, b)| (*a as f32).mul_add(*b as f32, s));
                let s = dot * scale_log2;
                if s > max {
                    let correction = (max - s).exp2();
                    sum *= correction;
                    acc.iter_mut().for_each(|a| *a *= correction);
                    max = s;
                }
                let p = (s - max).exp2();
                sum += p;
                for (a, value) in acc.iter_mut().zip(&v[at..at + d]) {
                    *a = p.mul_add(*value as f32, *a);
                }
            }
            if keys > 0 {
                let at = ((b * seq_q + i) * heads_q + h) * d;
                for e in 0..d {
                    o[at + e] = (acc[e] / sum) as f64;
                }
                lse[(b * heads_q + h) * seq_q + i] = (max + sum.log2()) * std::f32::consts::LN_2;
            }
        }
        (o, lse)
    }

    struct Problem {
        problem: AttnProblem,
        q: Vec<f64>,
        k: Vec<f64>,
        v: Vec<f64>,
    }

    fn problem<T: CheckElement>(shape: AttnShape, causal: bool, scale: f64, seed: u64) -> Problem {
        let inputs = AttnInputs::random(shape, seed);
        let round = |x: &[f32]| x.iter().map(|&x| T::from_f32(x).to_f64()).collect::<Vec<f64>>();
        Problem {
            problem: AttnProblem { shape, causal, scale },
            q: round(&inputs.q),
            k: round(&inputs.k),
            v: round(&inputs.v),
        }
    }

    /// The emulated output's error as a fraction of its bound: (O, LSE, bad elements).
    fn error_of(p: &Problem, model: ErrorModel, (o, lse): (Vec<f64>, Vec<f32>)) -> (f64, f64, usize) {
        let exact = reference::attention::attention(&p.problem, &p.q, &p.k, &p.v);
        let expected = Expected { o: exact.o, magnitude: exact.o_magnitude, lse: exact.lse };
        let d = p.problem.shape.head_dim;
        let o_row = |b: usize, i: usize, h: usize| {
            let AttnShape { seq_q, heads_q, .. } = p.problem.shape;
            o[((b * seq_q + i) * heads_q + h) * d..][..d].to_vec()
        };
        let norms = Norms::of(p.problem.shape, &p.q, &p.k, &p.v);
        let check = compare(&p.problem, &norms, &expected, model, &all_rows(p.problem.shape), o_row, &lse);
        (check.o.max_rel_error, check.lse.max_rel_error, check.o.not_finite + check.lse.not_finite)
    }

    fn shapes() -> [(AttnShape, bool); 4] {
        [
            (AttnShape::new(1, 200, 300, 4, 2, 64), true),
            (AttnShape::new(2, 130, 77, 2, 1, 128), true),
            (AttnShape::new(1, 77, 400, 2, 2, 64), false),
            (AttnShape::new(1, 1, 1, 1, 1, 64), false),
        ]
    }

    fn emulated_hopper_within_bounds<T: CheckElement>() {
        for (n, (shape, causal)) in shapes().into_iter().enumerate() {
            for scale in [1.0 / (shape.head_dim as f64).sqrt(), 0.0, 1.0] {
                let p = problem::<T>(shape, causal, scale, 40 + n as u64);
                let (o, lse, bad) = error_of(
                    &p,
                    ErrorModel::hopper::<T>(),
                    emulate_hopper::<T>(&p.problem, &p.q, &p.k, &p.v, Bug::None),
                );
                println!("{} {shape} causal {causal} scale {scale}: O {o:.3}, LSE {lse:.3} of the bound", T::NAME);
                assert!(
                    o <= 1.0 && lse <= 1.0 && bad == 0,
                    "{} {shape} scale {scale}: O {o}, LSE {lse}, {bad} bad",
                    T::NAME
                );
            }
        }
    }

    #[test]
    fn correct_bf16_arithmetic_is_within_the_bounds() {
        emulated_hopper_within_bounds::<bf16>();
    }

    #[test]
    fn correct_f16_arithmetic_is_within_the_bounds() {
        emulated_hopper_within_bounds::<f16>();
    }

    #[test]
    fn typical_bugs_break_the_bounds() {
        for bug in [Bug::MaskOffByOne, Bug::NoRescale, Bug::NaturalExp, Bug::DropsTileEnd] {
            // Causal with seq_q < seq_k so every row sees several tiles and a mask edge.
            let shape = AttnShape::new(1, 150, 400, 2, 1, 64);
            let scale = if bug == Bug::NoRescale { 1.0 } else { 0.125 };
            let p = problem::<bf16>(shape, true, scale, 7);
            let emulated = emulate_hopper::<bf16>(&p.problem, &p.q, &p.k, &p.v, bug);
            let (o, lse, bad) = error_of(&p, ErrorModel::hopper::<bf16>(), emulated);
            println!("{bug:?}: O {o:.3}, LSE {lse:.3} of the bound, {bad} bad");
            assert!(o > 1.0 || lse > 1.0 || bad > 0, "{bug:?} passed: O {o}, LSE {lse}");
        }
    }

    #[test]
    fn emulated_gpu_reference_is_within_its_bound() {
        for (n, (shape, causal)) in shapes().into_iter().enumerate() {
            let p = problem::<bf16>(shape, causal, 1.0 / (shape.head_dim as f64).sqrt(), 60 + n as u64);
            let emulated = emulate_gpu_reference(&p.problem, &p.q, &p.k, &p.v);
            let (o, lse, bad) = error_of(&p, ErrorModel::gpu_reference(), emulated);
            assert!(o <= 1.0 && lse <= 1.0 && bad == 0, "{shape}: O {o}, LSE {lse}, {bad} bad");
        }
    }

    #[test]
    fn masked_rows_must_be_exact() {
        // seq_q > seq_k causal: rows 0..2 see nothing; any value there but O = 0 and LSE = −∞ fails.
        let p = problem::<bf16>(AttnShape::new(1, 5, 3, 1, 1, 64), true, 0.125, 3);
        let (mut o, mut lse) = emulate_hopper::<bf16>(&p.problem, &p.q, &p.k, &p.v, Bug::None);
        assert_eq!(error_of(&p, ErrorModel::hopper::<bf16>(), (o.clone(), lse.clone())).2, 0);
        lse[0] = 0.0;
        assert_eq!(error_of(&p, ErrorModel::hopper::<bf16>(), (o.clone(), lse.clone())).2, 1);
        lse[0] = f32::NEG_INFINITY;
        lse[4] = f32::NEG_INFINITY;
        assert_eq!(error_of(&p, ErrorModel::hopper::<bf16>(), (o.clone(), lse.clone())).2, 1);
        lse[4] = lse[3];
        o[1] = 1e-30;
        assert!(error_of(&p, ErrorModel::hopper::<bf16>(), (o.clone(), lse.clone())).0.is_infinite());
        o[1] = f64::NAN;
        assert!(error_of(&p, ErrorModel::hopper::<bf16>(), (o, lse)).2 > 0);
    }

    #[test]
    fn layouts_place_tensors_where_their_strides_say() {
        let shape = AttnShape::new(2, 5, 5, 4, 2, 64);
        for layout in [CaseLayout::Packed, CaseLayout::Qkv, CaseLayout::Padded] {
            let case = AttnCase::new(shape).layout(layout);
            let placement = case.placement().unwrap();
            let checked = attention::CheckedProblem::new(shape, &case.options().unwrap()).unwrap();
            // q, k and v of a shared buffer interleave without colliding: every element addressed once.
            if placement.qkv_shared {
                let s = placement.strides;
                let mut hits = vec![0u8; placement.offsets[2] + checked.extents[2]];
                for (t, (strides, heads)) in [(s.q, 4), (s.k, 2), (s.v, 2)].into_iter().enumerate() {
                    for b in 0..2 {
                        for j in 0..5 {
                            for h in 0..heads {
                                let at = placement.offsets[t] + strides.offset(b, j, h);
                                hits[at..at + 64].iter_mut().for_each(|x| *x += 1);
                            }
                        }
                    }
                }
                assert!(hits.iter().all(|&x| x == 1), "{layout:?}");
            }
            assert!(placement.strides.o.is_injective(2, 5, 4, 64));
        }
        assert!(AttnCase::new(AttnShape::new(1, 5, 6, 1, 1, 64)).layout(CaseLayout::Qkv).placement().is_err());
        let text = AttnCase::new(shape).causal(true).variant(AttnVariant::Eager).describe("bf16");
        assert_eq!(text, "2x5/5 h4/2 d64 causal bf16 packed eager");
    }
}
