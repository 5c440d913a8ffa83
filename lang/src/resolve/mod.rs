//! Name resolution at module level: loads the files that `use` names,
//! builds each module's namespace (items and imports), and reports unknown
//! modules, unknown imports and duplicate items.
//!
//! Names inside bodies are scoped (locals shadow kernel names, which shadow
//! module items, which shadow builtins); the checker looks them up through
//! [`Program::lookup`] while it builds IR, so no name survives into the IR.

mod bodies;
pub(crate) use bodies::bind_args;

use crate::ast::{self, Item};
use crate::diag::{codes, Diag};
use crate::parse;
use crate::span::{FileId, SourceMap, Span};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The standard library, compiled into pk so it works from any directory.
pub const STD_MODULES: &[(&str, &str)] = &[
    ("math", include_str!("../../../std/math.pk")),
    ("nn", include_str!("../../../std/nn.pk")),
];

/// An index into [`Program::modules`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModId(pub usize);

/// What a module-level name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemRef {
    /// Index into the module's `ast.items`.
    Const(ModId, usize),
    Fn(ModId, usize),
    Kernel(ModId, usize),
    Module(ModId),
}

#[derive(Debug, Clone)]
pub struct ModuleInfo {
    pub name: String,
    pub file: FileId,
    /// Shared with the [`ParseCache`] that parsed it, when there is one.
    pub ast: Arc<ast::Module>,
    pub names: HashMap<String, (ItemRef, Span)>,
}

/// Every module of one compilation; module 0 is the root file.
#[derive(Debug, Default, Clone)]
pub struct Program {
    pub modules: Vec<ModuleInfo>,
}

impl Program {
    pub fn root(&self) -> &ModuleInfo {
        &self.modules[0]
    }

    pub fn module(&self, id: ModId) -> &ModuleInfo {
        &self.modules[id.0]
    }

    /// Looks up `path` in module `m`: `a` or `module::item`.
    pub fn lookup(&self, m: ModId, path: &[ast::Ident]) -> Option<ItemRef> {
        let mut cur = m;
        let (last, init) = path.split_last()?;
        for seg in init {
            match self.module(cur).names.get(&seg.name) {
                Some((ItemRef::Module(next), _)) => cur = *next,
                _ => return None,
            }
        }
        self.module(cur).names.get(&last.name).map(|(r, _)| *r)
    }

    pub fn fn_decl(&self, m: ModId, i: usize) -> Option<&ast::FnDecl> {
        match self.module(m).ast.items.get(i) {
            Some(Item::Fn(f)) => Some(f),
            _ => None,
        }
    }

    pub fn const_decl(&self, m: ModId, i: usize) -> Option<&ast::ConstDecl> {
        match self.module(m).ast.items.get(i) {
            Some(Item::Const(c)) => Some(c),
            _ => None,
        }
    }

    pub fn kernel_decl(&self, m: ModId, i: usize) -> Option<&ast::KernelDecl> {
        match self.module(m).ast.items.get(i) {
            Some(Item::Kernel(k)) => Some(k),
            _ => None,
        }
    }

    /// The kernels of the root module, in source order.
    pub fn root_kernels(&self) -> Vec<(usize, &ast::KernelDecl)> {
        self.root()
            .ast
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, it)| match it {
                Item::Kernel(k) => Some((i, k)),
                _ => None,
            })
            .collect()
    }
}

/// What a [`Loader`] keeps of each file between loads of the same program
/// (a [`crate::Session`] after an edit): its parse, and the diagnostics of
/// its bodies. A file whose text did not change is not parsed again, and a
/// module whose text and whose imports did not change is not resolved
/// again. Files keep their [`FileId`] in the source map they were loaded
/// into, so the cache belongs with that one map.
#[derive(Debug, Default, Clone)]
pub struct ParseCache {
    files: HashMap<String, Parsed>,
    /// Files parsed so far (cache misses).
    pub parses: usize,
    /// Module bodies resolved so far (cache misses).
    pub resolves: usize,
}

#[derive(Debug, Clone)]
struct Parsed {
    file: FileId,
    text: Arc<str>,
    ast: Arc<ast::Module>,
    diags: Vec<Diag>,
    /// The diagnostics of the module's bodies, and the keys of the modules
    /// they were resolved against.
    bodies: Option<(Vec<Diag>, Vec<String>)>,
}

/// The cache key of the root file.
const ROOT_KEY: &str = "\0root";

/// Loads the root file and everything it uses.
pub struct Loader<'a> {
    pub sources: &'a mut SourceMap,
    /// The directory of the root file, for `use NAME` of sibling modules.
    pub dir: Option<PathBuf>,
    /// Sibling modules by the name they were loaded under, when they come
    /// from a kernel package rather than the disk (see
    /// [`crate::compile_embedded`]); the disk is then never read.
    pub embedded: Option<Vec<(String, String)>>,
    /// Texts of sibling modules that stand for the disk's (an editor's
    /// unsaved buffers), by the path `use` reads them from.
    pub overlays: HashMap<String, String>,
    pub diags: Vec<Diag>,
    /// Parses kept from an earlier load into the same `sources`.
    pub cache: Option<&'a mut ParseCache>,
    program: Program,
    by_key: HashMap<String, ModId>,
    /// The cache key of each module, by [`ModId`].
    keys: Vec<String>,
    /// Modules parsed in this load (changed or new).
    fresh: HashSet<usize>,
}

impl<'a> Loader<'a> {
    pub fn new(sources: &'a mut SourceMap, dir: Option<PathBuf>) -> Loader<'a> {
        Loader {
            sources,
            dir,
            embedded: None,
            overlays: HashMap::new(),
            diags: Vec::new(),
            cache: None,
            program: Program::default(),
            by_key: HashMap::new(),
            keys: Vec::new(),
            fresh: HashSet::new(),
        }
    }

    /// Parses and resolves the root file (already in the source map).
    pub fn load(mut self, root: FileId) -> (Program, Vec<Diag>) {
        let name = self.sources.get(root).name.clone();
        let text = self.sources.get(root).text.clone();
        self.add_module(name, ROOT_KEY.to_string(), Some(root), &text);
        if !self.diags.iter().any(|d| d.is_error()) {
            for m in 0..self.program.modules.len() {
                let ds = self.check_bodies(ModId(m));
                self.diags.extend(ds);
            }
        }
        (self.program, self.diags)
    }

    /// The diagnostics of module `m`'s bodies: kept from the last load
    /// when neither it nor any module it reaches changed.
    fn check_bodies(&mut self, m: ModId) -> Vec<Diag> {
        let mut reach = vec![m.0];
        let mut seen: HashSet<usize> = reach.iter().copied().collect();
        while let Some(i) = reach.pop() {
            for (r, _) in self.program.modules[i].names.values() {
                let (ItemRef::Const(t, _)
                | ItemRef::Fn(t, _)
                | ItemRef::Kernel(t, _)
                | ItemRef::Module(t)) = r;
                if seen.insert(t.0) {
                    reach.push(t.0);
                }
            }
        }
        let mut deps: Vec<String> = seen.iter().map(|&i| self.keys[i].clone()).collect();
        deps.sort();
        let unchanged = !seen.iter().any(|i| self.fresh.contains(i));
        let key = &self.keys[m.0];
        if let Some(c) = self.cache.as_deref_mut() {
            if let Some((ds, was)) = c.files.get(key).and_then(|p| p.bodies.as_ref()) {
                if unchanged && *was == deps {
                    return ds.clone();
                }
            }
        }
        let ds = bodies::check_module(&self.program, m);
        if let Some(c) = self.cache.as_deref_mut() {
            c.resolves += 1;
            if let Some(p) = c.files.get_mut(key) {
                p.bodies = Some((ds.clone(), deps));
            }
        }
        ds
    }

    /// The parse of `text`, the file `key` names: from the cache when its
    /// text did not change, else parsed into `file` (the root) or into
    /// the file the cache has for `key`, or a new one.
    fn parse_file(
        &mut self,
        key: &str,
        name: &str,
        file: Option<FileId>,
        text: &str,
    ) -> (FileId, Arc<ast::Module>, Vec<Diag>, bool) {
        let known = self.cache.as_deref().and_then(|c| c.files.get(key));
        if let Some(p) = known {
            if *p.text == *text && file.is_none_or(|f| f == p.file) {
                return (p.file, p.ast.clone(), p.diags.clone(), false);
            }
        }
        let file = match (file, known.map(|p| p.file)) {
            (Some(f), _) => f,
            (None, Some(f)) => {
                self.sources.replace(f, text);
                f
            }
            (None, None) => self.sources.add(name, text),
        };
        let (ast, diags) = parse::parse(file, text);
        let ast = Arc::new(ast);
        if let Some(c) = self.cache.as_deref_mut() {
            c.parses += 1;
            let parsed = Parsed {
                file,
                text: self.sources.get(file).text.clone(),
                ast: ast.clone(),
                diags: diags.clone(),
                bodies: None,
            };
            c.files.insert(key.to_string(), parsed);
        }
        (file, ast, diags, true)
    }

    fn add_module(&mut self, name: String, key: String, file: Option<FileId>, text: &str) -> ModId {
        let (file, ast, diags, fresh) = self.parse_file(&key, &name, file, text);
        self.diags.extend(diags);
        let id = ModId(self.program.modules.len());
        if fresh {
            self.fresh.insert(id.0);
        }
        self.keys.push(key);
        self.program.modules.push(ModuleInfo {
            name,
            file,
            ast,
            names: HashMap::new(),
        });
        self.by_key.insert(format!("{file:?}"), id);
        self.bind_items(id);
        self.bind_uses(id);
        id
    }

    fn define(&mut self, m: ModId, name: &ast::Ident, r: ItemRef) {
        let names = &mut self.program.modules[m.0].names;
        if let Some((_, first)) = names.get(&name.name) {
            let first = *first;
            self.diags.push(
                Diag::new(
                    &codes::DUPLICATE,
                    format!("`{}` is defined twice", name.name),
                    name.span,
                )
                .label("second definition")
                .with(first, "first defined here")
                .help("rename one of them"),
            );
            return;
        }
        names.insert(name.name.clone(), (r, name.span));
    }

    fn bind_items(&mut self, m: ModId) {
        let items: Vec<(ast::Ident, ItemRef)> = self.program.modules[m.0]
            .ast
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, it)| match it {
                Item::Const(c) => Some((c.name.clone(), ItemRef::Const(m, i))),
                Item::Fn(f) => Some((f.name.clone(), ItemRef::Fn(m, i))),
                Item::Kernel(k) => Some((k.name.clone(), ItemRef::Kernel(m, i))),
                Item::Use(_) => None,
            })
            .collect();
        for (name, r) in items {
            self.define(m, &name, r);
        }
    }

    fn bind_uses(&mut self, m: ModId) {
        let uses: Vec<ast::UseDecl> = self.program.modules[m.0]
            .ast
            .items
            .iter()
            .filter_map(|it| match it {
                Item::Use(u) => Some(u.clone()),
                _ => None,
            })
            .collect();
        for u in uses {
            let Some(target) = self.load_module(&u.path) else {
                continue;
            };
            match &u.names {
                None => {
                    let last = u.path.last().clone();
                    self.define(m, &last, ItemRef::Module(target));
                }
                Some(names) => {
                    for n in names {
                        match self.program.modules[target.0].names.get(&n.name) {
                            Some((r @ (ItemRef::Const(..) | ItemRef::Fn(..)), _)) => {
                                let r = *r;
                                self.define(m, n, r);
                            }
                            _ => {
                                let module = u.path.to_string_path();
                                self.diags.push(
                                    Diag::new(
                                        &codes::PRIVATE_IMPORT,
                                        format!(
                                            "`{module}` has no function or constant `{}`",
                                            n.name
                                        ),
                                        n.span,
                                    )
                                    .label("not found in that module")
                                    .help(self.available(target)),
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    fn available(&self, m: ModId) -> String {
        let mut names: Vec<&String> = self.program.modules[m.0]
            .names
            .iter()
            .filter(|(_, (r, _))| matches!(r, ItemRef::Const(..) | ItemRef::Fn(..)))
            .map(|(n, _)| n)
            .collect();
        names.sort();
        let list = names
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        format!("it defines: {list}")
    }

    /// The text of the module file `full` that `use PATH` names, under the
    /// limits of a source file given on the command line (`PK0008`,
    /// `PK0007`, a byte-order mark dropped); a diagnostic at the `use` when
    /// it cannot be had.
    fn read_module(&mut self, full: &Path, path: &ast::Path) -> Option<String> {
        let shown = full.display();
        let bytes = match crate::files::read_limited(full, crate::MAX_SOURCE_BYTES as u64) {
            Ok(b) => b,
            Err(crate::files::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                self.diags.push(
                    Diag::new(&codes::UNKNOWN_MODULE, format!("no module `{}`", path.to_string_path()), path.span)
                        .label(format!("`{shown}` does not exist"))
                        .help("`use NAME` loads NAME.pk next to this file; `use std::NAME` loads the standard library"),
                );
                return None;
            }
            Err(crate::files::ReadError::TooLarge(size)) => {
                let size = size.map_or("more than 16 MiB".to_string(), |n| format!("{n} bytes"));
                self.diags.push(
                    Diag::new(
                        &codes::FILE_TOO_LARGE,
                        format!("module `{shown}` is {size}, more than the 16 MiB limit"),
                        path.span,
                    )
                    .label("this module is too large")
                    .help("is this really a .pk source file?"),
                );
                return None;
            }
            Err(e) => {
                self.diags.push(
                    Diag::new(
                        &codes::IO_ERROR,
                        format!("cannot read module `{shown}`: {}", e.reason()),
                        path.span,
                    )
                    .label("this module cannot be read")
                    .help("`use NAME` loads the file NAME.pk next to this file"),
                );
                return None;
            }
        };
        match crate::source_text(full, bytes) {
            Ok(t) => Some(t),
            Err(d) => {
                self.diags.push(
                    Diag::new(&codes::NOT_UTF8, format!("module {}", d.message), path.span)
                        .label("this module is not UTF-8 text")
                        .help("a `use`d module is a .pk source file"),
                );
                None
            }
        }
    }

    fn load_module(&mut self, path: &ast::Path) -> Option<ModId> {
        let segs: Vec<&str> = path.segments.iter().map(|s| s.name.as_str()).collect();
        let (key, name, text) = if segs.first() == Some(&"std") {
            let rest = segs[1..].join("::");
            match STD_MODULES.iter().find(|(n, _)| *n == rest) {
                Some((n, t)) => (format!("std::{n}"), format!("std/{n}.pk"), t.to_string()),
                None => {
                    let list = STD_MODULES
                        .iter()
                        .map(|(n, _)| format!("std::{n}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    self.diags.push(
                        Diag::new(
                            &codes::UNKNOWN_MODULE,
                            format!("no module `{}`", path.to_string_path()),
                            path.span,
                        )
                        .label("not in the standard library")
                        .help(format!("the standard library has {list}")),
                    );
                    return None;
                }
            }
        } else {
            let rel: PathBuf = segs.iter().collect::<PathBuf>().with_extension("pk");
            let full = self.dir.as_deref().unwrap_or(Path::new(".")).join(&rel);
            let key = full.to_string_lossy().to_string();
            if let Some(id) = self.by_key.get(&key) {
                return Some(*id);
            }
            match &self.embedded {
                // The name it was loaded under, or else the one carried
                // module that is this path relative to some directory.
                Some(files) => {
                    let found = files
                        .iter()
                        .find(|(n, _)| *n == key)
                        .or_else(|| files.iter().find(|(n, _)| Path::new(n).ends_with(&rel)))
                        .map(|(n, t)| (n.clone(), t.clone()));
                    match found {
                        Some((name, t)) => (key, name, t),
                        None => {
                            self.diags.push(
                                Diag::new(&codes::UNKNOWN_MODULE, format!("no module `{}`", path.to_string_path()), path.span)
                                    .label(format!("`{}` is not among the package's sources", full.display()))
                                    .help("`use NAME` loads NAME.pk next to this file; `use std::NAME` loads the standard library"),
                            );
                            return None;
                        }
                    }
                }
                None => match self.overlays.get(&key).cloned() {
                    Some(t) => (key.clone(), key, t),
                    None => match self.read_module(&full, path) {
                        Some(t) => (key.clone(), key, t),
                        None => return None,
                    },
                },
            }
        };
        if let Some(id) = self.by_key.get(&key) {
            return Some(*id);
        }
        // Reserve the key first so that modules that use each other terminate.
        let id = ModId(self.program.modules.len());
        self.by_key.insert(key.clone(), id);
        let got = self.add_module(name, key, None, &text);
        debug_assert_eq!(got, id);
        Some(id)
    }
}
