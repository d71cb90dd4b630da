//! Assembles a kernel module's PTX into a cubin with ptxas, so that the driver need not JIT-compile the PTX the
//! first time a process loads it (about 50 s for all the sm_90a kernels on the H200's host CPU). Without a ptxas the
//! build embeds the PTX alone and says so; the driver compiles it then.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Target, cuda_tools};

/// Environment variable naming the ptxas executable the build uses.
pub const PTXAS_ENV: &str = "OXTILE_PTXAS";

/// The ptxas the build uses: `$OXTILE_PTXAS`, else the pinned one in [`cuda_tools::dir`], else `ptxas` in
/// `$CUDA_HOME/bin`, `$CUDA_PATH/bin` or on `PATH`. `None` when there is none.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(PTXAS_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let installed = cuda_tools::dir().map(|dir| dir.join(cuda_tools::BIN));
    let toolkits =
        ["CUDA_HOME", "CUDA_PATH"].into_iter().filter_map(std::env::var_os).map(|d| Path::new(&d).join("bin"));
    let path = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default();
    installed.into_iter().chain(toolkits).chain(path).map(|dir| dir.join("ptxas")).find(|ptxas| ptxas.is_file())
}

/// Assembles `ptx` for `target` with `ptxas` into `cubin` (`-O3`, each function on its own core) and returns
/// ptxas's `-v` report: registers, stack, spills and shared memory per function, which the host's static checks read.
pub fn assemble(ptxas: &Path, ptx: &Path, target: Target, cubin: &Path) -> Result<String, String> {
    let output = Command::new(ptxas)
        .args(["-arch", target.cpu(), "-O3", "-v", "--split-compile", "0"])
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        // -v writes its report to stderr; both streams, in case that changes.
        Ok(format!("{stdout}{stderr}"))
    } else {
        Err(format!("{} failed on {}: {}", ptxas.display(), ptx.display(), cuda_tools::tail(&stderr, 4000)))
    }
}
