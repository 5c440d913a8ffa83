//! pk's front end: `.pk` source to typed, verified Tile IR.
//!
//! The pipeline, one module per stage:
//!
//! ```text
//! source --lexer--> tokens --parse--> ast --resolve--> Program --check--> ir::Module --verify
//! ```
//!
//! A [`Session`] holds one file's resolved program and checks its kernels
//! per parameter set and per target; [`compile_source`] and
//! [`compile_file`] are a session checked once.

pub mod analysis;
pub mod ast;
pub mod check;
pub mod depth;
pub mod diag;
pub mod files;
pub mod fmt;
pub mod ir;
pub mod lexer;
pub mod parse;
pub mod resolve;
pub mod session;
pub mod span;
pub mod target;

use diag::{codes, Diag};
pub use session::Session;
use span::{SourceMap, Span};
use std::path::Path;
use std::sync::Arc;
pub use target::Target;

/// Source files larger than this are rejected before lexing.
pub const MAX_SOURCE_BYTES: usize = 16 << 20;

/// What to compile and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub target: Target,
    /// `-p NAME=VALUE` pairs, values as written (an integer expression or a
    /// dtype name).
    pub params: Vec<(String, String)>,
    /// Where values of `params` came from, by name, in the words of the
    /// program that set them (`"from the call's keyword arguments"`), for
    /// the note of a failed assertion. A value not listed here was set on
    /// the command line, and the note spells it `-p NAME=VALUE`.
    pub param_origins: Vec<(String, String)>,
    /// `--kernel NAME`: only this kernel. Without it, every kernel of the
    /// file (and `specialise` then applies to each).
    pub kernel: Option<String>,
    /// Require every parameter to have a value (build, run, emit); without
    /// it unbound sizes stay symbolic and are checked as far as possible.
    pub specialise: bool,
    /// Skip the TPU rules (block tiling and divisibility, VMEM and SMEM
    /// budgets, races, MXU input dtypes, 32-bit scalar reads) so that a
    /// kernel breaking one still
    /// lowers. (A 32-bit matmul accumulator is an invariant of the IR.)
    /// Only for tests that show libtpu rejecting what the checker rejects;
    /// no command sets it.
    pub skip_tpu_rules: bool,
}

/// A failed compilation: its diagnostics and the sources they point into.
#[derive(Debug, Clone)]
pub struct Failure {
    pub diags: Vec<Diag>,
    pub sources: Arc<SourceMap>,
}

impl Failure {
    /// Renders the first [`diag::DEFAULT_MAX_SHOWN`] diagnostics as text,
    /// and a count of the rest (which stay in `diags`).
    pub fn render(&self, style: diag::RenderStyle) -> String {
        diag::render_capped(
            &self.diags,
            &self.sources,
            style,
            Some(diag::DEFAULT_MAX_SHOWN),
            "`pkc check --all-errors` shows every one",
        )
    }
}

/// Compiles source text; `name` is the file name shown in diagnostics, and
/// `use NAME` of sibling modules is resolved relative to the working
/// directory. A [`Session`] of the text, checked once.
pub fn compile_source(name: &str, text: &str, opts: &Options) -> Result<ir::Module, Failure> {
    Session::from_text(name, text, None).check(opts)
}

/// Compiles a kernel again from the sources a kernel package carries (its
/// CPU reference's side table): `files` are every file the build loaded,
/// the root first, by the names they were loaded under, so that the
/// result's source map and locations are the build's. Sibling modules come
/// from `files`, never from the disk; the standard library is this pk's.
pub fn compile_embedded(files: &[(String, String)], opts: &Options) -> Result<ir::Module, Failure> {
    Session::embedded(files)?.check(opts)
}

/// Reads and compiles a `.pk` file: a [`Session`] of it, checked once.
pub fn compile_file(path: &Path, opts: &Options) -> Result<ir::Module, Failure> {
    Session::open(path)?.check(opts)
}

/// Reads a source file, reporting unreadable, binary and oversized files.
pub fn read_source(path: &Path) -> Result<String, Failure> {
    read_text(path).map_err(|d| {
        let mut sources = SourceMap::new();
        sources.add(path.to_string_lossy().to_string(), "");
        Failure {
            diags: vec![*d],
            sources: Arc::new(sources),
        }
    })
}

fn read_text(path: &Path) -> Result<String, Box<Diag>> {
    let here = Span::default();
    let bytes = files::read_limited(path, MAX_SOURCE_BYTES as u64).map_err(|e| match e {
        files::ReadError::TooLarge(size) => Diag::new(
            &codes::FILE_TOO_LARGE,
            match size {
                Some(n) => format!(
                    "`{}` is {n} bytes, more than the 16 MiB limit",
                    path.display()
                ),
                None => format!("`{}` is more than the 16 MiB limit", path.display()),
            },
            here,
        )
        .help("is this really a .pk source file?"),
        e => Diag::new(
            &codes::IO_ERROR,
            format!("cannot read `{}`: {}", path.display(), e.reason()),
            here,
        )
        .help("check the path; pk source files end in `.pk`"),
    })?;
    source_text(path, bytes)
}

/// The text of a source file's bytes, without a byte-order mark; bytes
/// that are not UTF-8 are `PK0007`, naming `path`.
pub(crate) fn source_text(path: &Path, bytes: Vec<u8>) -> Result<String, Box<Diag>> {
    let mut text = String::from_utf8(bytes).map_err(|e| {
        Box::new(
            Diag::new(
                &codes::NOT_UTF8,
                format!(
                    "`{}` is not UTF-8 text (invalid byte at offset {})",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ),
                Span::default(),
            )
            .help("pass a .pk source file"),
        )
    })?;
    if text.starts_with(files::BOM) {
        text.drain(..files::BOM.len());
    }
    Ok(text)
}

/// The parameters of each selected kernel of the file at `path`; see
/// [`Session::params`].
pub fn kernel_params(
    path: &Path,
    opts: &Options,
) -> Result<Vec<(String, Vec<ir::Param>)>, Failure> {
    Session::open(path)?.params(opts)
}

/// Whether the selected kernel's `where` constraints hold, per
/// configuration; see [`Session::where_holds`].
pub fn where_holds(
    path: &Path,
    opts: &Options,
    names: &[String],
    configs: &[Vec<i64>],
) -> Result<Vec<bool>, Failure> {
    Session::open(path)?.where_holds(opts, names, configs)
}
