//! Text edits on llc's PTX for what rustc cannot say about a kernel.

/// Device code declares a kernel's launch bounds by exporting a symbol named
/// `{LAUNCH_BOUNDS_PREFIX}{kernel}__{max_threads}__{min_blocks}` (the kernels crate's `launch_bounds!`).
/// Rust has no attribute for `.maxntid`/`.minnctapersm`, and `setmaxnreg` is ignored without them.
pub const LAUNCH_BOUNDS_PREFIX: &str = "__oxtile_launch_bounds__";

/// Name of the dynamic shared memory array. PTX only accepts `.extern .shared` at module scope, which inline
/// asm cannot reach, so kernels name it in asm (`mov.u32 %r, dyn_smem;`) and the builder declares it.
pub const DYNAMIC_SMEM_SYMBOL: &str = "dyn_smem";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    pub kernel: String,
    pub max_threads: u32,
    pub min_blocks: u32,
}

impl LaunchBounds {
    /// Reads a launch-bounds marker symbol; `None` for any other symbol.
    pub fn from_symbol(symbol: &str) -> Option<Result<LaunchBounds, String>> {
        let rest = symbol.strip_prefix(LAUNCH_BOUNDS_PREFIX)?;
        let mut parts = rest.rsplitn(3, "__");
        let (min_blocks, max_threads, kernel) = (parts.next(), parts.next(), parts.next());
        let parsed = match (kernel, max_threads.map(str::parse), min_blocks.map(str::parse)) {
            (Some(kernel), Some(Ok(max_threads)), Some(Ok(min_blocks))) if !kernel.is_empty() => {
                Ok(LaunchBounds { kernel: kernel.to_string(), max_threads, min_blocks })
            }
            _ => Err(format!(
                "malformed launch-bounds symbol `{symbol}`: expected {LAUNCH_BOUNDS_PREFIX}KERNEL__THREADS__BLOCKS"
            )),
        };
        Some(parsed)
    }
}

/// Bytes of a `CUtensorMap`, and the alignment TMA needs of one. A kernel parameter of exactly this size is the
/// kernels crate's by-value `TensorMap`, which rustc can align to 16 bytes at most.
const TENSOR_MAP_BYTES: usize = 128;
const TENSOR_MAP_ALIGN: usize = 64;

/// Adds `.maxntid`/`.minnctapersm` to the bounded kernels, declares the dynamic shared memory array when a kernel
/// refers to it, and aligns every 128-byte parameter (a by-value tensor map) to 64 bytes: TMA faults on a map at a
/// 16-byte boundary ("misaligned address"). Fails when a bound names a kernel the module does not define.
pub fn finish_ptx(ptx: &str, bounds: &[LaunchBounds]) -> Result<String, String> {
    let mut out = String::with_capacity(ptx.len() + 256);
    let mut pending: Option<&LaunchBounds> = None;
    let mut applied = 0;
    let uses_dyn_smem = ptx.contains(DYNAMIC_SMEM_SYMBOL);
    for line in ptx.lines() {
        if let Some(name) = entry_name(line) {
            pending = bounds.iter().find(|b| b.kernel == name);
        }
        if line.trim() == "{"
            && let Some(b) = pending.take()
        {
            out.push_str(&format!(".maxntid {}, 1, 1\n.minnctapersm {}\n", b.max_threads, b.min_blocks));
            applied += 1;
        }
        match tensor_map_param(line) {
            Some(align) => out.push_str(&line.replacen(align, &format!(".align {TENSOR_MAP_ALIGN} "), 1)),
            None => out.push_str(line),
        }
        out.push('\n');
        if uses_dyn_smem && line.starts_with(".address_size") {
            out.push_str(&format!("\n.extern .shared .align 1024 .b8 {DYNAMIC_SMEM_SYMBOL}[];\n"));
        }
    }
    if applied != bounds.len() {
        let missing: Vec<_> =
            bounds.iter().filter(|b| entry_named(ptx, &b.kernel).is_none()).map(|b| &b.kernel).collect();
        return Err(format!("launch bounds given for kernels the module does not define: {missing:?}"));
    }
    Ok(out)
}

/// The `.align N ` of a kernel parameter line declaring a [`TENSOR_MAP_BYTES`]-byte array (`.param .align 16 .b8
/// k_param_0[128]`), if the line is one.
fn tensor_map_param(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix(".param ")?;
    let align_end = rest.strip_prefix(".align ")?.find(' ')? + ".align ".len() + 1;
    let declaration = rest[align_end..].strip_prefix(".b8 ")?;
    let size = declaration.trim_end().trim_end_matches(',').strip_suffix(']')?.rsplit_once('[')?.1;
    (size.parse() == Ok(TENSOR_MAP_BYTES)).then_some(&rest[..align_end])
}

/// The kernel a `.entry` line opens, if it opens one.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().trim_start_matches(".visible ").trim_start_matches(".weak ");
    let rest = rest.strip_prefix(".entry ")?;
    Some(rest.split('(').next().unwrap_or(rest).trim())
}

fn entry_named<'a>(ptx: &'a str, kernel: &str) -> Option<&'a str> {
    ptx.lines().find(|line| entry_name(line) == Some(kernel))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\tmov.u32 %r1, dyn_smem;\n\tret;\n}\n";

    #[test]
    fn parses_bounds_symbol() {
        let b = LaunchBounds::from_symbol("__oxtile_launch_bounds__gemm__tn__384__1").unwrap().unwrap();
        assert_eq!(b, LaunchBounds { kernel: "gemm__tn".into(), max_threads: 384, min_blocks: 1 });
        assert!(LaunchBounds::from_symbol("exp2_f32").is_none());
        assert!(LaunchBounds::from_symbol("__oxtile_launch_bounds__k__x__1").unwrap().is_err());
    }

    #[test]
    fn inserts_bounds_and_dynamic_smem() {
        let bounds = [LaunchBounds { kernel: "k".into(), max_threads: 384, min_blocks: 1 }];
        let out = finish_ptx(PTX, &bounds).unwrap();
        assert!(out.contains(")\n.maxntid 384, 1, 1\n.minnctapersm 1\n{\n"), "{out}");
        assert!(out.contains(".address_size 64\n\n.extern .shared .align 1024 .b8 dyn_smem[];\n"), "{out}");
    }

    #[test]
    fn aligns_tensor_map_parameters_to_64_bytes() {
        let ptx = concat!(
            ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k(\n",
            "\t.param .align 16 .b8 k_param_0[128],\n\t.param .align 16 .b8 k_param_1[128],\n",
            "\t.param .align 16 .b8 k_param_2[64],\n\t.param .u64 k_param_3\n)\n{\n\tret;\n}\n"
        );
        let out = finish_ptx(ptx, &[]).unwrap();
        assert!(
            out.contains("\t.param .align 64 .b8 k_param_0[128],\n\t.param .align 64 .b8 k_param_1[128],\n"),
            "{out}"
        );
        assert!(out.contains("\t.param .align 16 .b8 k_param_2[64],\n\t.param .u64 k_param_3\n"), "{out}");
    }

    #[test]
    fn rejects_bounds_for_unknown_kernel() {
        let bounds = [LaunchBounds { kernel: "nope".into(), max_threads: 128, min_blocks: 1 }];
        assert!(finish_ptx(PTX, &bounds).unwrap_err().contains("nope"));
    }
}
