//! Marks every collective inline-assembly call in the linked LLVM IR `convergent`.
//!
//! Much of what the kernels issue through `asm!` is collective: `wgmma.*.sync.aligned`, `bar.sync`,
//! `stmatrix.sync.aligned`, `vote`, `shfl.sync`, `elect.sync`, `setmaxnreg`. The `.aligned` ones require every thread
//! of a warp (wgmma: every warp of the warpgroup) to execute the *same instruction*. LLVM only knows that a call
//! must not be made control-dependent on additional values when the call is `convergent`, and rustc never says so
//! for inline assembly: without the attribute, tail duplication, jump threading, loop unswitching or sinking into
//! both arms of a branch may copy one `wgmma.wait_group` into two program counters, which different warps then
//! execute. Today's kernels happened to survive that only where the optimizer chose not to. With the attribute on
//! every collective asm call site before `opt` runs, such a copy is impossible rather than unlikely.
//!
//! Only collective instructions get it ([`is_collective`]: a mnemonic with `.sync` or `.aligned`, or of the `bar`,
//! `barrier`, `wgmma`, `setmaxnreg`, `elect` and `tcgen05` families). Clang marks every asm statement, but
//! `convergent` restricts how LLVM may move code across branches, and much of the kernels' arithmetic is asm too
//! (`ex2.approx`, conversions, packing), which no rule of the ISA ties to the control flow of other threads.
//! (On the H200 the two choices measured alike for the GEMM and attention kernels: docs/perf-notes.md.)
//!
//! The rewrite works on the textual IR that `llvm-link -S` writes: an inline-asm call reads
//! `call <ty> asm [sideeffect] [alignstack] [inteldialect] [unwind] "<text>", "<constraints>"(<args>) [attrs]`,
//! and LLVM accepts inline function attributes beside attribute-group references there, so ` convergent` goes right
//! after the argument list. LLVM escapes `"` inside strings as `\22`, so a quoted string ends at the next `"`.

/// The IR with ` convergent` after the argument list of every collective inline-asm call; the number of calls
/// marked. Fails on an inline-asm call whose shape it does not recognise, so no call can stay unmarked unnoticed.
pub fn mark_inline_asm_convergent(ir: &str) -> Result<(String, usize), String> {
    let mut out = String::with_capacity(ir.len() + ir.len() / 64);
    let mut marked = 0;
    for (number, line) in ir.split_inclusive('\n').enumerate() {
        match asm_call_arguments_end(line) {
            Some(Ok((_, text))) if !is_collective(text) => out.push_str(line),
            Some(Ok((end, _))) => {
                let rest = &line[end..];
                out.push_str(&line[..end]);
                if !starts_with_word(rest.trim_start(), "convergent") {
                    out.push_str(" convergent");
                }
                out.push_str(rest);
                marked += 1;
            }
            Some(Err(why)) => return Err(format!("IR line {}: {why}: {}", number + 1, line.trim_end())),
            None => out.push_str(line),
        }
    }
    Ok((out, marked))
}

/// Whether asm text (as LLVM IR writes it: `\0A` for newlines, `\09` for tabs) holds a collective instruction:
/// one that threads of a warp, warpgroup, block or cluster execute together.
pub fn is_collective(text: &str) -> bool {
    let text = text.replace("\\0A", ";").replace("\\09", " ");
    text.split([';', '{', '}', '\n']).any(|statement| {
        let mut words = statement.split_whitespace();
        let mut mnemonic = words.next().unwrap_or("");
        if mnemonic.starts_with('@') {
            mnemonic = words.next().unwrap_or("");
        }
        let family = mnemonic.split('.').next().unwrap_or("");
        mnemonic.contains(".sync")
            || mnemonic.contains(".aligned")
            || matches!(family, "bar" | "barrier" | "wgmma" | "setmaxnreg" | "elect" | "tcgen05")
    })
}

/// For a line holding an inline-asm call: the byte index just past its argument list's `)`, and the asm text.
fn asm_call_arguments_end(line: &str) -> Option<Result<(usize, &str), &'static str>> {
    let call = find_word(line, "call")?;
    let asm = call + find_word(&line[call..], "asm")?;
    // Only `call ... asm "`: the keyword followed (after optional dialect/effect keywords) by the asm string.
    let mut at = asm + "asm".len();
    loop {
        let rest = &line[at..];
        let trimmed = rest.trim_start();
        at += rest.len() - trimmed.len();
        match ["sideeffect", "alignstack", "inteldialect", "unwind"].iter().find(|k| starts_with_word(trimmed, k)) {
            Some(keyword) => at += keyword.len(),
            None if trimmed.starts_with('"') => break,
            None => return None,
        }
    }
    Some(arguments_end(line, at).map(|end| {
        let text = &line[at + 1..];
        (end, &text[..text.find('"').unwrap_or(0)])
    }))
}

/// From the opening quote of the asm text: skips the text and the constraint string, then the balanced
/// argument list.
fn arguments_end(line: &str, text_start: usize) -> Result<usize, &'static str> {
    let bytes = line.as_bytes();
    let skip_string = |from: usize| -> Result<usize, &'static str> {
        if bytes.get(from) != Some(&b'"') {
            return Err("expected a quoted string");
        }
        let close = line[from + 1..].find('"').ok_or("unterminated string")?;
        Ok(from + 1 + close + 1)
    };
    let mut at = skip_string(text_start)?;
    at += line[at..].find(|c: char| !c.is_whitespace()).ok_or("asm call ends after its text")?;
    if bytes[at] != b',' {
        return Err("expected `,` between the asm text and its constraints");
    }
    at += 1;
    at += line[at..].find(|c: char| !c.is_whitespace()).ok_or("asm call ends after its text")?;
    at = skip_string(at)?;
    if bytes.get(at) != Some(&b'(') {
        return Err("expected the argument list after the constraints");
    }
    let mut depth = 0usize;
    let mut in_string = false;
    for (i, &b) in bytes.iter().enumerate().skip(at) {
        match b {
            b'"' => in_string = !in_string,
            b'(' if !in_string => depth += 1,
            b')' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            _ => {}
        }
    }
    Err("unbalanced argument list")
}

/// Byte index of `word` in `s` where it stands as a whole word (not inside an identifier or a string).
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut in_string = false;
    let bytes = s.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'$' || b == b'%' || b == b'@';
    for i in 0..bytes.len() {
        if bytes[i] == b'"' {
            in_string = !in_string;
            continue;
        }
        if in_string || !s[i..].starts_with(word) {
            continue;
        }
        let before_ok = i == 0 || !is_ident(bytes[i - 1]);
        let after_ok = bytes.get(i + word.len()).is_none_or(|&b| !is_ident(b));
        if before_ok && after_ok {
            return Some(i);
        }
    }
    None
}

fn starts_with_word(s: &str, word: &str) -> bool {
    s.starts_with(word) && s[word.len()..].chars().next().is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_side_effect_and_pure_asm_calls() {
        let ir = concat!(
            "define void @k() #0 {\n",
            "  tail call void asm sideeffect \"wgmma.fence.sync.aligned;\", \"~{memory}\"() #3, !srcloc !7\n",
            "  %1 = tail call i32 asm \"mov.u32 $0, $1;\", \"=r,r\"(i32 %0) #4\n",
            "  %2 = call { float, float } asm sideeffect alignstack \"x $0 (a) \\22q\\22;\", \"=f,=f,l\"(ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @s, i64 4))\n",
            "  call void @llvm.nvvm.barrier0()\n",
            "}\n",
        );
        let (marked, count) = mark_inline_asm_convergent(ir).unwrap();
        assert_eq!(count, 1);
        assert!(marked.contains("\"~{memory}\"() convergent #3, !srcloc !7\n"));
        // Not collective: left free to move.
        assert!(marked.contains("\"=r,r\"(i32 %0) #4\n"));
        assert!(marked.contains("@s, i64 4))\n"));
        assert!(marked.contains("  call void @llvm.nvvm.barrier0()\n"));
        // Idempotent: a second pass finds the calls but adds nothing.
        let (again, count_again) = mark_inline_asm_convergent(&marked).unwrap();
        assert_eq!((again, count_again), (marked, 1));
    }

    #[test]
    fn collective_instructions_are_told_from_the_rest() {
        for text in [
            "wgmma.fence.sync.aligned;",
            "bar.sync $0, $1;",
            "barrier.sync $0, $1;",
            "bar.warp.sync -1;",
            "{\\0A.reg .pred p, q;\\0Asetp.ne.u32 p, $1, 0;\\0Abar.red.or.pred q, $2, 128, p;\\0A}",
            "{\\0A.reg .pred p;\\0A@p vote.sync.any.pred q, p, 0xffffffff;\\0A}",
            "shfl.sync.idx.b32 $0, $1, 0, 0x1f, 0xffffffff;",
            "setmaxnreg.inc.sync.aligned.u32 232;",
            "barrier.cluster.arrive.release;",
            "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};",
        ] {
            assert!(is_collective(text), "{text}");
        }
        for text in [
            "ex2.approx.ftz.f32 $0, $1;",
            "mov.u32 $0, $1;",
            "mbarrier.arrive.shared::cta.b64 _, [$0];",
            "{\\0A.reg .pred p;\\0ALAB_WAIT:\\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\\0A@!p bra LAB_WAIT;\\0A}",
            "cp.async.bulk.commit_group;",
            "fence.proxy.async.shared::cta;",
            "trap;",
        ] {
            assert!(!is_collective(text), "{text}");
        }
    }

    #[test]
    fn leaves_lines_that_only_mention_asm_alone() {
        let ir = "@asm = global i32 0\n  %x = call i32 @asm_helper(i32 1)\n  ; call asm in a comment\n";
        let (out, count) = mark_inline_asm_convergent(ir).unwrap();
        assert_eq!((out.as_str(), count), (ir, 0));
    }

    #[test]
    fn refuses_an_asm_call_it_cannot_read() {
        let ir = "  call void asm sideeffect \"bar.sync 0;\" \"\"()\n";
        assert!(mark_inline_asm_convergent(ir).is_err());
    }
}
