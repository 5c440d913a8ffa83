//! `pkc fmt [--check] FILE...`: lay `.pk` files out in pk's one canonical
//! layout (docs/formatting.md), in place, or check that they already are.
//!
//! A file is rewritten through a temporary file in its own directory that
//! is renamed over it, so it is never half-written; a file that does not
//! parse gets its parse diagnostics and is left as it is. `-` formats
//! standard input to standard output.

use super::common::{report, EXIT_ERRORS, EXIT_OK};
use super::ui::{status, ui};
use clap::Args as ClapArgs;
use pk_lang::diag::{codes, Diag};
use pk_lang::fmt::{format_source, FormatError};
use pk_lang::span::{SourceMap, Span};
use pk_lang::Failure;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The .pk files to format; a directory stands for the .pk files under
    /// it, `-` for standard input (written to standard output).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Change nothing: list the files whose layout differs (PK0010) and
    /// exit with 1 if there are any.
    #[arg(long)]
    pub check: bool,
}

pub fn run(a: Args) -> u8 {
    let mut files = Vec::new();
    for f in &a.files {
        if f.is_dir() {
            let mut found = Vec::new();
            collect(f, &mut found);
            found.sort();
            files.extend(found);
        } else {
            files.push(f.clone());
        }
    }
    let mut code = EXIT_OK;
    let (mut changed, mut total) = (0usize, 0usize);
    for file in &files {
        total += 1;
        match one(file, a.check) {
            Ok(true) => changed += 1,
            Ok(false) => {}
            Err(c) => code = code.max(c),
        }
    }
    if a.check && changed > 0 {
        if !ui().json {
            eprintln!(
                "error: {changed} of {total} file{} not formatted (run `pkc fmt` on {})",
                if total == 1 { "" } else { "s" },
                if changed == 1 { "it" } else { "them" }
            );
        }
        code = code.max(EXIT_ERRORS);
    } else if !a.check && files.iter().any(|f| f != Path::new("-")) {
        status(&format!(
            "formatted {total} file{} ({changed} changed)",
            if total == 1 { "" } else { "s" }
        ));
    }
    code
}

/// The `.pk` files under `dir`, skipping hidden directories, `target` and
/// symbolic links to directories (which could loop).
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            if !name.starts_with('.') && name != "target" {
                collect(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "pk") {
            out.push(p);
        }
    }
}

fn fail(name: &str, text: &str, diags: Vec<Diag>) -> u8 {
    let mut sources = SourceMap::new();
    sources.add(name.to_string(), text.to_string());
    report(&Failure {
        diags,
        sources: Arc::new(sources),
    })
    .max(EXIT_ERRORS)
}

/// Formats one file (or standard input); `Ok(true)` if its layout changes.
fn one(path: &Path, check: bool) -> Result<bool, u8> {
    let stdin = path == Path::new("-");
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let text = if stdin {
        read_stdin().map_err(|d| fail(&name, "", vec![*d]))?
    } else {
        pk_lang::read_source(path).map_err(|f| report(&f).max(EXIT_ERRORS))?
    };
    let file = SourceMap::new().add(name.clone(), text.clone());
    let out = match format_source(file, &text) {
        Ok(out) => out,
        Err(FormatError::Syntax(diags)) => {
            if !ui().json {
                eprintln!("{name}: not formatted: it does not parse");
            }
            return Err(fail(&name, &text, diags));
        }
        Err(FormatError::Unstable(d)) => return Err(fail(&name, &text, vec![*d])),
    };
    let changed = out != text;
    if check {
        if changed {
            let at = first_difference(&text, &out);
            let line = text[..at].matches('\n').count() + 1;
            let d = Diag::new(
                &codes::NOT_FORMATTED,
                format!("`{name}` is not formatted"),
                Span::new(file, at, at),
            )
            .label(match out.lines().nth(line - 1) {
                Some(l) if !l.trim().is_empty() => {
                    let l = l.trim();
                    let shown: String = l.chars().take(60).collect();
                    let more = if shown.len() < l.len() { "..." } else { "" };
                    format!("`pkc fmt` writes line {line} as `{shown}{more}`")
                }
                _ => format!("line {line} differs from `pkc fmt`'s layout"),
            })
            .help(format!(
                "run `pkc fmt {}` to rewrite it",
                if stdin { "-" } else { &name }
            ));
            super::ui::print_diags(&[d], &{
                let mut s = SourceMap::new();
                s.add(name.clone(), text.clone());
                s
            });
        }
        return Ok(changed);
    }
    if stdin {
        let mut o = std::io::stdout().lock();
        if o.write_all(out.as_bytes()).and_then(|_| o.flush()).is_err() {
            return Err(EXIT_ERRORS);
        }
        return Ok(changed);
    }
    if changed {
        write_over(path, &out).map_err(|e| {
            let d = Diag::new(
                &codes::IO_ERROR,
                format!("cannot write `{name}`: {e}"),
                Span::default(),
            )
            .help("the file is unchanged; check that its directory is writable");
            fail(&name, "", vec![d])
        })?;
    }
    Ok(changed)
}

/// The byte offset of the start of the first line where `a` and `b` differ.
fn first_difference(a: &str, b: &str) -> usize {
    let mut at = 0;
    for (la, lb) in a.split_inclusive('\n').zip(b.split_inclusive('\n')) {
        if la != lb {
            return at;
        }
        at += la.len();
    }
    at.min(a.len())
}

/// Standard input as text, at most pk's source size limit.
fn read_stdin() -> Result<String, Box<Diag>> {
    let limit = pk_lang::MAX_SOURCE_BYTES;
    let mut bytes = Vec::new();
    let too_large = || {
        Box::new(
            Diag::new(
                &codes::FILE_TOO_LARGE,
                "standard input is more than the 16 MiB limit",
                Span::default(),
            )
            .help("is this really .pk source?"),
        )
    };
    std::io::stdin()
        .lock()
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            Box::new(
                Diag::new(
                    &codes::IO_ERROR,
                    format!("cannot read standard input: {e}"),
                    Span::default(),
                )
                .help("pass a .pk file instead"),
            )
        })?;
    if bytes.len() > limit {
        return Err(too_large());
    }
    let mut text = String::from_utf8(bytes).map_err(|e| {
        Box::new(
            Diag::new(
                &codes::NOT_UTF8,
                format!(
                    "standard input is not UTF-8 text (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
                Span::default(),
            )
            .help("pass .pk source"),
        )
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// Replaces the file at `path` (through symbolic links) with `text`: a
/// temporary file beside it, with its permissions, renamed over it.
fn write_over(path: &Path, text: &str) -> std::io::Result<()> {
    let dest = std::fs::canonicalize(path)?;
    let dir = dest.parent().unwrap_or(Path::new("."));
    let perms = std::fs::metadata(&dest)?.permissions();
    let mut tmp = tempfile::Builder::new()
        .prefix(".pk-fmt-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    std::fs::set_permissions(tmp.path(), perms)?;
    tmp.persist(&dest).map_err(|e| e.error)?;
    Ok(())
}
