//! The const layout algebra is free at run time: `swizzled_transpose_u16` addresses shared memory through a
//! `const` `Sw<3,4,3> ∘ (64,64):(128,2)` and must compile to what the hand-written `swizzled_transpose_u16_by_hand`
//! compiles to, with no integer division and no local memory (checked on the PTX and, with the pinned ptxas and
//! cuobjdump, on the SASS; no GPU needed). On a GPU both transpose random tiles exactly.

use std::sync::LazyLock;

use cudarc::driver::CudaSlice;
use oxtile::inspect::{self, ModuleInspection};
use oxtile::kernels::{self, Kernel};
use oxtile::ops::layout_demo;
use oxtile::reference::fresh_seed;
use oxtile::{Error, Gpu};
use oxtile_layout::{Layout, Swizzle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const LAYOUT: Kernel = kernels::SWIZZLED_TRANSPOSE_U16;
const BY_HAND: Kernel = kernels::SWIZZLED_TRANSPOSE_U16_BY_HAND;

/// The PTX of `.entry name(...) { ... }`.
fn entry_body(kernel: Kernel) -> &'static str {
    let ptx = kernel.ptx();
    let start = ptx.find(&format!(".entry {}(", kernel.name)).unwrap_or_else(|| panic!("no entry {}", kernel.name));
    let rest = &ptx[start..];
    let end = rest.find("\n}\n").unwrap_or_else(|| panic!("entry {} does not end", kernel.name));
    &rest[..end + 2]
}

/// The instructions of a kernel's PTX body, one per statement: no declarations, labels, braces or comments.
fn ptx_instructions(kernel: Kernel) -> Vec<&'static str> {
    let body = entry_body(kernel);
    let open = body.find('{').expect("entry has a body");
    body[open + 1..]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('.') && !l.starts_with("//") && !l.ends_with(':') && *l != "}")
        .collect()
}

fn opcode(instruction: &str) -> &str {
    let without_predicate = if instruction.starts_with('@') {
        instruction.split_once(char::is_whitespace).map_or("", |(_, rest)| rest.trim_start())
    } else {
        instruction
    };
    without_predicate.split(|c: char| c.is_whitespace() || c == ';').next().unwrap_or("")
}

#[test]
fn layout_kernel_ptx_has_no_division_and_no_local_memory() {
    for kernel in [LAYOUT, BY_HAND] {
        let body = entry_body(kernel);
        let instructions = ptx_instructions(kernel);
        let division: Vec<&str> = instructions
            .iter()
            .copied()
            .filter(|i| {
                let op = opcode(i);
                op.starts_with("div.") || op.starts_with("rem.") || op.starts_with("mul.hi.")
            })
            .collect();
        assert!(division.is_empty(), "{}: integer division left in the PTX: {division:#?}", kernel.name);
        assert!(!body.contains(".local"), "{}: local memory in the PTX:\n{body}", kernel.name);
        // Every instruction is in the body: nothing was left out of line.
        assert!(!instructions.iter().any(|i| opcode(i).starts_with("call")), "{}: calls a function", kernel.name);
        let count = |op: &str| instructions.iter().filter(|i| opcode(i) == op).count();
        assert_eq!(count("st.shared.u16"), 16, "{}: one shared store per element of the thread", kernel.name);
        assert_eq!(count("ld.shared.u16"), 16, "{}: one shared load per element of the thread", kernel.name);
    }
}

#[test]
fn layout_kernel_ptx_is_as_long_as_the_hand_written_one() {
    let (layout, by_hand) = (ptx_instructions(LAYOUT), ptx_instructions(BY_HAND));
    assert!(
        layout.len().abs_diff(by_hand.len()) <= 2,
        "PTX instructions: {} through the layout, {} by hand\n--- layout\n{}\n--- by hand\n{}",
        layout.len(),
        by_hand.len(),
        layout.join("\n"),
        by_hand.join("\n")
    );
}

/// The two transpose kernels of their module assembled and disassembled once for the whole binary (only those two).
static MODULE: LazyLock<ModuleInspection> = LazyLock::new(|| {
    inspect::inspect_entries(LAYOUT.family, LAYOUT.target, LAYOUT.ptx(), &[LAYOUT.name, BY_HAND.name])
        .unwrap_or_else(|e| panic!("static inspection failed: {e}"))
});

fn sass(kernel: Kernel) -> &'static inspect::sass::SassFunction {
    MODULE.sass.iter().find(|f| f.name == kernel.name).unwrap_or_else(|| panic!("no SASS for {}", kernel.name))
}

#[test]
fn layout_kernel_sass_has_no_division_and_no_local_memory() {
    for kernel in [LAYOUT, BY_HAND] {
        let resources = MODULE.ptxas.function(kernel.name).unwrap_or_else(|| panic!("{} not in ptxas", kernel.name));
        assert_eq!(resources.stack_bytes, 0, "{}: stack frame", kernel.name);
        assert_eq!(resources.spill_store_bytes + resources.spill_load_bytes, 0, "{}: spills", kernel.name);
        let code = sass(kernel);
        let opcodes: Vec<&str> = code.opcodes().collect();
        // Integer division on the SM is a subroutine call or an I2F / MUFU.RCP / F2I sequence.
        let suspicious: Vec<&&str> = opcodes
            .iter()
            .filter(|op| {
                let mnemonic = inspect::sass::mnemonic(op);
                matches!(mnemonic, "LDL" | "STL" | "CALL" | "MUFU" | "I2F" | "F2I" | "I2FP" | "F2IP")
            })
            .collect();
        assert!(suspicious.is_empty(), "{}: local memory or division in the SASS: {suspicious:?}", kernel.name);
        let count = |mnemonic: &str| opcodes.iter().filter(|op| inspect::sass::mnemonic(op) == mnemonic).count();
        assert!(count("STS") > 0 && count("LDS") > 0, "{}: no shared-memory accesses: {opcodes:?}", kernel.name);
    }
}

#[test]
fn layout_kernel_sass_is_as_long_as_the_hand_written_one() {
    let (layout, by_hand) = (sass(LAYOUT).instructions.len(), sass(BY_HAND).instructions.len());
    assert!(
        layout.abs_diff(by_hand) <= 2,
        "SASS instructions: {layout} through the layout, {by_hand} by hand\n--- layout\n{}\n--- by hand\n{}",
        sass(LAYOUT).instructions.join("\n"),
        sass(BY_HAND).instructions.join("\n")
    );
}

/// The runtime algebra builds the kernel's const layout the same way and agrees with the hand-written formula.
#[test]
fn runtime_algebra_gives_the_kernels_shared_layout() {
    let bytes: Layout = "4096:2".parse().unwrap();
    let row_major: Layout = "(64,64):(64,1)".parse().unwrap();
    let tile = oxtile_layout::ops::composition(&bytes, &row_major).unwrap();
    assert_eq!(tile.to_string(), "(64,64):(128,2)");
    let smem = tile.swizzled(Swizzle::new(3, 4, 3), 0);
    let mut seen = vec![false; 8192];
    for row in 0..64i64 {
        for col in 0..64i64 {
            let offset = smem.call(row + 64 * col).unwrap();
            let by_hand = row * 128 + ((((col >> 3) ^ (row & 7)) << 4) | ((col & 7) << 1));
            assert_eq!(offset, by_hand, "({row}, {col})");
            assert!(!std::mem::replace(&mut seen[offset as usize], true), "offset {offset} used twice");
        }
    }
}

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

type Transpose = fn(&Gpu, &CudaSlice<u16>, &mut CudaSlice<u16>, usize, usize) -> oxtile::Result<()>;

const KERNELS: [(&str, Transpose); 2] = [
    ("swizzled_transpose_u16", |g, s, d, r, c| layout_demo::swizzled_transpose_u16(g, s, d, r, c)),
    ("swizzled_transpose_u16_by_hand", |g, s, d, r, c| layout_demo::swizzled_transpose_u16_by_hand(g, s, d, r, c)),
];

/// Never a valid result: the inputs avoid it.
const POISON: u16 = 0x7fde;

#[test]
#[ignore = "needs a CUDA GPU"]
fn transposes_match_the_layout_algebra_on_the_cpu() {
    let gpu = gpu();
    let seed = fresh_seed();
    for (i, &(rows, cols)) in [(64, 64), (128, 64), (64, 192), (320, 448), (1024, 2048)].iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(seed + i as u64);
        let n = rows * cols;
        let input: Vec<u16> =
            (0..n).map(|_| rng.random::<u16>()).map(|v| if v == POISON { v ^ 1 } else { v }).collect();
        // Coordinate (r, c) sits at r*cols + c in the source and at c*rows + r in the transposed destination.
        let src_layout: Layout = format!("({rows},{cols}):({cols},1)").parse().unwrap();
        let dst_layout: Layout = format!("({rows},{cols}):(1,{rows})").parse().unwrap();
        let mut expected = vec![POISON; n];
        for idx in 0..n as i64 {
            expected[dst_layout.call(idx).unwrap() as usize] = input[src_layout.call(idx).unwrap() as usize];
        }
        assert!(!expected.contains(&POISON));
        let src = gpu.stream().clone_htod(&input).unwrap();
        for (name, transpose) in KERNELS {
            let mut dst = gpu.stream().clone_htod(&vec![POISON; n]).unwrap();
            transpose(&gpu, &src, &mut dst, rows, cols).unwrap();
            let actual = gpu.stream().clone_dtoh(&dst).unwrap();
            let wrong: Vec<usize> = (0..n).filter(|&k| actual[k] != expected[k]).collect();
            assert!(
                wrong.is_empty(),
                "{name} {rows}x{cols} (seed {}): {} of {n} elements wrong, first at {} (got {:#x}, expected {:#x})",
                seed + i as u64,
                wrong.len(),
                wrong[0],
                actual[wrong[0]],
                expected[wrong[0]]
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shapes_off_the_tile_are_rejected_before_launch() {
    let gpu = gpu();
    let src: CudaSlice<u16> = gpu.stream().clone_htod(&vec![1u16; 96 * 64]).unwrap();
    let mut dst: CudaSlice<u16> = gpu.stream().clone_htod(&vec![POISON; 96 * 64]).unwrap();
    let err = layout_demo::swizzled_transpose_u16(&gpu, &src, &mut dst, 96, 64).unwrap_err();
    assert!(matches!(err, Error::BadArgument { .. }) && err.to_string().contains("multiple of 64x64"), "{err}");
    let err = layout_demo::swizzled_transpose_u16(&gpu, &src, &mut dst, 64, 64).unwrap_err();
    assert!(err.to_string().contains("6144 elements, expected 4096"), "{err}");
    assert_eq!(gpu.stream().clone_dtoh(&dst).unwrap(), vec![POISON; 96 * 64]);
}
