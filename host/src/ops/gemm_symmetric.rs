//! The symmetric GEMM: D = alpha·A·B + beta·C + diagonal·I for a stack of n×n outputs D that the caller promises are
//! symmetric (A·B and C both), on the Hopper GEMM data path with the triangular tile order
//! (gpu/kernels/gemm/src/sm90.rs, `oxtile_abi::raster::TriangularScheduler`): only the tiles on and above the diagonal
//! are computed, each stored as it is and, above the diagonal, transposed; a diagonal tile's lower half is written
//! from its upper half (`oxtile_abi::symmetric`), so that D is exactly symmetric. About half the tensor work of the
//! full product.
//!
//! Layouts ([`GemmLayout`]): `tn` (A row-major n×k, B column-major k×n): X·Xᵀ from one row-major n×k X passed as both
//! A and B, and A·B of two symmetric n×n matrices (a symmetric B read column-major is itself); `nt` (A column-major,
//! B row-major): Xᵀ·X from one row-major k×n X passed as both. The operands and D are stacks of `batch` matrices, each
//! packed (leading dimension its row length) right after the one before.
//!
//! beta·C: [`gemm_symmetric`] reads D's old contents as C (as [`super::gemm::gemm`] does);
//! [`gemm_symmetric_with_c`] takes a separate C, which the kernel's epilogue reads in place of D's old contents. Only
//! the upper triangle's tiles of C are read, so C must be symmetric as well.

use cudarc::driver::sys::{CUfunction_attribute, CUtensorMap, CUtensorMapDataType};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut};
use std::sync::{Mutex, PoisonError};

use oxtile_abi::raster::TriangularScheduler;
use oxtile_abi::stream_k::StreamK;
use oxtile_abi::{GemmParams, GemmTile, TensorMapBytes};

use super::gemm::{
    GemmElement, GemmLayout, GemmOutput, GemmShape, Order, StreamKWorkspace, check_tma_rows, stream_k_over,
};
use super::{check_context, check_disjoint};
use crate::error::{Error, Result};
pub use crate::kernels::SymmetricVariant;
use crate::kernels::{self, GemmSymmetricKernel};
use crate::runtime::{ClusterLaunch, ClusterShape, Gpu};
use crate::tma::{self, Tile3d};

const OP: &str = "gemm_symmetric";

/// The problem: a stack of `batch` products A·B, A `a.0 × a.1` and B `b.0 × b.1` as the product reads them (rows ×
/// columns, whatever their storage order). The output is `a.0 × b.1` and must be square; `a.1` must be `b.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymmetricShape {
    pub batch: usize,
    pub a: (usize, usize),
    pub b: (usize, usize),
}

impl SymmetricShape {
    /// `batch` products of an n×k A and a k×n B (X·Xᵀ for an n×k X, or Xᵀ·X for a k×n one).
    pub fn new(batch: usize, n: usize, k: usize) -> Self {
        SymmetricShape { batch, a: (n, k), b: (k, n) }
    }

    /// The output's side.
    pub fn n(&self) -> usize {
        self.a.0
    }

    /// The inner dimension.
    pub fn k(&self) -> usize {
        self.a.1
    }

    /// Checks the shape: a square output, matching inner dimensions, every extent from 1 to 2^31 − 1, and at most
    /// 2^32 − 1 tiles over the stack (the kernel counts them in 32 bits).
    pub fn check(&self) -> Result<()> {
        let SymmetricShape { batch, a, b } = *self;
        if a.0 != b.1 {
            return Err(Error::NotSquare { op: OP, rows: a.0, columns: b.1 });
        }
        if a.1 != b.0 {
            return Err(Error::InnerMismatch { op: OP, a_rows: a.0, a_columns: a.1, b_rows: b.0, b_columns: b.1 });
        }
        let limit = i32::MAX as usize;
        if [batch, a.0, a.1].iter().any(|&d| d == 0 || d > limit) {
            return Err(Error::bad_argument(
                OP,
                format!("batch {batch}, n {}, k {}: each must be 1 to 2^31 - 1", a.0, a.1),
            ));
        }
        let side = a.0.div_ceil(SymmetricVariant::NARROWEST_TILE as usize) as u64;
        let tiles = side * (side + 1) / 2 * batch as u64;
        if tiles > u32::MAX as u64 {
            let message = format!("a stack of {batch} matrices of side {}: {tiles} tiles, at most 2^32 - 1", a.0);
            return Err(Error::unsupported(OP, message));
        }
        Ok(())
    }
}

/// The layout (tn or nt), the epilogue's scalars and the kernel variant. The default is tn with D = A·B.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SymmetricOptions {
    pub layout: GemmLayout,
    pub alpha: f32,
    pub beta: f32,
    /// Added to each matrix's diagonal by the epilogue: D = alpha·A·B + beta·C + diagonal·I (a polynomial's constant
    /// term, as Newton-Schulz's a·I + b·R + c·R², without a separate pass over D).
    pub diagonal: f32,
    pub variant: SymmetricVariant,
}

impl Default for SymmetricOptions {
    fn default() -> Self {
        SymmetricOptions {
            layout: GemmLayout::Tn,
            alpha: 1.0,
            beta: 0.0,
            diagonal: 0.0,
            variant: SymmetricVariant::Auto,
        }
    }
}

/// The share of a persistent grid's last wave that may idle before [`SymmetricVariant::Auto`] takes the stream-K
/// schedule: the cooperative tile is a little slower per tile than the ping-pong one, and a split tile costs its
/// partials' store and reload, so a last wave nearly full stays data-parallel.
const STREAM_K_FROM_IDLE: f64 = 0.1;

/// The deepest product without beta·C (in k-tiles, [`SymmetricVariant::K_TILE`]) that [`SymmetricVariant::Auto`]
/// gives the ping-pong stream-K tile rather than the cooperative one: a tile's epilogue costs the same at any depth
/// (twice the stores), and the ping-pong consumers hide it under each other's main loops, while the one-consumer
/// cooperative main loop is faster on deep products. A product that reads C has an epilogue long enough (C's
/// reads) that the ping-pong tile wins at every depth measured (docs/perf-notes.md, session 25).
const PINGPONG_STREAM_K_MAX_K_TILES: u32 = 64;

impl SymmetricVariant {
    /// [`SymmetricVariant::Auto`]'s choice for `tiles` triangle tiles of `k_tiles` k-tiles each over the stack on
    /// `sm_count` SMs, the epilogue reading C or not (`blends`): for 16-bit outputs a stream-K tile where the
    /// data-parallel schedule would leave more than [`STREAM_K_FROM_IDLE`] of its time's SM slots idle (waves of
    /// tiles ⌈tiles / SMs⌉ against tiles / SMs of work: 136 tiles, n = 2048 on 132 SMs, take two waves for 1.03 of
    /// work) — the ping-pong one where the product blends or is at most [`PINGPONG_STREAM_K_MAX_K_TILES`] deep, the
    /// cooperative one otherwise — else the ping-pong tile (its epilogue, twice the stores here, hidden under the
    /// other consumer's main loop); the cooperative 128×128 tile for f32 (neither has f32 kernels). Concrete variants
    /// resolve to themselves.
    pub fn resolve(
        self,
        output_bytes: usize,
        tiles: u32,
        k_tiles: u32,
        blends: bool,
        sm_count: u32,
    ) -> SymmetricVariant {
        match self {
            SymmetricVariant::Auto if output_bytes == 2 => {
                let work = tiles as f64 / sm_count.max(1) as f64;
                let waves = work.ceil();
                if (waves - work) / waves > STREAM_K_FROM_IDLE {
                    if blends || k_tiles <= PINGPONG_STREAM_K_MAX_K_TILES {
                        SymmetricVariant::SymmetricStreamKPingPong
                    } else {
                        SymmetricVariant::SymmetricStreamK
                    }
                } else {
                    SymmetricVariant::SymmetricPingPong
                }
            }
            SymmetricVariant::Auto => SymmetricVariant::SymmetricSquare,
            chosen => chosen,
        }
    }
}

/// Whether the kernel stores D through TMA (and its transposed tiles through the mirror map): D's rows 16 bytes
/// apart. Otherwise both halves are stored from registers.
pub fn symmetric_tma_store(n: usize, output_bytes: usize) -> bool {
    (n * output_bytes).is_multiple_of(16)
}

/// The number of elements a buffer of a stack must hold, checked: fewer is [`Error::BufferTooSmall`], more (or a
/// count that is no whole stack) [`Error::BatchMismatch`].
fn check_stack(what: &'static str, elements: usize, batch: usize, per_matrix: usize) -> Result<()> {
    let needed = batch * per_matrix;
    if elements < needed {
        Err(Error::BufferTooSmall { op: OP, what, elements, batch, per_matrix })
    } else if elements != needed {
        Err(Error::BatchMismatch { op: OP, what, elements, batch, per_matrix })
    } else {
        Ok(())
    }
}

/// A 3-D map over a stack of row-major `rows × columns` matrices: dims (columns, rows, batch). The kernels' 3-D TMA
/// instructions need a map of rank 3.
fn stack_map(
    data_type: CUtensorMapDataType,
    address: u64,
    (rows, columns, batch): (usize, usize, usize),
    (box_rows, box_columns): (u32, u32),
) -> Tile3d {
    let (rows, columns, batch) = (rows as u64, columns as u64, batch as u64);
    Tile3d {
        data_type,
        address,
        dims: [columns, rows, batch],
        strides: [columns, rows * columns],
        boxes: [box_columns, box_rows, 1],
    }
}

/// One operand's map over its stack: K-major (`k_major`, stored as mn rows of k) with boxes of `box_mn` rows × 64 k,
/// or MN-major (stored as k rows of mn) with boxes of 64 × 64 (as the general GEMM's `operand_map`).
fn operand_map(
    data_type: CUtensorMapDataType,
    address: u64,
    k_major: bool,
    (mn, k, batch): (usize, usize, usize),
    box_mn: u32,
) -> Tile3d {
    const SWIZZLE_ROW: u32 = GemmTile::MN_BOX;
    if k_major {
        stack_map(data_type, address, (mn, k, batch), (box_mn, SWIZZLE_ROW))
    } else {
        stack_map(data_type, address, (k, mn, batch), (SWIZZLE_ROW, SWIZZLE_ROW))
    }
}

/// D = alpha·A·B + beta·D over the stack, D's old contents being C (read only where beta ≠ 0). Every argument is
/// checked before the launch: the shape ([`SymmetricShape::check`]), the layout (tn or nt, each operand's contiguous
/// dimension a multiple of 8), each buffer's length ([`Error::BufferTooSmall`], [`Error::BatchMismatch`]), context
/// and 16-byte alignment, and D sharing no byte with A or B ([`Error::Overlap`]). One call makes a
/// [`SymmetricPlan`] and launches it once; keep the plan to repeat.
pub fn gemm_symmetric<T: GemmElement, O: GemmOutput<T>>(
    gpu: &Gpu,
    shape: SymmetricShape,
    a: &impl DevicePtr<T>,
    b: &impl DevicePtr<T>,
    d: &mut impl DevicePtrMut<O>,
    options: SymmetricOptions,
) -> Result<()> {
    SymmetricPlan::<T, O>::new(gpu, shape, options, a, b, d)?.launch(gpu, a, b, d)
}

/// D = alpha·A·B + beta·C over the stack with a separate C (a stack of symmetric n×n matrices of D's type), read by
/// the kernel's epilogue. C must have D's shape ([`Error::OperandShape`] for one matrix of another size, the stack
/// errors for another depth) and share no byte with D.
#[allow(clippy::too_many_arguments)]
pub fn gemm_symmetric_with_c<T: GemmElement, O: GemmOutput<T>>(
    gpu: &Gpu,
    shape: SymmetricShape,
    a: &impl DevicePtr<T>,
    b: &impl DevicePtr<T>,
    c: &impl DevicePtr<O>,
    c_shape: (usize, usize),
    d: &mut impl DevicePtrMut<O>,
    options: SymmetricOptions,
) -> Result<()> {
    shape.check()?;
    check_c(gpu, shape, c, c_shape)?;
    SymmetricPlan::<T, O>::new(gpu, shape, options, a, b, d)?.launch_with_c(gpu, a, b, c, d)
}

/// C's shape, depth and context: a stack of `batch` n×n matrices on the GPU's context.
fn check_c<O>(gpu: &Gpu, shape: SymmetricShape, c: &impl DevicePtr<O>, c_shape: (usize, usize)) -> Result<()> {
    let n = shape.n();
    if c_shape != (n, n) {
        return Err(Error::OperandShape { op: OP, what: "C", rows: c_shape.0, columns: c_shape.1, n });
    }
    check_stack("C", c.len(), shape.batch, n * n)?;
    check_context(OP, "C", c.stream().context(), gpu.stream().context())
}

/// A checked symmetric GEMM bound to its A, B and D: the operand maps are encoded and D's two maps encoded and
/// copied to the device once, so a launch is the launch alone (no allocation, no encoding, no host sync). Iterative
/// callers (Newton-Schulz) make one plan per product and launch it every time.
pub struct SymmetricPlan<T: GemmElement, O: GemmOutput<T> = T> {
    shape: SymmetricShape,
    kernel: GemmSymmetricKernel,
    function: CudaFunction,
    /// Everything but D's map addresses, which come from `maps_d` at each launch.
    params: GemmParams,
    launch: ClusterLaunch,
    /// D's straight and mirror maps in device memory (the kernel reads them by address), when D is stored through
    /// TMA ([`symmetric_tma_store`]).
    maps_d: Option<CudaSlice<u64>>,
    /// The buffers the maps describe.
    addresses: (u64, u64, u64),
    /// A stream-K kernel's schedule, and its workspace where the schedule has a tail (taken with write intent at
    /// each launch, so launches of the plan run one after another on any stream).
    stream_k: Option<StreamK>,
    workspace: Option<Mutex<StreamKWorkspace>>,
    _types: std::marker::PhantomData<(T, O)>,
}

impl<T: GemmElement, O: GemmOutput<T>> SymmetricPlan<T, O> {
    /// Checks everything [`gemm_symmetric`] checks and prepares the launch into `d`.
    pub fn new(
        gpu: &Gpu,
        shape: SymmetricShape,
        options: SymmetricOptions,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        d: &mut impl DevicePtrMut<O>,
    ) -> Result<Self> {
        shape.check()?;
        let (batch, n, k) = (shape.batch, shape.n(), shape.k());
        let layout = options.layout;
        if !matches!(layout, GemmLayout::Tn | GemmLayout::Nt) {
            let message =
                format!("layout {layout}: the symmetric GEMM reads tn (X·Xᵀ, A·B of symmetric A, B) or nt (Xᵀ·X)");
            return Err(Error::unsupported(OP, message));
        }
        check_tma_rows(GemmShape { m: n, n, k }, layout)?;
        let (a_address, b_address, d_address) = Self::addresses(gpu, shape, a, b, d)?;
        let triangle_tiles = |side| TriangularScheduler::new(n as u32, side, batch as u32).tiles();
        // Auto counts tiles of the narrowest side, which every symmetric configuration has (128).
        let auto_tiles = triangle_tiles(SymmetricVariant::NARROWEST_TILE);
        let k_tiles = k.div_ceil(SymmetricVariant::K_TILE as usize).min(u32::MAX as usize) as u32;
        // Whether the epilogue reads C: beta ≠ 0 (a diagonal alone adds no reads).
        let blends = options.beta != 0.0;
        let variant = options.variant.resolve(std::mem::size_of::<O>(), auto_tiles, k_tiles, blends, gpu.sm_count());
        let kernel = kernels::find_gemm_symmetric(T::NAME, O::NAME, layout, variant).ok_or_else(|| {
            Error::unsupported(OP, format!("no {variant:?} kernel for {} → {} in layout {layout}", T::NAME, O::NAME))
        })?;
        let config = variant.config().expect("a resolved variant has a configuration");
        let tile = config.tile;
        let a_k_major = layout.a_order() == Order::RowMajor;
        let b_k_major = layout.b_order() == Order::ColMajor;
        let last_rows = match (n % tile.tile_m as usize) as u32 {
            0 => tile.tile_m,
            left => left.next_multiple_of(8),
        };
        let a_map = |box_rows| operand_map(T::TENSOR_MAP_TYPE, a_address, a_k_major, (n, k, batch), box_rows);
        let a_tail = if a_k_major { a_map(last_rows) } else { a_map(tile.tile_m) };
        let maps = [
            a_map(tile.tile_m).encode(OP)?,
            operand_map(T::TENSOR_MAP_TYPE, b_address, b_k_major, (n, k, batch), tile.tile_n).encode(OP)?,
            a_tail.encode(OP)?,
        ];
        let output_bytes = std::mem::size_of::<O>();
        let maps_d = if symmetric_tma_store(n, output_bytes) {
            let box_columns = GemmTile::STAGING_ROW_BYTES / output_bytes as u32;
            let straight =
                stack_map(O::TENSOR_MAP_TYPE, d_address, (n, n, batch), (GemmTile::STORE_BOX_ROWS, box_columns));
            // The transposed part of a warp's chunk: box_columns rows (the chunk's columns) of its 16 rows, unswizzled.
            let mirror =
                stack_map(O::TENSOR_MAP_TYPE, d_address, (n, n, batch), (box_columns, GemmTile::STORE_BOX_ROWS));
            let encoded = [straight.encode(OP)?, mirror.encode_unswizzled(OP)?];
            Some(gpu.stream().clone_htod(&tma::as_words(&encoded))?)
        } else {
            None
        };
        let function = gpu.function(kernel.kernel)?;
        function.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            tile.smem_bytes() as i32,
        )?;
        let tiles = triangle_tiles(tile.tile_n);
        let mut launch = ClusterLaunch {
            grid_dim: (tiles.min(gpu.sm_count()).max(1), 1, 1),
            block_dim: (tile.threads(), 1, 1),
            cluster_dim: (1, 1, 1),
            shared_mem_bytes: tile.smem_bytes(),
            dependent_launch: true,
        };
        let stream_k =
            config.stream_k.then(|| stream_k_over(tiles as usize, k.div_ceil(tile.tile_k as usize), gpu.sm_count()));
        let mut workspace = None;
        if let Some(schedule) = stream_k.filter(|s| s.sk_tiles() > 0) {
            // The co-residency guard (as the general GEMM's, host/src/ops/gemm.rs): with a tail, blocks wait for flags
            // other blocks set, which ends only if every block of the grid is resident at once. Auto then runs the
            // data-parallel tile instead; a stream-K variant asked for by name is refused before any launch.
            let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(
                tile.threads(),
                tile.smem_bytes() as usize,
                None,
            )?;
            let capacity = per_sm.saturating_mul(gpu.sm_count());
            if schedule.grid() > capacity {
                if options.variant == SymmetricVariant::Auto {
                    let fallback = SymmetricOptions { variant: SymmetricVariant::SymmetricPingPong, ..options };
                    return Self::new(gpu, shape, fallback, a, b, d);
                }
                return Err(Error::StreamKNotResident {
                    kernel: kernel.kernel.name,
                    blocks: schedule.grid(),
                    resident: capacity,
                });
            }
            workspace = Some(Mutex::new(StreamKWorkspace::new(gpu, &schedule, tile, 1)?));
        }
        if let Some(schedule) = &stream_k {
            launch.grid_dim.0 = schedule.grid();
        }
        let [map_a, map_b, map_a_tail] = maps.map(|map| TensorMapBytes(map.opaque));
        let params = GemmParams {
            tensor_map_a: map_a,
            tensor_map_b: map_b,
            tensor_map_a_tail: map_a_tail,
            tensor_map_d: 0,
            tensor_map_d_mirror: 0,
            d: d_address,
            c: d_address,
            m: n as u32,
            n: n as u32,
            k: k as u32,
            ldd: n as u32,
            alpha: options.alpha,
            beta: options.beta,
            diagonal: options.diagonal,
            partials: 0,
            flags: 0,
            sk_tiles: stream_k.map_or(0, |s| s.sk_tiles()),
            // Its kernels reduce through the stream-K ranges only.
            split_pieces: 0,
            batch: batch as u32,
        };
        Ok(SymmetricPlan {
            shape,
            kernel,
            function,
            params,
            launch,
            maps_d,
            addresses: (a_address, b_address, d_address),
            stream_k,
            workspace,
            _types: std::marker::PhantomData,
        })
    }

    pub fn shape(&self) -> SymmetricShape {
        self.shape
    }

    /// The buffers' addresses, after checking each one's length, context and alignment and that D shares no byte
    /// with A or B.
    fn addresses(
        gpu: &Gpu,
        shape: SymmetricShape,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        d: &mut impl DevicePtrMut<O>,
    ) -> Result<(u64, u64, u64)> {
        let (batch, n, k) = (shape.batch, shape.n(), shape.k());
        check_stack("A", a.len(), batch, n * k)?;
        check_stack("B", b.len(), batch, k * n)?;
        check_stack("D", d.len(), batch, n * n)?;
        let (input, output) = (std::mem::size_of::<T>(), std::mem::size_of::<O>());
        let a_address = super::input_ptr(OP, "A", a, gpu.stream(), batch * n * k, 16)?.0;
        let b_address = super::input_ptr(OP, "B", b, gpu.stream(), batch * k * n, 16)?.0;
        let d_address = super::output_ptr(OP, "D", d, gpu.stream(), batch * n * n, 16)?.0;
        let inputs = [("A", a_address, batch * n * k * input), ("B", b_address, batch * k * n * input)];
        check_disjoint(OP, ("D", d_address, batch * n * n * output), &inputs)?;
        Ok((a_address, b_address, d_address))
    }

    /// D = alpha·A·B + beta·D with the A, B and D the plan was made for (another buffer is an error, before any
    /// launch).
    pub fn launch(
        &self,
        gpu: &Gpu,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        d: &mut impl DevicePtrMut<O>,
    ) -> Result<()> {
        self.launch_reading(gpu, a, b, None::<&CudaSlice<O>>, d)
    }

    /// The launch, with beta·C read from `c` (checked by the caller) or from D's old contents.
    fn launch_reading(
        &self,
        gpu: &Gpu,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        c: Option<&impl DevicePtr<O>>,
        d: &mut impl DevicePtrMut<O>,
    ) -> Result<()> {
        if Self::addresses(gpu, self.shape, a, b, d)? != self.addresses {
            return Err(Error::bad_argument(OP, "A, B or D is not the buffer this plan's tensor maps describe"));
        }
        let mut params = self.params;
        let c_use = c.map(|c| c.device_ptr(gpu.stream()));
        if let Some((address, _)) = &c_use {
            params.c = *address;
        }
        let maps_d = self.maps_d.as_ref().map(|words| words.device_ptr(gpu.stream()));
        if let Some((address, _)) = &maps_d {
            params.tensor_map_d = *address;
            params.tensor_map_d_mirror = *address + std::mem::size_of::<CUtensorMap>() as u64;
        }
        let (_a_address, _a_use) = a.device_ptr(gpu.stream());
        let (_b_address, _b_use) = b.device_ptr(gpu.stream());
        let (_d_address, _d_use) = d.device_ptr_mut(gpu.stream());
        // Stream-K with a tail: the kernel writes the partials and sets and resets the flags (write intent).
        let mut workspace = self.workspace.as_ref().map(|w| w.lock().unwrap_or_else(PoisonError::into_inner));
        let uses = workspace.as_deref_mut().map(|StreamKWorkspace { partials, flags }| {
            (partials.device_ptr_mut(gpu.stream()), flags.device_ptr_mut(gpu.stream()))
        });
        if let Some(((partials, _), (flags, _))) = &uses {
            (params.partials, params.flags) = (*partials, *flags);
        }
        let mut args = params.kernel_args();
        // SAFETY: the arguments are the kernel's, one per field of `GemmParams`. The shape, layout, lengths,
        // alignment, contexts and disjointness of A, B and D were checked in `new` and the buffers are those (checked
        // above); the operand maps describe A and B as stacks in the layout the kernel reads, with the boxes of its
        // tile; D's maps (when given) describe D's stack with the straight and transposed store boxes and live in
        // `maps_d`, which the plan keeps (its use recorded on the stream above); the grid is at most one block per SM
        // with the kernel's threads and shared memory. C is D or, from `launch_with_c`, a stack of D's shape and type on
        // the same context sharing no byte with D (checked there; its use recorded on the stream above). A stream-K
        // kernel with a tail gets its schedule's tail and grid and a workspace sized from that schedule (a slot per
        // block, the flags zeroed at allocation and left at zero by every launch), every block of the grid resident
        // at once (the guard in `new`); the other kernels never read the (null) workspace.
        unsafe {
            gpu.launch_as(ClusterShape::Plain, self.kernel.kernel.name, &self.function, &self.launch, &mut args)
        }?;
        if uses.is_some() {
            gpu.note_stream_k_launch(self.kernel.kernel.name);
        }
        Ok(())
    }

    /// The stream-K schedule the plan launches (the stream-K variant), `None` for the others.
    pub fn stream_k(&self) -> Option<StreamK> {
        self.stream_k
    }

    /// D = alpha·A·B + beta·C: C checked as [`gemm_symmetric_with_c`] checks it, then read by the kernel's epilogue in
    /// place of D's old contents.
    pub fn launch_with_c(
        &self,
        gpu: &Gpu,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        c: &impl DevicePtr<O>,
        d: &mut impl DevicePtrMut<O>,
    ) -> Result<()> {
        let n = self.shape.n();
        check_c(gpu, self.shape, c, (n, n))?;
        let bytes = n * n * self.shape.batch * std::mem::size_of::<O>();
        {
            let (c_address, _c_use) = c.device_ptr(gpu.stream());
            check_disjoint(OP, ("D", self.addresses.2, bytes), &[("C", c_address, bytes)])?;
        }
        self.launch_reading(gpu, a, b, Some(c), d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked_before_anything_else() {
        assert!(SymmetricShape::new(3, 1000, 4096).check().is_ok());
        let not_square = SymmetricShape { batch: 1, a: (100, 64), b: (64, 120) };
        assert!(matches!(not_square.check(), Err(Error::NotSquare { rows: 100, columns: 120, .. })));
        let inner = SymmetricShape { batch: 1, a: (100, 64), b: (72, 100) };
        assert!(matches!(inner.check(), Err(Error::InnerMismatch { a_columns: 64, b_rows: 72, .. })));
        assert!(SymmetricShape::new(0, 100, 64).check().is_err());
        assert!(SymmetricShape::new(1, 100, 0).check().is_err());
        // Deep stacks of small matrices are fine; the tile count over the stack must fit in 32 bits (7813 tiles a
        // side at n = 10^6: 30.5 million a matrix).
        assert!(SymmetricShape::new(1_000_000, 8, 8).check().is_ok());
        assert!(SymmetricShape::new(100, 1_000_000, 8).check().is_ok());
        assert!(matches!(SymmetricShape::new(200, 1_000_000, 8).check(), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn stacks_must_hold_exactly_batch_matrices() {
        assert!(check_stack("A", 3 * 100, 3, 100).is_ok());
        assert!(matches!(check_stack("A", 299, 3, 100), Err(Error::BufferTooSmall { elements: 299, .. })));
        assert!(matches!(check_stack("A", 400, 3, 100), Err(Error::BatchMismatch { elements: 400, .. })));
    }

    #[test]
    fn auto_takes_stream_k_where_the_last_wave_idles_and_every_kernel_exists() {
        let auto = |bytes, tiles| SymmetricVariant::Auto.resolve(bytes, tiles, 128, false, 132);
        // n = 4096 (528 tiles, 4 waves), 8192 (2080: 15.8 of 16 waves): data-parallel ping-pong.
        assert_eq!(auto(2, 528), SymmetricVariant::SymmetricPingPong);
        assert_eq!(auto(2, 2080), SymmetricVariant::SymmetricPingPong);
        // n = 2048 (136 tiles: 2 waves for 1.03 of work), a stack of four (544: 5 for 4.12), n = 1024 (36 tiles):
        // the cooperative stream-K tile at k = 8192, the ping-pong one at k = 4096 and below.
        for tiles in [136, 544, 36] {
            assert_eq!(auto(2, tiles), SymmetricVariant::SymmetricStreamK, "{tiles} tiles");
            for k_tiles in [1, 32, 64] {
                let variant = SymmetricVariant::Auto.resolve(2, tiles, k_tiles, false, 132);
                assert_eq!(variant, SymmetricVariant::SymmetricStreamKPingPong, "{tiles} tiles, {k_tiles} k-tiles");
            }
            // A product that reads C, at any depth.
            let variant = SymmetricVariant::Auto.resolve(2, tiles, 128, true, 132);
            assert_eq!(variant, SymmetricVariant::SymmetricStreamKPingPong, "{tiles} tiles blending");
        }
        assert_eq!(SymmetricVariant::Auto.resolve(2, 528, 32, true, 132), SymmetricVariant::SymmetricPingPong);
        assert_eq!(auto(4, 136), SymmetricVariant::SymmetricSquare);
        for (input, output, bytes) in [("bf16", "bf16", 2), ("f16", "f16", 2), ("bf16", "f32", 4), ("f16", "f32", 4)] {
            for layout in [GemmLayout::Tn, GemmLayout::Nt] {
                for (tiles, k_tiles) in [(136, 32), (136, 128), (528, 32)] {
                    let variant = SymmetricVariant::Auto.resolve(bytes, tiles, k_tiles, false, 132);
                    assert!(
                        kernels::find_gemm_symmetric(input, output, layout, variant).is_some(),
                        "{input}→{output} {layout}"
                    );
                }
            }
        }
    }

    #[test]
    fn operand_maps_are_3d_over_the_stack_and_follow_the_contiguous_dimension() {
        let bf16 = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
        // tn: X n×k row-major (K-major), boxes of a tile's rows × 64 k, one matrix deep.
        let k_major = operand_map(bf16, 0x1000, true, (300, 200, 3), 128);
        assert_eq!((k_major.dims, k_major.strides, k_major.boxes), ([200, 300, 3], [200, 60_000], [64, 128, 1]));
        // nt: X k×n row-major (MN-major), boxes of 64 × 64.
        let mn_major = operand_map(bf16, 0x1000, false, (300, 200, 3), 128);
        assert_eq!((mn_major.dims, mn_major.strides, mn_major.boxes), ([300, 200, 3], [300, 60_000], [64, 64, 1]));
        // D and its mirror over the stack of n×n outputs: 16 rows × 128 bytes, and the transposed part's
        // 64 rows × 16 columns (16-bit).
        let straight = stack_map(bf16, 0x1000, (300, 300, 3), (GemmTile::STORE_BOX_ROWS, 64));
        let mirror = stack_map(bf16, 0x1000, (300, 300, 3), (64, GemmTile::STORE_BOX_ROWS));
        assert_eq!((straight.dims, straight.boxes), ([300, 300, 3], [64, 16, 1]));
        assert_eq!(mirror.boxes, [16, 64, 1]);
    }

    #[test]
    fn the_tma_store_needs_16_byte_rows() {
        assert!(symmetric_tma_store(4096, 2) && symmetric_tma_store(1000, 2) && symmetric_tma_store(1004, 4));
        assert!(!symmetric_tma_store(1001, 2) && !symmetric_tma_store(1002, 4));
    }
}
