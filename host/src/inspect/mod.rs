//! Static kernel checks that need no GPU: each PTX module is assembled with the pinned ptxas (`-v` gives registers,
//! shared memory, stack frame and spills per kernel) and disassembled with cuobjdump (the SASS shows whether a kernel
//! really issues wide loads, `HGMMA` or TMA, and whether anything went to local memory).
//!
//! The tools come from PyPI wheels, installed on first use: see [`toolkit`].

pub mod ptxas;
pub mod sass;
pub mod toolkit;

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

pub use toolkit::Toolkit;

use crate::kernels::{self, Kernel, Target};
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
    pub target: Target,
    pub ptxas: PtxasReport,
    pub sass: Vec<SassFunction>,
}

/// Assembles `ptx` for `target` with ptxas and disassembles the cubin, in a scratch folder.
pub fn inspect_module(target: Target, ptx: &str) -> Result<ModuleInspection> {
    inspect_entries(target, ptx, &[])
}

/// As [`inspect_module`], with code generated for the named kernels only (all of them when `entries` is empty).
pub fn inspect_entries(target: Target, ptx: &str, entries: &[&str]) -> Result<ModuleInspection> {
    let toolkit = Toolkit::get()?;
    let scratch = toolkit::ScratchDir::new()?;
    let ptx_path = scratch.path().join(format!("kernels_{}.ptx", target.cpu()));
    let cubin_path = ptx_path.with_extension("cubin");
    std::fs::write(&ptx_path, ptx).map_err(|e| Error::Toolkit(format!("cannot write {}: {e}", ptx_path.display())))?;
    let ptxas = ptxas::assemble_entries(toolkit, target, &ptx_path, &cubin_path, entries)?;
    let sass = sass::disassemble(toolkit, &cubin_path)?;
    Ok(ModuleInspection { target, ptxas, sass })
}

/// Every registered kernel ([`kernels::ALL`], in that order), each module of [`kernels::MODULES`] assembled once.
pub fn inspect_all() -> Result<Vec<KernelStats>> {
    let modules = kernels::MODULES.iter().map(|m| inspect_module(m.target, m.ptx)).collect::<Result<Vec<_>>>()?;
    kernel_stats(&modules)
}

/// Every registered kernel's stats from modules already assembled (one per target of [`kernels::MODULES`]): for
/// callers that also need the modules themselves (ptxas's warnings), so each is assembled only once.
pub fn kernel_stats(modules: &[ModuleInspection]) -> Result<Vec<KernelStats>> {
    kernels::ALL
        .iter()
        .map(|kernel| {
            let module = modules.iter().find(|m| m.target == kernel.target).ok_or_else(|| {
                Error::Toolkit(format!("no PTX module for {}, the target of `{}`", kernel.target.cpu(), kernel.name))
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
