//! Static kernel checks that need no GPU: each PTX module is assembled with the pinned ptxas (`-v` gives registers,
//! shared memory, stack frame and spills per kernel) and disassembled with cuobjdump (the SASS shows whether a kernel
//! really issues wide loads, `HGMMA` or TMA, and whether anything went to local memory). Where the build assembled
//! a module with the pinned ptxas, its embedded cubin and ptxas's report are what is read: the same ptxas on the
//! same PTX, without assembling it again.
//!
//! The tools come from PyPI wheels, installed on first use: see [`toolkit`].

pub mod ptxas;
pub mod sass;
pub mod toolkit;

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

pub use toolkit::Toolkit;

use crate::kernels::{self, Family, Kernel, Module, Target};
use crate::{Error, Result};
use ptxas::PtxasReport;
use sass::SassFunction;

/// What one kernel compiles to.
#[derive(Clone, Debug, Serialize)]
pub struct KernelStats {
    pub name: &'static str,
    #[serde(serialize_with = "target_name")]
    pub target: Target,
    pub registers: u32,
    /// Named barriers.
    pub barriers: u32,
    /// Static shared memory.
    pub shared_bytes: u32,
    pub stack_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    /// SASS instructions per mnemonic (`HGMMA.64x256x16.F32.BF16` counts as `HGMMA`).
    pub sass: BTreeMap<String, u32>,
    /// The SASS instructions, without addresses and encodings: see [`sass::SassFunction::instructions`].
    #[serde(skip)]
    pub instructions: Vec<String>,
}

fn target_name<S: Serializer>(target: &Target, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(target.cpu())
}

impl KernelStats {
    /// Instructions with this mnemonic.
    pub fn count(&self, mnemonic: &str) -> u32 {
        self.sass.get(mnemonic).copied().unwrap_or(0)
    }

    /// Instructions with this mnemonic and modifier: `count_with("LDG", "128")` counts 128-bit global loads.
    pub fn count_with(&self, mnemonic: &str, modifier: &str) -> usize {
        self.opcodes().filter(|op| sass::mnemonic(op) == mnemonic && sass::has_modifier(op, modifier)).count()
    }

    /// The full opcode of every instruction, predicate dropped: `LDG.E.128`.
    pub fn opcodes(&self) -> impl Iterator<Item = &str> {
        self.instructions.iter().map(|i| sass::opcode(i))
    }

    /// Local-memory loads and stores in the SASS (`LDL`, `STL`).
    pub fn local_memory_ops(&self) -> u32 {
        self.count("LDL") + self.count("STL")
    }

    pub fn spill_bytes(&self) -> u32 {
        self.spill_store_bytes + self.spill_load_bytes
    }

    /// Anything in local memory: a stack frame, spills, or `LDL`/`STL` instructions.
    pub fn uses_local_memory(&self) -> bool {
        self.stack_bytes > 0 || self.spill_bytes() > 0 || self.local_memory_ops() > 0
    }

    fn new(kernel: &Kernel, module: &ModuleInspection) -> Result<KernelStats> {
        let cpu = kernel.target.cpu();
        let resources = module.ptxas.function(kernel.name).filter(|f| f.entry).ok_or_else(|| {
            Error::Toolkit(format!("kernel `{}` is not an entry in ptxas's {cpu} report", kernel.name))
        })?;
        let code = module
            .sass
            .iter()
            .find(|f| f.name == kernel.name)
            .ok_or_else(|| Error::Toolkit(format!("kernel `{}` is not in the {cpu} SASS listing", kernel.name)))?;
        Ok(KernelStats {
            name: kernel.name,
            target: kernel.target,
            registers: resources.registers,
            barriers: resources.barriers,
            shared_bytes: resources.shared_bytes,
            stack_bytes: resources.stack_bytes,
            spill_store_bytes: resources.spill_store_bytes,
            spill_load_bytes: resources.spill_load_bytes,
            sass: code.mnemonic_counts(),
            instructions: code.instructions.clone(),
        })
    }
}

/// One PTX module, assembled and disassembled.
#[derive(Clone, Debug)]
pub struct ModuleInspection {
    pub family: Family,
    pub target: Target,
    pub ptxas: PtxasReport,
    pub sass: Vec<SassFunction>,
}

/// `module` assembled by the pinned ptxas and disassembled: the build's cubin and report where the pinned ptxas made
/// them, else assembled now, in a scratch folder.
pub fn inspect_module(module: &Module) -> Result<ModuleInspection> {
    let by_pinned_ptxas = module.assembled_by().is_some_and(|version| version.contains(toolkit::PTXAS_RELEASE));
    if module.cubin.is_empty() || !by_pinned_ptxas {
        return inspect_entries(module.family, module.target, module.ptx, &[]);
    }
    let toolkit = Toolkit::get()?;
    let scratch = toolkit::ScratchDir::new()?;
    let cubin_path = scratch.path().join(format!("kernels_{}_{}.cubin", module.family.name(), module.target.cpu()));
    std::fs::write(&cubin_path, module.cubin)
        .map_err(|e| Error::Toolkit(format!("cannot write {}: {e}", cubin_path.display())))?;
    let sass = sass::disassemble(toolkit, &cubin_path)?;
    Ok(ModuleInspection {
        family: module.family,
        target: module.target,
        ptxas: ptxas::parse(module.ptxas_report),
        sass,
    })
}

/// Assembles `ptx` (the `family` module for `target`) with the pinned ptxas, with code for the named kernels only
/// (all of them when `entries` is empty), and disassembles the cubin, in a scratch folder.
pub fn inspect_entries(family: Family, target: Target, ptx: &str, entries: &[&str]) -> Result<ModuleInspection> {
    let toolkit = Toolkit::get()?;
    let scratch = toolkit::ScratchDir::new()?;
    let ptx_path = scratch.path().join(format!("kernels_{}_{}.ptx", family.name(), target.cpu()));
    let cubin_path = ptx_path.with_extension("cubin");
    std::fs::write(&ptx_path, ptx).map_err(|e| Error::Toolkit(format!("cannot write {}: {e}", ptx_path.display())))?;
    let ptxas = ptxas::assemble_entries(toolkit, target, &ptx_path, &cubin_path, entries)?;
    let sass = sass::disassemble(toolkit, &cubin_path)?;
    Ok(ModuleInspection { family, target, ptxas, sass })
}

/// Every module of [`kernels::MODULES`], each inspected once ([`inspect_module`]), at the same time.
pub fn inspect_modules() -> Result<Vec<ModuleInspection>> {
    std::thread::scope(|scope| {
        let inspections: Vec<_> =
            kernels::MODULES.iter().map(|module| scope.spawn(move || inspect_module(module))).collect();
        inspections.into_iter().map(|inspection| inspection.join().expect("inspecting a module")).collect()
    })
}

/// Every registered kernel ([`kernels::ALL`], in that order).
pub fn inspect_all() -> Result<Vec<KernelStats>> {
    kernel_stats(&inspect_modules()?)
}

/// Every registered kernel's stats from modules already inspected (one per module of [`kernels::MODULES`]): for
/// callers that also need the modules themselves (ptxas's warnings), so each is inspected only once.
pub fn kernel_stats(modules: &[ModuleInspection]) -> Result<Vec<KernelStats>> {
    kernels::ALL
        .iter()
        .map(|kernel| {
            let module =
                modules.iter().find(|m| m.family == kernel.family && m.target == kernel.target).ok_or_else(|| {
                    let (family, cpu) = (kernel.family.name(), kernel.target.cpu());
                    Error::Toolkit(format!("no {family} module for {cpu}, the one of `{}`", kernel.name))
                })?;
            KernelStats::new(kernel, module)
        })
        .collect()
}

/// A table column beyond the fixed ones: a mnemonic, or a mnemonic with one modifier (`LDG.128`).
struct OpcodeColumn {
    header: &'static str,
    mnemonic: &'static str,
    modifier: Option<&'static str>,
}

impl OpcodeColumn {
    const fn plain(mnemonic: &'static str) -> OpcodeColumn {
        OpcodeColumn { header: mnemonic, mnemonic, modifier: None }
    }

    const fn wide(header: &'static str, mnemonic: &'static str) -> OpcodeColumn {
        OpcodeColumn { header, mnemonic, modifier: Some("128") }
    }

    fn count(&self, stats: &KernelStats) -> usize {
        match self.modifier {
            Some(modifier) => stats.count_with(self.mnemonic, modifier),
            None => stats.count(self.mnemonic) as usize,
        }
    }
}

/// The opcodes worth a column, shown when some kernel has them: tensor cores (HGMMA is wgmma), global loads and
/// stores (and how many are 128-bit), shared memory, special functions, fma, barriers, mbarriers (SYNCS), TMA.
const OPCODE_COLUMNS: &[OpcodeColumn] = &[
    OpcodeColumn::plain("HGMMA"),
    OpcodeColumn::plain("HMMA"),
    OpcodeColumn::plain("LDG"),
    OpcodeColumn::wide("LDG.128", "LDG"),
    OpcodeColumn::plain("STG"),
    OpcodeColumn::wide("STG.128", "STG"),
    OpcodeColumn::plain("LDS"),
    OpcodeColumn::plain("LDSM"),
    OpcodeColumn::plain("STS"),
    OpcodeColumn::plain("STSM"),
    OpcodeColumn::plain("MUFU"),
    OpcodeColumn::plain("FFMA"),
    OpcodeColumn::plain("BAR"),
    OpcodeColumn::plain("SYNCS"),
    OpcodeColumn::plain("UTMALDG"),
    OpcodeColumn::plain("UTMASTG"),
    OpcodeColumn::plain("UBLKCP"),
];

/// A text table: resources per kernel, then the counts of the SASS opcodes of interest that occur at all.
/// `local` counts `LDL`/`STL` instructions.
pub fn table(stats: &[KernelStats]) -> String {
    let columns: Vec<&OpcodeColumn> = OPCODE_COLUMNS.iter().filter(|c| stats.iter().any(|s| c.count(s) > 0)).collect();
    let mut rows = vec![
        ["kernel", "target", "regs", "smem", "stack", "spill st/ld", "local"]
            .into_iter()
            .chain(columns.iter().map(|c| c.header))
            .map(String::from)
            .collect::<Vec<_>>(),
    ];
    for s in stats {
        let mut row = vec![
            s.name.to_string(),
            s.target.cpu().to_string(),
            s.registers.to_string(),
            s.shared_bytes.to_string(),
            s.stack_bytes.to_string(),
            format!("{}/{}", s.spill_store_bytes, s.spill_load_bytes),
            s.local_memory_ops().to_string(),
        ];
        row.extend(columns.iter().map(|c| c.count(s).to_string()));
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &width))| if i < 2 { format!("{cell:<width$}") } else { format!("{cell:>width$}") })
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(name: &'static str, instructions: &[&str]) -> KernelStats {
        let function =
            SassFunction { name: name.to_string(), instructions: instructions.iter().map(|i| i.to_string()).collect() };
        KernelStats {
            name,
            target: Target::Sm90a,
            registers: 32,
            barriers: 0,
            shared_bytes: 0,
            stack_bytes: 0,
            spill_store_bytes: 0,
            spill_load_bytes: 0,
            sass: function.mnemonic_counts(),
            instructions: function.instructions,
        }
    }

    #[test]
    fn local_memory_shows_in_stack_spills_or_instructions() {
        let clean = stats("a", &["LDG.E.128 R4, desc[UR4][R2.64]", "FFMA R1, R2, R3, R4", "EXIT"]);
        assert!(!clean.uses_local_memory());
        assert_eq!(clean.count_with("LDG", "128"), 1);
        let local = stats("b", &["@P0 STL [R1], R2", "LDL.64 R2, [R1]"]);
        assert_eq!(local.local_memory_ops(), 2);
        assert!(local.uses_local_memory());
        let stack = KernelStats { stack_bytes: 16, ..clean.clone() };
        assert!(stack.uses_local_memory());
        let spill = KernelStats { spill_load_bytes: 4, ..clean };
        assert!(spill.uses_local_memory());
    }

    #[test]
    fn table_shows_only_opcodes_that_occur() {
        let all = [stats("axpy_f32", &["LDG.E.128 R4", "LDG.E R4", "FFMA R1", "STG.E [R2], R1"]), stats("x", &[])];
        let table = table(&all);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        let header: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(
            header,
            ["kernel", "target", "regs", "smem", "stack", "spill", "st/ld", "local", "LDG", "LDG.128", "STG", "FFMA"]
        );
        let row: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(row, ["axpy_f32", "sm_90a", "32", "0", "0", "0/0", "0", "2", "1", "1", "1"]);
        assert!(!table.contains("HGMMA"));
    }

    #[test]
    fn json_has_the_resources_and_the_opcode_map() {
        let json = serde_json::to_value(stats("axpy_f32", &["FFMA R1", "@P0 EXIT"])).unwrap();
        assert_eq!(json["name"], "axpy_f32");
        assert_eq!(json["target"], "sm_90a");
        assert_eq!(json["registers"], 32);
        assert_eq!(json["sass"]["FFMA"], 1);
        assert_eq!(json["sass"]["EXIT"], 1);
        assert!(json.get("instructions").is_none());
    }
}
