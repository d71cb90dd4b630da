//! Assembles a target's PTX into a cubin with ptxas where the build finds one, so that the driver need not
//! JIT-compile the whole PTX module the first time a process loads it (about 50 s for the sm_90a module on the
//! H200's host CPU). Without a ptxas the build embeds the PTX alone and says so; the driver compiles it then.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Target;

/// Environment variable naming the ptxas executable the build uses.
pub const PTXAS_ENV: &str = "OXTILE_PTXAS";

/// Where oxtile installs the pinned NVIDIA tools from PyPI (host/src/inspect/toolkit.rs): `$OXTILE_CUDA_TOOLS`, else
/// `$XDG_CACHE_HOME/oxtile/cuda-tools`, else `~/.cache/oxtile/cuda-tools`.
pub mod cuda_tools {
    use super::*;

    /// The executables' folder below it, as the wheels lay it out.
    pub const BIN: &str = "nvidia/cu13/bin";

    /// The folder, from the environment; `None` when none of the three variables is set.
    pub fn dir() -> Option<PathBuf> {
        let var = |name| std::env::var_os(name);
        dir_from(var("OXTILE_CUDA_TOOLS"), var("XDG_CACHE_HOME"), var("HOME"))
    }

    /// The folder for these values of `OXTILE_CUDA_TOOLS`, `XDG_CACHE_HOME` and `HOME` (an empty value counts as unset).
    pub fn dir_from(oxtile: Option<OsString>, xdg_cache: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
        let set = |value: Option<OsString>| value.filter(|v| !v.is_empty()).map(PathBuf::from);
        set(oxtile)
            .or_else(|| set(xdg_cache).map(|cache| cache.join("oxtile/cuda-tools")))
            .or_else(|| set(home).map(|home| home.join(".cache/oxtile/cuda-tools")))
    }
}

/// The ptxas the build uses: `$OXTILE_PTXAS`, else the one oxtile's static checks installed, else `ptxas` in
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

/// Assembles `ptx` for `target` with `ptxas` into `cubin`, on every CPU of the machine.
pub fn assemble(ptxas: &Path, ptx: &Path, target: Target, cubin: &Path) -> Result<(), String> {
    let output = Command::new(ptxas)
        .args(["-arch", target.cpu(), "-O3", "--split-compile", "0"])
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("{} failed on {}: {}", ptxas.display(), ptx.display(), String::from_utf8_lossy(&output.stderr)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_folder_follows_the_first_variable_set() {
        let os = |s: &str| Some(OsString::from(s));
        let dir_from = cuda_tools::dir_from;
        assert_eq!(dir_from(os("/t"), os("/x"), os("/h")), Some(PathBuf::from("/t")));
        assert_eq!(dir_from(None, os("/x"), os("/h")), Some(PathBuf::from("/x/oxtile/cuda-tools")));
        assert_eq!(dir_from(os(""), os(""), os("/h")), Some(PathBuf::from("/h/.cache/oxtile/cuda-tools")));
        assert_eq!(dir_from(None, None, None), None);
    }
}
