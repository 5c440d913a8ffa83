//! Diagnostic fixtures: each `tests/diag/NAME.pk` states the codes it must
//! produce on its first lines, and its rendered diagnostics (carets and all)
//! are compared with `tests/diag/NAME.stderr`.
//!
//! Header lines a fixture may start with:
//!
//! ```text
//! // error: PK0301 PK0306     codes expected, in order (required; a
//!                             fixture of warnings says `// warning:`)
//! // target: v4               TPU generation (default v5e)
//! // params: M=100 bm=8       `-p` values
//! // kernel: name             `--kernel`
//! // specialise               require every parameter to have a value
//! ```

mod common;

use common::{golden, pk_files, rel, root};
use pk_lang::diag::{codes, RenderStyle};
use pk_lang::Options;
use std::collections::BTreeSet;

struct Fixture {
    codes: Vec<String>,
    opts: Options,
}

fn header(text: &str) -> Fixture {
    let mut f = Fixture {
        codes: Vec::new(),
        opts: Options::default(),
    };
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("//") else {
            break;
        };
        let rest = rest.trim();
        if let Some(c) = rest
            .strip_prefix("error:")
            .or_else(|| rest.strip_prefix("warning:"))
        {
            f.codes.extend(c.split_whitespace().map(str::to_string));
        } else if let Some(t) = rest.strip_prefix("target:") {
            f.opts.target = t.trim().parse().expect("fixture target is valid");
        } else if let Some(ps) = rest.strip_prefix("params:") {
            for p in ps.split_whitespace() {
                let (n, v) = p.split_once('=').expect("params are NAME=VALUE");
                f.opts.params.push((n.to_string(), v.to_string()));
            }
        } else if let Some(k) = rest.strip_prefix("kernel:") {
            f.opts.kernel = Some(k.trim().to_string());
        } else if rest == "specialise" {
            f.opts.specialise = true;
        }
    }
    f
}

/// Codes checked by other tests (they need files that are not `.pk` text).
const ELSEWHERE: &[&str] = &["PK0007", "PK0008", "PK0009", "PK0010", "PK0011", "PK0999"];

#[test]
fn every_fixture_reports_its_codes_and_renders_as_recorded() {
    let dir = root().join("tests/diag");
    let files = pk_files(&dir);
    assert!(!files.is_empty(), "no fixtures in tests/diag");
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("fixture is readable");
        let fx = header(&text);
        assert!(
            !fx.codes.is_empty(),
            "{}: first line must be `// error: PKxxxx`",
            rel(path)
        );
        // A fixture of warnings compiles; its warnings are what it records.
        let result = pk_lang::compile_source(&rel(path), &text, &fx.opts).and_then(|m| {
            if m.warnings.is_empty() {
                Ok(m)
            } else {
                Err(pk_lang::Failure {
                    diags: m.warnings,
                    sources: m.sources,
                })
            }
        });
        let rendered = match result {
            Ok(_) => {
                failures.push(format!(
                    "{}: compiled without errors, expected {}",
                    rel(path),
                    fx.codes.join(" ")
                ));
                continue;
            }
            Err(f) => {
                let got: Vec<String> = f.diags.iter().map(|d| d.code.code.to_string()).collect();
                if got != fx.codes {
                    failures.push(format!(
                        "{}: expected {}, got {}\n{}",
                        rel(path),
                        fx.codes.join(" "),
                        got.join(" "),
                        f.render(RenderStyle::Plain)
                    ));
                }
                f.render(RenderStyle::Plain)
            }
        };
        if let Err(e) = golden(&path.with_extension("stderr"), &rendered) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_code_has_a_fixture_and_an_explanation() {
    let dir = root().join("tests/diag");
    let mut covered: BTreeSet<String> = ELSEWHERE.iter().map(|s| s.to_string()).collect();
    for path in pk_files(&dir) {
        let text = std::fs::read_to_string(&path).expect("fixture is readable");
        covered.extend(header(&text).codes);
    }
    let mut seen = BTreeSet::new();
    let mut missing = Vec::new();
    for e in codes::ALL {
        assert!(seen.insert(e.code), "code {} is defined twice", e.code);
        assert!(
            !e.what.is_empty() && !e.why.is_empty() && !e.example.is_empty(),
            "{} lacks text",
            e.code
        );
        if !covered.contains(e.code) {
            missing.push(format!("{} ({})", e.code, e.title));
        }
    }
    assert!(
        missing.is_empty(),
        "codes without a fixture in tests/diag: {}",
        missing.join(", ")
    );
}
