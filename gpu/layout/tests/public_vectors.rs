//! Every case of shared/layouts/public.txt through the batch runner, compared as check.py does.

mod common;

use common::{image, same_function};
use oxtile_layout::{Layout, run_batch_line};

const PUBLIC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/layouts/public.txt");

fn left_inverse_ok(input: &Layout, r: &Layout) -> Result<(), String> {
    let n = r.size().unwrap();
    for (i, v) in image(input).into_iter().enumerate() {
        if !(0..n).contains(&v) || r.call(v).unwrap() != i as i64 {
            return Err(format!("R(L({i})) != {i}"));
        }
    }
    Ok(())
}

fn compare(input: &str, expected: &str, actual: &str, lenient_left_inverse: bool) -> Result<(), String> {
    if !expected.contains(':') {
        return if expected == actual { Ok(()) } else { Err("different integer".into()) };
    }
    let actual: Layout = actual.parse().map_err(|e| format!("unparsable result: {e}"))?;
    let mut words = input.split_whitespace();
    if lenient_left_inverse && words.next() == Some("left_inverse") {
        let l: Layout = words.next().unwrap().parse().unwrap();
        return left_inverse_ok(&l, &actual);
    }
    same_function(&expected.parse().unwrap(), &actual)
}

fn run_public(lenient_left_inverse: bool) {
    let text = std::fs::read_to_string(PUBLIC).unwrap_or_else(|e| {
        panic!("the public layout vectors are required at {PUBLIC} (shared/ beside the checkout): {e}")
    });
    let mut failures = Vec::new();
    let mut cases = 0;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (input, expected) = line.rsplit_once("=>").expect("vector line without '=>'");
        let (input, expected) = (input.trim(), expected.trim());
        cases += 1;
        let actual = run_batch_line(input).expect("a case line must produce output");
        if let Err(why) = compare(input, expected, &actual, lenient_left_inverse) {
            failures.push(format!("{input}\n  expected {expected}\n  got      {actual}\n  ({why})"));
        }
    }
    assert_eq!(cases, 200, "public.txt should hold 200 cases");
    assert!(failures.is_empty(), "{} of {cases} failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn public_vectors_match_pycute_as_functions() {
    run_public(false);
}

#[test]
fn public_vectors_pass_with_lenient_left_inverse() {
    run_public(true);
}

#[test]
fn batch_skips_comments_and_ignores_expected_suffix() {
    assert_eq!(run_batch_line("# comment"), None);
    assert_eq!(run_batch_line("   "), None);
    assert_eq!(run_batch_line("size (4,2):(1,4) => 999").as_deref(), Some("8"));
}
