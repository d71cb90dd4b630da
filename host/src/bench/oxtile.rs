//! Our GEMM kernels as benchmark contenders.

use cudarc::driver::{CudaSlice, DevicePtr};
use half::{bf16, f16};

use super::gemm::{GemmContender, GemmProblem, Operands, fastest_candidate};
use crate::error::Result;
use crate::kernels::{self, Variant};
use crate::ops::gemm::{GemmOptions, GemmPlan, SkinnyChoice, check_tma_rows};
use crate::ops::gemm_skinny;
use crate::runtime::{ClusterShape, Gpu};
use crate::types::{Dtype, GemmElement, GemmLayout, GemmOutput};

pub const OXTILE: &str = "oxtile";
pub const OXTILE_TUNED: &str = "oxtile-tuned";

/// A plan per (A, B) address pair: a plan's tensor maps encode its operands' addresses.
type Plans<T> = Vec<((u64, u64), GemmPlan<T>)>;

/// The sm90 GEMM through [`GemmPlan`] in the problem's layout (operands TMA cannot read in place are staged by the
/// plan, their copies timed with the kernel), C row-major, bf16 or f16 in and out with fp32 accumulation, alpha = 1,
/// beta = 0. One plan is made per input set, in [`GemmContender::bind`], with D's tensor map bound to the set's C
/// there too, so the timed launches pay only the launch and the copies.
pub struct OxtileSm90 {
    name: &'static str,
    /// The options of every plan but the layout, which comes with each problem.
    options: GemmOptions,
    problem: Option<GemmProblem>,
    /// Whether to time every tune candidate on the first input set bound and keep the fastest.
    tunes: bool,
    /// The fastest candidate for the current problem, once measured.
    tuned: Option<Variant>,
    /// Whether it supports only the problems the skinny kernel computes ([`OxtileSm90::skinny`]).
    requires_skinny: bool,
    bf16_plans: Plans<bf16>,
    f16_plans: Plans<f16>,
}

impl OxtileSm90 {
    /// The library's choice of kernel per shape, as users get it.
    pub fn new() -> OxtileSm90 {
        OxtileSm90::variant(OXTILE, Variant::Auto)
    }

    /// One kernel variant forced, to measure what a design choice is worth.
    pub fn variant(name: &'static str, variant: Variant) -> OxtileSm90 {
        OxtileSm90::with_options(name, GemmOptions { variant, ..GemmOptions::default() })
    }

    /// A single-block variant launched through the cluster path as clusters of one: the ablation of how a grid is
    /// launched ([`GemmOptions::single_block_launch`]).
    pub fn through_cluster_path(name: &'static str, variant: Variant) -> OxtileSm90 {
        let options = GemmOptions { variant, single_block_launch: ClusterShape::Clusters, ..GemmOptions::default() };
        OxtileSm90::with_options(name, options)
    }

    /// A variant launched without programmatic dependent launch ([`GemmOptions::dependent_launch`]): its ablation.
    pub fn without_dependent_launch(name: &'static str, variant: Variant) -> OxtileSm90 {
        OxtileSm90::with_options(name, GemmOptions { variant, dependent_launch: false, ..GemmOptions::default() })
    }

    /// Auto with the skinny kernel wherever it applies ([`SkinnyChoice::WhereApplies`]): what the skinny kernel does
    /// where the rule leaves the shape to the tiles. Problems it does not apply to (M > 16, A column-major) are not
    /// supported, so that no tiled time is listed under its name.
    pub fn skinny(name: &'static str) -> OxtileSm90 {
        let skinny = OxtileSm90::with_options(
            name,
            GemmOptions { skinny: SkinnyChoice::WhereApplies, ..GemmOptions::default() },
        );
        OxtileSm90 { requires_skinny: true, ..skinny }
    }

    /// Auto on the tiles only ([`SkinnyChoice::Never`]): the skinny kernel's ablation.
    pub fn without_skinny(name: &'static str) -> OxtileSm90 {
        OxtileSm90::with_options(name, GemmOptions { skinny: SkinnyChoice::Never, ..GemmOptions::default() })
    }

    /// The fastest of [`Variant::CANDIDATES`] per problem, measured on the benchmark's first input set as
    /// `oxtile tune gemm` measures it: what a user who tunes gets, beside cuBLASLt tuned the same way.
    pub fn tuned() -> OxtileSm90 {
        OxtileSm90 { tunes: true, ..OxtileSm90::variant(OXTILE_TUNED, Variant::Auto) }
    }

    fn with_options(name: &'static str, options: GemmOptions) -> OxtileSm90 {
        OxtileSm90 {
            name,
            options,
            problem: None,
            tunes: false,
            tuned: None,
            requires_skinny: false,
            bf16_plans: Vec::new(),
            f16_plans: Vec::new(),
        }
    }

    /// This contender's options for a problem in `layout`.
    fn options(&self, layout: GemmLayout) -> GemmOptions {
        GemmOptions { layout, variant: self.tuned.unwrap_or(self.options.variant), ..self.options }
    }
}

/// Times every tune candidate that has a kernel for this problem on these operands, as cublasLt-tuned times its
/// algorithms ([`fastest_candidate`]), and returns the fastest.
fn fastest_variant<T: GemmElement + GemmOutput<T>>(
    gpu: &Gpu,
    problem: &GemmProblem,
    options: GemmOptions,
    a: &CudaSlice<T>,
    b: &CudaSlice<T>,
    c: &mut CudaSlice<T>,
) -> Result<Variant> {
    let name = <T as GemmElement>::NAME;
    let candidates: Vec<Variant> =
        Variant::CANDIDATES.into_iter().filter(|v| v.available(name, name, options.layout)).collect();
    // A candidate that cannot plan or run here is left out, as `oxtile tune gemm` leaves it out.
    let mut planned: Vec<(Variant, GemmPlan<T>)> = Vec::new();
    for variant in candidates {
        let plan = GemmPlan::new(gpu, problem.shape, GemmOptions { variant, ..options }, a, b);
        if let Ok(plan) = plan.and_then(|plan| plan.bind_output(gpu, c).map(|()| plan)) {
            planned.push((variant, plan));
        }
    }
    let fastest = fastest_candidate(gpu, planned.len(), |i| planned[i].1.launch(gpu, a, b, c));
    fastest
        .map(|i| planned[i].0)
        .ok_or_else(|| crate::Error::unsupported("bench gemm", format!("no oxtile kernel ran {problem}")))
}

impl Default for OxtileSm90 {
    fn default() -> Self {
        OxtileSm90::new()
    }
}

fn addresses<T>(gpu: &Gpu, a: &CudaSlice<T>, b: &CudaSlice<T>) -> (u64, u64) {
    let (a_address, _a_use) = a.device_ptr(gpu.stream());
    let (b_address, _b_use) = b.device_ptr(gpu.stream());
    (a_address, b_address)
}

/// The plan for these buffers, made on first use.
fn plan_for<'p, T: GemmElement + GemmOutput<T>>(
    plans: &'p mut Plans<T>,
    options: GemmOptions,
    gpu: &Gpu,
    problem: &GemmProblem,
    a: &CudaSlice<T>,
    b: &CudaSlice<T>,
) -> Result<&'p GemmPlan<T>> {
    let key = addresses(gpu, a, b);
    let index = match plans.iter().position(|(k, _)| *k == key) {
        Some(index) => index,
        None => {
            plans.push((key, GemmPlan::new(gpu, problem.shape, options, a, b)?));
            plans.len() - 1
        }
    };
    Ok(&plans[index].1)
}

impl GemmContender for OxtileSm90 {
    fn name(&self) -> &str {
        self.name
    }

    fn is_peer(&self) -> bool {
        false
    }

    fn supports(&self, problem: &GemmProblem) -> std::result::Result<(), String> {
        // A forced variant may exist for some types and layouts only (the multicast ablation: bf16 tn; the
        // ping-pong kernels: same-type outputs, clusters for bf16).
        let input = problem.dtype.name();
        if self.options.variant != Variant::Auto
            && kernels::find_gemm(input, input, problem.layout, self.options.variant).is_none()
        {
            return Err(format!("no {:?} kernel for {input} in layout {}", self.options.variant, problem.layout));
        }
        // The skinny kernel reads A and B in place: where TMA could not, the plan stages them and runs the tiles.
        if self.requires_skinny
            && (!gemm_skinny::applies(problem.shape, problem.layout, (input, input))
                || check_tma_rows(problem.shape, problem.layout).is_err())
        {
            return Err(format!(
                "the skinny kernel takes M ≤ 16 with A row-major and rows of a multiple of 16 bytes, not {problem}"
            ));
        }
        Ok(())
    }

    fn prepare(&mut self, _gpu: &Gpu, problem: &GemmProblem) -> Result<()> {
        if self.problem != Some(*problem) {
            // Buffers of an earlier problem are gone, and their addresses may come back with other shapes.
            self.bf16_plans.clear();
            self.f16_plans.clear();
            self.tuned = None;
            self.problem = Some(*problem);
        }
        Ok(())
    }

    fn bind(&mut self, gpu: &Gpu, problem: &GemmProblem, operands: Operands<'_>) -> Result<()> {
        self.prepare(gpu, problem)?;
        let must_tune = self.tunes && self.tuned.is_none();
        let options = self.options(problem.layout);
        match operands {
            Operands::Bf16 { a, b, c } => {
                if must_tune {
                    self.tuned = Some(fastest_variant(gpu, problem, options, a, b, c)?);
                }
                let options = self.options(problem.layout);
                plan_for(&mut self.bf16_plans, options, gpu, problem, a, b)?.bind_output(gpu, c)
            }
            Operands::F16 { a, b, c } => {
                if must_tune {
                    self.tuned = Some(fastest_variant(gpu, problem, options, a, b, c)?);
                }
                let options = self.options(problem.layout);
                plan_for(&mut self.f16_plans, options, gpu, problem, a, b)?.bind_output(gpu, c)
            }
        }
    }

    fn describe(&self) -> Option<String> {
        let kernel = match self.problem?.dtype {
            Dtype::Bf16 => self.bf16_plans.first()?.1.kernel(),
            Dtype::F16 => self.f16_plans.first()?.1.kernel(),
        };
        Some(kernel.name.to_string())
    }

    fn launch(&mut self, gpu: &Gpu, problem: &GemmProblem, operands: Operands<'_>) -> Result<()> {
        self.prepare(gpu, problem)?;
        let options = self.options(problem.layout);
        match operands {
            Operands::Bf16 { a, b, c } => {
                plan_for(&mut self.bf16_plans, options, gpu, problem, a, b)?.launch(gpu, a, b, c)
            }
            Operands::F16 { a, b, c } => {
                plan_for(&mut self.f16_plans, options, gpu, problem, a, b)?.launch(gpu, a, b, c)
            }
        }
    }
}
