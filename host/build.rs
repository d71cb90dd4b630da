//! Compiles the device kernels (gpu/kernels, one crate per family) to PTX for every target and assembles each family's
//! PTX into a cubin with ptxas, keeping both, with ptxas's report (the static checks read it instead of assembling
//! again), in `target/ptx/modules`, which every profile of the host build shares; then writes `modules.rs` into
//! OUT_DIR, the list host/src/kernels.rs includes, which embeds them.
//!
//! Only what changed is redone: cargo rebuilds only the families whose sources changed, and a family whose PTX came
//! out the same keeps its cubin. The families that need one are assembled at the same time.
//!
//! ptxas: `$OXTILE_PTXAS`, else the pinned release oxtile keeps in its tools folder (oxtile_builder::cuda_tools),
//! installed from PyPI while the kernels compile if it is not there yet (`OXTILE_NO_TOOLS_INSTALL=1` skips that),
//! else a CUDA toolkit's. Without any, the modules are embedded as PTX alone, which the driver compiles at load.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use oxtile_builder::{DeviceWorkspace, Family, Target, cubin, cuda_tools};

/// Targets with kernels today. Blackwell-only kernels add `Target::Sm100a` here.
const TARGETS: &[Target] = &[Target::Sm90a];

/// Set to skip installing the pinned tools from PyPI during the build.
const NO_INSTALL_ENV: &str = "OXTILE_NO_TOOLS_INSTALL";

fn main() {
    // rustc calls this same executable as the nvptx linker during the device build below.
    oxtile_builder::link_if_invoked_as_linker();

    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let gpu = manifest_dir.join("../gpu");
    let mut watched = vec!["kernels/Cargo.toml".to_string(), "device".to_string(), "layout/src".into()];
    watched.extend(["layout/Cargo.toml".into(), "abi/src".into()]);
    watched.extend(Family::ALL.map(|family| format!("kernels/{}", family.name())));
    for path in watched {
        println!("cargo:rerun-if-changed={}", gpu.join(path).display());
    }
    for variable in [cubin::PTXAS_ENV, NO_INSTALL_ENV, "OXTILE_CUDA_TOOLS", "XDG_CACHE_HOME", "CUDA_HOME", "CUDA_PATH"]
    {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let target_dir = shared_ptx_target_dir(&out_dir);
    let build_script = std::env::current_exe().expect("build script path");
    let linker =
        oxtile_builder::stable_linker(&build_script, &target_dir).unwrap_or_else(|message| panic!("{message}"));
    let workspace = DeviceWorkspace { manifest_dir: &gpu.join("kernels"), target_dir: &target_dir, linker: &linker };

    let modules_dir = workspace.target_dir.join("modules");
    std::fs::create_dir_all(&modules_dir).expect("create target/ptx/modules");
    // Builds of other profiles share the folder: one at a time updates it.
    let lock = std::fs::File::create(modules_dir.join(".lock")).and_then(|file| file.lock().map(|()| file));
    let _lock = lock.expect("lock target/ptx/modules");

    let (ptxas, modules) = std::thread::scope(|scope| {
        // The download (once per machine) overlaps the kernels' compilation.
        let ptxas = scope.spawn(locate_ptxas);
        let modules: Vec<_> = TARGETS
            .iter()
            .flat_map(|&target| match oxtile_builder::build_ptx(&workspace, target) {
                Ok(modules) => modules.into_iter().map(move |(family, ptx)| (family, target, ptx)),
                Err(message) => panic!("building the device kernels failed: {message}"),
            })
            .collect();
        (ptxas.join().expect("locating ptxas"), modules)
    });

    let ptxas = match ptxas {
        Ok(ptxas) => Some(ptxas),
        Err(message) => {
            println!(
                "cargo:warning={message}: the kernels are embedded as PTX only, which the driver compiles when a process first loads them (about a minute)"
            );
            None
        }
    };
    let version = ptxas.as_deref().map(|ptxas| cuda_tools::ptxas_version(ptxas).unwrap_or_default());
    std::thread::scope(|scope| {
        for (family, target, ptx) in &modules {
            let module = ModuleFiles::new(&modules_dir, *family, *target);
            let (ptxas, version) = (ptxas.as_deref(), version.as_deref());
            scope.spawn(move || module.update(ptx, *target, ptxas, version));
        }
    });
    std::fs::write(out_dir.join("modules.rs"), modules_rs(&modules_dir, &modules))
        .expect("write modules.rs into OUT_DIR");
}

/// The ptxas to assemble with, as the module comment says, or why there is none.
fn locate_ptxas() -> Result<PathBuf, String> {
    if let Some(ptxas) = std::env::var_os(cubin::PTXAS_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(ptxas));
    }
    let pinned = match cuda_tools::dir() {
        Some(_) if std::env::var_os(NO_INSTALL_ENV).is_some_and(|v| !v.is_empty()) => {
            Err(format!("{NO_INSTALL_ENV} is set"))
        }
        Some(dir) => cuda_tools::ensure(&dir).map(|bin| bin.join("ptxas")),
        None => Err("no folder for the CUDA tools (set OXTILE_CUDA_TOOLS, XDG_CACHE_HOME or HOME)".into()),
    };
    pinned
        .or_else(|reason| cubin::find_ptxas().ok_or(format!("no ptxas found ({reason}; or set {})", cubin::PTXAS_ENV)))
}

/// One family's files for one target: `kernels_<family>_<cpu>.{ptx,cubin,ptxas}`, the last holding ptxas's `-v`
/// report, preceded by a line with its version (`ptxas: <version>`).
struct ModuleFiles {
    ptx: PathBuf,
    cubin: PathBuf,
    report: PathBuf,
}

impl ModuleFiles {
    fn new(dir: &Path, family: Family, target: Target) -> ModuleFiles {
        let stem = dir.join(format!("kernels_{}_{}", family.name(), target.cpu()));
        ModuleFiles {
            ptx: stem.with_extension("ptx"),
            cubin: stem.with_extension("cubin"),
            report: stem.with_extension("ptxas"),
        }
    }

    /// Copies the new PTX in and assembles it, unless it is the PTX already there with a cubin from this ptxas.
    fn update(&self, built: &Path, target: Target, ptxas: Option<&Path>, version: Option<&str>) {
        let ptx = std::fs::read(built).expect("read the device build's PTX");
        let header = version.map(|version| format!("ptxas: {version}\n"));
        let same_ptx = std::fs::read(&self.ptx).is_ok_and(|old| old == ptx);
        let assembled_by = std::fs::read_to_string(&self.report).ok().and_then(|r| r.lines().next().map(String::from));
        let same_ptxas = header.as_deref().map(str::trim_end) == assembled_by.as_deref();
        if same_ptx && same_ptxas && std::fs::metadata(&self.cubin).is_ok_and(|m| m.len() > 0) {
            return;
        }
        if !same_ptx {
            std::fs::write(&self.ptx, &ptx).expect("write the PTX into target/ptx/modules");
        }
        let assembled = match (ptxas, header) {
            (Some(ptxas), Some(header)) => cubin::assemble(ptxas, &self.ptx, target, &self.cubin).map(|r| header + &r),
            _ => Err(String::new()),
        };
        match assembled {
            Ok(report) => std::fs::write(&self.report, report).expect("write ptxas's report into target/ptx/modules"),
            Err(message) => {
                if !message.is_empty() {
                    println!("cargo:warning={message}: this module is embedded as PTX only");
                }
                std::fs::write(&self.cubin, []).expect("write an empty cubin into target/ptx/modules");
                std::fs::write(&self.report, "").expect("write an empty report into target/ptx/modules");
            }
        }
    }
}

/// host/src/kernels.rs's `MODULES`: every family for every target, each with its files in `dir`.
fn modules_rs(dir: &Path, modules: &[(Family, Target, PathBuf)]) -> String {
    let mut rs = String::from(
        "// Written by host/build.rs.\n\n/// Every kernel module: one per family and target.\npub static MODULES: &[Module] = &[\n",
    );
    for (family, target, _) in modules {
        let stem = dir.join(format!("kernels_{}_{}", family.name(), target.cpu()));
        let file = |ext: &str| format!("{:?}", stem.with_extension(ext));
        writeln!(
            rs,
            "    Module {{ family: Family::{family:?}, target: Target::{target:?}, ptx: include_str!({}), cubin: include_bytes!({}), ptxas_report: include_str!({}) }},",
            file("ptx"),
            file("cubin"),
            file("ptxas"),
        )
        .unwrap();
    }
    rs + "];\n"
}

/// `target/ptx`: shared by every profile of the host build, so the device crates build incrementally.
fn shared_ptx_target_dir(out_dir: &Path) -> PathBuf {
    // OUT_DIR is target/<profile>/build/oxtile-<hash>/out
    out_dir.ancestors().nth(4).map(|target| target.join("ptx")).unwrap_or_else(|| out_dir.join("ptx"))
}
