//! The pinned NVIDIA tools (ptxas, cuobjdump, nvdisasm), taken from PyPI wheels so that no CUDA install (and no root)
//! is needed: the build assembles each kernel module with this ptxas, and the host's static checks
//! (host/src/inspect) read its report and disassemble its cubins with these tools.
//!
//! The folder is `$OXTILE_CUDA_TOOLS` if set, else `$XDG_CACHE_HOME/oxtile/cuda-tools`, else
//! `~/.cache/oxtile/cuda-tools`. When the tools are missing there (or are another release), [`ensure`] installs the
//! pinned wheels with `python3 -m pip install --target` into a fresh folder beside it, which then replaces it by
//! rename, all under a lock file beside it: parallel builds and test binaries wait for one install instead of racing,
//! and an interrupted install never leaves a half-filled folder behind. oxtile owns that folder: an incomplete one is
//! replaced whole.

use std::ffi::OsString;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The wheels, pinned. ptxas follows the CUDA release of the GPU machine's driver (13.0); the cuobjdump and nvdisasm
/// wheels start at 13.2 and read ptxas 13.0 output fine. cuobjdump runs nvdisasm for `-sass`. All three are
/// self-contained executables, so the wheels' dependencies (nvvm, crt, runtime headers) are not installed.
pub const PACKAGES: &[&str] =
    &["nvidia-cuda-nvcc==13.0.88", "nvidia-cuda-cuobjdump==13.2.78", "nvidia-cuda-nvdisasm==13.2.78"];

/// What `ptxas --version` says for the pinned release.
pub const PTXAS_RELEASE: &str = "release 13.0,";

/// The executables' folder below the install folder, as the wheels lay it out.
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

/// The tools in `dir`, installed there first if they are missing or of another release; returns their folder
/// (`dir`/[`BIN`]).
pub fn ensure(dir: &Path) -> Result<PathBuf, String> {
    let bin = dir.join(BIN);
    if verify(&bin).is_ok() {
        return Ok(bin);
    }
    let (parent, name) = match (dir.parent(), dir.file_name()) {
        (Some(parent), Some(name)) => (parent, name.to_string_lossy()),
        _ => return Err(format!("{} cannot hold the CUDA tools", dir.display())),
    };
    let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
    fs::create_dir_all(parent).map_err(|e| format!("cannot create {} for the CUDA tools: {e}", parent.display()))?;
    let lock_path = parent.join(format!(".{name}.lock"));
    let lock = File::create(&lock_path)
        .and_then(|file| file.lock().map(|()| file))
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    // Another process may have installed them while this one waited for the lock.
    if verify(&bin).is_err() {
        install(dir, parent, &name)?;
    }
    drop(lock);
    verify(&bin).map_err(|e| format!("after installing {}: {e}", PACKAGES.join(" ")))?;
    Ok(bin)
}

/// The line of `ptxas --version` that names the release, e.g. `Cuda compilation tools, release 13.0, V13.0.88`.
pub fn ptxas_version(ptxas: &Path) -> Result<String, String> {
    let output =
        Command::new(ptxas).arg("--version").output().map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    match text.lines().find(|line| line.contains("release ")) {
        Some(line) if output.status.success() => Ok(line.trim().to_string()),
        _ => Err(format!(
            "`{} --version` failed or named no release ({}): {:?}",
            ptxas.display(),
            output.status,
            text.trim()
        )),
    }
}

/// All three executables are in `bin` and ptxas is the pinned release.
fn verify(bin: &Path) -> Result<(), String> {
    for tool in ["ptxas", "cuobjdump", "nvdisasm"] {
        if !bin.join(tool).is_file() {
            return Err(format!("{} is missing", bin.join(tool).display()));
        }
    }
    let version = ptxas_version(&bin.join("ptxas"))?;
    if !version.contains(PTXAS_RELEASE) {
        return Err(format!(
            "{} is not CUDA {}: `ptxas --version` said {version:?}",
            bin.join("ptxas").display(),
            PTXAS_RELEASE.trim_start_matches("release ").trim_end_matches(','),
        ));
    }
    Ok(())
}

/// Installs the wheels into a fresh folder beside `dir`, then puts it in place of `dir`. The caller holds the lock.
fn install(dir: &Path, parent: &Path, name: &str) -> Result<(), String> {
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
        return Err(format!(
            "could not install the CUDA tools into {} with `python3 -m pip install --no-deps --target {} {}` ({failure}); \
             install them by hand or point OXTILE_CUDA_TOOLS at a folder that has them",
            dir.display(),
            dir.display(),
            PACKAGES.join(" "),
        ));
    }
    // An incomplete or outdated folder moves aside first: a directory can only be renamed onto an empty one.
    let old = if dir.exists() {
        let old = fresh_dir(parent, &format!(".{name}.old"))?;
        fs::rename(dir, &old).map_err(|e| format!("cannot move {} aside: {e}", dir.display()))?;
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
        format!("cannot move the installed tools to {}: {e}", dir.display())
    })
}

/// Creates a new, empty folder named `<prefix>-<pid>-<time>-<n>` in `parent`.
pub fn fresh_dir(parent: &Path, prefix: &str) -> Result<PathBuf, String> {
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
    Err(format!("cannot create a folder in {}: {}", parent.display(), last_error.unwrap()))
}

/// The last `max` bytes of `text` (on a char boundary), trimmed.
pub fn tail(text: &str, max: usize) -> &str {
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
    fn the_tools_folder_follows_the_first_variable_set() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(dir_from(os("/t"), os("/x"), os("/h")), Some(PathBuf::from("/t")));
        assert_eq!(dir_from(None, os("/x"), os("/h")), Some(PathBuf::from("/x/oxtile/cuda-tools")));
        assert_eq!(dir_from(os(""), os(""), os("/h")), Some(PathBuf::from("/h/.cache/oxtile/cuda-tools")));
        assert_eq!(dir_from(None, None, None), None);
    }

    #[test]
    fn ci_installs_the_pinned_packages() {
        // .ci/run installs them before its first build, as the build would (host/build.rs), in its own step.
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
}
