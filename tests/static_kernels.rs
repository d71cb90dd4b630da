//! Static kernel checks, no GPU needed (CI runs them): every registered kernel assembles with the pinned ptxas, the
//! hot ones keep everything in registers, and the SASS holds the instructions each kernel was written to issue.
//!
//! The first run installs the pinned CUDA tools with pip (see `oxtile::inspect::toolkit`), which takes a while.

use std::sync::LazyLock;

use half::{bf16, f16};
use oxtile::inspect::{self, KernelStats, ModuleInspection};
use oxtile::kernels::Variant;
use oxtile::kernels::{self, Kernel};
use oxtile::ops::attention::{self, AttnElement};
use oxtile::types::Order;
use oxtile_abi::symmetric;
use oxtile_abi::{AttnTile, GemmConfig, GemmSchedule};

/// Every module inspected once for the whole binary (the build's cubin and ptxas report where the build assembled it
/// with the pinned ptxas, else assembled here, tens of seconds for the GEMM module), so no test does it again.
static MODULES: LazyLock<Vec<ModuleInspection>> = LazyLock::new(|| {
    inspect::inspect_modules().unwrap_or_else(|error| panic!("inspecting the modules failed: {error}"))
});

static STATS: LazyLock<Vec<KernelStats>> = LazyLock::new(|| {
    inspect::kernel_stats(&MODULES).unwrap_or_else(|error| panic!("static inspection failed: {error}"))
});

fn stats(kernel: Kernel) -> &'static KernelStats {
    STATS
        .iter()
        .find(|s| s.name == kernel.name && s.target == kernel.target)
        .unwrap_or_else(|| panic!("no stats for `{}`", kernel.name))
}

/// The grid-stride elementwise kernels: each thread moves 16 bytes per access.
const ELEMENTWISE: [Kernel; 3] = [kernels::AXPY_F32, kernels::AXPY_BF16, kernels::EXP2_F32];

#[test]
fn every_registered_kernel_is_assembled_and_disassembled() {
    for module in MODULES.iter() {
        let (family, cpu) = (module.family.name(), module.target.cpu());
        for kernel in kernels::ALL.iter().filter(|k| k.family == module.family && k.target == module.target) {
            let resources = module.ptxas.function(kernel.name);
            assert!(
                resources.is_some_and(|r| r.entry && r.registers > 0),
                "`{}` is not an entry with registers in ptxas's {family} {cpu} report: {resources:?}",
                kernel.name,
            );
            let code = module.sass.iter().find(|f| f.name == kernel.name);
            assert!(
                code.is_some_and(|f| f.opcodes().any(|op| op == "EXIT")),
                "`{}` has no SASS ending in EXIT in the {family} {cpu} cubin",
                kernel.name,
            );
        }
    }
    for kernel in kernels::ALL {
        assert!(stats(*kernel).registers > 0, "{kernel:?}");
    }
}

#[test]
fn ptxas_has_no_warnings() {
    // E.g. C7508: a `setmaxnreg` ignored because the kernel has no register cap at entry.
    assert_eq!(MODULES.len(), kernels::MODULES.len());
    for module in MODULES.iter() {
        let (family, cpu) = (module.family.name(), module.target.cpu());
        assert!(module.ptxas.warnings.is_empty(), "ptxas warned for {family} {cpu}: {:#?}", module.ptxas.warnings);
    }
}

#[test]
fn ptxas_reports_no_potential_performance_loss() {
    // Reported as info, not as a warning: e.g. C7520, wgmma serialized (a wait after every product) because ptxas
    // inserted a warpgroup arrive in a path it saw as divergent. A forward kernel whose item hand-over branched on
    // a run-time `Option` around its wgmma got it at every head dim with two Q buffers (docs/perf-notes.md, session
    // 47); the SASS checks below only caught its symptoms.
    for module in MODULES.iter() {
        let (family, cpu) = (module.family.name(), module.target.cpu());
        let losses = &module.ptxas.performance_losses;
        assert!(losses.is_empty(), "ptxas reports a potential performance loss in {family} {cpu}: {losses:#?}");
    }
}

#[test]
fn hot_kernels_keep_everything_in_registers() {
    let mut hot = 0;
    let mut offenders = Vec::new();
    for kernel in kernels::ALL.iter().filter(|k| k.hot) {
        hot += 1;
        let s = stats(*kernel);
        if s.stack_bytes > 0 || s.spill_bytes() > 0 || s.local_memory_ops() > 0 {
            offenders.push(format!(
                "{}: {} bytes stack frame, {}/{} bytes spilled (stores/loads), {} LDL + {} STL",
                s.name,
                s.stack_bytes,
                s.spill_store_bytes,
                s.spill_load_bytes,
                s.count("LDL"),
                s.count("STL")
            ));
        }
    }
    assert!(hot > 0, "no kernel is marked hot");
    assert!(offenders.is_empty(), "hot kernels using local memory:\n{}", offenders.join("\n"));
}

#[test]
fn elementwise_kernels_load_128_bits() {
    for kernel in ELEMENTWISE {
        let s = stats(kernel);
        let wide = s.count_with("LDG", "128");
        assert!(wide > 0, "`{}` has no 128-bit global load (LDG.E.128); its loads: {:?}", s.name, opcodes_of(s, "LDG"));
    }
}

#[test]
fn elementwise_kernels_store_128_bits() {
    // Each thread writes its 16-byte result vector with one store; 32-bit stores mean the vector was split.
    for kernel in ELEMENTWISE {
        let s = stats(kernel);
        let wide = s.count_with("STG", "128");
        assert!(
            wide > 0,
            "`{}` has no 128-bit global store (STG.E.128); its stores: {:?}",
            s.name,
            opcodes_of(s, "STG")
        );
    }
}

fn opcodes_of<'a>(s: &'a KernelStats, mnemonic: &str) -> Vec<&'a str> {
    s.opcodes().filter(|op| inspect::sass::mnemonic(op) == mnemonic).collect()
}

#[test]
fn the_staging_copy_loads_2_bytes_and_stores_16_bytes_at_a_time() {
    // Its source rows start at any element, so no wider load is aligned; its copy's chunks are 16-byte aligned, so
    // each is one store.
    let s = stats(kernels::STAGE_ROWS_B16);
    let loads = opcodes_of(s, "LDG");
    assert!(!loads.is_empty() && loads.iter().all(|op| inspect::sass::has_modifier(op, "U16")), "{loads:?}");
    let stores = opcodes_of(s, "STG");
    assert!(!stores.is_empty() && stores.iter().all(|op| inspect::sass::has_modifier(op, "128")), "{stores:?}");
}

#[test]
fn axpy_f32_fuses_multiply_and_add() {
    let s = stats(kernels::AXPY_F32);
    assert!(s.count("FFMA") > 0, "axpy_f32 has no FFMA: {:?}", s.sass);
}

#[test]
fn exp2_f32_uses_the_special_function_unit() {
    let s = stats(kernels::EXP2_F32);
    assert!(s.opcodes().any(|op| op == "MUFU.EX2"), "exp2_f32 has no MUFU.EX2: {:?}", s.sass);
}

#[test]
fn stream_hold_polls_host_memory_at_system_scope_and_sleeps_between_polls() {
    // A weaker load could be served from a cached copy and never see the host's release; without the sleep the
    // poll would hammer the bus; without the timer it could not time out.
    let s = stats(kernels::HOLD_STREAM);
    let system_scope = |mnemonic: &str| {
        s.opcodes().any(|op| {
            inspect::sass::mnemonic(op) == mnemonic
                && inspect::sass::has_modifier(op, "STRONG")
                && inspect::sass::has_modifier(op, "SYS")
        })
    };
    assert!(system_scope("LDG") && system_scope("STG"), "{:?}", s.instructions);
    assert!(s.count("NANOSLEEP") > 0, "{:?}", s.instructions);
    assert!(s.instructions.iter().any(|i| i.contains("SR_GLOBALTIMER")), "{:?}", s.instructions);
}

#[test]
fn gemm_kernels_issue_the_wgmma_of_their_tile_types_and_layout() {
    // SASS writes an MN-major wgmma operand as `.tnspA` / `.tnspB` on the descriptor: A column-major, B row-major.
    for gemm in kernels::GEMM_SM90 {
        let s = stats(gemm.kernel);
        // One wgmma as wide as the tile per 64 rows.
        let width = format!("64x{}x16", config(gemm.variant).tile.tile_n);
        // f16 is HGMMA's default input type and goes unnamed: `HGMMA.64x256x16.F32` vs `HGMMA.64x256x16.F32.BF16`.
        let input = if gemm.input == "bf16" { ".BF16" } else { "" };
        let want = format!("HGMMA.{width}.F32{input}");
        let hgmma: Vec<&String> =
            s.instructions.iter().filter(|i| inspect::sass::mnemonic(inspect::sass::opcode(i)) == "HGMMA").collect();
        // Four k16 steps per 64-deep k-tile.
        assert!(hgmma.len() >= 4, "`{}` has {} HGMMA", s.name, hgmma.len());
        let (mn_a, mn_b) = (gemm.layout.a_order() == Order::ColMajor, gemm.layout.b_order() == Order::RowMajor);
        for instruction in hgmma {
            assert_eq!(inspect::sass::opcode(instruction), want, "`{}`: {instruction}", s.name);
            assert_eq!(instruction.contains(".tnspA"), mn_a, "`{}` A majorness: {instruction}", s.name);
            assert_eq!(instruction.contains(".tnspB"), mn_b, "`{}` B majorness: {instruction}", s.name);
        }
        assert!(s.count("UTMALDG") > 0, "`{}` loads nothing with TMA", s.name);
    }
}

/// Programmatic dependent launch: every GEMM lets the next grid be scheduled (`PREEXIT`) and waits for the grid
/// before it (`ACQBULK`) ahead of its first global memory access in program order — the prologue before it (barrier
/// set-up, tensor-map prefetches) is what overlaps the previous kernel's tail.
#[test]
fn gemm_kernels_wait_for_the_grid_before_them_ahead_of_any_global_access() {
    const GLOBAL: [&str; 10] = ["LDG", "STG", "LD", "ST", "ATOMG", "ATOM", "RED", "UTMALDG", "UTMASTG", "UBLKCP"];
    for kernel in every_gemm_kernel() {
        let s = stats(kernel);
        let position = |wanted: &dyn Fn(&str) -> bool| {
            s.instructions.iter().position(|i| wanted(inspect::sass::mnemonic(inspect::sass::opcode(i))))
        };
        let wait = position(&|m| m == "ACQBULK").unwrap_or_else(|| panic!("`{}` has no ACQBULK", s.name));
        assert!(position(&|m| m == "PREEXIT").is_some(), "`{}` has no PREEXIT", s.name);
        let first_global = position(&|m| GLOBAL.contains(&m)).unwrap_or(usize::MAX);
        assert!(
            wait < first_global,
            "`{}` touches global memory ({}) before ACQBULK",
            s.name,
            s.instructions[first_global]
        );
    }
}

/// The skinny GEMMs (M ≤ 16): each warp keeps two k-chunks of loads in flight and multiplies each with sixteen
/// `mma.sync` m16n8k16 of its input type; B is streamed past L1 in 16-byte loads (eight per chunk), A read through the
/// read-only cache in 16-byte loads; and the grid ahead is waited for before the first global access.
#[test]
fn skinny_gemms_stream_b_in_16_byte_loads_into_mma_sync() {
    const GLOBAL: [&str; 6] = ["LDG", "STG", "LD", "ST", "ATOMG", "RED"];
    for gemm in kernels::GEMM_SKINNY {
        let s = stats(gemm.kernel);
        // f16 is HMMA's default input type and goes unnamed, as for HGMMA.
        let want = if gemm.input == "bf16" { "HMMA.16816.F32.BF16" } else { "HMMA.16816.F32" };
        let hmma = opcodes_of(s, "HMMA");
        assert!(hmma.len() == 32 && hmma.iter().all(|&op| op == want), "`{}`: {hmma:?}", s.name);
        let loads = |modifier: &str| {
            opcodes_of(s, "LDG")
                .into_iter()
                .filter(|op| inspect::sass::has_modifier(op, "128") && inspect::sass::has_modifier(op, modifier))
                .count()
        };
        assert_eq!(loads("NA"), 16, "`{}` streams B otherwise: {:?}", s.name, opcodes_of(s, "LDG"));
        assert_eq!(loads("CONSTANT") - loads("NA"), 4, "`{}` reads A otherwise: {:?}", s.name, opcodes_of(s, "LDG"));
        let position = |wanted: &dyn Fn(&str) -> bool| {
            s.instructions.iter().position(|i| wanted(inspect::sass::mnemonic(inspect::sass::opcode(i))))
        };
        let wait = position(&|m| m == "ACQBULK").unwrap_or_else(|| panic!("`{}` has no ACQBULK", s.name));
        let first_global = position(&|m| GLOBAL.contains(&m)).unwrap_or(usize::MAX);
        assert!(wait < first_global, "`{}` touches global memory before ACQBULK", s.name);
    }
}

#[test]
fn ping_pong_gemms_take_turns_and_keep_one_wgmma_group_per_k_tile() {
    let ping_pong = kernels::GEMM_SM90.iter().filter(|g| is_ping_pong(g.variant));
    let mut count = 0;
    for gemm in ping_pong {
        count += 1;
        let s = stats(gemm.kernel);
        let opcodes = |full: &str| s.opcodes().filter(|op| *op == full).count();
        // Two m64n128k16 (the tile's two 64-row halves) per k16 step, four steps per k-tile, under one
        // `wgmma.fence`: a second WARPGROUP.ARRIVE would be one that ptxas injected to serialize the wgmma.
        assert!(s.count("HGMMA") >= 8, "`{}` has {} HGMMA", s.name, s.count("HGMMA"));
        assert_eq!(opcodes("WARPGROUP.ARRIVE"), 1, "`{}`", s.name);
        // The hand-over: `bar.arrive` to pass the tensor cores on, a named `bar.sync` (besides the block-wide one
        // after the barrier set-up) to take them.
        assert!(opcodes("BAR.ARV") > 0, "`{}` never hands its turn over", s.name);
        assert!(opcodes("BAR.SYNC.DEFER_BLOCKING") >= 2, "`{}` never waits for its turn", s.name);
        // One group stays in flight in the main loop.
        assert!(s.instructions.iter().any(|i| i.contains("WARPGROUP.DEPBAR.LE gsb0, 0x1")), "`{}`", s.name);
    }
    // bf16 in every layout alone and in clusters, f16 in every layout alone.
    assert_eq!(count, 12);
}

#[test]
fn gemm_epilogues_store_pairs_in_one_instruction_of_the_output_width() {
    // Two neighbouring outputs go out together: 4 bytes (STG.E) for 16-bit types, 8 bytes (STG.E.64) for f32.
    for gemm in kernels::GEMM_SM90 {
        let s = stats(gemm.kernel);
        let stores: Vec<&str> = s.opcodes().filter(|op| inspect::sass::mnemonic(op) == "STG").collect();
        let pairs = stores.iter().filter(|op| inspect::sass::has_modifier(op, "64")).count();
        if gemm.output == "f32" {
            assert!(pairs > 0, "`{}` has no 8-byte store: {stores:?}", s.name);
        } else {
            assert_eq!(pairs, 0, "`{}` stores 8 bytes at once: {stores:?}", s.name);
            assert!(stores.contains(&"STG.E"), "`{}` has no 4-byte store: {stores:?}", s.name);
        }
    }
}

/// The attention kernels overlap each tile's softmax with the previous tile's P·V: in the main loop, the
/// exponentials lie between the wait for S (`wait_group 1`) and the next wait for P·V (`wait_group 0`; it opens the
/// next iteration, so in code order the next one found is the copy after the loop). ptxas moves a warpgroup wait as
/// early as its basic block allows, and waits for every group before it rewrites a register an in-flight wgmma
/// reads; either would put the softmax behind P·V (the kernel's first versions had both).
#[test]
fn attention_softmax_runs_under_the_previous_tiles_pv() {
    let is_wait = |instruction: &str, groups: &str| {
        inspect::sass::opcode(instruction) == "WARPGROUP.DEPBAR.LE" && instruction.ends_with(groups)
    };
    let attention = kernels::ALL.iter().filter(|k| k.name.starts_with("attn_fwd_"));
    let mut checked = 0;
    for kernel in attention {
        let code = &stats(*kernel).instructions;
        let after_s_wait = code.iter().skip_while(|i| !is_wait(i, "gsb0, 0x1")).skip(1);
        let overlapped = after_s_wait
            .take_while(|i| !is_wait(i, "gsb0, 0x0"))
            .filter(|i| inspect::sass::opcode(i) == "MUFU.EX2")
            .count();
        // tile_kv / 2 scores per thread and tile (64; 40 at head dim 256), up to a quarter of them on the polynomial.
        let scores = attn_tile(*kernel).tile_kv / 2;
        assert!(
            overlapped >= 3 * scores as usize / 4,
            "`{}`: {overlapped} MUFU.EX2 between the waits for S and for P·V",
            kernel.name
        );
        // The speculative ablation takes the exponentials against the maximum already applied, so they need not
        // wait for the tile's row maximum: its first MUFU.EX2 after S lands comes before the maximum's first
        // shuffle across the row; the other kernels find the maximum first.
        let after_s_wait = code.iter().skip_while(|i| !is_wait(i, "gsb0, 0x1")).skip(1);
        let first = after_s_wait
            .map(|i| inspect::sass::opcode(i))
            .find(|op| *op == "MUFU.EX2" || op.starts_with("SHFL"))
            .unwrap_or_default();
        if kernel.name.contains("_spec_") {
            assert_eq!(first, "MUFU.EX2", "`{}`: the exponentials wait for the row maximum", kernel.name);
        } else {
            assert_ne!(first, "MUFU.EX2", "`{}`: exponentials before the row maximum", kernel.name);
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} attention kernels registered");
}

/// Where the tile says so (head dims 64 and 128), the forward's row sums come from the tensor cores: every P·V wgmma
/// (A from registers, V MN-major) is m64n{head_dim + 8}, its last 8 columns against ones, and no other product has
/// that width; elsewhere P·V is m64n{head_dim}. Session 49 measured the 64 FADDs a key tile this removes at 2.5–3.8%
/// of the head-dim-64 rows (docs/perf-notes.md).
#[test]
fn attention_forwards_take_their_row_sums_from_the_tensor_cores_where_the_tile_says() {
    let mut with_sums = 0;
    for kernel in kernels::ALL.iter().filter(|k| k.name.starts_with("attn_fwd_")) {
        let tile = attn_tile(*kernel);
        let s = stats(*kernel);
        let input = if kernel.name.contains("bf16") { ".BF16" } else { "" };
        let width = tile.head_dim + if tile.mma_row_sums { 8 } else { 0 };
        let pv = format!("HGMMA.64x{width}x16.F32{input}");
        let products: Vec<&String> = s.instructions.iter().filter(|i| inspect::sass::opcode(i) == pv).collect();
        assert!(!products.is_empty(), "`{}`: no {pv}", s.name);
        for instruction in products {
            let operands: Vec<&str> = instruction.split_whitespace().skip(1).collect();
            assert!(operands[1].starts_with('R') && instruction.contains(".tnspB"), "`{}`: {instruction}", s.name);
        }
        if tile.mma_row_sums {
            let plain = format!("HGMMA.64x{}x16.F32{input}", tile.head_dim);
            let plain_pv = s.instructions.iter().filter(|i| inspect::sass::opcode(i) == plain && i.contains(".tnspB"));
            assert_eq!(plain_pv.count(), 0, "`{}`: a P·V without the row sums' columns", s.name);
            with_sums += 1;
        }
    }
    // bf16 and f16 at head dims 64 and 128, and the ablations of those tiles.
    assert!(with_sums >= 4, "{with_sums} attention kernels take their row sums from the tensor cores");
}

/// The attention forwards decode their work items by multiply-high divisions with the host's divisors
/// (`oxtile_abi::divisor`): none of them divides by a run-time value, which in SASS starts from the divisor's
/// reciprocal seed (`I2F.U32.RP`, then a MUFU.RCP and a dozen integer steps) in front of each item's first product.
#[test]
fn attention_forwards_divide_by_no_run_time_value() {
    let mut checked = 0;
    for kernel in kernels::ALL.iter().filter(|k| k.name.starts_with("attn_fwd_")) {
        let s = stats(*kernel);
        let seeds = s.instructions.iter().filter(|i| inspect::sass::opcode(i).starts_with("I2F.U32.RP")).count();
        assert_eq!(seeds, 0, "`{}`: {seeds} integer divisions by a run-time value", s.name);
        checked += 1;
    }
    // bf16 and f16 at head dims 64, 128 and 256, and the ablations.
    assert!(checked >= 6, "{checked} attention forward kernels checked");
}

/// The tile of a registered attention backward kernel: that of the head dim in its name (`_d{head_dim}_`).
fn attn_bwd_tile(kernel: Kernel) -> oxtile_abi::AttnBwdTile {
    oxtile_abi::ATTN_BWD_SM90_TILES
        .into_iter()
        .find(|tile| kernel.name.contains(&format!("_d{}_", tile.head_dim)))
        .unwrap_or_else(|| panic!("`{}` names no backward tile's head dim", kernel.name))
}

/// The tile of a registered attention forward kernel: that of the head dim its element type's table lists it under.
fn attn_tile(kernel: Kernel) -> AttnTile {
    let head_dim = bf16::ATTN_KERNELS
        .iter()
        .chain(f16::ATTN_KERNELS)
        .find(|(_, _, k)| *k == kernel)
        .map(|(d, _, _)| *d)
        .unwrap_or_else(|| panic!("`{}` is in no attention kernel table", kernel.name));
    attention::tile_for(head_dim).unwrap_or_else(|| panic!("no tile for head dim {head_dim}"))
}

/// Head dim 256, FlashAttention-3's tile for it: S is m64n80 (per key tile, 16 k16 steps over the head dimension,
/// issued for tile 0 and in the main loop), O is m64n256 with P from registers and V MN-major (5 k16 steps of 16 keys,
/// in the main loop and for the last tile); the consumers claim 232 registers (`setmaxnreg`), the producer keeps 32;
/// and O, staged in the item's Q buffer, goes out before Q goes back: after each epilogue's TMA store (two copies:
/// an item with keys and one without) come the wait for the store to have read shared memory, the warpgroup's
/// barrier, and the warps' arrivals on Q's empty barrier, in that order and nothing between.
#[test]
fn head_dim_256_kernels_score_80_keys_a_step_and_hand_q_back_after_storing_o_from_it() {
    let d256 = [kernels::ATTN_FWD_BF16_D256_SM90, kernels::ATTN_FWD_F16_D256_SM90];
    for kernel in d256 {
        let tile = attn_tile(kernel);
        assert!(tile.head_dim == 256 && tile.tile_kv == 80 && tile.o_in_q, "{tile:?}");
        let s = stats(kernel);
        let input = if kernel.name.contains("bf16") { ".BF16" } else { "" };
        let opcodes = |full: &str| s.opcodes().filter(|op| *op == full).count() as u32;
        let (qk, pv) = (format!("HGMMA.64x{}x16.F32{input}", tile.tile_kv), format!("HGMMA.64x256x16.F32{input}"));
        assert_eq!(opcodes(&qk), 2 * tile.head_dim / 16, "`{}`: {qk}", s.name);
        assert_eq!(opcodes(&pv), 2 * tile.tile_kv / 16, "`{}`: {pv}", s.name);
        assert_eq!(s.count("HGMMA"), opcodes(&qk) + opcodes(&pv), "`{}`: other wgmma shapes", s.name);
        for instruction in s.instructions.iter().filter(|i| inspect::sass::opcode(i) == pv) {
            // `HGMMA.64x256x16.F32.BF16 R24, R192, gdesc[UR20].tnspB, R24`: A in registers, V MN-major.
            let operands: Vec<&str> = instruction.split_whitespace().skip(1).collect();
            assert!(operands[1].starts_with('R') && instruction.contains(".tnspB"), "`{}`: {instruction}", s.name);
        }
        let setmaxnreg = |wanted: &str| s.instructions.iter().any(|i| i.contains(wanted));
        assert!(setmaxnreg("USETMAXREG.DEALLOC.CTAPOOL 0x20"), "`{}`: the producer does not drop to 32", s.name);
        assert!(setmaxnreg("USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8"), "`{}`: the consumers do not rise to 232", s.name);
        assert!(s.stack_bytes == 0 && s.spill_bytes() == 0 && s.local_memory_ops() == 0, "`{}`: local memory", s.name);

        let events: Vec<&str> = entry_ptx(kernel)
            .lines()
            .map(str::trim_start)
            .filter(|l| {
                ["cp.async.bulk.commit_group", "cp.async.bulk.wait_group", "barrier.sync", "mbarrier.arrive"]
                    .iter()
                    .any(|e| l.starts_with(e))
            })
            .collect();
        let stores: Vec<usize> = (0..events.len()).filter(|&i| events[i].starts_with("cp.async.bulk.commit")).collect();
        assert_eq!(stores.len(), 2, "`{}`: epilogues {events:#?}", s.name);
        for i in stores {
            let next: Vec<&str> = events[i + 1..].iter().take(3).map(|e| e.split([' ', ';']).next().unwrap()).collect();
            assert_eq!(
                next,
                ["cp.async.bulk.wait_group.read", "barrier.sync", "mbarrier.arrive.shared::cta.b64"],
                "`{}`: after a store",
                s.name
            );
        }
    }
    // The other head dims stage O in a buffer of its own.
    for kernel in kernels::ALL.iter().filter(|k| k.name.starts_with("attn_fwd_") && !d256.contains(k)) {
        assert!(!attn_tile(*kernel).o_in_q, "`{}`", kernel.name);
    }
}

/// Copies of the TMA-store epilogue in each GEMM kernel: one per scaling (alpha = 1 and beta = 0; beta = 0;
/// beta ≠ 0), each straight-line code chosen once per tile.
const STAGED_EPILOGUES: u32 = 3;

/// The block of D one consumer warpgroup stores per tile, as (64-row blocks, columns): the staging buffers take it
/// 64 rows × 128 bytes at a time.
fn consumer_block(variant: Variant) -> (u32, u32) {
    let tile = config(variant).tile;
    (tile.consumer_rows() / 64, tile.tile_n)
}

/// Every GEMM kernel: the general table's, then the symmetric table's (same data path).
fn every_gemm_kernel() -> impl Iterator<Item = Kernel> {
    kernels::GEMM_SM90.iter().map(|g| g.kernel).chain(kernels::GEMM_SYMMETRIC_SM90.iter().map(|g| g.kernel))
}

/// A registered GEMM's row of the GEMM table.
fn config(variant: Variant) -> GemmConfig {
    variant.config().unwrap_or_else(|| panic!("a GEMM kernel registered as {variant:?}"))
}

fn is_ping_pong(variant: Variant) -> bool {
    config(variant).tile.schedule == GemmSchedule::PingPong
}

/// Every GEMM runs its tile's register plan: registers at entry capped by the launch bound (168 for 384 threads, 128
/// for the three-consumer tile's 512), the producer dropping to 40 and the consumers rising to what is left (232, or
/// 152 with three of them), with nothing in local memory.
#[test]
fn gemm_kernels_split_the_register_file_by_their_tiles_plan() {
    let mut three_consumers = 0;
    for gemm in kernels::GEMM_SM90.iter() {
        let (s, tile) = (stats(gemm.kernel), config(gemm.variant).tile);
        let entry = 65_536 / tile.launch_bound() / 8 * 8;
        assert!(s.registers <= entry, "`{}`: {} registers at entry, over {entry}", s.name, s.registers);
        let has = |wanted: &str| s.instructions.iter().any(|i| i.contains(wanted));
        assert!(has("USETMAXREG.DEALLOC.CTAPOOL 0x28"), "`{}`: the producer does not drop to 40", s.name);
        let rise = format!("USETMAXREG.TRY_ALLOC.CTAPOOL UP0, {:#x}", tile.consumer_registers());
        assert!(has(&rise), "`{}`: the consumers do not rise to {}", s.name, tile.consumer_registers());
        assert!(s.stack_bytes == 0 && s.spill_bytes() == 0 && s.local_memory_ops() == 0, "`{}`: local memory", s.name);
        three_consumers += u32::from(tile.consumers == 3);
    }
    assert!(three_consumers > 0, "no three-consumer GEMM registered");
}

#[test]
fn gemms_stage_d_in_shared_memory_and_store_it_with_tma() {
    // The TMA-store epilogue: each consumer warpgroup writes its rows 64 at a time, chunk by chunk (128 bytes of
    // columns), into swizzled staging buffers — one `stmatrix.x4` (STSM) per 16 columns for 16-bit outputs, one
    // 8-byte STS per pair for f32 — and each warp's issuing lane has TMA store the warp's 16 rows of each chunk
    // (UTMASTG, one per chunk in each unrolled epilogue). Consumers that own 128 rows (ping-pong, and the one
    // consumer of the 128×64 and 128×128 tiles) store two blocks of 64 rows.
    for gemm in kernels::GEMM_SM90 {
        let s = stats(gemm.kernel);
        let tma_stores = s.count("UTMASTG");
        let output_bytes = if gemm.output == "f32" { 4 } else { 2 };
        let (row_blocks, tile_n) = consumer_block(gemm.variant);
        let chunks = STAGED_EPILOGUES * row_blocks * tile_n * output_bytes / 128;
        assert_eq!(tma_stores, chunks, "`{}`: {tma_stores} UTMASTG for {chunks} chunks", s.name);
        let slices = STAGED_EPILOGUES * row_blocks * tile_n / 16;
        if gemm.output == "f32" {
            // Four 8-byte stores per slice; the f32-output stream-K kernels copy some slices onto the collective
            // paths of their warp barriers (see `tma_store_epilogues_sync_warps_not_warpgroups`), at most once each.
            let (stores, once) = (s.count_with("STS", "64"), 4 * slices as usize);
            if s.count_with("BRA", "DIV") > 0 {
                assert!((once..=2 * once).contains(&stores), "`{}`: {stores} STS.64 for {slices} slices", s.name);
            } else {
                assert_eq!(stores, once, "`{}`", s.name);
            }
            assert_eq!(s.count("STSM"), 0, "`{}`", s.name);
        } else {
            assert_eq!(s.count("STSM"), slices, "`{}`", s.name);
        }
    }
}

/// The PTX of one entry: from its `.entry` line to the next entry's (or the module's end).
fn entry_ptx(kernel: Kernel) -> &'static str {
    let ptx = kernel.ptx();
    let start = ptx.find(&format!(".entry {}(", kernel.name)).unwrap_or_else(|| panic!("no entry `{}`", kernel.name));
    let body = &ptx[start..];
    let end = body[1..].find(".entry ").map_or(body.len(), |next| next + 1);
    &body[..end]
}

/// A's and B's tensor maps come by value, as kernel parameters 64-byte aligned (the builder raises rustc's 16), and TMA
/// reads them where the launch put them: their generic address is `cvta.param`'s, with no copy to local memory.
#[test]
fn gemm_kernels_take_their_operand_tensor_maps_by_value() {
    for gemm in kernels::GEMM_SM90 {
        let (name, ptx) = (gemm.kernel.name, entry_ptx(gemm.kernel));
        // A's, B's and A's for its last tile row, which only a K-major A (row-major) loads from: an MN-major one
        // leaves out whole 64-row boxes instead.
        for index in 0..3 {
            let param = format!("{name}_param_{index}");
            assert!(ptx.contains(&format!(".param .align 64 .b8 {param}[128]")), "`{name}`: {param} is no aligned map");
            let addressed =
                ptx.lines().any(|l| l.contains("cvta.param.u64") && l.trim_end().ends_with(&format!(", {param};")));
            let used = index < 2 || gemm.layout.a_order() == Order::RowMajor;
            assert_eq!(addressed, used, "`{name}` takes a generic address of {param}: {addressed}");
        }
        assert!(!ptx.contains(".local"), "`{name}` copies something to local memory");
    }
}

#[test]
fn tma_store_epilogues_sync_warps_not_warpgroups() {
    // Each warp of a consumer stages its own 16 rows of a chunk and hands them to TMA itself, so the epilogue meets on
    // no named barrier: per chunk one TMA store and one bulk group from the warp's issuing lane, a wait for the
    // previous chunk's reads, and two warp barriers (before the store, and before the next chunk's writes), plus one
    // wait at the drain. The ping-pong consumers still take their turns on aligned named barriers (`bar.sync`, whole
    // warpgroups behind no branch on a lane), and no other kernel has one. In the SASS the only named barriers are
    // those turns, reached by converged warps: no `BRA.DIV` to a path where ptxas joins a diverged warp first, except
    // in some stream-K kernels (below).
    let mut checked = 0;
    for gemm in kernels::GEMM_SM90 {
        let output_bytes = if gemm.output == "f32" { 4 } else { 2 };
        let (row_blocks, tile_n) = consumer_block(gemm.variant);
        let chunks = (STAGED_EPILOGUES * row_blocks * tile_n) as usize * output_bytes / 128;
        let name = gemm.kernel.name;
        let ptx = entry_ptx(gemm.kernel);
        assert_eq!(ptx.matches("barrier.sync").count(), 0, "`{name}`: unaligned named barriers in the PTX");
        assert_eq!(ptx.matches("cp.async.bulk.tensor.2d.global.shared").count(), chunks, "`{name}`: TMA stores");
        assert_eq!(ptx.matches("cp.async.bulk.commit_group").count(), chunks, "`{name}`: bulk groups");
        assert_eq!(ptx.matches("cp.async.bulk.wait_group.read").count(), chunks + 1, "`{name}`: staging waits");
        let warp_syncs = ptx.matches("bar.warp.sync").count();
        assert!(warp_syncs >= 2 * chunks, "`{name}`: {warp_syncs} warp barriers for {chunks} chunks");
        let ping_pong = is_ping_pong(gemm.variant);
        let turn_takes = ptx.matches("bar.sync %r").count();
        assert_eq!(turn_takes > 0, ping_pong, "`{name}` has {turn_takes} aligned named barriers");
        let s = stats(gemm.kernel);
        let named_bar_syncs = s
            .instructions
            .iter()
            .filter(|i| inspect::sass::opcode(i).starts_with("BAR.SYNC"))
            .filter(|i| {
                i.split_whitespace()
                    .skip_while(|w| !w.starts_with("BAR.SYNC"))
                    .nth(1)
                    .is_some_and(|id| id.starts_with('R'))
            })
            .count();
        assert_eq!(named_bar_syncs, turn_takes, "`{name}`: named barriers in the SASS");
        let divergence_checks = s.count_with("BRA", "DIV");
        let stream_k = gemm.variant.is_stream_k();
        if stream_k && divergence_checks > 0 {
            // In the f32-output stream-K kernels ptxas does not prove the warps converged at the epilogue's warp
            // barriers (the bf16 ones it does; the cause is not pinned down), and in the bf16 ones in clusters at the
            // fixup's warp barrier and the exit's cluster barrier; in the 64×128 stream-K kernel, since the fixup's
            // wait can trap (stream_k::WAIT_LIMIT_NS), at the warp barriers after it: it guards each with a
            // `BRA.DIV` to a copy behind `WARPSYNC.COLLECTIVE`. At run time the warps are converged (the wait and
            // its timeout are warp votes) and each check is one uniform branch.
            assert!(divergence_checks <= 2 * chunks + 2, "`{name}`: {divergence_checks} divergence checks");
            assert!(s.count("ENDCOLLECTIVE") as usize >= divergence_checks, "`{name}`: collective barrier paths");
        } else {
            assert_eq!(divergence_checks, 0, "`{name}` reaches a barrier with a diverged warp");
        }
        checked += 1;
    }
    // Every kernel of the GEMM table has the epilogue.
    assert_eq!(checked, kernels::GEMM_SM90.len());
}

#[test]
fn attention_kernels_reach_each_named_barrier_from_one_place() {
    // An aligned `bar.sync` reached by a warp's lanes through two copies hangs the kernel (the GEMM's TMA-store
    // epilogue did, before the builder marked collective asm `convergent`). The ping-pong token is taken at four places
    // (first tile, main loop, last P·V, exit) and passed at four (start, three issues), one more of each where the
    // masked key tiles have a main loop of their own (`AttnTile::masked_loop`; not in the `spec` and `nopingpong`
    // ablations); the epilogue's two warpgroup barriers are unaligned `barrier.sync` at its two call sites (a work
    // item with keys and one without). A copied barrier shows up as one more. No branch around a `wgmma.wait_group`
    // depends on a lane's data, so no warpgroup vote is needed, except the `spec` kernels' one `bar.red.or` per key
    // tile: their recompute path (a wait, shuffles) is taken by a whole warpgroup or none of it.
    let count = |ptx: &str, opcode: &str| ptx.lines().filter(|l| l.trim_start().starts_with(opcode)).count();
    let mut checked = 0;
    for kernel in kernels::ALL.iter().filter(|k| k.name.starts_with("attn_fwd_")) {
        let ptx = entry_ptx(*kernel);
        let ablation = kernel.name.contains("spec") || kernel.name.contains("nopingpong");
        let loops = 1 + usize::from(attn_tile(*kernel).masked_loop && !ablation);
        let turns = if kernel.name.contains("nopingpong") { 0 } else { 3 + loops };
        assert_eq!(count(ptx, "bar.sync %r"), turns, "`{}`: token barriers", kernel.name);
        assert_eq!(count(ptx, "bar.arrive %r"), turns, "`{}`: token hand-overs", kernel.name);
        assert_eq!(count(ptx, "barrier.sync %r"), 4, "`{}`: epilogue barriers", kernel.name);
        let votes = usize::from(kernel.name.contains("spec"));
        assert_eq!(count(ptx, "bar.red.or.pred"), votes, "`{}`: warpgroup votes", kernel.name);
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} attention kernels registered");
}

#[test]
fn stream_k_gemms_keep_their_tiles_main_loop_and_hand_partials_over_with_release_and_acquire() {
    // Each stream-K kernel against the data-parallel kernel of the same tile, types and layout: the same registers at
    // entry (the `.maxntid` cap) and the same k-tile loop (HGMMA count), no local memory (the hot-kernel check). Its
    // fixup: a partial goes out as one 16-byte store per 4 accumulators of a consumer thread (32 for the wide and
    // 128×128 tiles' 128, 16 for the 64×128 tile's 64; fragment order) and comes back as as many 16-byte L2 loads per
    // peer (one loop over the peers); the flag is a release reduction (`red.release.gpu`: a GPU-scope fence, then the
    // RED) and acquire loads (`ld.acquire.gpu`: a strong GPU-scope load), reset by a strong store. The kernels without
    // clusters also reduce split-K tiles together (`Fixup::share`): a second wait, 8 more 16-byte loads in flight per
    // lane, and a counted-out reset (an `atom` returning the count, then a second strong store).
    let stream_k: Vec<_> = kernels::GEMM_SM90.iter().filter(|g| g.variant.is_stream_k()).collect();
    assert!(!stream_k.is_empty(), "the GEMM table has no stream-K row");
    for gemm in stream_k {
        let s = stats(gemm.kernel);
        let name = gemm.kernel.name;
        // The partial of a consumer: its rows × the tile's columns, 4 floats per vector, for each of 128 threads.
        let tile = config(gemm.variant).tile;
        let output_bytes = if gemm.output == "f32" { 4 } else { 2 };
        let splits = config(gemm.variant).shares_split_k(output_bytes);
        let (plain, vectors) =
            (gemm.variant.data_parallel(), (tile.consumer_rows() * tile.tile_n / (4 * 128)) as usize);
        let data_parallel = kernels::GEMM_SM90
            .iter()
            .find(|w| w.variant == plain && (w.input, w.output, w.layout) == (gemm.input, gemm.output, gemm.layout))
            .unwrap_or_else(|| panic!("no {plain:?} kernel beside `{name}`"));
        let w = stats(data_parallel.kernel);
        assert!(s.registers <= w.registers, "`{name}`: {} registers, `{}` {}", s.registers, w.name, w.registers);
        assert_eq!(s.count("HGMMA"), w.count("HGMMA"), "`{name}`: another main loop than `{}`", w.name);
        assert_eq!(s.count_with("STG", "128"), vectors, "`{name}`: partial stores {:?}", opcodes_of(s, "STG"));
        let vector_loads = s.opcodes().filter(|op| inspect::sass::mnemonic(op) == "LDG" && op.contains(".128")).count();
        let share_loads = if splits { 8 } else { 0 };
        assert_eq!(vector_loads, vectors + share_loads, "`{name}`: partial loads {:?}", opcodes_of(s, "LDG"));
        let counts = opcodes_of(s, "ATOMG");
        assert_eq!(counts.len(), usize::from(splits), "`{name}`: split-K count-outs {counts:?}");
        let reductions = opcodes_of(s, "REDG");
        assert!(
            reductions.len() == 1 && reductions[0].contains("STRONG.GPU"),
            "`{name}`: flag reductions {reductions:?}"
        );
        assert!(
            s.opcodes().any(|op| op.starts_with("MEMBAR") && op.contains("GPU")),
            "`{name}` has no GPU-scope fence"
        );
        // `ld.global.cg` is a strong GPU-scope load in SASS as well (LDG.E.128.STRONG.GPU): the acquires are the
        // 32-bit strong loads, one per wait (its lane 0's poll), and one flag addition per warp (lane 0's).
        let acquire = s.opcodes().filter(|op| *op == "LDG.E.STRONG.GPU").count();
        let waits = 1 + usize::from(splits);
        assert_eq!(acquire, waits, "`{name}`: acquire loads {:?}", opcodes_of(s, "LDG"));
        let strong_stores =
            s.opcodes().filter(|op| inspect::sass::mnemonic(op) == "STG" && op.contains("STRONG.GPU")).count();
        assert_eq!(strong_stores, waits, "`{name}`: flag resets {:?}", opcodes_of(s, "STG"));
    }
}

#[test]
fn gemm_main_loops_advance_their_descriptors_instead_of_rebuilding_them() {
    // The consumer's k-tile loop, from its wait for a full stage to its wait for the previous wgmma group: the
    // descriptors of each stage and k16 slice are one add from stage 0's (`wgmma::desc_advance`). Rebuilt from the
    // address they would cost a shift, a bit-field extract (SGXT) and an OR each, dependent, before every wgmma
    // (docs/perf-notes.md, GEMM sm90 v9).
    for kernel in every_gemm_kernel() {
        let s = stats(kernel);
        let code = &s.instructions;
        let wait_group = code
            .iter()
            .position(|i| i.contains("WARPGROUP.DEPBAR.LE gsb0, 0x1"))
            .unwrap_or_else(|| panic!("`{}` keeps no wgmma group in flight", s.name));
        let full_wait = code[..wait_group]
            .iter()
            .rposition(|i| inspect::sass::opcode(i).starts_with("SYNCS.PHASECHK"))
            .unwrap_or_else(|| panic!("`{}`: no barrier wait before the main loop's wgmma", s.name));
        let body = &code[full_wait..=wait_group];
        let mnemonics = || body.iter().map(|i| inspect::sass::mnemonic(inspect::sass::opcode(i)));
        assert!(mnemonics().all(|m| m != "SGXT"), "`{}` rebuilds a descriptor: {body:#?}", s.name);
        // Each wgmma needs its two descriptor words moved to uniform registers and at most an add; the rest is the
        // ring's bookkeeping. Measured with ptxas 13.0: 51–58 instructions around 4 HGMMA, 83–84 around 8. In the
        // symmetric ping-pong kernels (89) ptxas rebuilds stage 0's descriptor words from the shared base in the
        // uniform datapath at the top of each k-tile (USHF, USGXT, 8 instructions beside 8 HGMMA) rather than keep
        // them live across the longer epilogue: allowed them, nothing more.
        let wgmma = mnemonics().filter(|m| *m == "HGMMA").count();
        let symmetric = kernels::GEMM_SYMMETRIC_SM90.iter().any(|g| g.kernel == kernel);
        let limit = 40 + 6 * wgmma + if symmetric { 8 } else { 0 };
        assert!(body.len() <= limit, "`{}`: {} instructions for {wgmma} HGMMA", s.name, body.len());
    }
}

#[test]
fn gemm_producers_issue_their_loads_from_uniform_registers() {
    // The producer warp walks its loop with all 32 lanes and one elected lane issues each copy, so the coordinates and
    // addresses are warp-uniform and TMA takes them from uniform registers. Run by one lane alone (`if thread == 0`),
    // every copy was wrapped in a loop over lanes (ELECT, four R2UR, BRA.U.ANY): about 50 instructions of one warp's
    // dependent chain per k-tile, which held the 64×128 tile 10–20% below the rate of its wgmma (docs/perf-notes.md,
    // GEMM sm90 v18).
    for kernel in every_gemm_kernel() {
        let s = stats(kernel);
        let code = &s.instructions;
        let loads: Vec<usize> =
            (0..code.len()).filter(|&i| inspect::sass::opcode(&code[i]).starts_with("UTMALDG")).collect();
        assert!(!loads.is_empty(), "`{}` has no TMA load", s.name);
        for i in loads {
            let before = &code[i.saturating_sub(6)..i];
            let after = &code[i + 1..(i + 5).min(code.len())];
            let mnemonic = |line: &String| inspect::sass::mnemonic(inspect::sass::opcode(line)).to_string();
            assert!(
                before.iter().all(|line| !matches!(mnemonic(line).as_str(), "R2UR" | "ELECT")),
                "`{}` moves a TMA operand to uniform registers per copy: {before:#?}",
                s.name
            );
            assert!(
                after.iter().all(|line| inspect::sass::opcode(line) != "BRA.U.ANY"),
                "`{}` issues a TMA load in a loop over lanes: {after:#?}",
                s.name
            );
        }
    }
}

/// The attention kernels' roles branch on warp-uniform values (the warpgroup and warp indices broadcast from lane 0),
/// so each role's loop state and its wgmma descriptors live in uniform registers: no wgmma of the backward's kernels,
/// or of the forward's at head dims 128 and 256, waits for descriptor words moved from vector registers (`R2UR` in
/// the six instructions before an `HGMMA`). With the roles picked by `%tid.x / 128` alone, ptxas treated every
/// role's code as divergent: 11 to 34 of each backward kernel's 32 or 48 HGMMA and 20 of the head-dim-128
/// forward's 48 had them, and the head-dim-128 backward kernel issued 1,800 instructions instead of 1,488
/// (docs/perf-notes.md, session 45). The forward at head dim 64 still takes one descriptor of each item's first
/// products from vector registers (6 of its 24 HGMMA).
#[test]
fn attention_kernels_issue_wgmma_from_uniform_registers() {
    let mut checked = 0;
    for kernel in kernels::ALL.iter().filter(|k| k.hot && k.name.starts_with("attn_")) {
        let code = &stats(*kernel).instructions;
        let mnemonic = |line: &String| inspect::sass::mnemonic(inspect::sass::opcode(line)).to_string();
        let products: Vec<usize> = (0..code.len()).filter(|&i| mnemonic(&code[i]) == "HGMMA").collect();
        if products.is_empty() {
            continue;
        }
        let fed_from_vector_registers = products
            .iter()
            .filter(|&&i| code[i.saturating_sub(6)..i].iter().any(|line| mnemonic(line) == "R2UR"))
            .count();
        let allowed = if kernel.name.starts_with("attn_fwd_") && kernel.name.contains("_d64") { 6 } else { 0 };
        assert!(
            fed_from_vector_registers <= allowed,
            "`{}`: {fed_from_vector_registers} of {} HGMMA after an R2UR",
            kernel.name,
            products.len()
        );
        checked += 1;
    }
    assert!(checked >= 10, "{checked} attention kernels with wgmma checked");
}

/// The attention backward's main kernels issue every product by wgmma, from one copy of the loop: per query tile
/// and consumer, Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (head_dim / 16 m64n{consumer_queries}k16 each), dV += Pᵀ·dO and
/// dK += dSᵀ·Q (tile_q / 16 m64n{consumer_columns}k16 each, A from registers, or at head dim 256 from the shared
/// score tiles), and dQ = dS·K (4 m64n64k16 per piece of 64 queries × 64 columns of head dim, both operands
/// transposed); they stage dQ in shared memory (one 8-byte store per value pair: 16 per thread and piece) and add
/// it to the f32 accumulator by one bulk reduce-add per piece (`cp.reduce.async.bulk`, SASS `UBLKRED`), or at a
/// tile's first writer one bulk store, never by a scattered `red.global.add.f32`; behind a flag per query tile (the
/// deterministic mode's semaphore, or the claim the plain kernels take by `atom.acquire`), released by the one
/// remaining `red` after a full wait for the bulk group and a proxy fence; they keep everything in registers (the
/// hot-kernel check) and run the consumers at 240 registers (168 at entry, the `.maxntid 384` cap). The `_staggered`
/// kernels, the same data path walked in the staggered order, are the plain ones plus the order's arithmetic (its
/// few 32-bit divisions, never a 64-bit one: a call into a division routine) and the converter warps, less the
/// claims.
#[test]
fn attention_backward_products_are_wgmma_and_dq_goes_out_by_reductions() {
    let mut checked = 0;
    for kernel in kernels::ALL.iter().filter(|k| k.name.starts_with("attn_bwd_") && k.name.ends_with("_sm90")) {
        let s = stats(*kernel);
        let tile = attn_bwd_tile(*kernel);
        let (head_dim, pieces) = (tile.head_dim, tile.dq_pieces());
        // Per query tile and consumer: Sᵀ and dPᵀ over the head dim, dV and dK over the tile's queries, and its dQ
        // pieces over the block's keys (its 64, where the consumers split the head dim).
        let dq_steps = pieces * tile.dq_keys() / 16;
        let expected = 2 * (head_dim / 16) + 2 * (tile.tile_q / 16) + dq_steps;
        assert_eq!(s.count("HGMMA"), expected, "`{}`: HGMMA", kernel.name);
        let scores = format!("HGMMA.64x{}x16.F32", tile.consumer_queries());
        let score_products = s.instructions.iter().filter(|i| i.starts_with(&scores) && !i.contains("tnsp")).count();
        assert_eq!(score_products as u32, 2 * (head_dim / 16), "`{}`: Sᵀ and dPᵀ at the tile's width", kernel.name);
        let transposed = s.instructions.iter().filter(|i| i.starts_with("HGMMA") && i.contains("tnspA")).count();
        assert_eq!(transposed as u32, dq_steps, "`{}`: dS·K with A read MN-major", kernel.name);
        assert_eq!(s.count_with("REDG", "F32"), 0, "`{}`: no scattered dQ reductions", kernel.name);
        // The tile's flags: one release reduction per query tile, of the deterministic mode's semaphore or of the
        // first claimant's stores (the waits for them are strong loads); outside the staggered kernels also the
        // claim (`atom.acquire`), and no other read-modify-write.
        let ptx = entry_ptx(*kernel);
        let staggered = kernel.name.ends_with("_staggered_sm90");
        assert_eq!(s.count("REDG"), 1, "`{}`: flag releases", kernel.name);
        let claims = (ptx.matches("atom.acquire.gpu").count(), ptx.matches("atom.acq_rel.gpu").count());
        assert_eq!(claims, if staggered { (0, 0) } else { (1, 0) }, "`{}`: claims", kernel.name);
        // One bulk reduce-add per piece, consumer and query tile, issued by the writer warp, and as many bulk
        // stores (a tile's first writer's). Its code is compiled once or twice (LLVM merges what the modes and
        // the first writer have in common).
        let added = tile.consumers;
        let per_tile = added * pieces;
        let bulk = s.opcodes().filter(|op| *op == "UBLKRED.G.S.ADD.F32.RN").count() as u32;
        assert_eq!(s.count("UBLKRED"), bulk, "`{}`: only f32 bulk additions", kernel.name);
        assert!((per_tile..=2 * per_tile).contains(&bulk), "`{}`: {bulk} dQ bulk reductions", kernel.name);
        let reduce = "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32";
        assert_eq!(ptx.matches(reduce).count() as u32, bulk, "`{}`", kernel.name);
        let store = "cp.async.bulk.global.shared::cta.bulk_group";
        assert_eq!(ptx.matches(store).count() as u32, bulk, "`{}`: first writers' bulk stores", kernel.name);
        // The chain: the full wait (not only `.read`) for the tile's one bulk group where its flag is released next
        // (a turn, or the first claimant). A proxy fence before each consumer's reductions and before the release.
        let waits =
            (ptx.matches("cp.async.bulk.wait_group 0;").count(), ptx.matches("cp.async.bulk.wait_group 1;").count());
        assert_eq!(waits, (1, 0), "`{}`: bulk group waits", kernel.name);
        let fences = ptx.matches("fence.proxy.async.global;").count() as u32;
        assert_eq!(fences, added + 1, "`{}`: proxy fences", kernel.name);
        // The staggered kernels' converter warps: per 8 columns of a tile's row, two 16-byte loads of the
        // accumulator through the L2 (`.cg`: other SMs wrote it during the launch) and one 16-byte store of dQ. The
        // plain kernels have none (the conversion kernel converts after them).
        let converted = (ptx.matches("ld.global.cg.v4.f32").count(), ptx.matches("st.global.v4.u32").count());
        let conversion = if staggered { (2, 1) } else { (0, 0) };
        assert_eq!(converted, conversion, "`{}`: the conversion's loads and store", kernel.name);
        // The staging handed over to the writer warp by an arrival right after the proxy fence that orders the
        // staging stores before the reductions' reads (once), and handed back by an arrival per consumer right after
        // the writer's wait for those reads (once per tile).
        assert_eq!(ptx.matches("cp.async.bulk.wait_group.read 0;").count(), 1, "`{}`: the read wait", kernel.name);
        let events: Vec<&str> = ptx
            .lines()
            .map(|l| l.trim_start().split([' ', ';']).next().unwrap())
            .filter(|l| {
                ["cp.async.bulk.wait_group", "mbarrier.arrive", "fence.proxy.async", "barrier.sync", "bar.sync"]
                    .iter()
                    .any(|e| l.starts_with(e))
            })
            .collect();
        let arrive = "mbarrier.arrive.shared::cta.b64";
        let handed_over = events.windows(2).filter(|w| w == &["fence.proxy.async.shared::cta", arrive]).count();
        assert_eq!(handed_over, 1, "`{}`: the hand-over {events:#?}", kernel.name);
        let read = events.iter().position(|e| *e == "cp.async.bulk.wait_group.read").unwrap();
        let handed_back = events[read + 1..].iter().take(added as usize).filter(|e| **e == arrive).count() as u32;
        assert_eq!(handed_back, added, "`{}`: the hand-backs {events:#?}", kernel.name);
        // The staging pieces: 8-byte stores of value pairs, 16 per thread and piece.
        let stores = 16 * pieces;
        assert_eq!(s.count_with("STS", "64") as u32, stores, "`{}`: dQ staging stores", kernel.name);
        assert_eq!(s.registers, 168, "`{}`: registers at entry", kernel.name);
        // Every product inline (the second dQ piece's is issued from a closure): a call between wgmma would make
        // ptxas serialize them. The only calls are to the panic paths (a trap).
        let calls: Vec<&str> = ptx.lines().filter(|line| line.trim_start().starts_with("call")).collect();
        assert!(calls.iter().all(|call| call.contains("panic")), "`{}`: calls {calls:?}", kernel.name);
        if let Some(plain) = kernel.name.strip_suffix("_staggered_sm90") {
            let plain = stats(*kernels::ALL.iter().find(|k| k.name == format!("{plain}_sm90")).unwrap());
            let extra = s.instructions.len() as i64 - plain.instructions.len() as i64;
            // The staggered schedule's arithmetic (a few divisions) and the converter warps against the plain
            // kernels' walks over the launch order (each role's loop around its walk, the order's mapping, and a
            // split walk's piece: its query tiles in each role, the consumers' store of its partials) and claims:
            // the rest is the same code.
            assert!((-640..=160).contains(&extra), "`{}`: {extra} instructions beyond the plain kernel's", kernel.name);
            assert!(ptx.contains("%nctaid.x"), "`{}`: the schedule's key blocks from the grid", kernel.name);
            assert!(!ptx.contains("div.u64") && !ptx.contains("rem.u64"), "`{}`: a 64-bit division", kernel.name);
        } else {
            // The plain kernels walk the launch order (oxtile_abi::bwd_launch) along a one-dimensional grid, each
            // block every grid-size-th walk.
            let one_dimensional = !ptx.contains("%ctaid.y") && !ptx.contains("%ctaid.z");
            assert!(ptx.contains("%nctaid.x") && one_dimensional, "`{}`: walks along the grid's x", kernel.name);
        }
        checked += 1;
    }
    assert_eq!(checked, 12);
    for kernel in [kernels::ATTN_BWD_PREPROCESS_BF16, kernels::ATTN_BWD_CONVERT_DQ_F16] {
        assert_eq!(stats(kernel).count("HGMMA"), 0);
    }
}

/// Where the backward's tile says so ([`oxtile_abi::AttnBwdTile::dq_under_dk`]; not in the staggered deterministic
/// kernels), each consumer stages its dQ piece while its dK products run: every staging store (an 8-byte STS) comes
/// after a wait that leaves one wgmma group in flight, and before the wait for it. Elsewhere every staging store
/// comes after a wait for all groups. Session 50 measured the overlap at +3.5–3.9% at head dim 128.
#[test]
fn attention_backwards_stage_dq_under_dk_where_the_tile_says() {
    let mut under = 0;
    for kernel in kernels::ALL.iter().filter(|k| k.name.starts_with("attn_bwd_") && k.name.ends_with("_sm90")) {
        let tile = attn_bwd_tile(*kernel);
        let expected = tile.dq_under_dk && !kernel.name.ends_with("_staggered_sm90");
        // The group count each staging store was issued under: that of the last warpgroup wait before it.
        let mut in_flight = None;
        let mut staged_under = Vec::new();
        for instruction in &stats(*kernel).instructions {
            let op = inspect::sass::opcode(instruction);
            if op == "WARPGROUP.DEPBAR.LE" {
                in_flight = instruction.rsplit(", ").next().map(str::to_owned);
            } else if op == "STS.64" {
                staged_under.push(in_flight.clone().unwrap_or_default());
            }
        }
        let groups = if expected { "0x1" } else { "0x0" };
        assert!(!staged_under.is_empty(), "`{}`: no dQ staging", kernel.name);
        assert!(staged_under.iter().all(|g| g == groups), "`{}`: staged under {staged_under:?}", kernel.name);
        under += expected as u32;
    }
    // bf16 and f16 at head dim 128.
    assert_eq!(under, 2, "{under} backward kernels stage dQ under dK");
}

#[test]
fn attention_backward_row_kernels_move_16_bytes_per_access_and_divide_once_per_head() {
    // Preprocessing: per thread one 16-byte load each of O and dO and, in rows no walk of the main kernel visits, one
    // 16-byte store of zeros to dQ (the row's LSE and D, and a unit's first row's flag, are 4-byte accesses by one thread a row). Conversion
    // (where the main kernel does not convert): two 16-byte loads of the accumulator and one 16-byte store of dQ. The
    // index arithmetic per thread is shifts and masks but for one 32-bit division of the (batch, head) pair by the
    // heads: no 64-bit division anywhere (each is a subroutine of ~70 instructions), and no more than one 32-bit one
    // per loop.
    let preprocess = [kernels::ATTN_BWD_PREPROCESS_BF16, kernels::ATTN_BWD_PREPROCESS_F16];
    let convert = [kernels::ATTN_BWD_CONVERT_DQ_BF16, kernels::ATTN_BWD_CONVERT_DQ_F16];
    for kernel in preprocess.into_iter().chain(convert) {
        let s = stats(kernel);
        let (loads, stores) = (s.count_with("LDG", "128"), s.count_with("STG", "128"));
        assert_eq!((loads, stores), (2, 1), "`{}`: 16-byte loads and stores", kernel.name);
        let ptx = entry_ptx(kernel);
        assert!(!ptx.contains("div.u64") && !ptx.contains("rem.u64"), "`{}`: a 64-bit division", kernel.name);
        let divisions = ptx.matches("div.u32").count() + ptx.matches("rem.u32").count();
        assert!(divisions <= 1, "`{}`: {divisions} 32-bit divisions", kernel.name);
        assert!(!s.uses_local_memory(), "`{}`: local memory", kernel.name);
    }
}

/// The symmetric GEMMs (gpu/abi's `for_each_gemm_sm90_symmetric!`): the data path of their tile (one m64n128k16 per
/// 64 rows, one wgmma group in flight, 3-D TMA loads), every value in registers, and the mirrored epilogue: per
/// staged chunk a second TMA store (the transposed part), its slices written by `stmatrix.trans` (STSM.16.MT88) for
/// 16-bit outputs and by one 4-byte STS per value for f32, and the chunks the diagonal crosses made symmetric in
/// shared memory between two warpgroup barriers.
#[test]
fn symmetric_gemms_store_each_chunk_twice_the_second_transposed() {
    let mut checked = 0;
    for gemm in kernels::GEMM_SYMMETRIC_SM90 {
        checked += 1;
        let s = stats(gemm.kernel);
        let config = gemm.variant.config().expect("a configured variant");
        assert!(config.symmetric, "`{}`", s.name);
        let tile = config.tile;
        let input = if gemm.input == "bf16" { ".BF16" } else { "" };
        let want = format!("HGMMA.64x{}x16.F32{input}", tile.tile_n);
        let (mn_a, mn_b) = (gemm.layout.a_order() == Order::ColMajor, gemm.layout.b_order() == Order::RowMajor);
        let hgmma: Vec<&String> =
            s.instructions.iter().filter(|i| inspect::sass::mnemonic(inspect::sass::opcode(i)) == "HGMMA").collect();
        assert_eq!(hgmma.len(), 8, "`{}`: two row blocks × four k16 steps", s.name);
        for instruction in hgmma {
            assert_eq!(inspect::sass::opcode(instruction), want, "`{}`: {instruction}", s.name);
            assert_eq!(instruction.contains(".tnspA"), mn_a, "`{}` A majorness: {instruction}", s.name);
            assert_eq!(instruction.contains(".tnspB"), mn_b, "`{}` B majorness: {instruction}", s.name);
        }
        let opcodes = |full: &str| s.opcodes().filter(|op| *op == full).count();
        assert_eq!(opcodes("WARPGROUP.ARRIVE"), 1, "`{}`: a second one would serialize the wgmma", s.name);
        assert!(s.instructions.iter().any(|i| i.contains("WARPGROUP.DEPBAR.LE gsb0, 0x1")), "`{}`", s.name);
        assert!(
            s.count("UTMALDG") > 0 && s.count("UTMALDG") as usize == opcodes("UTMALDG.3D"),
            "`{}`: 3-D loads",
            s.name
        );
        // Every chunk twice (straight and transposed), three staged epilogues (the scalings), 3-D stores.
        let output_bytes = if gemm.output == "f32" { 4 } else { 2 };
        let (row_blocks, tile_n) = (tile.consumer_rows() / 64, tile.tile_n);
        let chunks = STAGED_EPILOGUES * row_blocks * tile_n * output_bytes / 128;
        assert_eq!(opcodes("UTMASTG.3D"), 2 * chunks as usize, "`{}`", s.name);
        assert_eq!(s.count("UTMASTG"), 2 * chunks, "`{}`", s.name);
        let slices = (STAGED_EPILOGUES * row_blocks * tile_n / 16) as usize;
        // The chunks the diagonal crosses, whose square is made symmetric in shared memory (a diagonal tile's lower
        // half written from its upper half): per staged epilogue, those of the tile's 64-row blocks and 128-byte
        // column chunks that `symmetric_square` finds.
        let chunk_columns = 128 / output_bytes;
        let squares = (0..row_blocks)
            .flat_map(|block| (0..tile_n / chunk_columns).map(move |chunk| (block, chunk)))
            .filter(|&(block, chunk)| {
                symmetric::symmetric_square(64 * block, 64, chunk * chunk_columns, chunk_columns).is_some()
            })
            .count()
            * STAGED_EPILOGUES as usize;
        assert_eq!(squares, if gemm.output == "f32" { 12 } else { 6 }, "`{}`", s.name);
        if gemm.output == "f32" {
            assert_eq!(s.count("STSM"), 0, "`{}`", s.name);
            assert_eq!(s.count_with("STS", "64"), 4 * slices, "`{}`: the straight chunks", s.name);
            assert_eq!(
                opcodes("STS"),
                8 * slices + 8 * squares,
                "`{}`: the transposed parts, a value each, and each square's lower triangle, 8 elements a thread",
                s.name
            );
        } else {
            assert_eq!(opcodes("STSM.16.M88.4"), slices, "`{}`", s.name);
            assert_eq!(opcodes("STSM.16.MT88.4"), slices, "`{}`: the transposed parts", s.name);
            assert_eq!(opcodes("STS.U16"), 8 * squares, "`{}`: each square's lower triangle, 8 at a time", s.name);
        }
        // As the general epilogue (`tma_store_epilogues_sync_warps_not_warpgroups`), with twice the chunks: warps
        // meet only their own lanes, one bulk group per store, a read wait per store and one at the drain; the named
        // barriers are the ping-pong turns and two per diagonal square (its warpgroup meets before and after it).
        let stores = 2 * chunks as usize;
        let ptx = entry_ptx(gemm.kernel);
        assert_eq!(ptx.matches("barrier.sync").count(), 0, "`{}`: unaligned named barriers", s.name);
        assert_eq!(ptx.matches("cp.async.bulk.tensor.3d.global.shared").count(), stores, "`{}`", s.name);
        assert_eq!(ptx.matches("cp.async.bulk.commit_group").count(), stores, "`{}`: bulk groups", s.name);
        assert_eq!(ptx.matches("cp.async.bulk.wait_group.read").count(), stores + 1, "`{}`: waits", s.name);
        assert!(ptx.matches("bar.warp.sync").count() >= 2 * stores, "`{}`: warp barriers", s.name);
        let turns = ptx.matches("bar.sync %r").count() - 2 * squares;
        assert_eq!(turns > 0, tile.schedule == GemmSchedule::PingPong, "`{}`", s.name);
        let divergence_checks = s.count_with("BRA", "DIV");
        if config.stream_k {
            // The stream-K fixup's bounded wait is a warp vote, and its hand-over meets at warp barriers around lane
            // 0's flag accesses; ptxas guards those with a `BRA.DIV` to a copy behind `WARPSYNC.COLLECTIVE`, as in the
            // general stream-K kernels (`tma_store_epilogues_sync_warps_not_warpgroups`); the epilogue's barriers,
            // the diagonal squares' included, get none.
            assert!(divergence_checks <= 5, "`{}`: {divergence_checks} divergence checks", s.name);
            assert!(s.count("ENDCOLLECTIVE") as usize >= divergence_checks, "`{}`: collective paths", s.name);
        } else {
            assert_eq!(divergence_checks, 0, "`{}` reaches a barrier with a diverged warp", s.name);
        }
    }
    // Ping-pong bf16 and f16, cooperative bf16 and f16 to themselves and to f32, each in tn and nt; the two stream-K
    // tiles (cooperative and ping-pong) bf16 and f16 in tn and nt.
    assert_eq!(checked, 20);
}
