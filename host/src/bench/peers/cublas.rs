//! cuBLAS peers through cudarc: cuBLASLt with the algorithm its heuristic ranks first and a 32 MiB workspace
//! (the strongest cuBLAS configuration on Hopper), cuBLASLt autotuned (the fastest of the heuristic's first
//! [`TUNED_CANDIDATES`] algorithms, timed on the benchmark's own inputs), and the classic cublasGemmEx. All take
//! bf16 or fp16 A and B, accumulate in fp32 (`CUBLAS_COMPUTE_32F`, fp32 alpha = 1 and beta = 0) and write C in
//! the input type.
//!
//! Everything that is not the GEMM itself (descriptors, the heuristic query, the autotuning) happens in `prepare`
//! and `bind`, so a timed launch is one `cublasLtMatmul` or `cublasGemmEx` call. Every status is checked.

use std::ffi::{c_int, c_void};

use cudarc::cublas::result::CublasError;
use cudarc::cublas::{self, CudaBlas};
use cudarc::cublaslt::result as lt;
use cudarc::cublaslt::sys as lt_sys;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use crate::bench::gemm::{GemmContender, GemmProblem, Operands, fastest_candidate};
use crate::error::{Error, Result};
use crate::runtime::Gpu;
use crate::types::{Dtype, GemmElement, GemmShape, Order};

pub const CUBLASLT: &str = "cublasLt";
pub const CUBLASLT_TUNED: &str = "cublasLt-tuned";
pub const CUBLAS_GEMM_EX: &str = "cublasGemmEx";

/// Algorithms `cublasLt-tuned` asks the heuristic for and times (as `bench::gemm::fastest_candidate` times them):
/// what a cuBLASLt user who autotunes would try.
pub const TUNED_CANDIDATES: usize = 8;

/// NVIDIA's recommended cuBLAS workspace on Hopper.
pub const WORKSPACE_BYTES: usize = 32 << 20;

fn cublas_error(call: &'static str) -> impl Fn(CublasError) -> Error {
    move |error| Error::Cublas(format!("{call}: {error}"))
}

fn cublaslt_error(call: &'static str) -> impl Fn(lt::CublasError) -> Error {
    move |error| Error::Cublas(format!("{call}: {error}"))
}

fn library_missing(library: &str) -> Error {
    Error::Cublas(format!(
        "lib{library}.so could not be loaded (is the CUDA toolkit's lib directory on the loader path?)"
    ))
}

fn int(what: &'static str, value: usize) -> Result<c_int> {
    c_int::try_from(value)
        .map_err(|_| Error::bad_argument("cuBLAS", format!("{what} = {value} does not fit in an int")))
}

fn check_lengths(name: &'static str, problem: &GemmProblem, a: usize, b: usize, c: usize) -> Result<()> {
    let want = (problem.a_len(), problem.b_len(), problem.c_len());
    if (a, b, c) == want {
        Ok(())
    } else {
        Err(Error::bad_argument(name, format!("{problem}: A, B, C have {a}, {b}, {c} elements, expected {want:?}")))
    }
}

fn check_dtype(name: &'static str, problem: &GemmProblem, operands: &Operands<'_>) -> Result<()> {
    let given = match operands {
        Operands::Bf16 { .. } => Dtype::Bf16,
        Operands::F16 { .. } => Dtype::F16,
    };
    if given == problem.dtype {
        Ok(())
    } else {
        Err(Error::bad_argument(name, format!("{problem}: operands are {}", given.name())))
    }
}

/// The arguments of a column-major BLAS GEMM (cublasGemmEx, cublasLtMatmul) that computes `problem`'s row-major
/// C = A·B. Row-major C is column-major Cᵀ = Bᵀ·Aᵀ, so BLAS's first operand is our B buffer and its second our
/// A buffer; `m`, `n`, `k` and the leading dimensions are in BLAS's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlasCall {
    /// op(first) = firstᵀ: our B is column-major.
    pub transa: bool,
    /// op(second) = secondᵀ: our A is column-major.
    pub transb: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
}

impl BlasCall {
    pub fn of(problem: &GemmProblem) -> BlasCall {
        let GemmShape { m, n, k } = problem.shape;
        let transa = problem.layout.b_order() == Order::ColMajor;
        let transb = problem.layout.a_order() == Order::ColMajor;
        BlasCall {
            transa,
            transb,
            m: n,
            n: m,
            k,
            lda: if transa { k } else { n },
            ldb: if transb { m } else { k },
            ldc: n,
        }
    }

    /// Rows and columns of the first operand as stored, column-major (what a cuBLASLt matrix layout describes).
    pub fn first_dims(&self) -> (usize, usize) {
        if self.transa { (self.k, self.m) } else { (self.m, self.k) }
    }

    /// Rows and columns of the second operand as stored, column-major.
    pub fn second_dims(&self) -> (usize, usize) {
        if self.transb { (self.n, self.k) } else { (self.k, self.n) }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// cuBLASLt

struct MatmulDesc(lt_sys::cublasLtMatmulDesc_t);

impl Drop for MatmulDesc {
    fn drop(&mut self) {
        // SAFETY: created by cublasLtMatmulDescCreate and destroyed only here. A failure cannot be reported from
        // a destructor and leaks only the descriptor.
        let _ = unsafe { lt::destroy_matmul_desc(self.0) };
    }
}

struct MatrixLayout(lt_sys::cublasLtMatrixLayout_t);

impl Drop for MatrixLayout {
    fn drop(&mut self) {
        // SAFETY: as for MatmulDesc.
        let _ = unsafe { lt::destroy_matrix_layout(self.0) };
    }
}

struct Preference(lt_sys::cublasLtMatmulPreference_t);

impl Drop for Preference {
    fn drop(&mut self) {
        // SAFETY: as for MatmulDesc.
        let _ = unsafe { lt::destroy_matmul_pref(self.0) };
    }
}

/// Everything one problem's cublasLtMatmul needs, made once.
struct LtPlan {
    problem: GemmProblem,
    desc: MatmulDesc,
    first: MatrixLayout,
    second: MatrixLayout,
    out: MatrixLayout,
    /// The heuristic's algorithms that fit the workspace, best-ranked first (only the first when not tuning).
    algos: Vec<lt_sys::cublasLtMatmulAlgo_t>,
    /// The one launches use: the first, or after tuning the fastest measured.
    chosen: usize,
    /// Whether `chosen` was measured (tuning runs once per problem, on the first input set bound).
    tuned: bool,
}

fn lt_data_type(dtype: Dtype) -> lt_sys::cudaDataType_t {
    match dtype {
        Dtype::Bf16 => lt_sys::cudaDataType_t::CUDA_R_16BF,
        Dtype::F16 => lt_sys::cudaDataType_t::CUDA_R_16F,
    }
}

/// cuBLASLt matmul with a 32 MiB workspace and either the heuristic's best-ranked algorithm for the problem
/// ([`CublasLt::new`]) or the fastest of its first few, measured ([`CublasLt::tuned`]).
pub struct CublasLt {
    handle: lt_sys::cublasLtHandle_t,
    plan: Option<LtPlan>,
    workspace: CudaSlice<u8>,
    /// Heuristic algorithms to consider: 1, or [`TUNED_CANDIDATES`] when tuning.
    candidates: usize,
}

impl CublasLt {
    /// The heuristic's best-ranked algorithm, as `cublasLt`.
    pub fn new(gpu: &Gpu) -> Result<CublasLt> {
        Self::with_candidates(gpu, 1)
    }

    /// The fastest of the heuristic's first [`TUNED_CANDIDATES`] algorithms on the benchmark's inputs, as
    /// `cublasLt-tuned`.
    pub fn tuned(gpu: &Gpu) -> Result<CublasLt> {
        Self::with_candidates(gpu, TUNED_CANDIDATES)
    }

    fn with_candidates(gpu: &Gpu, candidates: usize) -> Result<CublasLt> {
        // SAFETY: only tries to open the library.
        if !unsafe { lt_sys::is_culib_present() } {
            return Err(library_missing("cublasLt"));
        }
        gpu.context().bind_to_thread()?;
        let workspace = gpu.stream().alloc_zeros::<u8>(WORKSPACE_BYTES)?;
        let handle = lt::create_handle().map_err(cublaslt_error("cublasLtCreate"))?;
        Ok(CublasLt { handle, plan: None, workspace, candidates })
    }

    fn name(&self) -> &'static str {
        if self.candidates > 1 { CUBLASLT_TUNED } else { CUBLASLT }
    }

    fn plan(&self, problem: &GemmProblem) -> Result<LtPlan> {
        let call = BlasCall::of(problem);
        let data_type = lt_data_type(problem.dtype);
        let desc = MatmulDesc(
            lt::create_matmul_desc(lt_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F, lt_sys::cudaDataType_t::CUDA_R_32F)
                .map_err(cublaslt_error("cublasLtMatmulDescCreate"))?,
        );
        // cublasOperation_t: CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 (the cuBLASLt bindings do not carry the enum).
        for (attribute, transposed) in [
            (lt_sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA, call.transa),
            (lt_sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB, call.transb),
        ] {
            let op: i32 = transposed.into();
            // SAFETY: `desc` is live; the value is a 4-byte cublasOperation_t read during the call.
            unsafe { lt::set_matmul_desc_attribute(desc.0, attribute, (&op as *const i32).cast(), size_of::<i32>()) }
                .map_err(cublaslt_error("cublasLtMatmulDescSetAttribute"))?;
        }
        let layout = |(rows, cols): (usize, usize), ld: usize| -> Result<MatrixLayout> {
            Ok(MatrixLayout(
                lt::create_matrix_layout(data_type, rows as u64, cols as u64, ld as i64)
                    .map_err(cublaslt_error("cublasLtMatrixLayoutCreate"))?,
            ))
        };
        let first = layout(call.first_dims(), call.lda)?;
        let second = layout(call.second_dims(), call.ldb)?;
        let out = layout((call.m, call.n), call.ldc)?;
        let preference =
            Preference(lt::create_matmul_pref().map_err(cublaslt_error("cublasLtMatmulPreferenceCreate"))?);
        let max_workspace = WORKSPACE_BYTES as u64;
        // SAFETY: `preference` is live; the value is the uint64_t this attribute takes.
        unsafe {
            lt::set_matmul_pref_attribute(
                preference.0,
                lt_sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&max_workspace as *const u64).cast(),
                size_of::<u64>(),
            )
        }
        .map_err(cublaslt_error("cublasLtMatmulPreferenceSetAttribute"))?;
        let requested = c_int::try_from(self.candidates).unwrap_or(c_int::MAX);
        let mut results: Vec<lt_sys::cublasLtMatmulHeuristicResult_t> = Vec::with_capacity(self.candidates);
        let mut returned: c_int = 0;
        // SAFETY: every descriptor is live and describes this problem; `results` has room for `requested` entries,
        // of which the call writes the first `returned`.
        unsafe {
            lt_sys::cublasLtMatmulAlgoGetHeuristic(
                self.handle,
                desc.0,
                first.0,
                second.0,
                out.0,
                out.0,
                preference.0,
                requested,
                results.as_mut_ptr(),
                &mut returned,
            )
        }
        .result()
        .map_err(cublaslt_error("cublasLtMatmulAlgoGetHeuristic"))?;
        // SAFETY: the call succeeded and wrote the first `returned` (≤ `requested`) entries.
        unsafe { results.set_len(usize::try_from(returned).unwrap_or(0).min(self.candidates)) };
        let algos: Vec<_> = results
            .iter()
            .filter(|r| r.state == lt_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS && r.workspaceSize <= WORKSPACE_BYTES)
            .map(|r| r.algo)
            .collect();
        if algos.is_empty() {
            return Err(Error::Cublas(format!(
                "cublasLtMatmulAlgoGetHeuristic: no algorithm for {problem} within the {WORKSPACE_BYTES}-byte workspace \
                 ({returned} returned)"
            )));
        }
        let tuned = algos.len() == 1;
        Ok(LtPlan { problem: *problem, desc, first, second, out, algos, chosen: 0, tuned })
    }

    /// Times every candidate algorithm on these operands and keeps the fastest; once per plan.
    fn tune<T>(&mut self, gpu: &Gpu, a: &CudaSlice<T>, b: &CudaSlice<T>, c: &mut CudaSlice<T>) -> Result<()> {
        let plan = self.plan.as_ref().expect("prepared before bind");
        if plan.tuned {
            return Ok(());
        }
        let chosen = fastest_candidate(gpu, plan.algos.len(), |index| self.matmul(gpu, index, a, b, c));
        let plan = self.plan.as_mut().expect("prepared before bind");
        plan.chosen = chosen.ok_or_else(|| {
            Error::Cublas(format!("none of the {} cuBLASLt algorithms ran for {}", plan.algos.len(), plan.problem))
        })?;
        plan.tuned = true;
        Ok(())
    }

    /// One cublasLtMatmul with the plan's algorithm `algo` (an index into its candidates).
    fn matmul<T>(
        &self,
        gpu: &Gpu,
        algo: usize,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> Result<()> {
        let plan = self.plan.as_ref().expect("prepared before launch");
        check_lengths(self.name(), &plan.problem, a.len(), b.len(), c.len())?;
        let stream = gpu.stream();
        let (a_ptr, _a_use) = a.device_ptr(stream);
        let (b_ptr, _b_use) = b.device_ptr(stream);
        let (c_ptr, _c_use) = c.device_ptr_mut(stream);
        let (workspace, _workspace_use) = self.workspace.device_ptr(stream);
        let (alpha, beta) = (1f32, 0f32);
        // SAFETY: the plan's descriptors describe these buffers (lengths checked above); BLAS's first operand is
        // our B and its second our A (see BlasCall); C is both the (unread, beta = 0) input and the output;
        // alpha and beta are fp32 host scalars, as the fp32 scale type requires; the workspace holds
        // WORKSPACE_BYTES; every pointer stays valid until the call is enqueued on this stream.
        unsafe {
            lt::matmul(
                self.handle,
                plan.desc.0,
                (&alpha as *const f32).cast(),
                (&beta as *const f32).cast(),
                b_ptr as *const c_void,
                plan.first.0,
                a_ptr as *const c_void,
                plan.second.0,
                c_ptr as *const c_void,
                plan.out.0,
                c_ptr as *mut c_void,
                plan.out.0,
                &plan.algos[algo],
                workspace as *mut c_void,
                WORKSPACE_BYTES,
                stream.cu_stream() as lt_sys::cudaStream_t,
            )
        }
        .map_err(cublaslt_error("cublasLtMatmul"))
    }
}

/// One configuration attribute of a cuBLASLt algorithm (all the ones read here are 32-bit), or `None` where this
/// cuBLASLt does not report it.
fn algo_attribute(
    algo: &lt_sys::cublasLtMatmulAlgo_t,
    attribute: lt_sys::cublasLtMatmulAlgoConfigAttributes_t,
) -> Option<u32> {
    let mut value = 0u32;
    let mut written = 0usize;
    // SAFETY: `algo` is an initialized algorithm from the heuristic; the buffer is 4 bytes, as these attributes are.
    let status = unsafe {
        lt_sys::cublasLtMatmulAlgoConfigGetAttribute(
            algo,
            attribute,
            (&mut value as *mut u32).cast(),
            size_of::<u32>(),
            &mut written,
        )
    };
    (status == lt_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS && written == size_of::<u32>()).then_some(value)
}

impl Drop for CublasLt {
    fn drop(&mut self) {
        self.plan = None;
        // SAFETY: created in `new`, destroyed only here, after every descriptor made with it.
        let _ = unsafe { lt::destroy_handle(self.handle) };
    }
}

impl GemmContender for CublasLt {
    fn name(&self) -> &str {
        CublasLt::name(self)
    }

    fn is_peer(&self) -> bool {
        true
    }

    fn prepare(&mut self, gpu: &Gpu, problem: &GemmProblem) -> Result<()> {
        if self.plan.as_ref().is_some_and(|plan| plan.problem == *problem) {
            return Ok(());
        }
        self.plan = None;
        gpu.context().bind_to_thread()?;
        self.plan = Some(self.plan(problem)?);
        Ok(())
    }

    /// The chosen algorithm's rank in the heuristic's list and its configuration ids (cublasLt.h's
    /// `cublasLtMatmulTile_t`, `cublasLtMatmulStages_t`, `cublasLtClusterShape_t`).
    fn describe(&self) -> Option<String> {
        use lt_sys::cublasLtMatmulAlgoConfigAttributes_t as Attribute;
        let plan = self.plan.as_ref()?;
        let algo = &plan.algos[plan.chosen];
        let field = |attribute| algo_attribute(algo, attribute).map_or("?".to_string(), |v| v.to_string());
        Some(format!(
            "algorithm {} of {}: id {}, tile {}, stages {}, cluster {}, split-K {}",
            plan.chosen + 1,
            plan.algos.len(),
            field(Attribute::CUBLASLT_ALGO_CONFIG_ID),
            field(Attribute::CUBLASLT_ALGO_CONFIG_TILE_ID),
            field(Attribute::CUBLASLT_ALGO_CONFIG_STAGES_ID),
            field(Attribute::CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
            field(Attribute::CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
        ))
    }

    fn bind(&mut self, gpu: &Gpu, problem: &GemmProblem, operands: Operands<'_>) -> Result<()> {
        check_dtype(self.name(), problem, &operands)?;
        self.prepare(gpu, problem)?;
        match operands {
            Operands::Bf16 { a, b, c } => self.tune(gpu, a, b, c),
            Operands::F16 { a, b, c } => self.tune(gpu, a, b, c),
        }
    }

    fn launch(&mut self, gpu: &Gpu, problem: &GemmProblem, operands: Operands<'_>) -> Result<()> {
        check_dtype(self.name(), problem, &operands)?;
        self.prepare(gpu, problem)?;
        let algo = self.plan.as_ref().expect("prepared above").chosen;
        match operands {
            Operands::Bf16 { a, b, c } => self.matmul(gpu, algo, a, b, c),
            Operands::F16 { a, b, c } => self.matmul(gpu, algo, a, b, c),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// cublasGemmEx

/// The classic cublasGemmEx with `CUBLAS_GEMM_DEFAULT`, given the same 32 MiB workspace as cuBLASLt.
pub struct CublasGemmEx {
    // Declared before the workspace: the handle is destroyed before the memory it was given.
    blas: CudaBlas,
    workspace: CudaSlice<u8>,
}

fn blas_data_type(dtype: Dtype) -> cublas::sys::cudaDataType {
    match dtype {
        Dtype::Bf16 => cublas::sys::cudaDataType::CUDA_R_16BF,
        Dtype::F16 => cublas::sys::cudaDataType::CUDA_R_16F,
    }
}

fn blas_op(transposed: bool) -> cublas::sys::cublasOperation_t {
    if transposed { cublas::sys::cublasOperation_t::CUBLAS_OP_T } else { cublas::sys::cublasOperation_t::CUBLAS_OP_N }
}

impl CublasGemmEx {
    pub fn new(gpu: &Gpu) -> Result<CublasGemmEx> {
        // SAFETY: only tries to open the library.
        if !unsafe { cublas::sys::is_culib_present() } {
            return Err(library_missing("cublas"));
        }
        let stream = gpu.stream();
        let workspace = stream.alloc_zeros::<u8>(WORKSPACE_BYTES)?;
        let blas = CudaBlas::new(stream.clone()).map_err(cublas_error("cublasCreate"))?;
        {
            let (ptr, _use) = workspace.device_ptr(stream);
            // SAFETY: the workspace is WORKSPACE_BYTES of device memory that outlives the handle (field order).
            unsafe { cublas::sys::cublasSetWorkspace_v2(*blas.handle(), ptr as *mut c_void, WORKSPACE_BYTES) }
                .result()
                .map_err(cublas_error("cublasSetWorkspace"))?;
        }
        Ok(CublasGemmEx { blas, workspace })
    }

    fn gemm<T>(
        &self,
        gpu: &Gpu,
        problem: &GemmProblem,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> Result<()> {
        self.gemm_into(gpu, problem, a, b, c, blas_data_type(problem.dtype))
    }

    /// C = A·B with C in f32 (`CUDA_R_32F`), A and B of the problem's type: the peer of oxtile's f32-output GEMM
    /// (tests compare the two; the benchmark tables hold same-type outputs only).
    pub fn gemm_f32_out<T: GemmElement>(
        &self,
        gpu: &Gpu,
        problem: &GemmProblem,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<f32>,
    ) -> Result<()> {
        if T::DTYPE != problem.dtype {
            return Err(Error::bad_argument(CUBLAS_GEMM_EX, format!("{problem}: operands are {}", T::DTYPE.name())));
        }
        self.gemm_into(gpu, problem, a, b, c, cublas::sys::cudaDataType::CUDA_R_32F)
    }

    /// cublasGemmEx with A and B of the problem's type and C of `c_type` (the caller vouches that `O` is it).
    fn gemm_into<T, O>(
        &self,
        gpu: &Gpu,
        problem: &GemmProblem,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<O>,
        c_type: cublas::sys::cudaDataType,
    ) -> Result<()> {
        check_lengths(CUBLAS_GEMM_EX, problem, a.len(), b.len(), c.len())?;
        let call = BlasCall::of(problem);
        let (m, n, k) = (int("m", call.m)?, int("n", call.n)?, int("k", call.k)?);
        let (lda, ldb, ldc) = (int("lda", call.lda)?, int("ldb", call.ldb)?, int("ldc", call.ldc)?);
        let data_type = blas_data_type(problem.dtype);
        gpu.context().bind_to_thread()?;
        let stream = gpu.stream();
        let (a_ptr, _a_use) = a.device_ptr(stream);
        let (b_ptr, _b_use) = b.device_ptr(stream);
        let (c_ptr, _c_use) = c.device_ptr_mut(stream);
        let (alpha, beta) = (1f32, 0f32);
        // SAFETY: as in CublasLt::matmul: BLAS's first operand is our B, its second our A, dimensions and leading
        // dimensions from BlasCall match the buffers' lengths (checked above), whose element types are the
        // problem's (A, B) and `c_type` (C); fp32 host alpha and beta for CUBLAS_COMPUTE_32F; the handle's stream
        // is the GPU's stream.
        unsafe {
            cublas::result::gemm_ex(
                *self.blas.handle(),
                blas_op(call.transa),
                blas_op(call.transb),
                m,
                n,
                k,
                (&alpha as *const f32).cast(),
                b_ptr as *const c_void,
                data_type,
                lda,
                a_ptr as *const c_void,
                data_type,
                ldb,
                (&beta as *const f32).cast(),
                c_ptr as *mut c_void,
                c_type,
                ldc,
                cublas::sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublas::sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(cublas_error("cublasGemmEx"))
    }

    /// The workspace cuBLAS was given (kept alive with the handle).
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.len()
    }
}

impl GemmContender for CublasGemmEx {
    fn name(&self) -> &str {
        CUBLAS_GEMM_EX
    }

    fn is_peer(&self) -> bool {
        true
    }

    fn launch(&mut self, gpu: &Gpu, problem: &GemmProblem, operands: Operands<'_>) -> Result<()> {
        check_dtype(CUBLAS_GEMM_EX, problem, &operands)?;
        match operands {
            Operands::Bf16 { a, b, c } => self.gemm(gpu, problem, a, b, c),
            Operands::F16 { a, b, c } => self.gemm(gpu, problem, a, b, c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::gemm::reference_f64;
    use crate::bench::gemm::tests::{problem, values};
    use crate::types::GemmLayout;

    /// A column-major BLAS GEMM on the CPU: C = op(first)·op(second), as cuBLAS defines it.
    fn blas_gemm(call: &BlasCall, first: &[f64], second: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; call.ldc * call.n];
        for j in 0..call.n {
            for i in 0..call.m {
                let mut sum = 0.0;
                for p in 0..call.k {
                    let x = if call.transa { first[p + i * call.lda] } else { first[i + p * call.lda] };
                    let y = if call.transb { second[j + p * call.ldb] } else { second[p + j * call.ldb] };
                    sum += x * y;
                }
                c[i + j * call.ldc] = sum;
            }
        }
        c
    }

    #[test]
    fn blas_arguments_compute_the_row_major_product() {
        // Odd sizes, M ≠ N ≠ K, so a swapped dimension or leading dimension cannot pass by accident.
        let (m, n, k) = (7, 5, 3);
        for layout in GemmLayout::ALL {
            let p = problem(m, n, k, layout);
            let a = values(p.a_len(), 3);
            let b = values(p.b_len(), 4);
            let call = BlasCall::of(&p);
            let (rows, cols) = call.first_dims();
            assert_eq!(rows * cols, p.b_len());
            assert!(call.lda >= rows, "{layout:?}: lda {} < rows {rows}", call.lda);
            let (rows, cols) = call.second_dims();
            assert_eq!(rows * cols, p.a_len());
            assert!(call.ldb >= rows, "{layout:?}: ldb {} < rows {rows}", call.ldb);
            // BLAS's first operand is our B, its second our A; its column-major C is our row-major C.
            let got = blas_gemm(&call, &b, &a);
            let want = reference_f64(&p, &a, &b);
            assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-12), "{layout:?}");
        }
        // torch's a @ b is cuBLAS NN on swapped operands; our kernel's tn is cuBLAS TN.
        let letters = |layout| {
            let call = BlasCall::of(&problem(1, 1, 1, layout));
            [call.transa, call.transb].map(|t| if t { 'T' } else { 'N' })
        };
        assert_eq!(GemmLayout::ALL.map(letters), [['T', 'N'], ['N', 'N'], ['N', 'T'], ['T', 'T']]);
        let call = BlasCall::of(&problem(7, 5, 3, GemmLayout::Tt));
        assert_eq!((call.transa, call.transb, call.m, call.n, call.k), (false, false, 5, 7, 3));
    }
}
