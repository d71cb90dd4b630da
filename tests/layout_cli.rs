//! `oxtile layout` end to end, no GPU needed: the batch contract of shared/layouts/README.md against the
//! public vectors and their checker, and the pictures of `layout show`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const OXTILE: &str = env!("CARGO_BIN_EXE_oxtile");

/// shared/ beside the repository root (CI clones it there).
fn shared_layouts() -> PathBuf {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/layouts"));
    assert!(
        dir.join("check.py").is_file() && dir.join("public.txt").is_file(),
        "the layout test vectors are missing: expected shared/layouts/{{public.txt,cases_only_public.txt,check.py}} in \
         {} (shared/ is cloned as a sibling of the repository root)",
        dir.display()
    );
    dir.to_path_buf()
}

fn oxtile(args: &[&str]) -> Output {
    Command::new(OXTILE).args(args).output().unwrap_or_else(|e| panic!("cannot run {OXTILE}: {e}"))
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The cells of grid row `row` of a picture, trimmed.
fn grid_row(text: &str, row: usize) -> Vec<String> {
    let prefix = format!("{row} ");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&prefix) && l.contains('|'))
        .unwrap_or_else(|| panic!("no row {row} in\n{text}"));
    line.split('|').skip(1).map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oxtile-layout-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn batch_passes_the_public_vectors() {
    let shared = shared_layouts();
    let cases = shared.join("cases_only_public.txt");
    let output = oxtile(&["layout", "--batch", cases.to_str().unwrap()]);
    assert!(output.status.success(), "oxtile layout --batch failed: {}", stderr(&output));
    let actual = stdout(&output);
    let case_count = std::fs::read_to_string(&cases)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .count();
    assert_eq!(actual.lines().count(), case_count, "one result line per case");

    let actual_path = scratch("actual.txt");
    std::fs::write(&actual_path, &actual).unwrap();
    let checked = Command::new("python3")
        .arg(shared.join("check.py"))
        .arg(shared.join("public.txt"))
        .arg(&actual_path)
        .arg("--lenient-left-inverse")
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 (CI machines have it; install it to run this test): {e}"));
    let report = format!("{}{}", String::from_utf8_lossy(&checked.stdout), stderr(&checked));
    assert!(checked.status.success(), "check.py failed:\n{report}");
    assert!(report.contains("200 passed"), "check.py did not pass all 200 cases:\n{report}");
}

#[test]
fn batch_reads_stdin_and_reports_undefined_operations() {
    let mut child = Command::new(OXTILE)
        .args(["layout", "--batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = [
        "# a comment",
        "size (4,8):(8,1)",
        "",
        "composition (4,8):(8,1) 8:1 => ignored",
        "composition (4,8):(8,1) 6:1",
        "nosuchop 4:1",
    ]
    .join("\n");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[0], "32");
    assert_eq!(lines[1], "(4,2):(8,1)");
    // 6 elements of a mode of 4 then 8: undefined.
    assert_eq!(lines[2], "error: composition undefined: remaining shape 6 is not divisible by 4");
    assert!(lines[3].starts_with("error: ") && lines[3].contains("nosuchop"), "{text}");
}

#[test]
fn batch_of_a_missing_file_fails() {
    let output = oxtile(&["layout", "--batch", "/nonexistent/cases.txt"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("cannot read /nonexistent/cases.txt"), "{}", stderr(&output));
}

#[test]
fn show_prints_the_grid_of_offsets() {
    let output = oxtile(&["layout", "show", "(4,8):(8,1)"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("(4,8):(8,1)\n"), "{text}");
    // Row r holds 8r .. 8r+7, column c of row r is 8r + c.
    let rows: Vec<Vec<i64>> = text
        .lines()
        .filter(|l| l.contains('|'))
        .map(|l| l.split('|').skip(1).filter(|c| !c.trim().is_empty()).map(|c| c.trim().parse().unwrap()).collect())
        .collect();
    let expected: Vec<Vec<i64>> = (0..4).map(|r| (0..8).map(|c| 8 * r + c).collect()).collect();
    assert_eq!(rows, expected, "{text}");
    assert!(text.contains(" 3  | 24| 25| 26| 27| 28| 29| 30| 31|"), "{text}");
}

#[test]
fn show_writes_an_svg() {
    let path = scratch("grid.svg");
    let output = oxtile(&["layout", "show", "(4,8):(8,1)", "--svg", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<rect").count(), 32);
    assert!(svg.contains(">31</text>"));
    assert!(stdout(&output).contains("| 24|"), "the grid still goes to stdout");
}

#[test]
fn show_draws_the_wgmma_accumulator_fragment_by_thread() {
    let path = scratch("wgmma.svg");
    let output = oxtile(&["layout", "show", "--wgmma-accumulator", "16", "--svg", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("((4,8,4),(2,2,2)):((128,1,16),(64,8,512))"), "{text}");
    // Row 0: threads 0..3 hold columns 0..7 in pairs (values 0, 1), then columns 8..15 (values 4, 5).
    let row0 = grid_row(&text, 0);
    assert_eq!(row0.len(), 16);
    assert_eq!(row0[..9], ["T0V0", "T0V1", "T1V0", "T1V1", "T2V0", "T2V1", "T3V0", "T3V1", "T0V4"], "{text}");
    // Row 8 is values 2, 3 of the same threads; row 16 belongs to warp 1 (threads 32..35).
    assert_eq!(grid_row(&text, 8)[..2], ["T0V2", "T0V3"], "{text}");
    assert_eq!(grid_row(&text, 16)[..2], ["T32V0", "T32V1"], "{text}");
    assert_eq!(grid_row(&text, 63)[15], "T127V7", "{text}");
    let svg = std::fs::read_to_string(&path).unwrap();
    assert_eq!(svg.matches("<rect").count(), 64 * 16);
    assert!(svg.contains(">T0V0<") && svg.contains(">T127V7<"));
    // Coloured by thread: thread 0 and thread 1 get different fills.
    let fill_of = |label: &str| {
        let at = svg.find(&format!(">{label}<")).unwrap();
        let rect = &svg[svg[..at].rfind("<rect").unwrap()..at];
        rect.split("fill=\"").nth(1).unwrap().split('"').next().unwrap().to_string()
    };
    assert_ne!(fill_of("T0V0"), fill_of("T1V0"));
    assert_eq!(fill_of("T0V0"), fill_of("T0V5"));
}

#[test]
fn show_draws_a_tv_layout_over_a_tile() {
    // 4 threads own a column each of a 2x4 column-major tile: (thread, value) -> thread*2 + value.
    let output = oxtile(&["layout", "show", "(4,2):(2,1)", "--tv", "2x4"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(grid_row(&text, 0), ["T0V0", "T1V0", "T2V0", "T3V0"], "{text}");
    assert_eq!(grid_row(&text, 1), ["T0V1", "T1V1", "T2V1", "T3V1"], "{text}");
    let outside = oxtile(&["layout", "show", "(4,2):(2,1)", "--tv", "2x2"]);
    assert!(!outside.status.success());
    assert!(stderr(&outside).contains("outside the tile"), "{}", stderr(&outside));
}

#[test]
fn malformed_layouts_fail_with_the_parsers_message() {
    let output = oxtile(&["layout", "show", "(4,8):(8"]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(message.contains("invalid layout \"(4,8):(8\""), "{message}");
    assert!(message.contains("at column 9: expected ',' or ')', found end of input"), "{message}");
    assert!(stdout(&output).is_empty());

    let output = oxtile(&["layout", "show", "(4,8):(8,1,2)"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("congruent"), "{}", stderr(&output));

    let output = oxtile(&["layout", "show", "--wgmma-accumulator", "12"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("multiple of 8"), "{}", stderr(&output));
}

/// Runs `oxtile ARGS` with `input` on stdin, failing the test if it takes 5 s or more.
fn oxtile_quickly(args: &[&str], input: &str) -> Output {
    let start = std::time::Instant::now();
    let mut child = Command::new(OXTILE)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {OXTILE}: {e}"));
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let elapsed = start.elapsed();
    assert!(elapsed.as_secs_f64() < 5.0, "oxtile {args:?} took {elapsed:?}");
    output
}

#[test]
fn show_refuses_oversized_pictures_before_drawing_them() {
    // The size wraps to 0 in 64-bit arithmetic: it is refused as an overflow, not drawn as empty.
    let output = oxtile_quickly(&["layout", "show", "(4294967296,4294967296):(1,1)"], "");
    assert!(!output.status.success());
    assert!(stderr(&output).contains("more cells than fit in 64 bits"), "{}", stderr(&output));
    assert!(stdout(&output).is_empty());

    // 2^40 (thread, value) pairs over a 4x4 tile: refused before the cells are listed.
    let svg = scratch("refused.svg");
    let output = oxtile_quickly(
        &["layout", "show", "(1048576,1048576):(0,0)", "--tv", "4x4", "--svg", svg.to_str().unwrap()],
        "",
    );
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(message.contains("has 1099511627776 (thread, value) pairs, more than the 65536"), "{message}");
    assert!(!svg.exists(), "no SVG is written for a refused picture");

    let output = oxtile_quickly(&["layout", "show", "(512,512):(1,512)"], "");
    assert!(!output.status.success());
    assert!(stderr(&output).contains("has 262144 cells, more than the 65536"), "{}", stderr(&output));

    let output = oxtile_quickly(&["layout", "show", "4:1", "--tv", "4294967296x4294967296"], "");
    assert!(!output.status.success());
    assert!(stderr(&output).contains("more cells than fit in 64 bits"), "{}", stderr(&output));

    // At the limit it still draws.
    let output = oxtile_quickly(&["layout", "show", "(256,256):(256,1)"], "");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("65535|"), "the last offset is drawn");
}

#[test]
fn batch_answers_every_line_of_the_fuzzed_inputs_and_goes_on() {
    let input = [
        "size (4294967296,4294967296):(1,1)",
        "idx2crd (3,6148914691236517205,2):(1,1,1) -9223372036854775808",
        "size (4,8):(8,1)",
        "cosize (4294967296,4294967296):(1,1)",
        "complement 4:1 0",
        "complement (2,2):(1,4611686018427387904) 9223372036854775807",
        "swizzle Sw<2147483648,0,-2147483648> 5",
        "swizzle Sw<3,4,3> 200",
        "idx2crd (3,(2,3)):(3,(12,1)) 16",
    ]
    .join("\n");
    let output = oxtile_quickly(&["layout", "--batch", "-"], &input);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "error: integer overflow",
            "error: integer overflow",
            "32",
            "error: integer overflow",
            "error: invalid argument: complement cotarget must be positive",
            "error: integer overflow",
            "error: argument 1: at column 1: expected Sw<B,M,S> with |S| >= B and B+M+|S| <= 63, found 'S'",
            "216",
            "(1,(1,2))",
        ],
        "{text}"
    );
    assert!(stderr(&output).is_empty(), "no panic message: {}", stderr(&output));
}

#[test]
fn batch_of_twenty_thousand_modes_stays_quick() {
    // Quadratic work on 20k modes (4·10^8 steps) would take far longer than the bound in a debug build.
    let n = 20_000;
    let shape = vec!["2"; n].join(",");
    let strides: Vec<String> = (0..n).map(|i| (2 * i + 1).to_string()).collect();
    let wide = format!("({shape}):({})", strides.join(","));
    let ones = format!("({}):({})", vec!["1"; n].join(","), strides.join(","));
    let input = [
        format!("complement {wide} 4096"),
        format!("right_inverse {wide}"),
        format!("left_inverse {wide}"),
        format!("complement {ones} 4096"),
        format!("left_inverse {ones}"),
        format!("composition {wide} {ones}"),
        format!("coalesce {ones}"),
        format!("logical_divide {ones} {ones}"),
    ]
    .join("\n");
    let output = oxtile_quickly(&["layout", "--batch", "-"], &input);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "{}", &text[..text.len().min(2000)]);
    // Strides 1, 3, 5, ... overlap (not injective); 2^20000 elements do not fit (overflow).
    assert_eq!(lines[0], "error: complement undefined: the layout is not injective");
    assert_eq!(lines[1], "error: integer overflow");
    assert_eq!(lines[2], "error: left inverse undefined: the layout is not injective");
    assert_eq!(lines[3], "4096:1");
    assert_eq!(lines[4], "1:0");
    assert_eq!(lines[5], "error: integer overflow");
    assert_eq!(lines[6], "1:0");
    // 20k size-1 tiles of the size-1 layout: each mode keeps all 20k modes.
    assert!(lines[7].starts_with("((1,1,1,") && lines[7].len() > 4 * n, "{}", &lines[7][..lines[7].len().min(200)]);
}
