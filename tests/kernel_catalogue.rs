//! docs/kernels.md catalogues every kernel of kernels/: each kernel has a
//! `###` heading, each of its parameters is named in its section, and each
//! file has a `pkc run` usage line.

mod common;

use pk_lang::Options;

/// `(heading, section text)` of each `###` section of the catalogue.
fn sections(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            out.push((h.to_string(), String::new()));
        } else if line.starts_with("## ") {
            out.push((String::new(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

#[test]
fn every_kernel_is_catalogued_with_its_parameters_and_a_usage_line() {
    let root = common::root();
    let text = std::fs::read_to_string(root.join("docs/kernels.md")).expect("docs/kernels.md");
    let sections = sections(&text);
    let files = common::pk_files(&root.join("kernels"));
    assert!(files.len() >= 8, "found only {} kernel files", files.len());
    let mut missing = Vec::new();
    for file in &files {
        let rel = format!("kernels/{}", file.file_name().unwrap().to_string_lossy());
        if !text.contains(&format!("pkc run {rel}")) {
            missing.push(format!("{rel}: no `pkc run {rel}` usage line"));
        }
        let opts = Options {
            specialise: true,
            ..Default::default()
        };
        let m = pk_lang::Session::open(file)
            .and_then(|s| s.check(&opts))
            .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
        for k in &m.kernels {
            let Some((_, body)) = sections
                .iter()
                .find(|(h, _)| h.split(", ").any(|n| n == k.name))
            else {
                missing.push(format!("{rel}: kernel `{}` has no ### heading", k.name));
                continue;
            };
            for p in &k.params {
                if !body.contains(&format!("`{}`", p.name)) {
                    missing.push(format!(
                        "{rel}: `{}` does not name parameter `{}`",
                        k.name, p.name
                    ));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/kernels.md is incomplete:\n{}",
        missing.join("\n")
    );
}
