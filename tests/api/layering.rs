//! The workspace's layering, checked: crates in data-flow order (IR → Rust front end → its
//! attribute macros → rules → AD transforms → JIT → library → benchmark catalogue → command),
//! and no crate depends (as a normal dependency) on one later in that order; the library embeds
//! no file from outside its own sources (once it reached up into `examples/`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The workspace members in data-flow order.
const ORDER: [&str; 9] = [
    "jitdiff-ir",
    "jitdiff-front",
    "jitdiff-macros",
    "jitdiff-rules",
    "jitdiff-ad",
    "jitdiff-jit",
    "jitdiff",
    "jitdiff-problems",
    "jitdiff-cli",
];

fn metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn no_crate_depends_on_a_later_one_and_every_member_is_in_the_order() {
    let meta = metadata();
    let rank: HashMap<&str, usize> = ORDER.iter().enumerate().map(|(k, &name)| (name, k)).collect();
    let packages = meta["packages"].as_array().expect("packages");
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    for m in &members {
        assert!(rank.contains_key(m), "workspace member {m} is not in the layering order of tests/api/layering.rs");
    }
    assert_eq!(members.len(), ORDER.len(), "members: {members:?}");
    for p in packages {
        let name = p["name"].as_str().expect("a name");
        for dep in p["dependencies"].as_array().expect("dependencies") {
            let (dep_name, kind) = (dep["name"].as_str().expect("a name"), dep["kind"].as_str());
            // Normal dependencies only: a test may use anything (the library's tests use the
            // benchmark catalogue).
            if kind.is_some() {
                continue;
            }
            if let Some(&r) = rank.get(dep_name) {
                assert!(r < rank[name], "{name} depends on {dep_name}, which comes later in the data flow");
            }
        }
    }
}

/// Every `include_str!`/`include_bytes!` of the library's sources names a file inside `src/`
/// (or its README, compiled as a doc test).
#[test]
fn the_library_embeds_only_its_own_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    let mut stack = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 5, "found {} source files", files.len());
    let readme = root.join("README.md").canonicalize().expect("README.md");
    let src = root.join("src").canonicalize().expect("src/");
    // The user documentation's examples run as doc tests (`#[cfg(doctest)]` items).
    let docs = root.join("docs").canonicalize().expect("docs/");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for macro_name in ["include_str!(\"", "include_bytes!(\""] {
            for (at, _) in text.match_indices(macro_name) {
                let rest = &text[at + macro_name.len()..];
                let relative = &rest[..rest.find('"').expect("a closing quote")];
                let target: PathBuf = file.parent().expect("a directory").join(relative);
                let target = target.canonicalize().unwrap_or(target);
                assert!(
                    target.starts_with(&src)
                        || target == readme
                        || (target.starts_with(&docs) && target.extension().is_some_and(|e| e == "md")),
                    "{} embeds {} from outside src/",
                    file.display(),
                    relative
                );
            }
        }
    }
}
