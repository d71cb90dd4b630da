//! `oxtile bench gemm --plan` end to end, no GPU needed: the kernel Auto runs per shape, type and layout, from the
//! heuristic alone.

use std::process::Command;

const OXTILE: &str = env!("CARGO_BIN_EXE_oxtile");

fn plan(args: &[&str]) -> String {
    // OXTILE_NO_STREAM_K would keep Auto off stream-K: the plan is the default's.
    let output = Command::new(OXTILE)
        .args(["bench", "gemm", "--plan"])
        .args(args)
        .env_remove("OXTILE_NO_STREAM_K")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {OXTILE}: {e}"));
    let text = String::from_utf8(output.stdout).expect("UTF-8 output");
    assert!(output.status.success(), "{text}\n{}", String::from_utf8_lossy(&output.stderr));
    text
}

#[test]
fn the_plan_lists_the_kernel_of_each_shape_and_layout_without_a_gpu() {
    let text = plan(&["--shapes", "1x4096x1024,256x5120x25600", "--layout", "tn,tt"]);
    let kernel_of = |shape: &str, layout: &str| {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(shape) && l.split_whitespace().nth(2) == Some(layout))
            .unwrap_or_else(|| panic!("no line for {shape} {layout} in\n{text}"));
        line.split_whitespace().nth(3).unwrap().to_string()
    };
    assert_eq!(kernel_of("1x4096x1024", "tn"), "gemm_bf16_tn_skinny_sm90");
    assert_eq!(kernel_of("256x5120x25600", "tt"), "gemm_bf16_tt_128x192_sk_sm90");
    // Then the count per kernel: four problems, four kernels.
    assert_eq!(text.lines().filter(|l| l.starts_with("#    1 gemm_")).count(), 4, "{text}");
}

#[test]
fn the_plan_fits_the_choice_to_the_sm_count_it_is_given() {
    // 1×4096×1024: the skinny kernel pays where 32 tiles of 64×128 would keep at most a quarter of the SMs streaming
    // (132), not on 64 SMs (K too short for the 64×64 tiles' split on either).
    let on = |sms: &str| plan(&["--shapes", "1x4096x1024", "--layout", "tn", "--sms", sms]);
    assert!(on("132").contains("1x4096x1024        bf16  tn  gemm_bf16_tn_skinny_sm90"), "{}", on("132"));
    let text = on("64");
    assert!(text.lines().nth(1).is_some_and(|l| l.starts_with("1x4096x1024")), "{text}");
    assert!(!text.contains("skinny"), "{text}");
}

#[test]
fn the_plan_refuses_zero_sms() {
    let output = Command::new(OXTILE)
        .args(["bench", "gemm", "--plan", "--sms", "0"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {OXTILE}: {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--sms") && !stderr.contains("panicked"), "{stderr}");
}
