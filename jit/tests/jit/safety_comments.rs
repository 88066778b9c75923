//! The `unsafe` audit: the keyword appears in no `.rs` or `.md` file of the repository outside
//! `jit/` (not even in comments) — except where the Rust front end speaks of the *user's* source
//! (Rust 2024 calls externs in such blocks): in comments of `front/src`, in the Rust programs of
//! `front/tests` that it lowers, and in `docs/rust.md` — and every `unsafe` in `jit/` code is justified where it stands:
//! a block, impl or call by a `// SAFETY:` comment after the previous `unsafe` and at most 12
//! lines above it; an `unsafe fn` by a `# Safety` section in its docs (trait methods of an
//! `unsafe impl` are covered by the impl's comment). This file is the one exception: it spells
//! the keyword in its patterns.

use std::path::{Path, PathBuf};

const KEYWORD: &str = "unsafe";

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            // Build output (target, target-*), version control and fuzzing artifacts.
            if !(name.starts_with("target") || name.starts_with('.') || name == "artifacts" || name == "corpus") {
                files(&path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".md") {
            out.push(path);
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("jit/ has a parent").to_path_buf()
}

fn all_files() -> Vec<PathBuf> {
    let mut out = vec![];
    files(&repo_root(), &mut out);
    out.sort();
    out
}

/// Does `line` use the keyword as a word (not inside a longer identifier)?
fn has_keyword(line: &str) -> bool {
    line.match_indices(KEYWORD).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + KEYWORD.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with("//")
}

#[test]
fn the_keyword_appears_only_in_jit() {
    let root = repo_root();
    let jit = root.join("jit");
    let user_source = |p: &Path| p.starts_with(root.join("front/tests")) || p == root.join("docs/rust.md");
    let mut found = vec![];
    for path in all_files().into_iter().filter(|p| !p.starts_with(&jit) && !user_source(p)) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let front = path.starts_with(root.join("front/src"));
        for (n, line) in text.lines().enumerate() {
            if line.contains(KEYWORD) && !(front && is_comment(line)) {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "`{KEYWORD}` outside jit/:\n{}", found.join("\n"));
}

#[test]
fn every_use_in_jit_is_justified() {
    let this_file = Path::new(file!()).file_name().unwrap();
    let mut uses = 0;
    let mut unjustified = vec![];
    for path in all_files().into_iter().filter(|p| p.starts_with(repo_root().join("jit"))) {
        if path.extension().is_some_and(|e| e == "md") || path.file_name() == Some(this_file) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let mut last_use = None;
        for (i, line) in lines.iter().enumerate() {
            if is_comment(line) || !has_keyword(line) {
                continue;
            }
            uses += 1;
            let code = line.trim_start();
            let kw_fn = format!("{KEYWORD} fn");
            let docs_say_safety = |i: usize| {
                let docs = lines[..i].iter().rev().take_while(|l| {
                    let t = l.trim_start();
                    t.starts_with("///") || t.starts_with("#[")
                });
                docs.into_iter().any(|l| l.contains("# Safety"))
            };
            let justified = if code.contains(&format!("{KEYWORD} extern \"C\" fn(")) {
                // A function-pointer type: calling through it takes a block, which is checked.
                true
            } else if code.starts_with(&kw_fn) {
                // A trait method of an impl is justified by the impl's own comment.
                let item = lines[..i].iter().rev().find(|l| !l.is_empty() && !l.starts_with([' ', '}']));
                item.is_some_and(|l| l.starts_with(&format!("{KEYWORD} impl"))) || docs_say_safety(i)
            } else if code.contains(&kw_fn) {
                // A declared function: its docs say when it may be called.
                docs_say_safety(i)
            } else {
                // A block, impl or call: a SAFETY comment since the previous use, close above.
                let from = last_use.map_or(0, |u: usize| u + 1).max(i.saturating_sub(12));
                lines[from..i].iter().any(|l| is_comment(l) && l.contains("SAFETY:"))
            };
            if !justified {
                unjustified.push(format!("{}:{}: {}", path.display(), i + 1, code));
            }
            last_use = Some(i);
        }
    }
    assert!(
        unjustified.is_empty(),
        "`{KEYWORD}` without a SAFETY comment or # Safety docs:\n{}",
        unjustified.join("\n")
    );
    // The audit saw the crate's known uses (a broken walk would pass vacuously).
    assert!(uses >= 20, "only {uses} uses found in jit/");
}
