//! The tree-sitter grammar (editors/tree-sitter-pk) parses every `.pk` file
//! of the repository, and every ```pk example of the docs, that pk's own
//! parser accepts, with no ERROR or MISSING
//! node, and passes its corpus tests. Needs the tree-sitter CLI (on PATH, or
//! named by `TREE_SITTER`) and a C compiler; without the CLI the test says
//! so and passes.

mod common;

use common::{root, TempDir};
use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_tree_sitter_grammar_parses_every_pk_file_pk_accepts() {
    let cli = std::env::var("TREE_SITTER").unwrap_or_else(|_| "tree-sitter".into());
    if Command::new(&cli).arg("--version").output().is_err() {
        eprintln!(
            "skipped: the tree-sitter CLI (`{cli}`) is not installed; \
             `cargo install tree-sitter-cli --locked` or set TREE_SITTER"
        );
        return;
    }
    let mut files = Vec::new();
    common::pk_files_under(&root(), &mut files);
    files.sort();
    let accepted: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            pk_lang::parse::parse(Default::default(), &text)
                .1
                .is_empty()
        })
        .collect();
    assert!(accepted.len() >= 200, "found {} .pk files", accepted.len());
    let dir = TempDir::new("tree-sitter");
    // The ```pk examples of the docs that pk accepts, as files.
    let mut docs = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "md") {
            docs.push(e.path());
        }
    }
    let mut examples = Vec::new();
    for d in &docs {
        let text = std::fs::read_to_string(d).expect("readable docs");
        let mut cur: Option<String> = None;
        for line in text.lines() {
            match &mut cur {
                None if line.trim_start() == "```pk" => cur = Some(String::new()),
                Some(src) if line.trim_start() == "```" => {
                    if pk_lang::parse::parse(Default::default(), src).1.is_empty() {
                        let p = dir.path().join(format!("example{}.pk", examples.len()));
                        std::fs::write(&p, &*src).expect("write example");
                        examples.push(p);
                    }
                    cur = None;
                }
                Some(src) => {
                    src.push_str(line);
                    src.push('\n');
                }
                None => {}
            }
        }
    }
    assert!(
        examples.len() >= 50,
        "found {} doc examples",
        examples.len()
    );
    let n = accepted.len() + examples.len();
    let list: String = accepted
        .iter()
        .map(|p| p.as_path())
        .chain(examples.iter().map(|p| p.as_path()))
        .map(|p| format!("{}\n", p.display()))
        .collect();
    let paths = dir.file("paths.txt", list.as_bytes());
    let o = Command::new("bash")
        .arg(root().join("editors/tree-sitter-pk/scripts/parse-all.sh"))
        .arg(&paths)
        .env("TREE_SITTER", &cli)
        .output()
        .expect("bash runs");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{out}");
    let want = format!("Total parses: {n}; successful parses: {n}; failed parses: 0;");
    assert!(out.contains(&want), "expected `{want}` in:\n{out}");
    eprintln!(
        "{} of {} .pk files accepted by pk, and {} doc examples, parse without an error node",
        accepted.len(),
        files.len(),
        examples.len()
    );
}
