//! Code shared by the Mosaic integration tests: the kernels to lower,
//! compiling and lowering them, and golden files.
#![allow(dead_code)]

use pk_lang::{ir, Options};
use pk_lowering::mosaic::{self, MosaicModule};
use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `kernels/*.pk`, `tests/in/*.pk` and the operation fixtures of
/// `lowering/tests/mosaic_ops/*.pk`, sorted within each folder.
pub fn inputs() -> Vec<PathBuf> {
    let mut v = pk_files(&root().join("kernels"));
    v.extend(pk_files(&root().join("tests/in")));
    v.extend(pk_files(&root().join("lowering/tests/mosaic_ops")));
    v
}

fn pk_files(dir: &Path) -> Vec<PathBuf> {
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

pub fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("x")
        .to_string()
}

/// Compiles `path` with every kernel specialised; `params` override defaults.
pub fn compile(path: &Path, params: &[(&str, &str)]) -> ir::Module {
    let opts = Options {
        specialise: true,
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        ..Options::default()
    };
    pk_lang::Session::open(path)
        .and_then(|s| s.check(&opts))
        .unwrap_or_else(|f| {
            panic!(
                "{} does not compile:\n{}",
                path.display(),
                f.render(pk_lang::diag::RenderStyle::Plain)
            )
        })
}

/// Lowers every kernel of a compiled module.
pub fn lower_all(module: &ir::Module) -> Vec<(ir::Kernel, MosaicModule)> {
    module
        .kernels
        .iter()
        .map(|k| {
            let m = mosaic::lower(module, k, &mosaic::Options::default())
                .unwrap_or_else(|e| panic!("kernel `{}` does not lower: {e}", k.name));
            (k.clone(), m)
        })
        .collect()
}

/// Source locations name files relative to the repository root, so golden
/// files do not depend on where the repository is.
pub fn relative(text: &str) -> String {
    let root = root()
        .canonicalize()
        .map(|p| format!("{}/", p.display()))
        .unwrap_or_default();
    let raw = format!("{}/", root_raw());
    text.replace(&raw, "").replace(&root, "")
}

fn root_raw() -> String {
    root().display().to_string()
}

/// Whether golden files should be re-recorded (`PK_BLESS=1`).
pub fn bless() -> bool {
    std::env::var_os("PK_BLESS").is_some_and(|v| v != "0")
}

/// Compares `actual` with the golden file at `path`, or records it when
/// blessing. Returns a description of the first difference.
pub fn golden(path: &Path, actual: &str) -> Result<(), String> {
    if bless() {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
        }
        return std::fs::write(path, actual).map_err(|e| e.to_string());
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
        "{}: differs from the golden file at line {}\n  expected: {}\n  actual:   {}\n\
         (re-record with PK_BLESS=1 if the change is intended)",
        path.display(),
        first + 1,
        expected.lines().nth(first).unwrap_or("<end of file>"),
        actual.lines().nth(first).unwrap_or("<end of file>"),
    ))
}
