//! Golden files keyed by input name: `tests/in/NAME.pk` and `kernels/NAME.pk`
//! -> `tests/out/ast/NAME.ast` and `tests/out/ir/NAME.ir`. `PK_BLESS=1`
//! re-records them; any difference fails.

mod common;

use common::{golden, pk_files, rel, root};
use pk_lang::span::SourceMap;
use pk_lang::{ir, Options};

fn inputs() -> Vec<std::path::PathBuf> {
    let mut v = pk_files(&root().join("tests/in"));
    v.extend(pk_files(&root().join("kernels")));
    v
}

#[test]
fn ast_golden_files() {
    let mut failures = Vec::new();
    for path in inputs() {
        let text = std::fs::read_to_string(&path).expect("input is readable");
        let mut sources = SourceMap::new();
        let id = sources.add(rel(&path), text.as_str());
        let (module, diags) = pk_lang::parse::parse(id, &text);
        assert!(
            diags.is_empty(),
            "{} does not parse:\n{}",
            rel(&path),
            pk_lang::diag::render_all(&diags, &sources, pk_lang::diag::RenderStyle::Plain)
        );
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("x");
        if let Err(e) = golden(
            &root().join(format!("tests/out/ast/{stem}.ast")),
            &format!("{module:#?}\n"),
        ) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn ir_golden_files_verify_and_match() {
    let mut failures = Vec::new();
    for path in inputs() {
        let opts = Options {
            specialise: true,
            ..Options::default()
        };
        let m = match pk_lang::Session::open(&path).and_then(|s| s.check(&opts)) {
            Ok(m) => m,
            Err(f) => panic!(
                "{} does not compile:\n{}",
                rel(&path),
                f.render(pk_lang::diag::RenderStyle::Plain)
            ),
        };
        for k in &m.kernels {
            ir::verify::verify_kernel(k, true).unwrap_or_else(|e| {
                panic!(
                    "{}: kernel `{}` fails verification: {}",
                    rel(&path),
                    k.name,
                    e.message
                )
            });
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("x");
        if let Err(e) = golden(
            &root().join(format!("tests/out/ir/{stem}.ir")),
            &ir::print::module(&m),
        ) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn kernels_and_std_check_clean_on_every_target() {
    let mut files = pk_files(&root().join("kernels"));
    files.extend(pk_files(&root().join("std")));
    files.extend(pk_files(&root().join("tests/in")));
    // Kernels of one generation's MXU are checked where they run
    // (tests/kernel_targets.rs).
    files.retain(|f| !common::generation_specific(f));
    for t in pk_lang::Target::ALL {
        for f in &files {
            let opts = Options {
                target: t,
                ..Options::default()
            };
            if let Err(fail) = pk_lang::Session::open(f).and_then(|s| s.check(&opts)) {
                panic!(
                    "{} fails to check on {t}:\n{}",
                    rel(f),
                    fail.render(pk_lang::diag::RenderStyle::Plain)
                );
            }
        }
    }
}
