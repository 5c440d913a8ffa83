//! The symbol index of one file: every name it declares (kernels,
//! functions, constants, parameters, operands, grid indices, scratch,
//! locals) and every use of a name, resolved the way the checker scopes
//! names (locals shadow kernel names, which shadow module items, which
//! shadow builtins). Names of other modules (`use`d files, `std`) resolve
//! through [`Program::lookup`] to their declarations there.
//!
//! Invariant: the walk only reads the AST, so it runs on any text the
//! parser recovered from, errors included.

use crate::ast::{self, Clause, Expr, ExprKind, Item, Stmt};
use crate::resolve::{ItemRef, ModId, Program};
use crate::span::{FileId, Span};
use std::collections::HashMap;

/// What a declared name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    Kernel,
    Function,
    Const,
    Module,
    /// A kernel's compile-time parameter.
    Param,
    /// An input or output of a kernel.
    Operand,
    Prefetch,
    Scratch,
    GridIndex,
    MeshAxis,
    FnParam,
    Generic,
    Local,
}

impl DefKind {
    pub fn noun(self) -> &'static str {
        match self {
            DefKind::Kernel => "kernel",
            DefKind::Function => "function",
            DefKind::Const => "constant",
            DefKind::Module => "module",
            DefKind::Param => "parameter",
            DefKind::Operand => "operand",
            DefKind::Prefetch => "scalar-prefetch operand",
            DefKind::Scratch => "scratch",
            DefKind::GridIndex => "grid index",
            DefKind::MeshAxis => "mesh axis",
            DefKind::FnParam => "function parameter",
            DefKind::Generic => "type parameter",
            DefKind::Local => "local",
        }
    }
}

/// One declaration.
#[derive(Debug, Clone)]
pub struct Def {
    pub name: String,
    pub kind: DefKind,
    /// The declaring identifier (in any file of the program).
    pub name_span: Span,
    /// The whole declaration.
    pub full_span: Span,
    pub docs: Vec<String>,
    /// The kernel or function the name belongs to (index into `defs`).
    pub parent: Option<usize>,
    /// Where the name is visible in the root file (locals and kernel
    /// names); `None` for module items.
    pub scope: Option<(u32, u32)>,
}

/// Declarations and uses of one file.
#[derive(Debug, Default)]
pub struct Index {
    pub defs: Vec<Def>,
    /// Every use of a name in the root file, with its declaration.
    pub uses: Vec<(Span, usize)>,
    /// Call sites in the root file: the callee's span and the span of its
    /// argument list's contents, for signature help.
    pub calls: Vec<(Span, String)>,
    items: HashMap<(usize, usize), usize>,
}

impl Index {
    /// The declaration named at `offset` of the root file: a use or the
    /// declaring identifier itself.
    pub fn def_at(&self, file: FileId, offset: u32) -> Option<usize> {
        let inside = |s: &Span| s.file == file && s.start <= offset && offset <= s.end;
        if let Some((_, d)) = self.uses.iter().find(|(s, _)| inside(s)) {
            return Some(*d);
        }
        self.defs.iter().position(|d| inside(&d.name_span))
    }

    /// The uses of declaration `def`.
    pub fn uses_of(&self, def: usize) -> impl Iterator<Item = Span> + '_ {
        self.uses
            .iter()
            .filter(move |(_, d)| *d == def)
            .map(|(s, _)| *s)
    }

    /// The names visible at `offset` of the root file (innermost first).
    pub fn in_scope(&self, offset: u32) -> Vec<&Def> {
        let mut v: Vec<&Def> = self
            .defs
            .iter()
            .filter(|d| d.scope.is_some_and(|(a, b)| a <= offset && offset <= b))
            .collect();
        v.sort_by_key(|d| std::cmp::Reverse(d.scope.map_or(0, |(a, _)| a)));
        v
    }
}

/// Builds the index of the program's root module.
pub fn build(program: &Program) -> Index {
    let mut w = Walker {
        program,
        ix: Index::default(),
        scopes: Vec::new(),
        parent: None,
    };
    let root = program.root();
    for (i, item) in root.ast.items.iter().enumerate() {
        w.item_def(ModId(0), i, item);
    }
    for item in &root.ast.items {
        w.item(item);
    }
    w.ix
}

struct Walker<'p> {
    program: &'p Program,
    ix: Index,
    /// Names in scope: name -> def, innermost last.
    scopes: Vec<(HashMap<String, usize>, u32)>,
    parent: Option<usize>,
}

impl Walker<'_> {
    fn add(&mut self, name: &ast::Ident, kind: DefKind, full: Span, docs: &[String]) -> usize {
        let scope = self.scopes.last().map(|(_, end)| (name.span.end, *end));
        self.ix.defs.push(Def {
            name: name.name.clone(),
            kind,
            name_span: name.span,
            full_span: full,
            docs: docs.to_vec(),
            parent: self.parent,
            scope,
        });
        let id = self.ix.defs.len() - 1;
        if let Some((s, _)) = self.scopes.last_mut() {
            s.insert(name.name.clone(), id);
        }
        id
    }

    /// The declaration of item `i` of module `m`, added once.
    fn item_def(&mut self, m: ModId, i: usize, item: &Item) -> Option<usize> {
        if let Some(&d) = self.ix.items.get(&(m.0, i)) {
            return Some(d);
        }
        let (name, kind, full, docs) = match item {
            Item::Const(c) => (&c.name, DefKind::Const, c.span, &c.docs),
            Item::Fn(f) => (&f.name, DefKind::Function, f.span, &f.docs),
            Item::Kernel(k) => (&k.name, DefKind::Kernel, k.span, &k.docs),
            Item::Use(_) => return None,
        };
        let saved = std::mem::take(&mut self.scopes);
        let parent = self.parent.take();
        let d = self.add(name, kind, full, docs);
        self.scopes = saved;
        self.parent = parent;
        self.ix.items.insert((m.0, i), d);
        Some(d)
    }

    fn item_ref(&mut self, r: ItemRef) -> Option<usize> {
        match r {
            ItemRef::Const(m, i) | ItemRef::Fn(m, i) | ItemRef::Kernel(m, i) => {
                let item = self.program.module(m).ast.items.get(i)?;
                self.item_def(m, i, item)
            }
            ItemRef::Module(m) => {
                let key = (usize::MAX - m.0, 0);
                if let Some(&d) = self.ix.items.get(&key) {
                    return Some(d);
                }
                let info = self.program.module(m);
                let span = Span::new(info.file, 0, 0);
                self.ix.defs.push(Def {
                    name: info.name.clone(),
                    kind: DefKind::Module,
                    name_span: span,
                    full_span: span,
                    docs: info.ast.docs.clone(),
                    parent: None,
                    scope: None,
                });
                let d = self.ix.defs.len() - 1;
                self.ix.items.insert(key, d);
                Some(d)
            }
        }
    }

    fn push(&mut self, end: u32) {
        self.scopes.push((HashMap::new(), end));
    }

    fn pop(&mut self) {
        self.scopes.pop();
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Use(u) => self.use_decl(u),
            Item::Const(c) => self.expr(&c.value),
            Item::Fn(f) => {
                let me = self.ix.items.get(&(0, self.item_index(f.span))).copied();
                self.function(f, me);
            }
            Item::Kernel(k) => self.kernel(k),
        }
    }

    fn item_index(&self, span: Span) -> usize {
        self.program
            .root()
            .ast
            .items
            .iter()
            .position(|it| match it {
                Item::Fn(f) => f.span == span,
                Item::Kernel(k) => k.span == span,
                Item::Const(c) => c.span == span,
                Item::Use(u) => u.span == span,
            })
            .unwrap_or(usize::MAX)
    }

    fn use_decl(&mut self, u: &ast::UseDecl) {
        // Each segment of the path names a module; the listed names are
        // items of the last one.
        for n in 1..=u.path.segments.len() {
            let segs = &u.path.segments[..n];
            if let Some(r) = self.program.lookup(ModId(0), segs) {
                if let Some(d) = self.item_ref(r) {
                    self.ix.uses.push((segs[n - 1].span, d));
                }
            }
        }
        // `use std::nn;` binds `nn`: its last segment names that module.
        if u.names.is_none() {
            let last = u.path.last();
            if let Some(r) = self.program.lookup(ModId(0), std::slice::from_ref(last)) {
                if let Some(d) = self.item_ref(r) {
                    if !self.ix.uses.iter().any(|(s, _)| *s == last.span) {
                        self.ix.uses.push((last.span, d));
                    }
                }
            }
        }
        for name in u.names.iter().flatten() {
            if let Some(r) = self.program.lookup(ModId(0), std::slice::from_ref(name)) {
                if let Some(d) = self.item_ref(r) {
                    self.ix.uses.push((name.span, d));
                }
            }
        }
    }

    fn function(&mut self, f: &ast::FnDecl, me: Option<usize>) {
        let parent = self.parent;
        self.parent = me;
        self.push(f.span.end);
        for g in &f.generics {
            self.add(g, DefKind::Generic, g.span, &[]);
        }
        for p in &f.params {
            if let Some(t) = &p.ty {
                self.type_expr(t);
            }
            if let Some(d) = &p.default {
                self.expr(d);
            }
            self.add(&p.name, DefKind::FnParam, p.span, &p.docs);
        }
        if let Some(r) = &f.ret {
            for t in r.types() {
                self.type_expr(t);
            }
        }
        self.block(&f.body);
        self.pop();
        self.parent = parent;
    }

    fn kernel(&mut self, k: &ast::KernelDecl) {
        let me = self.ix.items.get(&(0, self.item_index(k.span))).copied();
        let parent = self.parent;
        self.parent = me;
        self.push(k.span.end);
        for p in &k.params {
            if let Some(d) = &p.default {
                self.expr(d);
            }
            self.add(&p.name, DefKind::Param, p.span, &p.docs);
        }
        // Grid indices, the mesh and prefetch operands are visible in the
        // index maps of the operands, which come first in the text.
        for c in &k.clauses {
            match c {
                Clause::Grid(dims, _) => {
                    for g in dims {
                        self.add(&g.name, DefKind::GridIndex, g.span, &[]);
                    }
                }
                Clause::Mesh(axes, _) => {
                    for a in axes {
                        self.add(&a.name, DefKind::MeshAxis, a.span, &[]);
                    }
                }
                Clause::Prefetch(ps, _) => {
                    for p in ps {
                        self.add(&p.name, DefKind::Prefetch, p.span, &p.docs);
                    }
                }
                Clause::Scratch(ss, _) => {
                    for s in ss {
                        self.add(&s.name, DefKind::Scratch, s.span, &s.docs);
                    }
                }
                _ => {}
            }
        }
        for o in k.inputs.iter().chain(&k.outputs) {
            self.add(&o.name, DefKind::Operand, o.span, &o.docs);
        }
        for o in k.inputs.iter().chain(&k.outputs) {
            self.operand(o);
        }
        for c in &k.clauses {
            self.clause(c);
        }
        self.block(&k.body);
        self.pop();
        self.parent = parent;
    }

    fn operand(&mut self, o: &ast::OperandDecl) {
        self.name_ident(&o.dtype);
        o.dims.iter().for_each(|e| self.expr(e));
        match &o.placement {
            ast::Placement::Block {
                dims, index_map, ..
            } => {
                for d in dims {
                    if let ast::BlockDim::Size(e) = d {
                        self.expr(e);
                    }
                }
                index_map.iter().for_each(|e| self.expr(e));
            }
            ast::Placement::Whole { .. } => {}
        }
        if let Some(a) = &o.aliases {
            self.name_ident(a);
        }
        if let Some(w) = &o.when {
            self.expr(w);
        }
    }

    fn clause(&mut self, c: &Clause) {
        match c {
            Clause::Grid(dims, _) => {
                for g in dims {
                    self.expr(&g.extent);
                    if let Some(b) = &g.bound {
                        self.expr(b);
                    }
                }
            }
            Clause::Prefetch(ps, _) => {
                for p in ps {
                    self.name_ident(&p.dtype);
                    p.dims.iter().for_each(|e| self.expr(e));
                    if let Some(w) = &p.when {
                        self.expr(w);
                    }
                }
            }
            Clause::Scratch(ss, _) => {
                for s in ss {
                    match &s.kind {
                        ast::ScratchKind::Buffer { dtype, dims, .. } => {
                            self.name_ident(dtype);
                            dims.iter().for_each(|e| self.expr(e));
                        }
                        ast::ScratchKind::DmaSem { dims } | ast::ScratchKind::Sem { dims } => {
                            dims.iter().for_each(|e| self.expr(e))
                        }
                        ast::ScratchKind::BarrierSem => {}
                    }
                    if let Some(w) = &s.when {
                        self.expr(w);
                    }
                }
            }
            Clause::Mesh(axes, _) => axes.iter().for_each(|a| self.expr(&a.size)),
            Clause::VmemLimit(e, _) | Clause::CollectiveId(e, _) | Clause::Where(e, _) => {
                self.expr(e)
            }
            Clause::Assert(a) => self.expr(&a.cond),
        }
    }

    fn type_expr(&mut self, t: &ast::TypeExpr) {
        self.name_ident(&t.dtype);
        for d in t.shape.iter().flatten() {
            if let ast::DimExpr::Expr(e) = d {
                self.expr(e);
            }
        }
    }

    fn block(&mut self, b: &ast::Block) {
        self.push(b.span.end);
        for s in &b.stmts {
            self.stmt(s);
        }
        if let Some(t) = &b.tail {
            self.expr(t);
        }
        self.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let {
                name,
                ty,
                value,
                span,
                ..
            } => {
                if let Some(t) = ty {
                    self.type_expr(t);
                }
                self.expr(value);
                self.add(name, DefKind::Local, *span, &[]);
            }
            Stmt::LetTuple {
                names, value, span, ..
            } => {
                self.expr(value);
                for (n, _) in names {
                    if n.name != "_" {
                        self.add(n, DefKind::Local, *span, &[]);
                    }
                }
            }
            Stmt::Assign { target, value, .. } => {
                self.expr(target);
                self.expr(value);
            }
            Stmt::Expr(e) => self.expr(e),
            Stmt::For {
                var,
                lo,
                hi,
                step,
                body,
                span,
                ..
            } => {
                self.expr(lo);
                self.expr(hi);
                if let Some(s) = step {
                    self.expr(s);
                }
                self.push(span.end);
                self.add(var, DefKind::Local, *span, &[]);
                self.block(body);
                self.pop();
            }
            Stmt::While { cond, body, .. } => {
                self.expr(cond);
                self.block(body);
            }
            Stmt::Assert(a) => self.expr(&a.cond),
            Stmt::Print { args, .. } => args.iter().for_each(|a| self.expr(a)),
            Stmt::Fn(f) => {
                let d = self.add(&f.name, DefKind::Function, f.span, &f.docs);
                self.function(f, Some(d));
            }
        }
    }

    /// A name used as a single identifier (a dtype, an alias).
    fn name_ident(&mut self, id: &ast::Ident) {
        if let Some(d) = self.lookup_local(&id.name) {
            self.ix.uses.push((id.span, d));
        }
    }

    fn lookup_local(&self, name: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .find_map(|(s, _)| s.get(name).copied())
    }

    fn path(&mut self, p: &ast::Path) {
        if p.segments.len() == 1 {
            if let Some(d) = self.lookup_local(&p.segments[0].name) {
                self.ix.uses.push((p.segments[0].span, d));
                return;
            }
        }
        for n in 1..=p.segments.len() {
            let segs = &p.segments[..n];
            if let Some(r) = self.program.lookup(ModId(0), segs) {
                if let Some(d) = self.item_ref(r) {
                    self.ix.uses.push((segs[n - 1].span, d));
                }
            }
        }
    }

    fn expr(&mut self, e: &Expr) {
        // Deep chains are walked with an explicit stack of the operands of
        // binary operators, the one shape a long expression has.
        let mut work = vec![e];
        while let Some(e) = work.pop() {
            match &e.kind {
                ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Error => {}
                ExprKind::Name(p) => self.path(p),
                ExprKind::Unary(_, a) => work.push(a),
                ExprKind::Binary(_, a, b) => {
                    work.push(b);
                    work.push(a);
                }
                ExprKind::Cast(a, t) => {
                    work.push(a);
                    self.name_ident(t);
                }
                ExprKind::Call(p, args) => {
                    self.path(p);
                    self.ix.calls.push((p.span, p.to_string_path()));
                    for a in args {
                        self.expr(&a.value);
                    }
                }
                ExprKind::Index(base, idx) | ExprKind::At(base, _, idx) => {
                    self.expr(base);
                    self.indices(idx);
                }
                ExprKind::Method(base, _, args) => {
                    self.expr(base);
                    for a in args {
                        self.expr(&a.value);
                    }
                }
                ExprKind::List(items) | ExprKind::Tuple(items) => {
                    items.iter().for_each(|i| self.expr(i))
                }
                ExprKind::If(c, t, f) => {
                    self.expr(c);
                    self.block(t);
                    if let Some(f) = f {
                        self.expr(f);
                    }
                }
                ExprKind::Block(b) => self.block(b),
            }
        }
    }

    fn indices(&mut self, idx: &[ast::Index]) {
        for i in idx {
            match i {
                ast::Index::Range(a, b, _) => {
                    self.expr(a);
                    self.expr(b);
                }
                ast::Index::Expr(x) => self.expr(x),
                ast::Index::Full(_) | ast::Index::Rest(_) => {}
            }
        }
    }
}
