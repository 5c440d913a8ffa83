//! References across files. A module item (a function, constant or kernel)
//! of a `use`d module or of `std` is named in many files, and each file's
//! [`Index`] knows only its own uses. [`ItemKey`] names an item the same
//! way in every file's analysis (the file it is declared in, by path, and
//! its declaring identifier's bytes there), so that the uses of one item
//! can be collected from other open documents ([`Analysis::uses_of_item`])
//! and from files on disk ([`uses_in_file`], parsed and resolved, never
//! checked).

use super::index::{self, DefKind, Index};
use super::Analysis;
use crate::session::Session;
use crate::span::{SourceMap, Span};
use std::path::{Path, PathBuf};

/// A module item as every file's analysis names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ItemKey {
    /// The declaring file: its canonical path, or the standard library's
    /// name for it (`std/math.pk`).
    pub file: String,
    pub start: u32,
    pub end: u32,
    pub name: String,
}

/// The name under which a file's items are keyed: its canonical path when
/// it is on disk, its name as loaded otherwise (the standard library).
pub fn file_key(name: &str) -> String {
    std::fs::canonicalize(name)
        .map(|p| p.to_string_lossy().to_string())
        .unwrap_or_else(|_| name.to_string())
}

fn key_of(ix: &Index, sources: &SourceMap, d: usize) -> Option<ItemKey> {
    let def = ix.defs.get(d)?;
    if !matches!(
        def.kind,
        DefKind::Function | DefKind::Const | DefKind::Kernel
    ) {
        return None;
    }
    let s = def.name_span;
    Some(ItemKey {
        file: file_key(&sources.get(s.file).name),
        start: s.start,
        end: s.end,
        name: def.name.clone(),
    })
}

/// The uses in `ix`'s root file of the item `key`.
fn uses_in(ix: &Index, sources: &SourceMap, key: &ItemKey) -> Vec<Span> {
    // Declarations of the item in this index: at most one, but a file key
    // is a canonical path, so compare through it.
    let mine: Vec<usize> = (0..ix.defs.len())
        .filter(|&d| ix.defs[d].name == key.name && key_of(ix, sources, d).as_ref() == Some(key))
        .collect();
    mine.iter().flat_map(|&d| ix.uses_of(d)).collect()
}

impl Analysis {
    /// The module item named (used or declared) at `offset` of the root
    /// file: what other files may name too.
    pub fn item_at(&self, offset: u32) -> Option<ItemKey> {
        let d = self.index.def_at(self.root, offset)?;
        key_of(&self.index, &self.sources, d)
    }

    /// The uses of `key` in this analysis' root file.
    pub fn uses_of_item(&self, key: &ItemKey) -> Vec<Span> {
        uses_in(&self.index, &self.sources, key)
    }
}

/// The uses of `key` in the `.pk` file at `path` as it is on disk, with
/// the source map their spans point into; `None` when the file cannot be
/// read or names nothing of the item's.
pub fn uses_in_file(path: &Path, key: &ItemKey) -> Option<(SourceMap, Vec<Span>)> {
    let text = std::fs::read_to_string(path).ok()?;
    // Most files do not name the item at all: skip them unparsed.
    if !text.contains(key.name.as_str()) {
        return None;
    }
    let session = Session::open(path).ok()?;
    if session.program().modules.is_empty() {
        return None;
    }
    let ix = crate::session::on_compiler_stack(|| index::build(session.program()));
    let spans = uses_in(&ix, session.sources(), key);
    (!spans.is_empty()).then(|| (session.sources().clone(), spans))
}

/// Every `.pk` file under `root`, at most `limit` of them: each
/// directory's files by name, then its subdirectories', skipping hidden
/// ones and build output (`target`).
pub fn pk_files(root: &Path, limit: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        let mut subdirs = Vec::new();
        for p in entries {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if p.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    subdirs.push(p);
                }
            } else if name.ends_with(".pk") {
                if out.len() >= limit {
                    return out;
                }
                out.push(p);
            }
        }
        dirs.extend(subdirs.into_iter().rev());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIB: &str = "/// Twice `x`.\nfn twice(x) {\n    x + x\n}\n";
    const MAIN: &str = "use lib;\n\nkernel k(x: f32[8, 128]) -> y: f32[8, 128]\n{\n    y[..] = lib::twice(x[..]);\n}\n";
    const OTHER: &str = "use lib;\n\nkernel o(x: f32[8, 128]) -> y: f32[8, 128]\n{\n    let t = lib::twice(x[..]);\n    y[..] = lib::twice(t);\n}\n";

    /// `lib::twice` is named once in `main.pk` and twice in `other.pk`:
    /// the key of the use in `main.pk` finds those in `other.pk` on disk,
    /// at the columns counted by hand.
    #[test]
    fn uses_of_a_used_function_are_found_in_other_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("lib.pk"), LIB).unwrap();
        std::fs::write(dir.path().join("main.pk"), MAIN).unwrap();
        std::fs::write(dir.path().join("other.pk"), OTHER).unwrap();
        let main = dir.path().join("main.pk");
        let a = Analysis::of(&Session::open(&main).unwrap(), &Default::default());
        // `twice` in `lib::twice(` on line 4: offset of the `t`.
        let at = MAIN.find("twice").unwrap() as u32;
        let key = a.item_at(at).expect("an item");
        assert_eq!(key.name, "twice");
        assert_eq!(
            key.file,
            file_key(&dir.path().join("lib.pk").to_string_lossy())
        );
        // `fn twice` is line 2 of lib.pk: bytes 18..23.
        assert_eq!((key.start, key.end), (18, 23));
        let here = a.uses_of_item(&key);
        assert_eq!(here.len(), 1);
        let (sources, spans) = uses_in_file(&dir.path().join("other.pk"), &key).expect("uses");
        let lc: Vec<(usize, usize)> = spans
            .iter()
            .map(|s| {
                let (l, c) = sources.get(s.file).line_col(s.start);
                (l as usize, c as usize)
            })
            .collect();
        // Lines 5 and 6 (1-based), after `lib::`: columns 18 and 18.
        assert!(lc.contains(&(5, 18)) && lc.contains(&(6, 18)), "{lc:?}");
        assert_eq!(lc.len(), 2);
        // A file that does not name it, and the listing of the directory.
        assert!(uses_in_file(&dir.path().join("lib.pk"), &key).is_none());
        let files = pk_files(dir.path(), 100);
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        assert_eq!(names, ["lib.pk", "main.pk", "other.pk"]);
    }

    /// A function of the standard library is keyed by its name there, the
    /// same in every file.
    #[test]
    fn std_functions_have_one_key_everywhere() {
        let src = |name: &str| {
            format!("use std::math;\n\nkernel {name}(x: f32[8, 128]) -> y: f32[8, 128]\n{{\n    y[..] = math::softplus(x[..]);\n}}\n")
        };
        let a = Analysis::run("a.pk", &src("a"), None, &Default::default());
        let b = Analysis::run("b.pk", &src("bb"), None, &Default::default());
        let ka = a
            .item_at(src("a").find("softplus").unwrap() as u32)
            .expect("item");
        let kb = b
            .item_at(src("bb").find("softplus").unwrap() as u32)
            .expect("item");
        assert_eq!(ka, kb);
        assert!(ka.file.ends_with("math.pk"), "{}", ka.file);
        assert_eq!(b.uses_of_item(&ka).len(), 1);
    }
}
