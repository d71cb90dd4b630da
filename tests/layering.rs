//! The host library's imports point down: its modules form no cycle. No GPU needed (CI runs it).
//!
//! What is checked, precisely. The modules are those of the `oxtile` library crate (host/src/lib.rs and the files its
//! `mod` declarations reach; the `oxtile` binary in host/src/bin is another crate, on top of it), inline modules (`mod
//! tests { … }`) included. Module X *names* module Y where code in X (tests included; comments, doc links and string
//! literals are not code) holds a path that starts with `crate::`, `super::` or `self::`, or a relative `use` path, and
//! leads to an item defined in Y. A path through a `use` or `pub use` binding (such as `crate::Error`, re-exported by
//! lib.rs from `error`) leads to where that binding points (glob imports, which only the test modules use, bind
//! nothing). Each such naming is a dependency between the two children of the two modules' lowest common ancestor that
//! hold them (none when one module contains the other: a module may use its parent's items and the items of its
//! children). For every module — the crate root, whose children are the top-level modules (`error`, `types`, `kernels`,
//! `ops`, `bench`, …), and every module with children (`bench`: `gemm`, `oxtile`, `peers`, …) — the dependencies among
//! its children must form no cycle. So both the layers of docs/design.md and the files inside each of them are ordered.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::str::FromStr;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A module's absolute path from the crate root (empty for the root).
type ModPath = Vec<String>;

/// The crate's module tree and what each module's code names.
#[derive(Default)]
struct Crate {
    /// Every module, with the file that defines it (inline modules: the file that holds them).
    modules: BTreeMap<ModPath, String>,
    /// Per module: names bound by `use` (the last segment, or its `as` alias) → the path they were bound to,
    /// absolute (crate-relative), as segments.
    bindings: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    /// Per module: the absolute paths its code names.
    references: Vec<(ModPath, Vec<String>)>,
}

/// Reads the module tree below `root_file` (a path in `files`, e.g. `lib.rs`), `files` mapping paths relative to
/// the source folder to their text.
fn parse_crate(files: &BTreeMap<String, String>, root_file: &str) -> Crate {
    let mut krate = Crate::default();
    parse_file(files, root_file, Vec::new(), &mut krate);
    krate
}

fn parse_file(files: &BTreeMap<String, String>, file: &str, module: ModPath, krate: &mut Crate) {
    let text = files.get(file).unwrap_or_else(|| panic!("{file} is not in the source tree"));
    let tokens = TokenStream::from_str(text).unwrap_or_else(|e| panic!("{file} does not tokenize: {e:?}"));
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    // The folder a `mod name;` of this file resolves in: lib.rs and mod.rs hold their folder's children, x.rs
    // holds the children in x/.
    let dir = match file.rsplit_once('/') {
        Some((dir, "mod.rs")) => format!("{dir}/"),
        None if file == "lib.rs" || file == "mod.rs" => String::new(),
        _ => format!("{}/", file.trim_end_matches(".rs")),
    };
    krate.modules.insert(module.clone(), file.to_string());
    parse_tokens(files, file, &dir, &tokens, module, krate);
}

fn is_ident(token: Option<&TokenTree>, name: &str) -> bool {
    matches!(token, Some(TokenTree::Ident(i)) if i == name)
}

fn is_punct(token: Option<&TokenTree>, ch: char) -> bool {
    matches!(token, Some(TokenTree::Punct(p)) if p.as_char() == ch)
}

/// Whether `tokens[i..]` starts with `::`.
fn path_sep(tokens: &[TokenTree], i: usize) -> bool {
    is_punct(tokens.get(i), ':') && is_punct(tokens.get(i + 1), ':')
}

fn parse_tokens(
    files: &BTreeMap<String, String>,
    file: &str,
    dir: &str,
    tokens: &[TokenTree],
    module: ModPath,
    krate: &mut Crate,
) {
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            // `mod name;` (a file) or `mod name { … }` (inline).
            TokenTree::Ident(keyword) if keyword == "mod" => {
                if let Some(TokenTree::Ident(name)) = tokens.get(i + 1) {
                    let mut child = module.clone();
                    child.push(name.to_string());
                    match tokens.get(i + 2) {
                        Some(TokenTree::Group(body)) if body.delimiter() == Delimiter::Brace => {
                            krate.modules.insert(child.clone(), file.to_string());
                            let inner: Vec<TokenTree> = body.stream().into_iter().collect();
                            parse_tokens(files, file, &format!("{dir}{name}/"), &inner, child, krate);
                            i += 3;
                            continue;
                        }
                        _ if is_punct(tokens.get(i + 2), ';') => {
                            let flat = format!("{dir}{name}.rs");
                            let nested = format!("{dir}{name}/mod.rs");
                            let path = if files.contains_key(&flat) { flat } else { nested };
                            parse_file(files, &path, child, krate);
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
                i += 1;
            }
            // `use tree;`: bindings and references, relative paths included.
            TokenTree::Ident(keyword) if keyword == "use" => {
                let end = (i + 1..tokens.len()).find(|&j| is_punct(tokens.get(j), ';')).unwrap_or(tokens.len());
                let mut leaves = Vec::new();
                use_tree(&tokens[i + 1..end], Vec::new(), &mut leaves);
                for (path, binding) in leaves {
                    let Some(absolute) = absolute(&module, &path, krate, true) else { continue };
                    if let Some(binding) = binding {
                        krate.bindings.entry(module.clone()).or_default().insert(binding, absolute.clone());
                    }
                    krate.references.push((module.clone(), absolute));
                }
                i = end + 1;
            }
            // A path in code: `crate::…`, `super::…`, `self::…`.
            TokenTree::Ident(start) if ["crate", "super", "self"].contains(&start.to_string().as_str()) => {
                let mut path = vec![start.to_string()];
                let mut j = i + 1;
                while path_sep(tokens, j) {
                    match tokens.get(j + 2) {
                        Some(TokenTree::Ident(segment)) => path.push(segment.to_string()),
                        _ => break,
                    }
                    j += 3;
                }
                if path.len() > 1
                    && let Some(absolute) = absolute(&module, &path, krate, false)
                {
                    krate.references.push((module.clone(), absolute));
                }
                i = j;
            }
            TokenTree::Group(group) => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                parse_tokens(files, file, dir, &inner, module.clone(), krate);
                i += 1;
            }
            _ => i += 1,
        }
    }
}

/// The leaves of a use tree after `prefix`: each path with the name it binds (`None` for a glob).
fn use_tree(tokens: &[TokenTree], prefix: Vec<String>, leaves: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut path = prefix;
    let mut i = 0;
    if path_sep(tokens, 0) {
        return; // `::extern_crate::…`
    }
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(segment) => {
                path.push(segment.to_string());
                i += 1;
                if path_sep(tokens, i) {
                    i += 2;
                    continue;
                }
                let mut binding = segment.to_string();
                if is_ident(tokens.get(i), "as")
                    && let Some(TokenTree::Ident(alias)) = tokens.get(i + 1)
                {
                    binding = alias.to_string();
                }
                if path.last().is_some_and(|s| s == "self") {
                    path.pop();
                    if binding == "self" {
                        binding = path.last().cloned().unwrap_or_default();
                    }
                }
                leaves.push((path, Some(binding)));
                return;
            }
            TokenTree::Punct(p) if p.as_char() == '*' => {
                leaves.push((path, None));
                return;
            }
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                for item in inner.split(|t| is_punct(Some(t), ',')).filter(|item| !item.is_empty()) {
                    use_tree(item, path.clone(), leaves);
                }
                return;
            }
            _ => i += 1,
        }
    }
}

/// `path` as written in `module`, made crate-relative; `None` for a path outside the crate (std, another crate).
/// Relative paths are the crate's only in `use` declarations (`relative_use`) and when their first segment is a
/// child module of `module`.
fn absolute(module: &ModPath, path: &[String], krate: &Crate, relative_use: bool) -> Option<Vec<String>> {
    let mut out: Vec<String> = module.clone();
    let mut rest = path;
    match path.first()?.as_str() {
        "crate" => {
            out.clear();
            rest = &path[1..];
        }
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                out.pop()?;
                rest = &rest[1..];
            }
        }
        first if relative_use => {
            let mut child = module.clone();
            child.push(first.to_string());
            if !krate.modules.contains_key(&child) {
                return None;
            }
        }
        _ => return None,
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// The module that defines the item `path` leads to, following `use` bindings (at most `depth` of them).
fn resolve(krate: &Crate, path: &[String], depth: usize) -> ModPath {
    let mut module: ModPath = Vec::new();
    for (i, segment) in path.iter().enumerate() {
        let mut child = module.clone();
        child.push(segment.clone());
        if krate.modules.contains_key(&child) {
            module = child;
            continue;
        }
        let bound = krate.bindings.get(&module).and_then(|b| b.get(segment));
        return match bound {
            Some(target) if depth > 0 && target.as_slice() != &path[..=i] => {
                let mut target = target.clone();
                target.extend(path[i + 1..].iter().cloned());
                resolve(krate, &target, depth - 1)
            }
            _ => module,
        };
    }
    module
}

/// Per parent module: its children's dependencies, child → child → the references (`from: path`) behind it.
type Levels = BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, BTreeSet<String>>>>;

fn dependencies(krate: &Crate) -> Levels {
    let mut levels = Levels::new();
    for (from, path) in &krate.references {
        let to = resolve(krate, path, 8);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if common == from.len() || common == to.len() {
            continue; // one contains the other
        }
        let why = format!("{}: {}", krate.modules[from], path.join("::"));
        levels
            .entry(from[..common].to_vec())
            .or_default()
            .entry(from[common].clone())
            .or_default()
            .entry(to[common].clone())
            .or_default()
            .insert(why);
    }
    levels
}

/// The cycles among one module's children: each strongly connected component of more than one child, as its
/// members and the dependencies inside it.
fn cycles(graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>) -> Vec<(Vec<String>, Vec<String>)> {
    // Reachability by repeated search: the graphs have a few dozen nodes.
    let reach = |start: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flat_map(|edges| edges.keys()) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|node| (node, reach(node))).collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for node in graph.keys() {
        if done.contains(node) || !reachable[node].contains(node) {
            continue;
        }
        let members: Vec<String> = reachable[node]
            .iter()
            .filter(|other| reachable.get(other).is_some_and(|r| r.contains(node)))
            .cloned()
            .collect();
        let mut why = Vec::new();
        for a in &members {
            for (b, reasons) in graph.get(a).into_iter().flatten() {
                if members.contains(b) {
                    why.push(format!("{a} -> {b} ({})", reasons.iter().cloned().collect::<Vec<_>>().join("; ")));
                }
            }
        }
        done.extend(members.iter().cloned());
        found.push((members, why));
    }
    found
}

/// Every cycle of the crate, one line per dependency inside it; empty when there is none.
fn report_cycles(krate: &Crate) -> Vec<String> {
    let mut lines = Vec::new();
    for (parent, graph) in dependencies(krate) {
        for (members, why) in cycles(&graph) {
            let parent = if parent.is_empty() { "crate".to_string() } else { format!("crate::{}", parent.join("::")) };
            lines.push(format!("cycle among the children of {parent}: {}", members.join(", ")));
            lines.extend(why.into_iter().map(|line| format!("    {line}")));
        }
    }
    lines
}

/// Every .rs file under `dir`, keyed by its path relative to `dir`.
fn read_sources(dir: &Path, prefix: &str, files: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            read_sources(&path, &format!("{prefix}{name}/"), files);
        } else if name.ends_with(".rs") {
            files.insert(format!("{prefix}{name}"), std::fs::read_to_string(&path).unwrap());
        }
    }
}

#[test]
fn host_modules_form_no_cycle() {
    let mut files = BTreeMap::new();
    read_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), "", &mut files);
    let krate = parse_crate(&files, "lib.rs");
    // The parse found the tree and what it names, so an empty report means something.
    assert!(krate.modules.len() > 30, "{} modules", krate.modules.len());
    assert!(krate.modules.contains_key(&vec!["bench".to_string(), "peers".to_string(), "cublas".to_string()]));
    let levels = dependencies(&krate);
    assert!(levels.get(&Vec::new()).is_some_and(|top| top.len() > 8), "top-level dependencies: {levels:?}");
    // The layers as they are, for whoever reads the output (`cargo test --test layering -- --nocapture`).
    for (parent, graph) in &levels {
        println!("crate::{}", parent.join("::"));
        for (from, to) in graph {
            println!("    {from} -> {}", to.keys().cloned().collect::<Vec<_>>().join(", "));
        }
    }
    let report = report_cycles(&krate);
    assert!(report.is_empty(), "imports that do not point down:\n{}", report.join("\n"));
}

/// A small crate in memory: `(path, text)` pairs.
fn fake(files: &[(&str, &str)]) -> Crate {
    let files = files.iter().map(|(path, text)| (path.to_string(), text.to_string())).collect();
    parse_crate(&files, "lib.rs")
}

#[test]
fn a_planted_cycle_is_found_and_a_layered_crate_passes() {
    let layered = [
        ("lib.rs", "pub mod low; pub mod mid; pub mod top; pub use low::Thing;"),
        ("low.rs", "pub struct Thing; /// [`crate::top::Top`] is only a doc link\nfn f() { let _ = \"crate::top\"; }"),
        ("mid/mod.rs", "pub mod a; pub mod b; use crate::Thing; pub use a::A;"),
        ("mid/a.rs", "use super::super::low::Thing; pub struct A;"),
        ("mid/b.rs", "pub fn f() -> super::A { super::a::A } #[cfg(test)] mod tests { use super::*; }"),
        ("top.rs", "use crate::{low, mid::{self, b as bee}}; pub struct Top(crate::low::Thing);"),
    ];
    assert_eq!(report_cycles(&fake(&layered)), Vec::<String>::new());
    let levels = dependencies(&fake(&layered));
    let top = &levels[&Vec::new()];
    assert_eq!(top["mid"].keys().collect::<Vec<_>>(), ["low"]);
    assert_eq!(top["top"].keys().collect::<Vec<_>>(), ["low", "mid"]);
    // `super::A` is mid's re-export of mid::a::A: b depends on a.
    assert_eq!(levels[&vec!["mid".to_string()]]["b"].keys().collect::<Vec<_>>(), ["a"]);

    // low names top in code, through the root's re-export of one of top's items: low → top → low, and
    // low → top → mid → low.
    let mut planted = layered;
    planted[0].1 = "pub mod low; pub mod mid; pub mod top; pub use low::Thing; pub use top::Top;";
    planted[1].1 = "pub struct Thing; fn f(_: Option<crate::Top>) {}";
    let report = report_cycles(&fake(&planted));
    assert_eq!(report[0], "cycle among the children of crate: low, mid, top", "{report:#?}");
    assert_eq!(report[1], "    low -> top (low.rs: Top)", "{report:#?}");

    // Two siblings inside one module naming each other, one of them from its inline test module.
    let mut siblings = layered;
    siblings[3].1 = "pub struct A; #[cfg(test)] mod tests { fn g() { super::super::b::f(); } }";
    let report = report_cycles(&fake(&siblings));
    assert_eq!(report[0], "cycle among the children of crate::mid: a, b", "{report:#?}");
}
