//! Robustness of the front end: lexer, parser, resolver and checker are fed
//! mutated kernels, random bytes, token soup and pathological files. For
//! every input, compilation must not panic, and every failure must consist
//! of coded diagnostics whose spans lie inside their source files.
//!
//! The work is a fixed number of deterministic iterations (a seeded PRNG),
//! so the test is reproducible and bounded. It runs on a thread with the
//! 8 MiB stack that `pkc`'s main thread usually gets.

mod common;

use common::{pk_files, rel, root};
use pk_lang::diag::{codes, RenderStyle};
use pk_lang::{Failure, Options, Target};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// SplitMix64: small, fast and deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Text the mutator inserts: punctuation, keywords, names, dtypes, numbers
/// and fragments that open or close constructs.
const SNIPPETS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "::",
    "..",
    "->",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "&&",
    "||",
    "&",
    "|",
    "^",
    "<<",
    ">>",
    "+=",
    "-=",
    "*=",
    "/=",
    "_",
    "@",
    "#",
    "$",
    "\"",
    "'",
    "`",
    "\\",
    "?",
    ".",
    "kernel",
    "fn",
    "use",
    "const",
    "let",
    "mut",
    "if",
    "else",
    "for",
    "in",
    "step",
    "while",
    "grid",
    "scratch",
    "prefetch",
    "block",
    "at",
    "aliases",
    "parallel",
    "arbitrary",
    "vmem",
    "smem",
    "any",
    "dma_sem",
    "dtype",
    "vmem_limit",
    "true",
    "false",
    "as",
    "x",
    "y",
    "i",
    "M",
    "N",
    "bm",
    "acc",
    "sem",
    "f32",
    "bf16",
    "i32",
    "i16",
    "i8",
    "u8",
    "bool",
    "f8e4m3fn",
    "f8e5m2",
    "f64",
    "f16",
    "0",
    "1",
    "2",
    "7",
    "8",
    "100",
    "128",
    "512",
    "1024",
    "65536",
    "2147483648",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "99999999999999999999",
    "0x7fffffff",
    "0b1011",
    "1_000",
    "0.5",
    "1e9",
    "1e400",
    "inf",
    "nan",
    "pi",
    "/*",
    "*/",
    "//",
    "///",
    "//!",
    "\n",
    " ",
    "\t",
    "dot(",
    "sum(",
    "ds(",
    "x[..]",
    "cdiv(M, 8)",
    "copy_start(",
    "program_id(0)",
    "é",
    "\u{a0}",
    "\u{feff}",
    "🙂",
];

/// Replacement numbers for numeric tokens (sizes, axes, extents).
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "8",
    "16",
    "100",
    "127",
    "128",
    "255",
    "256",
    "1000",
    "1024",
    "4096",
    "65536",
    "1048576",
    "2147483647",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "0.0",
    "1.5",
    "1e30",
];

/// Replacement names for identifier tokens.
const NAMES: &[&str] = &[
    "x",
    "y",
    "z",
    "i",
    "j",
    "k",
    "M",
    "N",
    "K",
    "bm",
    "bn",
    "T",
    "acc",
    "sem",
    "buf",
    "ids",
    "f32",
    "bf16",
    "i32",
    "i8",
    "u8",
    "bool",
    "f8e4m3fn",
    "f64",
    "f16",
    "nn",
    "math",
    "std",
    "exp",
    "dot",
    "sum",
    "max",
    "where",
    "ds",
    "iota",
    "reshape",
    "transpose",
    "roll",
    "bitcast",
    "broadcast",
    "copy_start",
    "copy_wait",
    "program_id",
    "num_programs",
    "cdiv",
    "inf",
    "nan",
    "pi",
    "unknown_name",
];

/// `-p` values tried on mutated kernels.
const PARAM_VALUES: &[&str] = &[
    "0",
    "1",
    "3",
    "8",
    "100",
    "128",
    "1000",
    "-4",
    "bf16",
    "f32",
    "i8",
    "f8e5m2",
    "f64",
    "1 / 0",
    "4 *",
    "big",
    "(",
    "M",
    "2147483648",
];

/// One input and the options to compile it with.
struct Case {
    what: String,
    text: String,
    opts: Options,
}

/// Why one compilation is not acceptable.
fn problems(r: &Result<pk_lang::ir::Module, Failure>) -> Vec<String> {
    let Err(f) = r else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if f.diags.is_empty() {
        out.push("failure without diagnostics".to_string());
    }
    if !f.diags.iter().any(|d| d.is_error()) {
        out.push("failure without an error".to_string());
    }
    let nfiles = f.sources.files().count();
    for d in &f.diags {
        let code = d.code.code;
        if !codes::ALL.iter().any(|e| std::ptr::eq(*e, d.code)) {
            out.push(format!("{code}: not a registered diagnostic code"));
        }
        if code == codes::INTERNAL.code {
            out.push(format!("{code}: internal error: {}", d.message));
        }
        if d.message.trim().is_empty() {
            out.push(format!("{code}: empty message"));
        }
        let spans = std::iter::once(&d.span).chain(d.secondary.iter().map(|(s, _)| s));
        for s in spans {
            if s.file.0 as usize >= nfiles {
                out.push(format!("{code}: span in unknown file {:?}", s.file));
                continue;
            }
            let src = &f.sources.get(s.file).text;
            let (a, b) = (s.start as usize, s.end as usize);
            if a > b || b > src.len() {
                out.push(format!(
                    "{code}: span {a}..{b} outside `{}` ({} bytes): {}",
                    f.sources.get(s.file).name,
                    src.len(),
                    d.message
                ));
            } else if !src.is_char_boundary(a) || !src.is_char_boundary(b) {
                out.push(format!(
                    "{code}: span {a}..{b} splits a character: {}",
                    d.message
                ));
            }
        }
    }
    out
}

/// Compiles one case, catching panics: a description of what is wrong, or
/// the codes it reported (empty when it compiled).
fn compile(case: &Case) -> Result<Vec<String>, String> {
    let start = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let r = pk_lang::compile_source("fuzz.pk", &case.text, &case.opts);
        let rendered = r.as_ref().err().map(|f| f.render(RenderStyle::Plain));
        (r, rendered)
    }));
    let elapsed = start.elapsed();
    let (mut issues, codes) = match outcome {
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic payload".to_string());
            (vec![format!("panicked: {msg}")], Vec::new())
        }
        Ok((r, _)) => {
            let codes = match &r {
                Ok(_) => Vec::new(),
                Err(f) => f.diags.iter().map(|d| d.code.code.to_string()).collect(),
            };
            (problems(&r), codes)
        }
    };
    // A generous bound: it catches runaway (super-linear) passes, not
    // ordinary slowness of a loaded machine.
    if elapsed > Duration::from_secs(20) {
        issues.push(format!("took {elapsed:?}"));
    }
    if issues.is_empty() {
        return Ok(codes);
    }
    Err(format!(
        "{} [{:?}, specialise={}, params={:?}, kernel={:?}]: {}\n  input: {}",
        case.what,
        case.opts.target,
        case.opts.specialise,
        case.opts.params,
        case.opts.kernel,
        issues.join("; "),
        show(&case.what, &case.text),
    ))
}

/// The input, inline when short, otherwise saved to a file.
fn show(what: &str, text: &str) -> String {
    if text.len() <= 400 {
        return format!("{text:?}");
    }
    let dir = std::env::temp_dir().join(format!("pk-robustness-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let name: String = what
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(80)
        .collect();
    let path = dir.join(format!("{name}.pk"));
    match std::fs::write(&path, text) {
        Ok(()) => format!("saved to {}", path.display()),
        Err(_) => format!("{:?}...", &text[..floor(text, 400)]),
    }
}

/// Runs every case on one thread with an 8 MiB stack and collects failures.
fn check_all(cases: Vec<Case>) -> Vec<String> {
    std::thread::Builder::new()
        .name("robustness".into())
        .stack_size(8 << 20)
        .spawn(move || {
            cases
                .iter()
                .filter_map(|c| compile(c).err())
                .collect::<Vec<_>>()
        })
        .expect("spawn the checking thread")
        .join()
        .expect("the checking thread does not die")
}

fn assert_clean(failures: Vec<String>, total: usize) {
    if !failures.is_empty() {
        let shown: Vec<&String> = failures.iter().take(30).collect();
        panic!(
            "{} of {total} inputs failed; the first {}:\n\n{}",
            failures.len(),
            shown.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        );
    }
}

/// Every example kernel, by repository path.
fn seeds() -> Vec<(String, String)> {
    let mut files = pk_files(&root().join("kernels"));
    files.extend(pk_files(&root().join("tests/in")));
    let seeds: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            (
                rel(p),
                std::fs::read_to_string(p).expect("example kernel is readable"),
            )
        })
        .collect();
    assert!(
        seeds.len() >= 7,
        "expected the example kernels, found {}",
        seeds.len()
    );
    seeds
}

fn default_opts() -> Options {
    Options::default()
}

fn specialised() -> Options {
    Options {
        specialise: true,
        ..Options::default()
    }
}

/// Both option sets the test uses for every input.
fn both(what: String, text: String) -> [Case; 2] {
    [
        Case {
            what: what.clone(),
            text: text.clone(),
            opts: default_opts(),
        },
        Case {
            what,
            text,
            opts: specialised(),
        },
    ]
}

/// The largest character boundary of `s` at or below `i`.
fn floor(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest character boundary of `s` at or above `i`.
fn ceil(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Token byte ranges of `text` (comments excluded).
fn token_ranges(text: &str) -> Vec<(usize, usize)> {
    pk_lang::lexer::lex(text)
        .0
        .iter()
        .map(|(l, _, r)| (*l, *r))
        .collect()
}

/// One random mutation of `text`.
fn mutate(rng: &mut Rng, text: &str, toks: &[(usize, usize)]) -> (String, String) {
    let n = toks.len().max(1);
    let tok = |rng: &mut Rng| toks.get(rng.below(n)).copied().unwrap_or((0, 0));
    let mut s = text.to_string();
    let desc = match rng.below(13) {
        0 => {
            let (a, b) = tok(rng);
            s.replace_range(a..b, "");
            format!("delete token at {a}")
        }
        1 => {
            let (a, b) = tok(rng);
            let t = text[a..b].to_string();
            s.insert_str(b, &format!(" {t}"));
            format!("duplicate token at {a}")
        }
        2 => {
            let (a1, b1) = tok(rng);
            let (a2, b2) = tok(rng);
            let ((a1, b1), (a2, b2)) = if a1 <= a2 {
                ((a1, b1), (a2, b2))
            } else {
                ((a2, b2), (a1, b1))
            };
            if b1 <= a2 {
                s = format!(
                    "{}{}{}{}{}",
                    &text[..a1],
                    &text[a2..b2],
                    &text[b1..a2],
                    &text[a1..b1],
                    &text[b2..]
                );
            }
            format!("swap tokens at {a1} and {a2}")
        }
        3 => {
            let (a, _) = tok(rng);
            let ins = rng.pick(SNIPPETS);
            s.insert_str(a, &format!("{ins} "));
            format!("insert {ins:?} at {a}")
        }
        // Replacing names and numbers keeps most kernels parseable, so it
        // reaches the checker; it gets a larger share.
        4 | 10..=12 => {
            let (a, b) = tok(rng);
            let t = &text[a..b];
            let new = if t.starts_with(|c: char| c.is_ascii_digit()) {
                rng.pick(NUMBERS)
            } else if t.starts_with(|c: char| c.is_alphabetic() || c == '_') {
                rng.pick(NAMES)
            } else {
                rng.pick(SNIPPETS)
            };
            s.replace_range(a..b, new);
            format!("replace token at {a} by {new:?}")
        }
        5 => {
            // Delete a run of bytes (on character boundaries).
            let a = floor(text, rng.below(text.len().max(1)));
            let b = floor(text, (a + 1 + rng.below(24)).min(text.len()));
            s.replace_range(a..b.max(a), "");
            format!("delete bytes {a}..{b}")
        }
        6 => {
            let a = floor(text, rng.below(text.len().max(1)));
            let b = floor(text, (a + 1 + rng.below(40)).min(text.len()));
            let chunk = text[a..b.max(a)].to_string();
            s.insert_str(b.max(a), &chunk);
            format!("duplicate bytes {a}..{b}")
        }
        7 => {
            // Swap two byte runs.
            let a = floor(text, rng.below(text.len().max(1)));
            let b = floor(text, (a + 1 + rng.below(16)).min(text.len()));
            let c = floor(text, b + rng.below(text.len() - b + 1));
            let d = floor(text, (c + 1 + rng.below(16)).min(text.len()));
            if a <= b && b <= c && c <= d {
                s = format!(
                    "{}{}{}{}{}",
                    &text[..a],
                    &text[c..d],
                    &text[b..c],
                    &text[a..b],
                    &text[d..]
                );
            }
            format!("swap bytes {a}..{b} with {c}..{d}")
        }
        8 => {
            // Several token-level edits at once.
            let mut cur = text.to_string();
            let mut parts = Vec::new();
            for _ in 0..(2 + rng.below(4)) {
                let t = token_ranges(&cur);
                let (m, d) = mutate(rng, &cur, &t);
                cur = m;
                parts.push(d);
            }
            s = cur;
            parts.join(", ")
        }
        _ => {
            // Replace a random byte by a random ASCII byte.
            let a = floor(text, rng.below(text.len().max(1)));
            let b = ceil(text, a + 1).min(text.len());
            let c = (b' ' + rng.below(95) as u8) as char;
            s.replace_range(a..b, &c.to_string());
            format!("set byte {a} to {c:?}")
        }
    };
    (s, desc)
}

/// Options for a mutated kernel: mostly the two defaults, sometimes another
/// target, a `-p` value for one of the file's names, or a kernel selection.
fn mutated_opts(rng: &mut Rng, text: &str, toks: &[(usize, usize)]) -> Options {
    let mut o = if rng.chance(50) {
        specialised()
    } else {
        default_opts()
    };
    if rng.chance(30) {
        o.target = *rng.pick(&Target::ALL);
    }
    if rng.chance(20) && !toks.is_empty() {
        let (a, b) = toks[rng.below(toks.len())];
        let name = &text[a..b];
        if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            o.params
                .push((name.to_string(), rng.pick(PARAM_VALUES).to_string()));
        }
    }
    if rng.chance(5) {
        o.kernel = Some(rng.pick(NAMES).to_string());
    }
    o
}

#[test]
fn mutated_kernels_never_panic_and_report_coded_errors() {
    let mut rng = Rng(0x5eed_0f9c_2024);
    let mut cases = Vec::new();
    for (name, text) in seeds() {
        // The unmutated kernel compiles with both option sets.
        for c in both(name.clone(), text.clone()) {
            let r = pk_lang::compile_source(&c.what, &c.text, &c.opts);
            assert!(
                r.is_ok(),
                "{name} does not compile:\n{}",
                r.err()
                    .map(|f| f.render(RenderStyle::Plain))
                    .unwrap_or_default()
            );
        }
        let toks = token_ranges(&text);
        assert!(toks.len() > 20, "{name}: too few tokens");
        for _ in 0..300 {
            let (m, desc) = mutate(&mut rng, &text, &toks);
            let opts = mutated_opts(&mut rng, &m, &token_ranges(&m));
            cases.push(Case {
                what: format!("{name}: {desc}"),
                text: m,
                opts,
            });
        }
    }
    let total = cases.len();
    assert_clean(check_all(cases), total);
}

/// The mutation corpus's mutants that still parse format to the same
/// program (same AST, tokens and comments) and to a fixed point.
#[test]
fn mutated_kernels_that_parse_format_to_the_same_program() {
    let mut rng = Rng(0x000f_04a7_2026);
    let (mut accepted, mut total) = (0usize, 0usize);
    let mut failures = Vec::new();
    for (name, text) in seeds() {
        let toks = token_ranges(&text);
        for _ in 0..120 {
            let (m, desc) = mutate(&mut rng, &text, &toks);
            total += 1;
            match common::check_format(&format!("{name}: {desc}"), &m) {
                None => {}
                Some(Ok(_)) => accepted += 1,
                Some(Err(e)) => failures.push(e),
            }
        }
    }
    eprintln!("{total} mutants, {accepted} parse and format");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        accepted * 4 >= total,
        "only {accepted} of {total} mutants parse"
    );
}

#[test]
fn every_truncation_at_a_token_boundary_fails_cleanly() {
    let mut cases = Vec::new();
    for (name, text) in seeds() {
        let toks = token_ranges(&text);
        let mut cuts: Vec<usize> = toks.iter().map(|t| t.0).collect();
        cuts.extend(toks.iter().map(|t| t.1));
        cuts.sort_unstable();
        cuts.dedup();
        for cut in cuts {
            cases.extend(both(
                format!("{name}: truncated at byte {cut}"),
                text[..cut].to_string(),
            ));
        }
    }
    let total = cases.len();
    assert!(total > 1000, "only {total} truncations");
    assert_clean(check_all(cases), total);
}

#[test]
fn random_bytes_and_token_soup_never_panic() {
    let mut rng = Rng(0xb17e_50f7);
    let mut cases = Vec::new();
    for i in 0..300 {
        // Arbitrary bytes, made UTF-8 as an editor would show them.
        let len = rng.below(600);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        cases.extend(both(format!("random bytes #{i}"), text));
        // Printable ASCII noise.
        let len = rng.below(600);
        let text: String = (0..len)
            .map(|_| (b' ' + rng.below(95) as u8) as char)
            .collect();
        cases.extend(both(format!("random ASCII #{i}"), text));
    }
    for i in 0..600 {
        // Token soup, sometimes after a plausible kernel header.
        let mut text = String::new();
        if rng.chance(50) {
            text.push_str(
                "kernel k<M = 64, N = 128>(x: f32[M, N] block [8, N] at (i, 0)) -> y: f32[M, N] block [8, N] at (i, 0)\ngrid (i in M / 8 parallel)\n{\n",
            );
        }
        for _ in 0..rng.below(120) {
            let t = match rng.below(3) {
                0 => rng.pick(SNIPPETS),
                1 => rng.pick(NAMES),
                _ => rng.pick(NUMBERS),
            };
            text.push_str(t);
            text.push(if rng.chance(10) { '\n' } else { ' ' });
        }
        if rng.chance(50) {
            text.push_str("\n}\n");
        }
        cases.extend(both(format!("token soup #{i}"), text));
    }
    let total = cases.len();
    assert_clean(check_all(cases), total);
}

/// A kernel around `body`, with a blocked input `x` and output `y`.
fn kernel(body: &str) -> String {
    format!(
        "kernel k<M = 256, N = 512>(\n    x: f32[M, N] block [128, 512] at (i, 0),\n) -> y: f32[M, N] block [128, 512] at (i, 0)\ngrid (i in M / 128 parallel)\n{{\n{body}\n}}\n"
    )
}

/// The codes of compiling `text` with both option sets (which must agree);
/// empty when it compiles.
fn codes_of(what: &str, text: &str) -> Vec<String> {
    let [a, b] = both(what.to_string(), text.to_string())
        .map(|c| compile(&c).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(a, b, "{what}: option sets disagree");
    a
}

/// Expressions with constants at the edge of 64 bits: shapes, indices,
/// axes and shifts that overflow naive `i64`/`u64` arithmetic.
const EXTREME: &[&str] = &[
    "y[..] = x[9223372036854775807, :];",
    "y[..] = x[ds(9223372036854775807, 8), :];",
    "y[..] = x[ds(9223372036854775800, 8), :];",
    "y[..] = x[9223372036854775800..9223372036854775807, :];",
    "y[..] = x[..] * abs(-9223372036854775807 - 1);",
    "y[..] = x[..] * abs(-9223372036854775807 - 1) as f32;",
    "y[..] = x[..] * (9223372036854775807 + 1);",
    "y[..] = x[..] * (-9223372036854775807 - 2);",
    "y[..] = x[..] * (9223372036854775807 * 2);",
    "y[..] = x[..] * ((-9223372036854775807 - 1) / -1);",
    "y[..] = x[..] * ((-9223372036854775807 - 1) % -1);",
    "y[..] = x[..] * cdiv(9223372036854775807, 2);",
    "y[..] = x[..] * (1 << 9223372036854775807);",
    "y[..] = x[..] * (1 >> -1);",
    "y[..] = x[..] * max(9223372036854775807, -9223372036854775807 - 1);",
    "let t = reshape(x[..], [4294967296, 4294967296]);",
    "let t = reshape(x[..], [9223372036854775807, 9223372036854775807]);",
    "y[..] = x[..] + mean(zeros(f32, [4294967296, 4294967296]));",
    "y[..] = x[..] + sum(ones(f32, [4294967296, 4294967296]), axis=1, keepdims=true);",
    "y[..] = x[..] * (iota(i32, [8, 128], 9223372036854775807) as f32);",
    "y[..] = x[..] * (iota(i32, [8, 128], -9223372036854775807 - 1) as f32);",
    "y[..] = roll(x[..], 9223372036854775807, 1);",
    "y[..] = x[..] * program_id(-9223372036854775807 - 1) as f32;",
    "y[..] = transpose(x[..], [9223372036854775807, 0]);",
    "y[..] = broadcast(x[..], [9223372036854775807, 128, 512]);",
    "for t in 0..9223372036854775807 step 9223372036854775807 { y[..] = x[..]; }",
];

/// Kernel headers with extreme sizes: arrays, blocks, grids, scratch
/// buffers and VMEM limits whose byte counts overflow 64 bits.
const EXTREME_HEADERS: &[&str] = &[
    "kernel k<N = 4294967296>(x: f32[N, N] in any) -> y: f32[8, 128] block [8, 128] at (0, 0)\ngrid (i in 1 arbitrary)\nscratch (buf: vmem f32[N, N])\n{ y[..] = 0.0; }",
    "kernel k<N = 9223372036854775807>(x: f32[N, 128] in any) -> y: f32[8, 128] block [8, 128] at (0, 0)\ngrid (i in 1 arbitrary)\nscratch (buf: vmem f32[2, N, 128])\n{ y[..] = 0.0; }",
    "kernel k<N = 9223372036854775807>(x: f32[N, 128] block [N, 128] at (0, 0)) -> y: f32[N, 128] block [N, 128] at (0, 0)\ngrid (i in 1 arbitrary)\n{ y[..] = x[..]; }",
    "kernel k<N = 9223372036854775807>(x: f32[8, 128] block [8, 128] at (0, 0)) -> y: f32[8, 128] block [8, 128] at (0, 0)\nprefetch (ids: i32[N])\ngrid (i in 1 arbitrary)\n{ y[..] = x[..]; }",
    "kernel k<N = 4294967296>(x: f32[8, 128] block [8, 128] at (0, 0)) -> y: f32[8, 128] block [8, 128] at (0, 0)\ngrid (i in N arbitrary, j in N arbitrary, k in N arbitrary)\n{ y[..] = x[..]; }",
    "kernel k(x: f32[8, 128] block [8, 128] at (0, 0)) -> y: f32[8, 128] block [8, 128] at (0, 0)\ngrid (i in 1 arbitrary)\nvmem_limit 9223372036854775807 * 2\n{ y[..] = x[..]; }",
    "kernel k(x: f32[8, 128] block [8, 128] at (0, 0)) -> y: f32[8, 128] block [8, 128] at (0, 0)\ngrid (i in 1 arbitrary)\nvmem_limit -1\n{ y[..] = x[..]; }",
    "kernel k<N = 9223372036854775807>(x: f32[N] block [N] at (i)) -> y: f32[N] block [N] at (i)\ngrid (i in cdiv(N, 1024) parallel)\n{ y[..] = x[..]; }",
    "kernel k<N = 9223372036854775807>(x: f32[N] block [1024] at (i)) -> y: f32[N] block [1024] at (i)\ngrid (i in cdiv(N, 1024) parallel)\n{ y[..] = x[..]; }",
];

#[test]
fn extreme_constants_never_panic() {
    let mut cases = Vec::new();
    for body in EXTREME {
        cases.extend(both(format!("body `{body}`"), kernel(body)));
    }
    for h in EXTREME_HEADERS {
        cases.extend(both(
            format!("header `{}`", &h[..h.find('\n').unwrap_or(h.len())]),
            h.to_string(),
        ));
    }
    let total = cases.len();
    assert_clean(check_all(cases), total);
}

#[test]
fn pathological_files_get_exact_diagnostics() {
    std::thread::Builder::new()
        .name("pathological".into())
        .stack_size(8 << 20)
        .spawn(pathological)
        .expect("spawn the checking thread")
        .join()
        .expect("pathological inputs are handled without panicking");
}

fn pathological() {
    let none: Vec<String> = Vec::new();
    let only = |c: &str| vec![c.to_string()];

    assert_eq!(codes_of("empty file", ""), none);
    assert_eq!(codes_of("whitespace", " \n\t\r\n  \x0c\n"), none);
    assert_eq!(
        codes_of(
            "only comments",
            "//! module docs\n// a line comment\n/* a block /* nested */ comment */\n/// docs before nothing\n////\n//\n"
        ),
        none
    );

    // 1 MB lines: a comment, identifiers, invalid text; and a 256 KiB line
    // of statements (each one is checked and lowered, so it is the slow one).
    let mb = 1 << 20;
    assert_eq!(
        codes_of("1 MB comment line", &format!("// {}\n", "x".repeat(mb))),
        none
    );
    let stmts = "y[..] = x[..] * 2.0; ".repeat(mb / 4 / 21);
    assert_eq!(
        codes_of("256 KiB line of statements", &kernel(&stmts)),
        none
    );
    let long_name = "a".repeat(mb);
    assert_eq!(
        codes_of(
            "1 MB identifier",
            &kernel(&format!("let {long_name} = x[..];\ny[..] = {long_name};"))
        ),
        none
    );
    assert_eq!(
        codes_of(
            "1 MB unknown identifier",
            &kernel(&format!("y[..] = {long_name};"))
        ),
        only("PK0101")
    );
    assert_eq!(codes_of("1 MB of `@`", &"@".repeat(mb)), only("PK0001"));
    assert_eq!(codes_of("1 MB of `é`", &"é".repeat(mb / 2)), only("PK0001"));

    // Deep nesting is rejected before any recursive pass sees it.
    let parens = format!("y[..] = {}x[..]{};", "(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(
        codes_of("10,000 nested parentheses", &kernel(&parens)),
        only("PK0006")
    );
    assert_eq!(
        codes_of("10,000 open parentheses", &"(".repeat(10_000)),
        only("PK0006")
    );
    assert_eq!(
        codes_of("10,000 closing parentheses", &")".repeat(10_000)),
        only("PK0003")
    );
    let minus = format!("y[..] = {}x[..];", "-".repeat(10_000));
    assert_eq!(
        codes_of("10,000 minus signs", &kernel(&minus)),
        only("PK0006")
    );
    let nots = format!("let b = {}true;", "!".repeat(10_000));
    assert_eq!(codes_of("10,000 `!`", &kernel(&nots)), only("PK0006"));
    let brackets = format!("let s = {}1{};", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        codes_of("10,000 nested lists", &kernel(&brackets)),
        only("PK0006")
    );
    let ifs = format!(
        "{}y[..] = x[..];{}",
        "if i == 0 { ".repeat(10_000),
        " }".repeat(10_000)
    );
    assert_eq!(codes_of("10,000 nested ifs", &kernel(&ifs)), only("PK0006"));
    let blocks = format!("{}{}", "{".repeat(10_000), "}".repeat(10_000));
    assert_eq!(
        codes_of("10,000 nested blocks", &kernel(&blocks)),
        only("PK0006")
    );
    // 200 levels is the limit; at it everything still works.
    let at_limit = format!("y[..] = {}x[..]{};", "(".repeat(190), ")".repeat(190));
    assert_eq!(codes_of("190 nested parentheses", &kernel(&at_limit)), none);

    // A long `else if` chain (statement form) nests without brackets.
    let mut chain = String::new();
    for k in 0..150 {
        chain.push_str(&format!("if i == {k} {{ y[..] = x[..] * {k}.0; }} else "));
    }
    chain.push_str("{ y[..] = x[..]; }");
    assert_eq!(codes_of("150-branch else-if chain", &kernel(&chain)), none);

    // Chains that nest the tree without brackets: past the tree depth
    // limit each is one PK0006, however long (and dropping the rejected
    // tree must not recurse either).
    let sum = format!("y[..] = x[..]{};", " + x[..]".repeat(10_000));
    assert_eq!(codes_of("10,000-term sum", &kernel(&sum)), only("PK0006"));
    let long_sum = format!("y[..] = x[..]{};", "+x[..]".repeat(200_000));
    assert_eq!(
        codes_of("200,000-term sum", &kernel(&long_sum)),
        only("PK0006")
    );
    let casts = format!("y[..] = x[..]{};", " as f32".repeat(10_000));
    assert_eq!(codes_of("10,000 casts", &kernel(&casts)), only("PK0006"));
    let indexes = format!("let v = x{};", "[..]".repeat(3_000));
    assert_eq!(codes_of("3,000 indexes", &kernel(&indexes)), only("PK0006"));
    let mut chain = String::new();
    for k in 0..3_000 {
        chain.push_str(&format!("if i == {k} {{ y[..] = x[..]; }} else "));
    }
    chain.push_str("{ y[..] = x[..]; }");
    assert_eq!(
        codes_of("3,000-branch else-if chain", &kernel(&chain)),
        only("PK0006")
    );
    let value_chain = format!(
        "y[..] = x[..] * {}0.0{};",
        "if i == 0 { 1.0 } else { ".repeat(3_000),
        " }".repeat(3_000)
    );
    assert_eq!(
        codes_of("3,000 nested if values", &kernel(&value_chain)),
        only("PK0006")
    );
    // Well below the limit, a long sum checks.
    let ok_sum = format!("y[..] = x[..]{};", " + x[..]".repeat(100));
    assert_eq!(codes_of("100-term sum", &kernel(&ok_sum)), none);

    // Unterminated comments, alone, nested and after code.
    assert_eq!(codes_of("lone `/*`", "/*"), only("PK0002"));
    assert_eq!(
        codes_of("unclosed nested comment", "/* a /* b */ c"),
        only("PK0002")
    );
    assert_eq!(
        codes_of("10,000 unclosed comments", &"/*".repeat(10_000)),
        only("PK0002")
    );
    assert_eq!(
        codes_of(
            "comment after a kernel",
            &format!("{}/* unfinished", kernel("y[..] = x[..];"))
        ),
        only("PK0002")
    );
    assert_eq!(
        codes_of("`*/` without `/*`", &kernel("y[..] = x[..]; */")),
        only("PK0003")
    );

    // Numbers at and beyond the limits.
    assert_eq!(
        codes_of(
            "literal above u64",
            &kernel("y[..] = x[..] * 99999999999999999999999999999999;")
        )[0],
        "PK0005"
    );
    assert_eq!(
        codes_of(
            "literal above i64",
            &kernel("y[..] = x[..] * 18446744073709551615;")
        ),
        only("PK0005")
    );
    // A float literal beyond f64 (it reads as infinity): no exact code is
    // required here, only a clean result.
    codes_of(
        "huge float",
        &kernel(&format!("y[..] = x[..] * 1{}.0;", "0".repeat(400))),
    );

    // Control characters, a byte order mark, and NUL.
    assert_eq!(codes_of("NUL bytes", "\0\0\0"), only("PK0001"));
    codes_of(
        "byte order mark",
        &format!("\u{feff}{}", kernel("y[..] = x[..];")),
    );
}

/// The editor analysis behind `pkc lsp` on the mutation corpus: every
/// query at every token boundary of a mutant answers without a panic,
/// whatever the text (an editor sends every partial state of a file).
#[test]
fn mutated_kernels_never_panic_the_editor_analysis() {
    use pk_lang::analysis::{Analysis, Workspace};
    let mut rng = Rng(0x1a5e_ed17_2026);
    let ws = Workspace {
        targets: vec![Target::V5e, Target::V6e],
        ..Workspace::default()
    };
    let mut failures = Vec::new();
    let mut total = 0;
    for (name, text) in seeds() {
        let toks = token_ranges(&text);
        for _ in 0..25 {
            let (m, desc) = mutate(&mut rng, &text, &toks);
            total += 1;
            let r = catch_unwind(AssertUnwindSafe(|| {
                let a = Analysis::run("m.pk", &m, None, &ws);
                let mut offsets: Vec<u32> = token_ranges(&m)
                    .iter()
                    .flat_map(|(s, e)| [*s as u32, *e as u32])
                    .collect();
                offsets.push(m.len() as u32 + 5);
                for o in offsets.into_iter().step_by(3) {
                    let _ = a.hover(o);
                    let _ = a.definition(o);
                    let _ = a.references(o, true);
                    let _ = a.complete(o);
                    let _ = a.signature(o);
                }
                let _ = a.let_hints();
                for f in &a.diags {
                    let _ = a.quick_fix(&f.diag);
                }
                let _ = a.tokens();
            }));
            if r.is_err() {
                failures.push(format!("{name}: {desc}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} mutants panic the analysis:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
