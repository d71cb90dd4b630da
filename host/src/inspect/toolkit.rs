//! The pinned NVIDIA tools the static checks run (ptxas, cuobjdump, nvdisasm), taken from PyPI wheels so that no CUDA
//! install (and no root) is needed. Where they live and how they are installed, once per machine and under a lock,
//! is oxtile_builder::cuda_tools, which the build uses too.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use oxtile_builder::cuda_tools;
pub use oxtile_builder::cuda_tools::{PACKAGES, PTXAS_RELEASE, tail};

use crate::{Error, Result};

/// Where the wheels put their executables, below the install folder.
const BIN: &str = cuda_tools::BIN;

/// The located (and if need be installed) tools.
#[derive(Clone, Debug)]
pub struct Toolkit {
    dir: PathBuf,
}

impl Toolkit {
    /// The tools in the default folder, installed there on first use; located once per process.
    pub fn get() -> Result<&'static Toolkit> {
        static TOOLKIT: OnceLock<Toolkit> = OnceLock::new();
        if let Some(toolkit) = TOOLKIT.get() {
            return Ok(toolkit);
        }
        let toolkit = Toolkit::at(&default_dir()?)?;
        Ok(TOOLKIT.get_or_init(|| toolkit))
    }

    /// The tools in `dir`, installed there first if they are missing or of another release.
    pub fn at(dir: &Path) -> Result<Toolkit> {
        cuda_tools::ensure(dir).map_err(Error::Toolkit)?;
        Ok(Toolkit { dir: dir.to_path_buf() })
    }

    /// The folder the wheels were installed into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn ptxas(&self) -> PathBuf {
        self.dir.join(BIN).join("ptxas")
    }

    pub fn cuobjdump(&self) -> PathBuf {
        self.dir.join(BIN).join("cuobjdump")
    }

    pub fn nvdisasm(&self) -> PathBuf {
        self.dir.join(BIN).join("nvdisasm")
    }

    /// `cuobjdump`, set up to find its nvdisasm beside it.
    pub fn cuobjdump_command(&self) -> Command {
        let mut command = Command::new(self.cuobjdump());
        command.env("NVDISASM_PATH", self.dir.join(BIN));
        command
    }
}

/// `$OXTILE_CUDA_TOOLS`, else `$XDG_CACHE_HOME/oxtile/cuda-tools`, else `$HOME/.cache/oxtile/cuda-tools`.
pub fn default_dir() -> Result<PathBuf> {
    cuda_tools::dir().ok_or_else(|| {
        Error::Toolkit("no folder for the CUDA tools: set OXTILE_CUDA_TOOLS (or XDG_CACHE_HOME or HOME)".to_string())
    })
}

/// A temporary folder, removed when dropped.
pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    pub(crate) fn new() -> Result<ScratchDir> {
        cuda_tools::fresh_dir(&std::env::temp_dir(), "oxtile-inspect").map(ScratchDir).map_err(Error::Toolkit)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_dir_is_removed_on_drop() {
        let scratch = ScratchDir::new().unwrap();
        let path = scratch.path().to_path_buf();
        fs::write(path.join("f"), "x").unwrap();
        drop(scratch);
        assert!(!path.exists());
    }
}
