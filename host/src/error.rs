//! The one error type of the host API: every failure says what went wrong before or at launch.

use cudarc::driver::DriverError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no CUDA driver: {0} (is this a machine with an NVIDIA GPU and its driver installed?)")]
    NoDriver(String),
    #[error("no CUDA GPU found{}", .0.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    NoGpu(Option<String>),
    #[error("kernel `{kernel}` is built for {target} and needs compute capability {needed}, but {device} has {found}")]
    ComputeCapability { kernel: &'static str, target: &'static str, needed: String, device: String, found: String },
    #[error("bad argument to `{op}`: {message}")]
    BadArgument { op: &'static str, message: String },
    #[error(
        "bad argument to `{op}`: {output} overlaps {other} in device memory (the kernel would write {output} while it reads {other})"
    )]
    Overlap { op: &'static str, output: String, other: String },
    #[error(
        "bad argument to `{op}`: {what} belongs to another CUDA context ({found}) than the GPU handle ({expected}): allocate it on the Gpu's stream or context"
    )]
    WrongContext { op: &'static str, what: String, found: String, expected: String },
    #[error("bad argument to `{op}`: the output is {rows}×{columns} (A's rows × B's columns), not square")]
    NotSquare { op: &'static str, rows: usize, columns: usize },
    #[error(
        "bad argument to `{op}`: A is {a_rows}×{a_columns} and B is {b_rows}×{b_columns}: A's columns must be B's rows"
    )]
    InnerMismatch { op: &'static str, a_rows: usize, a_columns: usize, b_rows: usize, b_columns: usize },
    #[error("bad argument to `{op}`: {what} is {rows}×{columns}, the output {n}×{n}")]
    OperandShape { op: &'static str, what: &'static str, rows: usize, columns: usize, n: usize },
    #[error("bad argument to `{op}`: {what} holds {elements} elements, fewer than {batch} matrices of {per_matrix}")]
    BufferTooSmall { op: &'static str, what: &'static str, elements: usize, batch: usize, per_matrix: usize },
    #[error(
        "bad argument to `{op}`: {what} holds {elements} elements, not {batch} matrices of {per_matrix} (a stack of another depth?)"
    )]
    BatchMismatch { op: &'static str, what: &'static str, elements: usize, batch: usize, per_matrix: usize },
    #[error("`{op}` does not support this yet: {message}")]
    Unsupported { op: &'static str, message: String },
    #[error("`{op}` could not allocate its {bytes}-byte {what} on the GPU: {source}")]
    Workspace { op: &'static str, what: &'static str, bytes: usize, source: DriverError },
    #[error(
        "`{kernel}` is a stream-K kernel: its {blocks} blocks wait for each other, so all must be resident at once, but the GPU holds {resident} of them at once (use a data-parallel variant, or Variant::Auto)"
    )]
    StreamKNotResident { kernel: &'static str, blocks: u32, resident: u32 },
    #[error(
        "the GPU reported `{source}` at a synchronization after the stream-K GEMM kernel `{kernel}` ran: most likely one of its blocks waited too long for a partial tile another block hands over and trapped (its blocks were not all running at once), which leaves the CUDA context unusable"
    )]
    StreamKFailed { kernel: &'static str, source: DriverError },
    #[error("launch of `{kernel}` failed: {source}")]
    Launch { kernel: &'static str, source: DriverError },
    #[error("CUDA driver call failed: {0}")]
    Driver(#[from] DriverError),
    #[error("GPU timing: {0}")]
    Timing(String),
    #[error("cuBLAS call failed: {0}")]
    Cublas(String),
    #[error("GEMM tune cache {path}: {message}")]
    TuneCache { path: String, message: String },
    #[error("CUDA toolkit tool: {0}")]
    Toolkit(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    pub(crate) fn bad_argument(op: &'static str, message: impl Into<String>) -> Error {
        Error::BadArgument { op, message: message.into() }
    }

    pub(crate) fn unsupported(op: &'static str, message: impl Into<String>) -> Error {
        Error::Unsupported { op, message: message.into() }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
