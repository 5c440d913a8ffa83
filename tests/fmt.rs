//! `pkc fmt`: the layout of hand-written sources, the safety of formatting
//! every `.pk` source of the repository (same AST, same tokens, same
//! comments, a fixed point), the library kept formatted, and the command's
//! behaviour (`--check`, in place, standard input, files that do not parse).

mod common;

use common::{check_format, code, codes_in, pkc, pkc_in, root, stderr, stdout, TempDir};
use std::process::{Command, Stdio};

/// The ```pk blocks of a Markdown file.
fn pk_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        match &mut cur {
            None if line.trim_start() == "```pk" => cur = Some(String::new()),
            Some(_) if line.trim_start() == "```" => out.extend(cur.take()),
            Some(s) => {
                s.push_str(line);
                s.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn every_pk_source_of_the_repository_formats_to_the_same_program() {
    let mut files = Vec::new();
    common::pk_files_under(&root(), &mut files);
    files.sort();
    let mut sources: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            (
                common::rel(p),
                std::fs::read_to_string(p).expect("readable .pk file"),
            )
        })
        .collect();
    let mut docs = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "md") {
            docs.push(e.path());
        }
    }
    for d in docs {
        let text = std::fs::read_to_string(&d).expect("readable docs");
        for (k, b) in pk_blocks(&text).into_iter().enumerate() {
            sources.push((format!("{} example {}", common::rel(&d), k + 1), b));
        }
    }
    let (mut formatted, mut skipped, mut changed) = (0, 0, 0);
    let mut failures = Vec::new();
    for (name, text) in &sources {
        match check_format(name, text) {
            None => skipped += 1,
            Some(Ok(out)) => {
                formatted += 1;
                changed += usize::from(out != *text);
            }
            Some(Err(e)) => failures.push(e),
        }
    }
    eprintln!(
        "{} sources: {formatted} formatted ({changed} changed), {skipped} do not parse",
        sources.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The repository has some 225 .pk files and 65 doc examples; a walk
    // that finds few of them has gone wrong.
    assert!(
        formatted >= 260,
        "only {formatted} sources formatted ({skipped} skipped)"
    );
}

#[test]
fn the_library_and_std_are_formatted() {
    let mut files = Vec::new();
    common::pk_files_under(&root().join("kernels"), &mut files);
    common::pk_files_under(&root().join("std"), &mut files);
    assert!(files.len() >= 16, "found {} library files", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        let out = pk_lang::fmt::format_source(Default::default(), &text).expect("formats");
        assert!(
            out == text,
            "{} is not formatted: run `pkc fmt kernels std`",
            common::rel(&f)
        );
    }
    // The examples of the layout's documentation are in the layout.
    let doc = std::fs::read_to_string(root().join("docs/formatting.md")).expect("docs");
    let blocks = pk_blocks(&doc);
    assert!(blocks.len() >= 2);
    for b in blocks {
        let out = pk_lang::fmt::format_source(Default::default(), &b).expect("formats");
        assert_eq!(out, b, "a docs/formatting.md example is not in the layout");
    }
}

/// A source laid out by hand, badly, and its canonical layout written out
/// by hand from the rules in docs/formatting.md.
const MESSY: &str = "\
//! Module doc.
use std::nn::{gelu,lanes};
const   SCALE=0.5;// trailing
/// Doc of k.
kernel k<M=8,N=128,
/// the block
bm=8>(x:f32[M,N] block[bm,N] at(i,0),w:f32[1,N])->y:f32[M,N] block[bm,N] at(i,0)
grid(i in M/bm parallel) {
  let v=x[..]*SCALE;   let t=if M>4{v}else{-v};


  // own line
  y[..]=sum(t,axis=1,keepdims=true)+w[0,:]/* inline */;
  for j in 0..4 unroll{ if j==0 { y[..] = y[..]; } }
}
";

const TIDY: &str = "\
//! Module doc.
use std::nn::{gelu, lanes};
const SCALE = 0.5; // trailing
/// Doc of k.
kernel k<
    M = 8,
    N = 128,
    /// the block
    bm = 8,
>(
    x: f32[M, N] block [bm, N] at (i, 0),
    w: f32[1, N],
) -> y: f32[M, N] block [bm, N] at (i, 0)
grid (i in M / bm parallel)
{
    let v = x[..] * SCALE;
    let t = if M > 4 { v } else { -v };

    // own line
    y[..] = sum(t, axis=1, keepdims=true) + w[0, :] /* inline */;
    for j in 0..4 unroll {
        if j == 0 {
            y[..] = y[..];
        }
    }
}
";

#[test]
fn a_messy_source_gets_the_documented_layout() {
    let out = pk_lang::fmt::format_source(Default::default(), MESSY).expect("formats");
    assert_eq!(out, TIDY);
}

#[test]
fn long_lists_break_one_item_per_line_with_a_trailing_comma() {
    let src = "fn f(a) { g(aaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccccccc, dddddddddddddddddd, eeee) }\n";
    let want = "\
fn f(a) {
    g(
        aaaaaaaaaaaaaaaaaaaa,
        bbbbbbbbbbbbbbbbbbbbbbbbb,
        cccccccccccccccccccccccc,
        dddddddddddddddddd,
        eeee,
    )
}
";
    let out = pk_lang::fmt::format_source(Default::default(), src).expect("formats");
    assert_eq!(out, want);
    // ... and a short list on one line loses its trailing comma, except a
    // one-element tuple's.
    let out = pk_lang::fmt::format_source(Default::default(), "fn f(a,) { (g(a, 1,), (a,)) }")
        .expect("formats");
    assert_eq!(out, "fn f(a) {\n    (g(a, 1), (a,))\n}\n");
}

#[test]
fn check_lists_unformatted_files_with_a_code_and_writes_nothing() {
    let dir = TempDir::new("fmt-check");
    let messy = dir.file("messy.pk", MESSY.as_bytes());
    let tidy = dir.file("tidy.pk", TIDY.as_bytes());
    let o = pkc_in(dir.path(), &["fmt", "--check", "messy.pk", "tidy.pk"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0010"], "{err}");
    assert!(err.contains("`messy.pk` is not formatted"), "{err}");
    // MESSY's first difference is its second line, a `use`.
    assert!(
        err.contains("`pkc fmt` writes line 2 as `use std::nn::{gelu, lanes};`"),
        "{err}"
    );
    assert!(err.contains("1 of 2 files not formatted"), "{err}");
    assert!(!err.contains("tidy.pk"), "{err}");
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), MESSY);
    assert_eq!(std::fs::read_to_string(&tidy).unwrap(), TIDY);
    // Formatted files pass.
    let o = pkc_in(dir.path(), &["fmt", "--check", "tidy.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
}

#[test]
fn fmt_rewrites_files_in_place_and_keeps_their_mode() {
    let dir = TempDir::new("fmt-write");
    let messy = dir.file("messy.pk", MESSY.as_bytes());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&messy, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let o = pkc_in(dir.path(), &["fmt", "messy.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), TIDY);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&messy).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }
    // No temporary file is left beside it.
    assert_eq!(dir.entries(), ["messy.pk"]);
    // A directory stands for the .pk files under it.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("a.pk"), MESSY).unwrap();
    std::fs::write(sub.join("notes.txt"), "fn  x").unwrap();
    let o = pkc_in(dir.path(), &["fmt", "sub"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(sub.join("a.pk")).unwrap(), TIDY);
    assert_eq!(
        std::fs::read_to_string(sub.join("notes.txt")).unwrap(),
        "fn  x"
    );
}

#[test]
fn a_file_that_does_not_parse_gets_its_diagnostics_and_stays_as_it_is() {
    let dir = TempDir::new("fmt-bad");
    let bad = "fn f(x) { let y = x +; y }\n";
    let path = dir.file("bad.pk", bad.as_bytes());
    let good = dir.file("good.pk", MESSY.as_bytes());
    let o = pkc_in(dir.path(), &["fmt", "bad.pk", "good.pk"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0003"], "{err}");
    assert!(err.contains("bad.pk"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), bad);
    // The other files are still formatted.
    assert_eq!(std::fs::read_to_string(&good).unwrap(), TIDY);
}

#[test]
fn dash_formats_standard_input_to_standard_output() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(["fmt", "-"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pkc runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(MESSY.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), TIDY);
}

#[test]
fn completions_know_fmt() {
    let o = pkc(&["completions", "bash"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("fmt"), "no fmt in the bash completions");
    let o = pkc(&["completions", "fish"]);
    assert!(
        stdout(&o).contains("-a \"fmt\""),
        "no fmt subcommand in the fish completions"
    );
}
