//! The GPU handle: context, stream and the PTX modules, loaded once each.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DriverError, LaunchConfig};
use cudarc::nvrtc::Ptx;

use crate::error::{Error, Result};
use crate::kernels::{Kernel, MODULES, Module};

/// One GPU with a stream of its own. Cheap to share by reference; launches go to [`Gpu::stream`].
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (u32, u32),
    sm_count: u32,
    /// Shared by the handles [`Gpu::on_stream`] makes, so each module loads once per context.
    modules: Arc<[OnceLock<Arc<CudaModule>>; MODULES.len()]>,
    /// The last stream-K kernel (one whose blocks wait for each other) launched on the stream since the last
    /// successful [`Gpu::synchronize`]: what a launch failure found there most likely comes from.
    stream_k_launched: Mutex<Option<&'static str>>,
}

impl Gpu {
    /// Opens GPU `ordinal`. Fails with [`Error::NoDriver`] or [`Error::NoGpu`] instead of panicking when the
    /// machine has no driver or no device.
    pub fn new(ordinal: usize) -> Result<Gpu> {
        // cudarc loads libcuda on first use and panics when it is absent: ask first.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoDriver("libcuda.so could not be loaded".into()));
        }
        let count = CudaContext::device_count().map_err(|e| Error::NoGpu(Some(e.to_string())))?;
        if count <= 0 {
            return Err(Error::NoGpu(None));
        }
        if ordinal >= count as usize {
            return Err(Error::NoGpu(Some(format!("asked for GPU {ordinal}, the machine has {count}"))));
        }
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.new_stream()?;
        let (major, minor) = ctx.compute_capability()?;
        let sm_count = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        Ok(Gpu {
            name: ctx.name()?,
            ctx,
            stream,
            compute_capability: (major as u32, minor as u32),
            sm_count,
            modules: Default::default(),
            stream_k_launched: Mutex::new(None),
        })
    }

    /// A handle on the same context and loaded modules that launches on `stream`, a stream another library owns
    /// (PyTorch's current stream, for the Python package): its launches are ordered with that library's work on the
    /// stream. The null stream (0) is the context's legacy default stream. A stream of another context is refused
    /// ([`Error::WrongContext`]).
    ///
    /// # Safety
    /// `stream` is 0 or a live stream handle, and stays alive while the returned handle, or anything launched or
    /// allocated through it, is in use.
    pub unsafe fn on_stream(&self, stream: sys::CUstream) -> Result<Gpu> {
        self.ctx.bind_to_thread()?;
        if !stream.is_null() {
            let mut owner: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: the caller vouches for the stream handle; the call only writes `owner`.
            unsafe { sys::cuStreamGetCtx(stream, &mut owner) }.result()?;
            if !std::ptr::eq(owner, self.ctx.cu_ctx()) {
                return Err(Error::WrongContext {
                    op: "Gpu::on_stream",
                    what: "the stream".into(),
                    found: format!("context {owner:p}"),
                    expected: format!("context {:p} on GPU {}", self.ctx.cu_ctx(), self.ctx.ordinal()),
                });
            }
        }
        // SAFETY: the stream belongs to this context (checked above, or the null stream) and outlives the handle
        // (the caller's promise); cudarc does not destroy a borrowed stream.
        let stream = unsafe { self.ctx.wrap_borrowed_stream(stream) };
        Ok(Gpu {
            ctx: self.ctx.clone(),
            stream,
            name: self.name.clone(),
            compute_capability: self.compute_capability,
            sm_count: self.sm_count,
            modules: self.modules.clone(),
            stream_k_launched: Mutex::new(None),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }

    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits for the work queued on the stream. A failure is the driver's error, except that a launch failure
    /// (`CUDA_ERROR_LAUNCH_FAILED`, `CUDA_ERROR_ILLEGAL_INSTRUCTION`: what a trap reports) with a stream-K GEMM
    /// launched since the last successful synchronization is [`Error::StreamKFailed`], which names that kernel.
    /// (A failure found by a synchronization through cudarc directly is the plain driver error.)
    pub fn synchronize(&self) -> Result<()> {
        let mut launched = self.stream_k_launched.lock().unwrap_or_else(PoisonError::into_inner);
        match self.stream.synchronize() {
            Ok(()) => {
                *launched = None;
                Ok(())
            }
            Err(error) => Err(explain_failure(error, *launched)),
        }
    }

    /// Records that `kernel`, a stream-K kernel, was just launched on the stream ([`Gpu::synchronize`]).
    pub(crate) fn note_stream_k_launch(&self, kernel: &'static str) {
        *self.stream_k_launched.lock().unwrap_or_else(PoisonError::into_inner) = Some(kernel);
    }

    /// The device function of `kernel`, after checking this GPU can run its target.
    pub fn function(&self, kernel: Kernel) -> Result<CudaFunction> {
        let needed = kernel.target.compute_capability();
        // Architecture-specific targets (sm_90a, sm_100a) run only on exactly that major version.
        if self.compute_capability.0 != needed.0 || self.compute_capability < needed {
            return Err(Error::ComputeCapability {
                kernel: kernel.name,
                target: kernel.target.cpu(),
                needed: format!("{}.{}", needed.0, needed.1),
                device: self.name.clone(),
                found: format!("{}.{}", self.compute_capability.0, self.compute_capability.1),
            });
        }
        let index = MODULES
            .iter()
            .position(|m| m.family == kernel.family && m.target == kernel.target)
            .expect("every registered kernel's family and target have a module");
        let module = match self.modules[index].get() {
            Some(module) => module.clone(),
            None => {
                let loaded = self.load(&MODULES[index])?;
                self.modules[index].get_or_init(|| loaded).clone()
            }
        };
        Ok(module.load_function(kernel.name)?)
    }

    /// Loads `module`: its cubin where the build made one and this GPU is exactly its target (an sm_90a image runs
    /// on compute capability 9.0 only), else its PTX, which the driver compiles (about a minute for the sm_90a module,
    /// then cached by the driver). Should the driver refuse the cubin (one from a ptxas newer than the driver), the
    /// PTX: slower to load, the same kernels.
    fn load(&self, module: &Module) -> Result<Arc<CudaModule>> {
        let image_fits = !module.cubin.is_empty() && self.compute_capability == module.target.compute_capability();
        if image_fits && let Ok(loaded) = self.ctx.load_module(Ptx::from_binary(module.cubin.to_vec())) {
            return Ok(loaded);
        }
        Ok(self.ctx.load_module(Ptx::from_src(module.ptx))?)
    }

    /// A 1-D launch of `threads_per_block`-thread blocks covering `work_items`, capped at a few waves
    /// (the kernels loop grid-stride over the rest).
    pub fn grid_1d(&self, work_items: usize, threads_per_block: u32) -> LaunchConfig {
        let wanted = work_items.div_ceil(threads_per_block as usize).max(1);
        let cap = self.sm_count as usize * 16;
        LaunchConfig {
            grid_dim: (wanted.min(cap) as u32, 1, 1),
            block_dim: (threads_per_block, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

/// The error a failed synchronization reports: [`Error::StreamKFailed`] for a launch failure when a stream-K kernel
/// (`stream_k`) ran since the last successful one, the driver's error otherwise.
fn explain_failure(error: DriverError, stream_k: Option<&'static str>) -> Error {
    use sys::cudaError_enum::{CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_LAUNCH_FAILED};
    match stream_k {
        Some(kernel) if matches!(error.0, CUDA_ERROR_LAUNCH_FAILED | CUDA_ERROR_ILLEGAL_INSTRUCTION) => {
            Error::StreamKFailed { kernel, source: error }
        }
        _ => Error::Driver(error),
    }
}

/// How a grid is launched: plainly, or through the cluster launch path with the cluster-dimension attribute.
///
/// A grid of single blocks goes plainly: launched as clusters of one, the narrow GEMM tile ran 7% slower at 1024³
/// and 18% at 1024×1024×4096, its k-loop included. The blocks land elsewhere (`cargo run --example placement`), and
/// the L2 request coalescer then merges fewer of their reads: 1.23 deliveries per L2-slice read against 1.73
/// (docs/perf-notes.md, GEMM sm90 v10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterShape {
    Plain,
    Clusters,
}

impl ClusterShape {
    /// Plain for single blocks, clusters otherwise.
    pub fn of(launch: &ClusterLaunch) -> ClusterShape {
        if launch.cluster_dim == (1, 1, 1) { ClusterShape::Plain } else { ClusterShape::Clusters }
    }
}

/// A launch in thread-block clusters, which cudarc's launch builder does not offer: `cuLaunchKernelEx` with
/// the cluster-dimension attribute.
pub struct ClusterLaunch {
    pub grid_dim: (u32, u32, u32),
    pub block_dim: (u32, u32, u32),
    pub cluster_dim: (u32, u32, u32),
    pub shared_mem_bytes: u32,
    /// Programmatic dependent launch (the programmatic-stream-serialization attribute): the grid may start before
    /// the kernel ahead of it in the stream has finished, once that kernel's blocks have all signalled
    /// (`griddepcontrol.launch_dependents`) or left. Only for kernels that `griddepcontrol.wait` before they touch
    /// global memory another kernel may write or read.
    pub dependent_launch: bool,
}

impl Gpu {
    /// Launches `function` on this GPU's stream with `args` (pointers to each argument's value, in order), in clusters
    /// of `launch.cluster_dim`; a grid of single blocks goes without the cluster attribute (see [`ClusterShape`]).
    ///
    /// # Safety
    /// `args` matches the kernel's signature and every pointer it passes is valid for the kernel's accesses;
    /// the grid is a multiple of the cluster shape; with `launch.dependent_launch`, the kernel waits
    /// (`griddepcontrol.wait`) before it touches global memory.
    pub unsafe fn launch_cluster(
        &self,
        kernel: &'static str,
        function: &CudaFunction,
        launch: &ClusterLaunch,
        args: &mut [*mut std::ffi::c_void],
    ) -> Result<()> {
        // SAFETY: the caller's.
        unsafe { self.launch_as(ClusterShape::of(launch), kernel, function, launch, args) }
    }

    /// [`Gpu::launch_cluster`] with the cluster attribute given or left out as `shape` says: single blocks may take
    /// either path (for probes and ablations of the two); clusters of more than one block only the cluster path
    /// (refused otherwise, before any launch). The one launch of the GEMM and attention kernels: the grid, block,
    /// cluster and dynamic shared memory of `launch`, programmatic dependent launch where it asks for it, and the
    /// fields of the family's params struct as `args` (`oxtile_abi::GemmParams::kernel_args`).
    ///
    /// # Safety
    /// As [`Gpu::launch_cluster`]'s.
    pub unsafe fn launch_as(
        &self,
        shape: ClusterShape,
        kernel: &'static str,
        function: &CudaFunction,
        launch: &ClusterLaunch,
        args: &mut [*mut std::ffi::c_void],
    ) -> Result<()> {
        if shape == ClusterShape::Plain && launch.cluster_dim != (1, 1, 1) {
            let message = format!("clusters of {:?} blocks cannot launch plainly", launch.cluster_dim);
            return Err(Error::bad_argument(kernel, message));
        }
        self.ctx.bind_to_thread()?;
        // At most both attributes, on the stack: this runs at every launch.
        let mut attributes = [launch.cluster_attribute(), ClusterLaunch::dependent_attribute()];
        let given = match (shape == ClusterShape::Clusters, launch.dependent_launch) {
            (true, dependent) => 1 + dependent as usize,
            (false, true) => {
                attributes.swap(0, 1);
                1
            }
            (false, false) => 0,
        };
        let config = launch.config(self.stream.cu_stream(), &mut attributes[..given]);
        // SAFETY: the config and attributes outlive the call; the caller vouches for the arguments.
        unsafe { sys::cuLaunchKernelEx(&config, function.cu_function(), args.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .map_err(|source| Error::Launch { kernel, source })
    }

    /// How many clusters of `launch`'s shape can be resident on this GPU at once (`cuOccupancyMaxActiveClusters`):
    /// a persistent grid larger than that runs its last clusters in a second wave.
    pub fn max_active_clusters(&self, function: &CudaFunction, launch: &ClusterLaunch) -> Result<u32> {
        self.ctx.bind_to_thread()?;
        let mut attributes = [launch.cluster_attribute()];
        let config = launch.config(self.stream.cu_stream(), &mut attributes);
        let mut clusters = 0;
        // SAFETY: the config and attributes outlive the call, which only reads them.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, function.cu_function(), &config) }.result()?;
        Ok(clusters.max(0) as u32)
    }
}

impl ClusterLaunch {
    fn cluster_attribute(&self) -> sys::CUlaunchAttribute {
        // SAFETY: zeroed is a valid bit pattern for this plain C union; only clusterDim is set.
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        let (x, y, z) = self.cluster_dim;
        value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x, y, z };
        sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value,
        }
    }

    fn dependent_attribute() -> sys::CUlaunchAttribute {
        // SAFETY: as above; only programmaticStreamSerializationAllowed is set.
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.programmaticStreamSerializationAllowed = 1;
        sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value,
        }
    }

    fn config(&self, stream: sys::CUstream, attributes: &mut [sys::CUlaunchAttribute]) -> sys::CUlaunchConfig {
        sys::CUlaunchConfig {
            gridDimX: self.grid_dim.0,
            gridDimY: self.grid_dim.1,
            gridDimZ: self.grid_dim.2,
            blockDimX: self.block_dim.0,
            blockDimY: self.block_dim.1,
            blockDimZ: self.block_dim.2,
            sharedMemBytes: self.shared_mem_bytes,
            hStream: stream,
            attrs: attributes.as_mut_ptr(),
            numAttrs: attributes.len() as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sys::cudaError_enum::{CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_LAUNCH_FAILED};

    #[test]
    fn launch_failures_after_a_stream_k_kernel_name_it() {
        let kernel = "gemm_bf16_tn_128x256_sk_sm90";
        for code in [CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_ILLEGAL_INSTRUCTION] {
            let error = explain_failure(DriverError(code), Some(kernel));
            // (Not displayed: a DriverError's text comes from libcuda, which a machine without a GPU lacks.)
            assert!(matches!(error, Error::StreamKFailed { kernel: k, source } if k == kernel && source.0 == code));
            // Without a stream-K launch since the last synchronization, the driver's error as it is.
            assert!(matches!(explain_failure(DriverError(code), None), Error::Driver(_)));
        }
        // Other failures are not what a flag wait's trap reports.
        assert!(matches!(explain_failure(DriverError(CUDA_ERROR_ILLEGAL_ADDRESS), Some(kernel)), Error::Driver(_)));
    }
}
