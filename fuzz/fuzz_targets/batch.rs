//! The `oxtile layout --batch` evaluator on arbitrary text: each case line yields exactly one
//! result line (a value or `error: ...`), and no line panics. libFuzzer's `-timeout=5` makes any
//! input that takes over 5 s a finding too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxtile_layout::run_batch_line;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for line in text.lines() {
        if let Some(result) = run_batch_line(line) {
            assert!(!result.is_empty() && !result.contains('\n'), "{line:?} gave {result:?}");
        }
    }
});
