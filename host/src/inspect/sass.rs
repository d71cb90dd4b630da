//! `cuobjdump -sass`: the machine code of a cubin, split per function, with opcode counts.

use std::collections::BTreeMap;
use std::path::Path;

use super::toolkit::{Toolkit, tail};
use crate::{Error, Result};

/// One function's SASS.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SassFunction {
    pub name: String,
    /// Each instruction as printed, without its address, encoding and `;`: `@P0 LDG.E.128 R12, desc[UR4][R10.64]`.
    pub instructions: Vec<String>,
}

impl SassFunction {
    /// The full opcode of every instruction, predicate dropped: `LDG.E.128`.
    pub fn opcodes(&self) -> impl Iterator<Item = &str> {
        self.instructions.iter().map(|i| opcode(i))
    }

    /// How often each mnemonic occurs: `HGMMA.64x256x16.F32.BF16` counts as `HGMMA`.
    pub fn mnemonic_counts(&self) -> BTreeMap<String, u32> {
        let mut counts = BTreeMap::new();
        for op in self.opcodes() {
            *counts.entry(mnemonic(op).to_string()).or_insert(0) += 1;
        }
        counts
    }
}

/// The opcode of an instruction, without its guard predicate (`@P0`, `@!PT`, `@UP1`): `@P0 LDG.E.128 R4, ...` gives
/// `LDG.E.128`.
pub fn opcode(instruction: &str) -> &str {
    let mut words = instruction.split_whitespace();
    match words.next() {
        Some(word) if word.starts_with('@') => words.next().unwrap_or(""),
        Some(word) => word,
        None => "",
    }
}

/// The opcode's mnemonic, before its first modifier: `MUFU.EX2` gives `MUFU`.
pub fn mnemonic(opcode: &str) -> &str {
    opcode.split('.').next().unwrap_or(opcode)
}

/// Whether the opcode carries `modifier` among its dot-separated modifiers: `LDG.E.128` has `128`.
pub fn has_modifier(opcode: &str, modifier: &str) -> bool {
    opcode.split('.').skip(1).any(|m| m == modifier)
}

/// Runs `cuobjdump -sass <cubin>` and splits its listing per function.
pub fn disassemble(toolkit: &Toolkit, cubin: &Path) -> Result<Vec<SassFunction>> {
    let output = toolkit
        .cuobjdump_command()
        .arg("-sass")
        .arg(cubin)
        .output()
        .map_err(|e| Error::Toolkit(format!("cannot run {}: {e}", toolkit.cuobjdump().display())))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(Error::Toolkit(format!(
            "`cuobjdump -sass` failed on {} ({}): {}",
            cubin.display(),
            output.status,
            tail(&format!("{stdout}\n{stderr}"), 4000)
        )));
    }
    let functions = parse(&stdout);
    if functions.is_empty() {
        return Err(Error::Toolkit(format!(
            "`cuobjdump -sass` listed no function in {}: {}",
            cubin.display(),
            tail(&stdout, 1000)
        )));
    }
    Ok(functions)
}

/// Splits a `cuobjdump -sass` listing at its `Function : NAME` lines and keeps the instruction lines, which start
/// with an address comment such as `/*0190*/`. Encoding-only lines and everything else are skipped.
pub fn parse(listing: &str) -> Vec<SassFunction> {
    let mut functions: Vec<SassFunction> = Vec::new();
    for line in listing.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("Function :").or_else(|| line.strip_prefix("Function:")) {
            functions.push(SassFunction { name: name.trim().to_string(), instructions: Vec::new() });
            continue;
        }
        let (Some(function), Some(instruction)) = (functions.last_mut(), instruction(line)) else { continue };
        function.instructions.push(instruction.to_string());
    }
    functions
}

/// `/*0190*/  @P0 BRA 0x2f0 ;  /* 0x... */` gives `@P0 BRA 0x2f0`.
fn instruction(line: &str) -> Option<&str> {
    let (address, rest) = line.strip_prefix("/*")?.split_once("*/")?;
    if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let text = rest.split(';').next()?.trim();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shortened `cuobjdump -sass` output in the 13.2 layout, with a matrix kernel's lines added by hand.
    const LISTING: &str = "
	code for sm_90a
	.target	sm_90a

		Function : exp2_f32
	.headerflags	@\"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                               /* 0x00000a00ff017b82 */
                                                                                        /* 0x000fe20000000800 */
        /*0190*/               @P0 BRA 0x2f0 ;                                          /* 0x0000000000540947 */
                                                                                        /* 0x000fea0003800000 */
        /*0590*/                   LDG.E.128 R12, desc[UR4][R10.64+-0xc] ;              /* 0xfffff4040a0c7981 */
        /*0660*/                   MUFU.EX2 R12, R12 ;                                  /* 0x0000000c000c7308 */
        /*0670*/              @!PT MUFU.EX2 R13, R13 ;                                  /* 0x0000000d000d7308 */
        /*0df0*/                   LDG.E R2, desc[UR4][R2.64] ;                         /* 0x0000000402027981 */
        /*0e40*/                   EXIT ;                                               /* 0x000000000000794d */
        /*0e50*/                   BRA 0xe50;                                           /* 0xfffffffc00fc7947 */
		..........



		Function : gemm_bf16
	.headerflags	@\"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"
        /*0100*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24 ;      /* 0x00e00000041879f0 */
        /*0110*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ; /* 0x00e00000081879f0 */
        /*0120*/              @UP0 SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [UR5], RZ ;        /* 0x000000ffffff79a7 */
        /*0130*/                   STL.64 [R1+0x8], R2 ;                                /* 0x0000080201007387 */
        /*0140*/                   LDL R4, [R1+0x8] ;                                   /* 0x0000080001047983 */
        /*0150*/                   NOP;                                                 /* 0x0000000000007918 */
		..........
";

    #[test]
    fn splits_per_function() {
        let functions = parse(LISTING);
        let names: Vec<_> = functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["exp2_f32", "gemm_bf16"]);
        assert_eq!(functions[0].instructions.len(), 8);
        assert_eq!(functions[0].instructions[1], "@P0 BRA 0x2f0");
        assert_eq!(functions[0].instructions[7], "BRA 0xe50");
        assert_eq!(functions[1].instructions.len(), 6);
    }

    #[test]
    fn counts_mnemonics_without_predicates_or_modifiers() {
        let functions = parse(LISTING);
        let exp2 = functions[0].mnemonic_counts();
        let expected = [("BRA", 2), ("EXIT", 1), ("LDC", 1), ("LDG", 2), ("MUFU", 2)];
        assert_eq!(exp2, expected.into_iter().map(|(m, n)| (m.to_string(), n)).collect());
        let gemm = functions[1].mnemonic_counts();
        assert_eq!(gemm["HGMMA"], 2);
        assert_eq!(gemm["SYNCS"], 1);
        assert_eq!((gemm["LDL"], gemm["STL"], gemm["NOP"]), (1, 1, 1));
    }

    #[test]
    fn full_opcodes_keep_their_modifiers() {
        let functions = parse(LISTING);
        let wide_loads = functions[0].opcodes().filter(|op| mnemonic(op) == "LDG" && has_modifier(op, "128")).count();
        assert_eq!(wide_loads, 1);
        assert!(functions[0].opcodes().any(|op| op == "MUFU.EX2"));
        assert!(!has_modifier("LDG.E", "128"));
        assert!(!has_modifier("LDG128", "128"));
        assert_eq!(opcode("@!UP1 UTMALDG.2D [UR8], [UR4] "), "UTMALDG.2D");
        assert_eq!(opcode(""), "");
    }

    #[test]
    fn text_without_functions_gives_nothing() {
        assert!(parse("/*0000*/ LDC R1, c[0x0][0x28] ;\ncuobjdump info: nothing\n").is_empty());
    }
}
