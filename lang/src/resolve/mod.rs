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
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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

#[derive(Debug)]
pub struct ModuleInfo {
    pub name: String,
    pub file: FileId,
    pub ast: ast::Module,
    pub names: HashMap<String, (ItemRef, Span)>,
}

/// Every module of one compilation; module 0 is the root file.
#[derive(Debug, Default)]
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

/// Loads the root file and everything it uses.
pub struct Loader<'a> {
    pub sources: &'a mut SourceMap,
    /// The directory of the root file, for `use NAME` of sibling modules.
    pub dir: Option<PathBuf>,
    /// Sibling modules by the name they were loaded under, when they come
    /// from a kernel package rather than the disk (see
    /// [`crate::compile_embedded`]); the disk is then never read.
    pub embedded: Option<Vec<(String, String)>>,
    pub diags: Vec<Diag>,
    program: Program,
    by_key: HashMap<String, ModId>,
}

impl<'a> Loader<'a> {
    pub fn new(sources: &'a mut SourceMap, dir: Option<PathBuf>) -> Loader<'a> {
        Loader {
            sources,
            dir,
            embedded: None,
            diags: Vec::new(),
            program: Program::default(),
            by_key: HashMap::new(),
        }
    }

    /// Parses and resolves the root file (already in the source map).
    pub fn load(mut self, root: FileId) -> (Program, Vec<Diag>) {
        let name = self.sources.get(root).name.clone();
        let text = self.sources.get(root).text.clone();
        self.add_module(name, root, &text);
        if !self.diags.iter().any(|d| d.is_error()) {
            for m in 0..self.program.modules.len() {
                let ds = bodies::check_module(&self.program, ModId(m));
                self.diags.extend(ds);
            }
        }
        (self.program, self.diags)
    }

    fn add_module(&mut self, name: String, file: FileId, text: &str) -> ModId {
        let (ast, diags) = parse::parse(file, text);
        self.diags.extend(diags);
        let id = ModId(self.program.modules.len());
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
                None => match self.read_module(&full, path) {
                    Some(t) => (key.clone(), key, t),
                    None => return None,
                },
            }
        };
        if let Some(id) = self.by_key.get(&key) {
            return Some(*id);
        }
        // Reserve the key first so that modules that use each other terminate.
        let file = self.sources.add(name.clone(), text.clone());
        let id = ModId(self.program.modules.len());
        self.by_key.insert(key, id);
        let got = self.add_module(name, file, &text);
        debug_assert_eq!(got, id);
        Some(id)
    }
}
