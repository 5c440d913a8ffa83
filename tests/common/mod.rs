//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether golden files should be re-recorded (`PK_BLESS=1`).
pub fn bless() -> bool {
    std::env::var_os("PK_BLESS").is_some_and(|v| v != "0")
}

/// The `.pk` files of a directory, sorted.
pub fn pk_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "pk"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Adds every `.pk` file under `dir` to `out`, recursively, skipping
/// hidden folders, build output and `node_modules`.
pub fn pk_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                pk_files_under(&p, out);
            }
        } else if name.ends_with(".pk") {
            out.push(p);
        }
    }
}

/// Compares `actual` with the golden file at `path` (or records it when
/// blessing). Returns a description of the mismatch.
pub fn golden(path: &Path, actual: &str) -> Result<(), String> {
    if bless() {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, actual).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(path).map_err(|_| {
        format!(
            "{}: golden file missing (run with PK_BLESS=1 to record it)",
            path.display()
        )
    })?;
    if expected == actual {
        return Ok(());
    }
    let first = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.lines().count().min(actual.lines().count()));
    Err(format!(
        "{}: differs from the golden file at line {}\n  expected: {}\n  actual:   {}\n(re-record with PK_BLESS=1 if the change is intended)",
        path.display(),
        first + 1,
        expected.lines().nth(first).unwrap_or("<end of file>"),
        actual.lines().nth(first).unwrap_or("<end of file>"),
    ))
}

/// Path relative to the repository root, with `/` separators, for stable
/// names in rendered diagnostics.
pub fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Runs `pkc` from the repository root with plain (uncoloured) output.
pub fn pkc(args: &[&str]) -> Output {
    pkc_in(&root(), args)
}

/// Runs `pkc` in `dir` (short relative paths keep messages on one line),
/// with plain output, libtpu kept from querying cloud metadata, and the
/// default libtpu.
pub fn pkc_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env_remove("RUST_BACKTRACE")
        .env_remove("PK_LIBTPU")
        .output()
        .expect("pkc runs")
}

/// The exit code of a `pkc` run.
pub fn code(o: &Output) -> i32 {
    o.status
        .code()
        .expect("pkc exits with a code, not a signal")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!("pk-test-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("create a temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The directory as a command-line argument.
    pub fn arg(&self) -> &str {
        self.0.to_str().expect("temp paths are UTF-8")
    }

    /// Writes `bytes` to file `name` in the directory.
    pub fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).expect("write a temp file");
        p
    }

    /// Entry names, sorted.
    pub fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .expect("list")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kernel files of kernels/ that need a TPU generation's MXU inputs or
/// dtypes (int8, fp8), with the generations they check and build for; on
/// the others they fail with a coded diagnostic (tests/kernel_targets.rs).
pub const GENERATION_SPECIFIC: &[(&str, &[&str])] = &[("qmatmul.pk", &["v5e", "v5p", "v6e"])];

/// Whether `path` is one of [`GENERATION_SPECIFIC`].
pub fn generation_specific(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    path.parent().and_then(|p| p.file_name()) == Some(std::ffi::OsStr::new("kernels"))
        && GENERATION_SPECIFIC.iter().any(|(f, _)| *f == name)
}

/// Whether libtpu is installed; without it a test that compiles with it
/// prints a notice and passes, unless `CI=true` (where it must be).
pub fn have_libtpu() -> bool {
    if pk_runtime::pjrt::locate_libtpu(None).is_ok() || std::env::var("CI").as_deref() == Ok("true")
    {
        return true;
    }
    eprintln!(
        "notice: libtpu is not installed; skipping (install it with `bash .ci/setup-libtpu`)"
    );
    false
}

/// The `PKxxxx` codes in a rendering, in order.
pub fn codes_in(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| {
            l.len() == 6 && l.starts_with("PK") && l[2..].bytes().all(|b| b.is_ascii_digit())
        })
        .map(str::to_string)
        .collect()
}

/// The comments of `.pk` source (`//` to the end of the line, nested
/// `/* */`), outside string literals, each line without trailing spaces.
pub fn source_comments(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if b[i..].starts_with(b"//") {
            let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
            out.push(text[i..end].trim_end().to_string());
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (start, mut depth) = (i, 0usize);
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            let c = &text[start..i.min(text.len())];
            out.push(c.lines().map(str::trim_end).collect::<Vec<_>>().join("\n"));
        } else {
            i += 1;
        }
    }
    out
}

/// The tokens of `.pk` source as written, without a `,` right before a
/// closing bracket (the formatter adds or drops those).
pub fn source_tokens(text: &str) -> Vec<String> {
    let (toks, _) = pk_lang::lexer::lex(text);
    // A doc comment is a token; the formatter drops trailing spaces from
    // every line, as the doc text itself does.
    let words: Vec<String> = toks
        .iter()
        .map(|(l, _, r)| text[*l..*r].trim_end().to_string())
        .collect();
    let mut out = Vec::new();
    for (k, w) in words.iter().enumerate() {
        let next = words.get(k + 1).map(String::as_str);
        if w == "," && matches!(next, Some(")" | "]" | ">" | "}")) {
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// `None` if `text` does not parse; else checks that `pkc fmt`'s layout of
/// it parses to the same AST (spans aside), has the same tokens and
/// comments, and is its own layout. Returns the layout.
pub fn check_format(name: &str, text: &str) -> Option<Result<String, String>> {
    use pk_lang::span::FileId;
    let (before, diags) = pk_lang::parse::parse(FileId::default(), text);
    if !diags.is_empty() {
        return None;
    }
    let out = match pk_lang::fmt::format_source(FileId::default(), text) {
        Ok(o) => o,
        Err(e) => return Some(Err(format!("{name}: not formatted: {e:?}"))),
    };
    let (after, diags) = pk_lang::parse::parse(FileId::default(), &out);
    let dump = |m: &pk_lang::ast::Module| {
        // Spans print as `START..END`; nothing else in a dump does.
        let d = format!("{m:?}");
        let mut s = String::new();
        let mut rest = d.as_str();
        while let Some(p) = rest.find("..") {
            let head = &rest[..p];
            let digits_before =
                head.len() - head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            let tail = &rest[p + 2..];
            let digits_after =
                tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits_before > 0 && digits_after > 0 {
                s.push_str(&head[..head.len() - digits_before]);
                s.push('@');
                rest = &tail[digits_after..];
            } else {
                s.push_str(&rest[..p + 2]);
                rest = tail;
            }
        }
        s.push_str(rest);
        s
    };
    let fail = |why: &str| Some(Err(format!("{name}: {why}\n--- formatted:\n{out}")));
    if !diags.is_empty() {
        return fail("the layout does not parse");
    }
    if dump(&before) != dump(&after) {
        return fail("the layout parses to a different AST");
    }
    if source_tokens(text) != source_tokens(&out) {
        return fail("the layout has different tokens");
    }
    if source_comments(text) != source_comments(&out) {
        return fail("the layout has different comments");
    }
    match pk_lang::fmt::format_source(FileId::default(), &out) {
        Ok(again) if again == out => Some(Ok(out)),
        Ok(_) => fail("formatting the layout again changes it"),
        Err(e) => fail(&format!("the layout does not format: {e:?}")),
    }
}
