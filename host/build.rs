//! Compiles the device crate gpu/kernels to PTX for every target and leaves it in OUT_DIR for `include_str!`, with
//! the cubin ptxas makes of it where the build finds a ptxas (`oxtile_builder::cubin::find_ptxas`), else an empty
//! file: the runtime then has the driver compile the PTX.

use std::path::{Path, PathBuf};

use oxtile_builder::{DeviceCrate, Target, cubin};

/// Targets with kernels today. Blackwell-only kernels add `Target::Sm100a` here.
const TARGETS: &[Target] = &[Target::Sm90a];

fn main() {
    // rustc calls this same executable as the nvptx linker during the device build below.
    oxtile_builder::link_if_invoked_as_linker();

    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let gpu = manifest_dir.join("../gpu");
    for watched in ["kernels/src", "kernels/Cargo.toml", "layout/src", "layout/Cargo.toml", "abi/src"] {
        println!("cargo:rerun-if-changed={}", gpu.join(watched).display());
    }
    for variable in [cubin::PTXAS_ENV, "OXTILE_CUDA_TOOLS", "XDG_CACHE_HOME", "CUDA_HOME", "CUDA_PATH"] {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    let ptxas = cubin::find_ptxas();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let linker = std::env::current_exe().expect("build script path");
    let device_crate = DeviceCrate {
        manifest_dir: &gpu.join("kernels"),
        target_dir: &shared_ptx_target_dir(&out_dir),
        linker: &linker,
    };
    for &target in TARGETS {
        let ptx = match oxtile_builder::build_ptx(&device_crate, target) {
            Ok(ptx) => ptx,
            Err(message) => panic!("building the device kernels failed: {message}"),
        };
        std::fs::copy(&ptx, out_dir.join(format!("kernels_{}.ptx", target.cpu()))).expect("copy PTX into OUT_DIR");
        let cubin = out_dir.join(format!("kernels_{}.cubin", target.cpu()));
        let assembled = match &ptxas {
            Some(ptxas) => cubin::assemble(ptxas, &ptx, target, &cubin),
            None => Err(format!("no ptxas found (set {})", cubin::PTXAS_ENV)),
        };
        if let Err(message) = assembled {
            println!(
                "cargo:warning={message}: the {} kernels are embedded as PTX only, which the driver compiles when a \
                 process first loads them (about a minute)",
                target.cpu()
            );
            std::fs::write(&cubin, []).expect("write an empty cubin into OUT_DIR");
        }
    }
}

/// `target/ptx`: shared by every profile of the host build, so the device crate builds incrementally.
fn shared_ptx_target_dir(out_dir: &Path) -> PathBuf {
    // OUT_DIR is target/<profile>/build/oxtile-<hash>/out
    out_dir.ancestors().nth(4).map(|target| target.join("ptx")).unwrap_or_else(|| out_dir.join("ptx"))
}
