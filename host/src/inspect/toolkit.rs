//! The pinned NVIDIA tools the static checks run, taken from PyPI wheels so that no CUDA install (and no root) is needed.
//!
//! The folder is `$OXTILE_CUDA_TOOLS` if set, else `$XDG_CACHE_HOME/oxtile/cuda-tools`, else
//! `~/.cache/oxtile/cuda-tools`. When the tools are missing there (or are another release), the pinned wheels are
//! installed with `python3 -m pip install --target` into a fresh folder beside it, which then replaces it by rename, all
//! under a lock file beside it: parallel test binaries wait for one install instead of racing, and an interrupted
//! install never leaves a half-filled folder behind. oxtile owns that folder: an incomplete one is replaced whole.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use oxtile_builder::cubin::cuda_tools;

use crate::{Error, Result};

/// The wheels, pinned. ptxas follows the CUDA release of the GPU machine's driver (13.0); the cuobjdump and nvdisasm
/// wheels start at 13.2 and read ptxas 13.0 output fine. cuobjdump runs nvdisasm for `-sass`. All three are
/// self-contained executables, so the wheels' dependencies (nvvm, crt, runtime headers) are not installed.
pub const PACKAGES: &[&str] =
    &["nvidia-cuda-nvcc==13.0.88", "nvidia-cuda-cuobjdump==13.2.78", "nvidia-cuda-nvdisasm==13.2.78"];

/// What `ptxas --version` must say.
pub const PTXAS_RELEASE: &str = "release 13.0,";

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
        let toolkit = Toolkit { dir: dir.to_path_buf() };
        if toolkit.verify().is_ok() {
            return Ok(toolkit);
        }
        let (parent, name) = match (dir.parent(), dir.file_name()) {
            (Some(parent), Some(name)) => (parent, name.to_string_lossy()),
            _ => return Err(Error::Toolkit(format!("{} cannot hold the CUDA tools", dir.display()))),
        };
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        fs::create_dir_all(parent)
            .map_err(|e| Error::Toolkit(format!("cannot create {} for the CUDA tools: {e}", parent.display())))?;
        let lock_path = parent.join(format!(".{name}.lock"));
        let lock = File::create(&lock_path)
            .and_then(|file| file.lock().map(|()| file))
            .map_err(|e| Error::Toolkit(format!("cannot lock {}: {e}", lock_path.display())))?;
        // Another process may have installed them while this one waited for the lock.
        if toolkit.verify().is_err() {
            install(dir, parent, &name)?;
        }
        drop(lock);
        toolkit.verify().map_err(|e| Error::Toolkit(format!("after installing {}: {e}", PACKAGES.join(" "))))?;
        Ok(toolkit)
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

    /// All three executables are there and ptxas is the pinned release.
    fn verify(&self) -> Result<()> {
        for tool in [self.ptxas(), self.cuobjdump(), self.nvdisasm()] {
            if !tool.is_file() {
                return Err(Error::Toolkit(format!("{} is missing", tool.display())));
            }
        }
        let output = Command::new(self.ptxas())
            .arg("--version")
            .output()
            .map_err(|e| Error::Toolkit(format!("cannot run {}: {e}", self.ptxas().display())))?;
        let version = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || !version.contains(PTXAS_RELEASE) {
            return Err(Error::Toolkit(format!(
                "{} is not CUDA {}: `ptxas --version` said {:?}",
                self.ptxas().display(),
                PTXAS_RELEASE.trim_start_matches("release ").trim_end_matches(','),
                version.trim()
            )));
        }
        Ok(())
    }
}

/// `$OXTILE_CUDA_TOOLS`, else `$XDG_CACHE_HOME/oxtile/cuda-tools`, else `$HOME/.cache/oxtile/cuda-tools`.
pub fn default_dir() -> Result<PathBuf> {
    cuda_tools::dir().ok_or_else(|| {
        Error::Toolkit("no folder for the CUDA tools: set OXTILE_CUDA_TOOLS (or XDG_CACHE_HOME or HOME)".to_string())
    })
}

/// Installs the wheels into a fresh folder beside `dir`, then puts it in place of `dir`. The caller holds the lock.
fn install(dir: &Path, parent: &Path, name: &str) -> Result<()> {
    eprintln!("oxtile: installing {} into {} (once; about 120 MB)", PACKAGES.join(" "), dir.display());
    let staging = fresh_dir(parent, &format!(".{name}.installing"))?;
    let output = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"])
        .arg(&staging)
        .args(PACKAGES)
        .output();
    let failure = match output {
        Err(e) => Some(format!("cannot run python3: {e}")),
        Ok(output) if !output.status.success() => {
            Some(format!("pip exited with {}: {}", output.status, tail(&String::from_utf8_lossy(&output.stderr), 2000)))
        }
        Ok(_) => None,
    };
    if let Some(failure) = failure {
        let _ = fs::remove_dir_all(&staging);
        return Err(Error::Toolkit(format!(
            "could not install the CUDA tools into {} with `python3 -m pip install --no-deps --target {} {}` ({failure}); \
             install them by hand or point OXTILE_CUDA_TOOLS at a folder that has them",
            dir.display(),
            dir.display(),
            PACKAGES.join(" "),
        )));
    }
    // An incomplete or outdated folder moves aside first: a directory can only be renamed onto an empty one.
    let old = if dir.exists() {
        let old = fresh_dir(parent, &format!(".{name}.old"))?;
        fs::rename(dir, &old).map_err(|e| Error::Toolkit(format!("cannot move {} aside: {e}", dir.display())))?;
        Some(old)
    } else {
        None
    };
    let placed = fs::rename(&staging, dir);
    if let Some(old) = old {
        let _ = fs::remove_dir_all(old);
    }
    placed.map_err(|e| {
        let _ = fs::remove_dir_all(&staging);
        Error::Toolkit(format!("cannot move the installed tools to {}: {e}", dir.display()))
    })
}

/// Creates a new, empty folder named `<prefix>-<pid>-<time>-<n>` in `parent`.
fn fresh_dir(parent: &Path, prefix: &str) -> Result<PathBuf> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let mut last_error = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("{prefix}-{}-{nanos}-{n}", std::process::id()));
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) => last_error = Some(e),
        }
    }
    Err(Error::Toolkit(format!("cannot create a folder in {}: {}", parent.display(), last_error.unwrap())))
}

/// A temporary folder, removed when dropped.
pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    pub(crate) fn new() -> Result<ScratchDir> {
        fresh_dir(&std::env::temp_dir(), "oxtile-inspect").map(ScratchDir)
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

/// The last `max` bytes of `text` (on a char boundary), trimmed.
pub(crate) fn tail(text: &str, max: usize) -> &str {
    let text = text.trim();
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_installs_the_pinned_packages() {
        // .ci/run installs them before its first build, so that the build finds ptxas (host/build.rs).
        let ci = include_str!("../../../.ci/run");
        for package in PACKAGES {
            assert!(ci.contains(package), ".ci/run does not install {package}");
        }
        assert_eq!(ci.matches("nvidia-cuda-").count(), PACKAGES.len(), ".ci/run installs other NVIDIA packages");
    }

    #[test]
    fn tail_keeps_the_end_on_a_char_boundary() {
        assert_eq!(tail("  abcdef \n", 3), "def");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("short", 100), "short");
    }

    #[test]
    fn scratch_dir_is_removed_on_drop() {
        let scratch = ScratchDir::new().unwrap();
        let path = scratch.path().to_path_buf();
        fs::write(path.join("f"), "x").unwrap();
        drop(scratch);
        assert!(!path.exists());
    }
}
