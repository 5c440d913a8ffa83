//! Every ```pk example of docs/language.md is checked: an example whose first
//! line is `// error: PK0201 ...` (or `// warning: ...`) must produce exactly
//! those codes, in order;
//! every other example must check cleanly. A `// target: v4` line picks the
//! generation (default v5e); parameters without a default stay symbolic.

mod common;

use pk_lang::{compile_source, Options};

/// `(line of the opening fence, source)` of each ```pk block.
fn examples(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_start() == "```pk" => current = Some((i + 1, String::new())),
            Some(_) if line.trim_start() == "```" => out.extend(current.take()),
            Some((_, src)) => {
                src.push_str(line);
                src.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn language_reference_examples_check_as_documented() {
    let path = common::root().join("docs/language.md");
    let text = std::fs::read_to_string(&path).expect("docs/language.md is readable");
    let examples = examples(&text);
    assert!(
        examples.len() >= 20,
        "found only {} examples",
        examples.len()
    );
    let mut failures = Vec::new();
    for (line, src) in &examples {
        let want: Vec<String> = src
            .lines()
            .next()
            .and_then(|l| {
                l.strip_prefix("// error:")
                    .or_else(|| l.strip_prefix("// warning:"))
            })
            .map(|codes| codes.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        let target = src
            .lines()
            .take(3)
            .find_map(|l| l.strip_prefix("// target:"))
            .map(|t| t.trim().parse().expect("a valid target"))
            .unwrap_or_default();
        let opts = Options {
            target,
            ..Options::default()
        };
        let name = format!("language.md:{line}");
        let got: Vec<String> = match compile_source(&name, src, &opts) {
            Ok(m) => m.warnings.iter().map(|d| d.code.code.to_string()).collect(),
            Err(f) => f.diags.iter().map(|d| d.code.code.to_string()).collect(),
        };
        if got != want {
            let shown = compile_source(&name, src, &opts)
                .err()
                .map(|f| f.render(pk_lang::diag::RenderStyle::Plain))
                .unwrap_or_default();
            failures.push(format!(
                "example at line {line}: expected {want:?}, got {got:?}\n{shown}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples:\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n")
    );
}

/// The code table of docs/language.md lists every front-end code, and the
/// codes it calls unassigned are not in use.
#[test]
fn the_code_table_matches_the_codes() {
    let text = std::fs::read_to_string(common::root().join("docs/language.md")).expect("docs");
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| PK0"))
        .map(|l| &l[..3])
        .collect();
    for e in pk_lang::diag::codes::ALL {
        assert!(
            listed.contains(&&e.code[3..]),
            "{} is missing from the code table of docs/language.md",
            e.code
        );
    }
    let line = text
        .lines()
        .find(|l| l.ends_with("are unassigned.") && l.starts_with("Codes "))
        .expect("the line of unassigned codes");
    for word in line.split(|c: char| !c.is_ascii_alphanumeric()) {
        if word.starts_with("PK") {
            assert!(
                pk_lang::diag::codes::ALL.iter().all(|e| e.code != word),
                "{word} is called unassigned but is in use"
            );
        }
    }
}
