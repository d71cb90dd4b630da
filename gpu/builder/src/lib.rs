//! Builds oxtile's `#![no_std]` device crates into PTX, in the role `cuda_builder` had for rust-cuda.
//!
//! The device kernels form a workspace of their own (gpu/kernels), one crate per [`Family`] on the shared gpu/device
//! crate. The pinned nightly compiles them for `nvptx64-nvidia-cuda` in one cargo run (with `-Zbuild-std=core`,
//! since rustup ships no prebuilt `core` for that target): cargo rebuilds only the families whose sources changed,
//! and builds them in parallel. Each family's link step goes to a linker of our choosing. We name the running build
//! script itself as that linker (a copy at a path every profile shares, [`stable_linker`]): when rustc calls it,
//! [`link_if_invoked_as_linker`] takes over, links the LLVM bitcode with `llvm-link`, marks every collective
//! inline-assembly call `convergent` (which rustc does not), keeps only the kernels (`opt`), lowers to PTX (`llc`)
//! and then adds what rustc cannot express: launch bounds and the module-scope dynamic shared memory symbol.
//!
//! In `host/build.rs`, first thing in `main`:
//!
//! ```no_run
//! oxtile_builder::link_if_invoked_as_linker();
//! // ... then oxtile_builder::build_ptx(...) for each target
//! ```

mod convergent;
pub mod cubin;
pub mod cuda_tools;
mod family;
mod link;
mod ptx;
mod target;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use family::Family;
pub use link::link_if_invoked_as_linker;
pub use ptx::{DYNAMIC_SMEM_SYMBOL, LAUNCH_BOUNDS_PREFIX, LaunchBounds, finish_ptx};
pub use target::Target;

/// Environment variable through which the build tells its own linker invocation which target it links for.
const LINK_TARGET_ENV: &str = "OXTILE_PTX_LINK_TARGET";
/// Environment variable carrying the folder of the `llvm-tools` binaries to the linker invocation.
const LLVM_BIN_ENV: &str = "OXTILE_LLVM_BIN";

/// The device kernels' workspace to build.
pub struct DeviceWorkspace<'a> {
    /// Folder holding the workspace's Cargo.toml (gpu/kernels), with one member crate per [`Family`].
    pub manifest_dir: &'a Path,
    /// A target folder of its own: the outer build holds the lock on its own.
    pub target_dir: &'a Path,
    /// The running build script's copy from [`stable_linker`], named to rustc as the linker.
    pub linker: &'a Path,
}

/// Compiles every family of `workspace` for `target` (cargo skips those that are up to date) and returns each
/// family's finished PTX file, in [`Family::ALL`]'s order.
pub fn build_ptx(workspace: &DeviceWorkspace, target: Target) -> Result<Vec<(Family, PathBuf)>, String> {
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
        format!("-Clinker={}", workspace.linker.display()),
        format!("--cfg=oxtile_target=\"{}\"", target.cpu()),
    ];
    cmd.current_dir(workspace.manifest_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
        .env("CARGO_TARGET_DIR", workspace.target_dir.join(target.cpu()))
        .env(LINK_TARGET_ENV, target.cpu())
        .env(LLVM_BIN_ENV, &llvm_bin)
        .args(["build", "--release", "--workspace", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--manifest-path")
        .arg(workspace.manifest_dir.join("Cargo.toml"));
    let status = cmd.status().map_err(|e| format!("cannot run cargo for the device crate: {e}"))?;
    if !status.success() {
        return Err(format!("device kernel build for {} failed ({status})", target.cpu()));
    }
    let release = workspace.target_dir.join(target.cpu()).join("nvptx64-nvidia-cuda/release");
    Family::ALL
        .into_iter()
        .map(|family| {
            let ptx = release.join(format!("{}.ptx", family.lib_name()));
            if ptx.exists() {
                Ok((family, ptx))
            } else {
                Err(format!("device build finished but {} is missing", ptx.display()))
            }
        })
        .collect()
}

/// A copy of `build_script` (the running build script, which is also the PTX linker) at a path that is the same for
/// every profile of the host build: `target_dir/oxtile-ptx-linker`. The linker's path is part of the device build's
/// flags, and cargo rebuilds every device crate, `core` included, when flags change; each profile's build script
/// lives at its own path, so naming it directly would rebuild everything each time `cargo build --release` and
/// `cargo test` take turns. Replaced (by rename, so a build that is linking sees a whole file) only when it differs.
pub fn stable_linker(build_script: &Path, target_dir: &Path) -> Result<PathBuf, String> {
    let linker = target_dir.join("oxtile-ptx-linker");
    let current = std::fs::read(build_script).map_err(|e| format!("cannot read {}: {e}", build_script.display()))?;
    if std::fs::read(&linker).is_ok_and(|copied| copied == current) {
        return Ok(linker);
    }
    std::fs::create_dir_all(target_dir).map_err(|e| format!("cannot create {}: {e}", target_dir.display()))?;
    let staging = target_dir.join(format!("oxtile-ptx-linker.{}", std::process::id()));
    std::fs::copy(build_script, &staging)
        .and_then(|_| std::fs::rename(&staging, &linker))
        .map_err(|e| format!("cannot place the PTX linker at {}: {e}", linker.display()))?;
    Ok(linker)
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
