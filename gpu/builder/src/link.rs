//! The link step rustc delegates to us for `nvptx64-nvidia-cuda`: bitcode in, PTX out.
//!
//! rustc calls the linker with `--export-symbol NAME` for each exported item, the crate's bitcode objects,
//! the `core`/`compiler_builtins` rlibs (archives of bitcode objects), `--target-cpu CPU` and `-o OUT.ptx`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::convergent::mark_inline_asm_convergent;
use crate::ptx::{LaunchBounds, finish_ptx};
use crate::{LINK_TARGET_ENV, LLVM_BIN_ENV, Target};

#[derive(Debug, Default)]
struct LinkArgs {
    exports: Vec<String>,
    inputs: Vec<PathBuf>,
    output: Option<PathBuf>,
    target_cpu: Option<String>,
}

impl LinkArgs {
    fn parse(args: impl IntoIterator<Item = String>) -> Result<LinkArgs, String> {
        let mut parsed = LinkArgs::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = |flag: &str| args.next().ok_or_else(|| format!("linker flag {flag} has no value"));
            match arg.as_str() {
                "--export-symbol" => parsed.exports.push(value(&arg)?),
                "-o" => parsed.output = Some(value(&arg)?.into()),
                "--target-cpu" => parsed.target_cpu = Some(value(&arg)?),
                "-L" | "--target" => {
                    value(&arg)?;
                }
                "-O0" | "-O1" | "-O2" | "-O3" | "-Os" | "-Oz" | "--debug" => {}
                _ if arg.ends_with(".o") || arg.ends_with(".rlib") || arg.ends_with(".a") => {
                    parsed.inputs.push(arg.into())
                }
                _ => return Err(format!("unexpected linker argument `{arg}`")),
            }
        }
        Ok(parsed)
    }
}

/// When rustc runs the build script as its nvptx linker, performs the link and exits; otherwise returns at once.
pub fn link_if_invoked_as_linker() {
    let Ok(target) = std::env::var(LINK_TARGET_ENV) else {
        return;
    };
    match link(&target, std::env::args().skip(1)) {
        Ok(()) => std::process::exit(0),
        Err(message) => {
            eprintln!("oxtile ptx linker: {message}");
            std::process::exit(1);
        }
    }
}

fn link(target: &str, args: impl IntoIterator<Item = String>) -> Result<(), String> {
    let target = Target::from_cpu(target).ok_or_else(|| format!("unknown target `{target}`"))?;
    let args = LinkArgs::parse(args)?;
    if let Some(cpu) = args.target_cpu.as_deref().filter(|cpu| *cpu != target.cpu()) {
        return Err(format!("rustc compiled for {cpu} but the build asked for {}", target.cpu()));
    }
    let output = args.output.clone().ok_or("linker called without -o")?;
    let llvm_bin = PathBuf::from(std::env::var_os(LLVM_BIN_ENV).ok_or("OXTILE_LLVM_BIN is not set")?);
    let work = output.with_extension("link");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;

    let mut bounds = Vec::new();
    let mut kernels = Vec::new();
    for symbol in &args.exports {
        match LaunchBounds::from_symbol(symbol) {
            Some(parsed) => bounds.push(parsed?),
            None => kernels.push(symbol.clone()),
        }
    }

    // Everything but core whole (the crate, our libraries, compiler_builtins; the panic handler that core's
    // panics call is in one of ours), then from core only the definitions those need: core is most of the IR, and
    // the text IR below then holds the kernels and what they call, not every function of core.
    // (`--only-needed` applies from the second input on, so core's objects are one module first: a definition one
    // of them needs from another is then always found.)
    let (whole, core) = bitcode_objects(&llvm_bin, &args.inputs, &work)?;
    let ours = work.join("ours.bc");
    run(Command::new(llvm_bin.join("llvm-link")).args(&whole).arg("-o").arg(&ours))?;
    let mut link = Command::new(llvm_bin.join("llvm-link"));
    link.args(["-S", "--only-needed"]).arg(&ours);
    if !core.is_empty() {
        let core_bitcode = work.join("core.bc");
        run(Command::new(llvm_bin.join("llvm-link")).args(&core).arg("-o").arg(&core_bitcode))?;
        link.arg(core_bitcode);
    }
    let linked = work.join("linked.ll");
    run(link.arg("-o").arg(&linked))?;

    // Collective asm (wgmma, barriers, shuffles) must never be duplicated onto diverging paths: see convergent.rs.
    let ir = std::fs::read_to_string(&linked).map_err(|e| format!("cannot read {}: {e}", linked.display()))?;
    let (ir, _) = mark_inline_asm_convergent(&ir)?;
    let linked = work.join("convergent.ll");
    std::fs::write(&linked, ir).map_err(|e| format!("cannot write {}: {e}", linked.display()))?;

    // Everything but the kernels becomes internal, so globaldce drops the unused parts of core before O3.
    let optimized = work.join("optimized.bc");
    run(Command::new(llvm_bin.join("opt"))
        .arg(format!("--internalize-public-api-list={}", kernels.join(",")))
        .arg("--passes=internalize,globaldce,default<O3>")
        .arg(&linked)
        .arg("-o")
        .arg(&optimized))?;

    let raw_ptx = work.join("llc.ptx");
    run(Command::new(llvm_bin.join("llc"))
        .args(["-O3", "-mtriple=nvptx64-nvidia-cuda"])
        .arg(format!("-mcpu={}", target.cpu()))
        .arg(format!("-mattr={}", target.ptx_feature()))
        .arg(&optimized)
        .arg("-o")
        .arg(&raw_ptx))?;

    let ptx = std::fs::read_to_string(&raw_ptx).map_err(|e| e.to_string())?;
    let ptx = finish_ptx(&ptx, &bounds)?;
    std::fs::write(&output, ptx).map_err(|e| format!("cannot write {}: {e}", output.display()))
}

/// The crate's own objects as they are, and every bitcode member of the rlibs, extracted into `work`: core's
/// members apart (the second list), everything else in the first.
fn bitcode_objects(llvm_bin: &Path, inputs: &[PathBuf], work: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
    let (mut whole, mut core) = (Vec::new(), Vec::new());
    for (i, input) in inputs.iter().enumerate() {
        if input.extension().is_some_and(|ext| ext == "o") {
            whole.push(input.clone());
            continue;
        }
        let is_core = input.file_name().is_some_and(|name| name.to_string_lossy().starts_with("libcore-"));
        let dir = work.join(format!("archive{i}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let input = std::path::absolute(input).map_err(|e| e.to_string())?;
        run(Command::new(llvm_bin.join("llvm-ar")).arg("x").arg(&input).current_dir(&dir))?;
        let mut members = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.extension().is_some_and(|ext| ext == "o") {
                members.push(path);
            }
        }
        // In a fixed order (a directory's is not), so that the link's output does not depend on it.
        members.sort();
        if is_core { core.extend(members) } else { whole.extend(members) }
    }
    Ok((whole, core))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed ({}):\n{}", cmd.get_program(), out.status, String::from_utf8_lossy(&out.stderr)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_rustc_passes() {
        let argv = "--export-symbol exp2_f32 a.o libcore-1.rlib -L /x --target nvptx64-nvidia-cuda --target-cpu sm_90a -L /y -o out.ptx -O3 --debug";
        let args = LinkArgs::parse(argv.split(' ').map(String::from)).unwrap();
        assert_eq!(args.exports, ["exp2_f32"]);
        assert_eq!(args.inputs, [PathBuf::from("a.o"), PathBuf::from("libcore-1.rlib")]);
        assert_eq!(args.output, Some(PathBuf::from("out.ptx")));
        assert_eq!(args.target_cpu.as_deref(), Some("sm_90a"));
        assert!(LinkArgs::parse(["--frobnicate".to_string()]).is_err());
    }
}
