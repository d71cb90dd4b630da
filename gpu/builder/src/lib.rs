//! Builds oxtile's `#![no_std]` device crates into PTX, in the role `cuda_builder` had for rust-cuda.
//!
//! The pinned nightly compiles the device crate for `nvptx64-nvidia-cuda` (with `-Zbuild-std=core`, since
//! rustup ships no prebuilt `core` for that target) and hands the link step to a linker of our choosing. We
//! name the running build script itself as that linker: when rustc calls it, [`link_if_invoked_as_linker`]
//! takes over, links the LLVM bitcode with `llvm-link`, marks every collective inline-assembly call `convergent` (which
//! rustc does not), keeps only the kernels (`opt`), lowers to PTX (`llc`) and then adds what rustc cannot
//! express: launch bounds and the module-scope dynamic shared memory symbol.
//!
//! In `host/build.rs`, first thing in `main`:
//!
//! ```no_run
//! oxtile_builder::link_if_invoked_as_linker();
//! // ... then oxtile_builder::build_ptx(...) for each target
//! ```

mod convergent;
pub mod cubin;
mod link;
mod ptx;
mod target;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use link::link_if_invoked_as_linker;
pub use ptx::{DYNAMIC_SMEM_SYMBOL, LAUNCH_BOUNDS_PREFIX, LaunchBounds, finish_ptx};
pub use target::Target;

/// Environment variable through which the build tells its own linker invocation which target it links for.
const LINK_TARGET_ENV: &str = "OXTILE_PTX_LINK_TARGET";
/// Environment variable carrying the folder of the `llvm-tools` binaries to the linker invocation.
const LLVM_BIN_ENV: &str = "OXTILE_LLVM_BIN";

/// One device crate to build.
pub struct DeviceCrate<'a> {
    /// Folder holding the device crate's Cargo.toml.
    pub manifest_dir: &'a Path,
    /// A target folder of its own: the outer build holds the lock on its own.
    pub target_dir: &'a Path,
    /// Path to the running build script, named to rustc as the linker.
    pub linker: &'a Path,
}

/// Compiles `krate` for `target` and returns the finished PTX file.
pub fn build_ptx(krate: &DeviceCrate, target: Target) -> Result<PathBuf, String> {
    let llvm_bin = llvm_tools_bin()?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // The outer build's flags are for the host; none of them may leak into the device build.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let host_only = (key.starts_with("CARGO_") && key != "CARGO_HOME")
            || key.starts_with("RUSTC_")
            || key == "RUSTFLAGS"
            || key == "RUSTDOCFLAGS";
        if host_only {
            cmd.env_remove(&*key);
        }
    }
    let rustflags = [
        format!("-Ctarget-cpu={}", target.cpu()),
        format!("-Clinker={}", krate.linker.display()),
        format!("--cfg=oxtile_target=\"{}\"", target.cpu()),
    ];
    cmd.current_dir(krate.manifest_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
        .env("CARGO_TARGET_DIR", krate.target_dir.join(target.cpu()))
        .env(LINK_TARGET_ENV, target.cpu())
        .env(LLVM_BIN_ENV, &llvm_bin)
        .args(["build", "--release", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--manifest-path")
        .arg(krate.manifest_dir.join("Cargo.toml"));
    let status = cmd.status().map_err(|e| format!("cannot run cargo for the device crate: {e}"))?;
    if !status.success() {
        return Err(format!("device crate build for {} failed ({status})", target.cpu()));
    }
    let lib_name = package_lib_name(krate.manifest_dir)?;
    let ptx = krate.target_dir.join(target.cpu()).join("nvptx64-nvidia-cuda/release").join(format!("{lib_name}.ptx"));
    if !ptx.exists() {
        return Err(format!("device build finished but {} is missing", ptx.display()));
    }
    Ok(ptx)
}

/// The `llvm-tools` folder of the toolchain that runs this build (`rustc --print sysroot`).
pub fn llvm_tools_bin() -> Result<PathBuf, String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out =
        Command::new(rustc).args(["--print", "sysroot"]).output().map_err(|e| format!("cannot run rustc: {e}"))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let host = std::env::var("HOST").unwrap_or_else(|_| "x86_64-unknown-linux-gnu".into());
    let bin = sysroot.join("lib/rustlib").join(host).join("bin");
    if bin.join("llc").exists() {
        Ok(bin)
    } else {
        Err(format!(
            "llc not found in {}: the `llvm-tools` component is missing (rust-toolchain.toml lists it; run `rustup toolchain install`)",
            bin.display()
        ))
    }
}

/// The device crate's library name (package name with `-` as `_`), read from its manifest.
fn package_lib_name(manifest_dir: &Path) -> Result<String, String> {
    let manifest = std::fs::read_to_string(manifest_dir.join("Cargo.toml")).map_err(|e| e.to_string())?;
    manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("name = "))
        .map(|name| name.trim_matches('"').replace('-', "_"))
        .ok_or_else(|| "device crate manifest has no package name".to_string())
}
