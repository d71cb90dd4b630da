//! `ptxas -v`: assemble a PTX module for its target and read each function's resources from the report.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Serialize;

use super::toolkit::{Toolkit, tail};
use crate::kernels::Target;
use crate::{Error, Result};

/// What ptxas reports for one function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FunctionResources {
    pub name: String,
    /// A kernel (`.entry`), not a device function.
    pub entry: bool,
    pub registers: u32,
    /// Named barriers.
    pub barriers: u32,
    /// Static shared memory; dynamic shared memory is set at launch and not in the report.
    pub shared_bytes: u32,
    pub stack_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    /// Constant memory per bank (`cmem[0]` holds the kernel parameters); absent banks are unused.
    pub cmem_bytes: BTreeMap<u32, u32>,
}

/// The parsed report of one ptxas run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    /// In the order ptxas first named them.
    pub functions: Vec<FunctionResources>,
    /// The text of every `ptxas warning` line, e.g. an ignored `setmaxnreg`.
    pub warnings: Vec<String>,
    /// The text of every `ptxas info` line that reports a "Potential Performance Loss", e.g. C7520: wgmma issued
    /// one at a time, each followed by a wait, because ptxas had to insert a warpgroup arrive in a path it saw as
    /// divergent. Info, not a warning, yet it costs a kernel most of its tensor throughput. Also C7517, a
    /// `warpgroup.wait` ptxas injected before a use of registers a wgmma defined: the code it was meant to overlap
    /// with the products in flight then waits for them.
    pub performance_losses: Vec<String>,
}

impl PtxasReport {
    pub fn function(&self, name: &str) -> Option<&FunctionResources> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// Runs `ptxas -arch=<target> -v -o <cubin> <ptx>` and parses its report.
pub fn assemble(toolkit: &Toolkit, target: Target, ptx: &Path, cubin: &Path) -> Result<PtxasReport> {
    assemble_entries(toolkit, target, ptx, cubin, &[])
}

/// As [`assemble`], generating code for the named entry functions only (`ptxas -e`), or for all of them when
/// `entries` is empty: a check that looks at two kernels need not wait for the module's fifty.
pub fn assemble_entries(
    toolkit: &Toolkit,
    target: Target,
    ptx: &Path,
    cubin: &Path,
    entries: &[&str],
) -> Result<PtxasReport> {
    let arch = format!("-arch={}", target.cpu());
    let mut command = Command::new(toolkit.ptxas());
    command.arg(&arch).arg("-v");
    if !entries.is_empty() {
        command.arg("-e").arg(entries.join(","));
    }
    let output = command
        .arg("-o")
        .arg(cubin)
        .arg(ptx)
        .output()
        .map_err(|e| Error::Toolkit(format!("cannot run {}: {e}", toolkit.ptxas().display())))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(Error::Toolkit(format!(
            "`ptxas {arch} -v` failed on {} ({}): {}",
            ptx.display(),
            output.status,
            tail(&format!("{stdout}\n{stderr}"), 4000)
        )));
    }
    // -v writes its report to stderr; read both streams in case that changes.
    Ok(parse(&format!("{stdout}\n{stderr}")))
}

/// Parses the `-v` report. Lines it does not know are skipped; figures belong to the function named last, by
/// `Compiling entry function 'NAME' for 'sm_90a'` or `Function properties for NAME`.
pub fn parse(text: &str) -> PtxasReport {
    let mut report = PtxasReport::default();
    let mut current: Option<usize> = None;
    for line in text.lines().map(str::trim) {
        let (kind, body) = match line.strip_prefix("ptxas") {
            Some(rest) => match rest.split_once(':') {
                Some((kind, body)) => (kind.trim(), body.trim()),
                None => continue,
            },
            None => ("", line),
        };
        if kind.starts_with("warning") {
            report.warnings.push(body.to_string());
            continue;
        }
        if kind.starts_with("info")
            && (body.contains("Potential Performance Loss") || body.contains("warpgroup.wait is injected"))
        {
            report.performance_losses.push(body.to_string());
            continue;
        }
        if let Some(rest) = body.strip_prefix("Compiling entry function") {
            if let Some(name) = first_quoted(rest) {
                let index = slot(&mut report, name);
                report.functions[index].entry = true;
                current = Some(index);
            }
        } else if let Some(rest) = body.strip_prefix("Function properties for") {
            let name = rest.trim().trim_matches(|c| c == '\'' || c == '"');
            if !name.is_empty() {
                current = Some(slot(&mut report, name));
            }
        } else if let Some(index) = current {
            apply_figures(&mut report.functions[index], body);
        }
    }
    report
}

fn slot(report: &mut PtxasReport, name: &str) -> usize {
    match report.functions.iter().position(|f| f.name == name) {
        Some(index) => index,
        None => {
            report.functions.push(FunctionResources { name: name.to_string(), ..Default::default() });
            report.functions.len() - 1
        }
    }
}

fn first_quoted(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once('\'')?;
    let (name, _) = rest.split_once('\'')?;
    Some(name).filter(|n| !n.is_empty())
}

/// Reads comma-separated `<number> <what>` figures, e.g. `Used 16 registers, used 0 barriers, 380 bytes cmem[0]` or
/// `0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads`; other figures (gmem, compile time) are ignored.
fn apply_figures(function: &mut FunctionResources, body: &str) {
    for piece in body.split(',') {
        let mut words = piece.split_whitespace().skip_while(|w| w.parse::<u32>().is_err());
        let Some(value) = words.next().and_then(|w| w.parse::<u32>().ok()) else { continue };
        let what = words.collect::<Vec<_>>().join(" ");
        match what.as_str() {
            "registers" => function.registers = value,
            "barriers" => function.barriers = value,
            "bytes smem" => function.shared_bytes = value,
            "bytes stack frame" => function.stack_bytes = value,
            "bytes spill stores" => function.spill_store_bytes = value,
            "bytes spill loads" => function.spill_load_bytes = value,
            other => {
                let bank = other.strip_prefix("bytes cmem[").and_then(|b| b.strip_suffix(']'));
                if let Some(bank) = bank.and_then(|b| b.parse::<u32>().ok()) {
                    function.cmem_bytes.insert(bank, value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ptxas 13.0 on our elementwise module, with a matrix kernel and a device function added by hand.
    const REPORT: &str = "\
ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program \
dependence on compiler-inserted WG.AR in divergent path in the function 'attn_fwd'
ptxas info    : (C7517) warpgroup.wait is injected in around line 12909 by compiler to allow use of registers defined by GMMA in function 'attn_fwd'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'exp2_f32' for 'sm_90a'
ptxas info    : Function properties for exp2_f32
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers
ptxas info    : Compile time = 73.943 ms
ptxas info    : Compiling entry function 'axpy_f32' for 'sm_90a'
ptxas info    : Function properties for axpy_f32
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 0 barriers, 380 bytes cmem[0]
ptxas info    : Compile time = 50.561 ms
ptxas info    : Function properties for helper
    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas warning : (C7508) Potential Performance Loss: the setmaxnreg instruction is ignored in 'gemm_bf16'
ptxas info    : Compiling entry function 'gemm_bf16' for 'sm_90a'
ptxas info    : Function properties for gemm_bf16
    512 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 168 registers, used 2 barriers, 1024 bytes smem, 400 bytes cmem[0], 8 bytes cmem[2]
ptxas info    : Compile time = 1.5 ms
";

    #[test]
    fn reads_every_function() {
        let report = parse(REPORT);
        let names: Vec<_> = report.functions.iter().map(|f| (f.name.as_str(), f.entry)).collect();
        assert_eq!(names, [("exp2_f32", true), ("axpy_f32", true), ("helper", false), ("gemm_bf16", true)]);
        assert_eq!(report.warnings.len(), 1);
        assert!(report.warnings[0].starts_with("(C7508)"));
        assert_eq!(report.performance_losses.len(), 2);
        assert!(report.performance_losses[0].starts_with("(C7520)"));
        assert!(report.performance_losses[0].ends_with("'attn_fwd'"));
        assert!(report.performance_losses[1].starts_with("(C7517)"));
    }

    #[test]
    fn reads_registers_and_constant_memory() {
        let report = parse(REPORT);
        let axpy = report.function("axpy_f32").unwrap();
        assert_eq!((axpy.registers, axpy.barriers, axpy.shared_bytes), (16, 0, 0));
        assert_eq!(axpy.cmem_bytes, BTreeMap::from([(0, 380)]));
        assert_eq!(report.function("exp2_f32").unwrap().registers, 40);
        assert!(report.function("exp2_f32").unwrap().cmem_bytes.is_empty());
    }

    #[test]
    fn reads_stack_spills_and_shared_memory() {
        let report = parse(REPORT);
        let gemm = report.function("gemm_bf16").unwrap();
        let expected = FunctionResources {
            name: "gemm_bf16".into(),
            entry: true,
            registers: 168,
            barriers: 2,
            shared_bytes: 1024,
            stack_bytes: 512,
            spill_store_bytes: 4,
            spill_load_bytes: 8,
            cmem_bytes: BTreeMap::from([(0, 400), (2, 8)]),
        };
        assert_eq!(gemm, &expected);
        let helper = report.function("helper").unwrap();
        assert_eq!((helper.stack_bytes, helper.spill_store_bytes, helper.spill_load_bytes), (24, 8, 12));
        assert_eq!(helper.registers, 0);
    }

    #[test]
    fn figures_before_any_function_and_unknown_lines_are_ignored() {
        let report = parse("0 bytes stack frame, 8 bytes spill stores\nsomething else\nptxas fatal   : Unresolved\n");
        assert_eq!(report, PtxasReport::default());
    }
}
