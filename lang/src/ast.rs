//! The abstract syntax tree. Every node carries the [`Span`] of its source.
//!
//! The AST is what the parser produces and nothing more: names are strings,
//! types are unchecked. Resolution and type checking turn it into Tile IR.

use crate::span::Span;

#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `a`, `math::gelu`, `std::nn::softmax_rows`.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    pub segments: Vec<Ident>,
    pub span: Span,
}

impl Path {
    pub fn last(&self) -> &Ident {
        &self.segments[self.segments.len() - 1]
    }
    pub fn to_string_path(&self) -> String {
        self.segments
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join("::")
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Module {
    pub docs: Vec<String>,
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Use(UseDecl),
    Const(ConstDecl),
    Fn(FnDecl),
    Kernel(KernelDecl),
}

/// `use std::nn;` or `use std::nn::{gelu, silu};`
#[derive(Debug, Clone, PartialEq)]
pub struct UseDecl {
    pub path: Path,
    pub names: Option<Vec<Ident>>,
    pub span: Span,
}

/// `const LANES = 128;`
#[derive(Debug, Clone, PartialEq)]
pub struct ConstDecl {
    pub docs: Vec<String>,
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

/// `fn name<T, R>(x: T[R, 128], y) -> T[R, 128] { ... }`
#[derive(Debug, Clone, PartialEq)]
pub struct FnDecl {
    pub docs: Vec<String>,
    pub name: Ident,
    pub generics: Vec<Ident>,
    pub params: Vec<FnParam>,
    pub ret: Option<RetType>,
    pub body: Block,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FnParam {
    pub docs: Vec<String>,
    pub name: Ident,
    pub ty: Option<TypeExpr>,
    /// `scale = 0.5`: the value when a call does not pass this parameter
    /// (trailing parameters only), evaluated in the function's scope.
    pub default: Option<Expr>,
    pub span: Span,
}

/// A function's declared result: one value type, or a tuple of them.
#[derive(Debug, Clone, PartialEq)]
pub enum RetType {
    One(TypeExpr),
    /// `-> (f32[8, 128], i32)`
    Tuple(Vec<TypeExpr>, Span),
}

impl RetType {
    /// The value types it names, in order.
    pub fn types(&self) -> &[TypeExpr] {
        match self {
            RetType::One(t) => std::slice::from_ref(t),
            RetType::Tuple(ts, _) => ts,
        }
    }
}

/// A value type written in source: `f32`, `T`, `bf16[8, 128]`, `T[R, ..]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeExpr {
    pub dtype: Ident,
    pub shape: Option<Vec<DimExpr>>,
    pub span: Span,
}

/// One dimension in a type pattern: an expression, or `..` for "any dims".
#[derive(Debug, Clone, PartialEq)]
pub enum DimExpr {
    Expr(Expr),
    Rest(Span),
}

/// A kernel: compile-time parameters, operands, grid, scratch, body.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelDecl {
    pub docs: Vec<String>,
    pub name: Ident,
    pub params: Vec<KernelParam>,
    pub inputs: Vec<OperandDecl>,
    pub outputs: Vec<OperandDecl>,
    pub clauses: Vec<Clause>,
    pub body: Block,
    pub span: Span,
}

#[derive(Clone, PartialEq)]
pub struct KernelParam {
    pub docs: Vec<String>,
    pub name: Ident,
    pub kind: ParamKind,
    /// `window: int? = none`: the parameter may be `none`.
    pub optional: bool,
    pub default: Option<Expr>,
    /// `in [..]`: the values a tuner may choose from; the default stays
    /// the value used when nothing is tuned.
    pub candidates: Option<Candidates>,
    pub span: Span,
}

/// The candidate values of a tunable parameter, as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Candidates {
    /// `[128, 256, 512]`
    List(Vec<Expr>, Span),
    /// `128..=1024 step 128` (step 1 when omitted)
    Range {
        lo: Expr,
        hi: Expr,
        step: Option<Expr>,
        span: Span,
    },
    /// `pow2(128, 1024)`: the powers of two between the bounds, inclusive.
    Pow2 { lo: Expr, hi: Expr, span: Span },
}

impl Candidates {
    pub fn span(&self) -> Span {
        match self {
            Candidates::List(_, s)
            | Candidates::Range { span: s, .. }
            | Candidates::Pow2 { span: s, .. } => *s,
        }
    }
}

/// Prints `optional` only when it is set, so that the AST of a kernel
/// without optional parameters reads as it always has.
impl std::fmt::Debug for KernelParam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("KernelParam");
        d.field("docs", &self.docs)
            .field("name", &self.name)
            .field("kind", &self.kind);
        if self.optional {
            d.field("optional", &true);
        }
        d.field("default", &self.default);
        if let Some(c) = &self.candidates {
            d.field("candidates", c);
        }
        d.field("span", &self.span).finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Int,
    Dtype,
    /// A compile-time float (`scale: float = 0.125`), a weak constant where used.
    Float,
    /// A compile-time bool (`causal: bool = true`), for `if` conditions.
    Bool,
}

impl ParamKind {
    /// What a value of this kind is, for messages: "an integer".
    pub fn noun(self) -> &'static str {
        match self {
            ParamKind::Int => "an integer",
            ParamKind::Dtype => "a dtype",
            ParamKind::Float => "a float",
            ParamKind::Bool => "a bool",
        }
    }
}

/// `x: f32[M, N] block [bm, bn] at (i, j)` or `x: f32[M, N] in any`,
/// optionally `... if COND`: present only when a compile-time condition holds.
#[derive(Clone, PartialEq)]
pub struct OperandDecl {
    pub docs: Vec<String>,
    pub name: Ident,
    pub dtype: Ident,
    pub dims: Vec<Expr>,
    pub placement: Placement,
    pub aliases: Option<Ident>,
    pub when: Option<Expr>,
    pub span: Span,
}

/// Declarations print their condition only when they have one, so that the
/// AST of a kernel without conditions reads as it always has.
macro_rules! debug_with_when {
    ($t:ident { $($f:ident),* }) => {
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut d = f.debug_struct(stringify!($t));
                $(d.field(stringify!($f), &self.$f);)*
                if let Some(w) = &self.when {
                    d.field("when", w);
                }
                d.field("span", &self.span).finish()
            }
        }
    };
}
debug_with_when!(OperandDecl {
    docs,
    name,
    dtype,
    dims,
    placement,
    aliases
});
debug_with_when!(PrefetchDecl {
    docs,
    name,
    dtype,
    dims
});
debug_with_when!(ScratchDecl { docs, name, kind });

#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// Blocked: a window of `dims` moved into `space` (VMEM unless said) per
    /// grid step, at the block index `index_map` computes.
    Block {
        dims: Vec<BlockDim>,
        index_map: Vec<Expr>,
        space: Option<(MemSpace, Span)>,
        /// `buffered(n)`: how many buffers the pipeline keeps for the block
        /// (Pallas's `pipeline_mode=pl.Buffered(n)`); two when absent.
        buffers: Option<Expr>,
        span: Span,
    },
    /// The whole array, in one memory space, for the whole grid.
    Whole { space: MemSpace, span: Span },
}

#[derive(Debug, Clone, PartialEq)]
pub enum BlockDim {
    /// `_`: a block of size 1 whose dimension is dropped from the kernel's ref.
    Squeezed(Span),
    Size(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemSpace {
    Vmem,
    Smem,
    Any,
}

impl MemSpace {
    pub fn name(self) -> &'static str {
        match self {
            MemSpace::Vmem => "vmem",
            MemSpace::Smem => "smem",
            MemSpace::Any => "any",
        }
    }
}

/// The clauses between a kernel's signature and its body.
#[derive(Debug, Clone, PartialEq)]
pub enum Clause {
    Grid(Vec<GridDim>, Span),
    Prefetch(Vec<PrefetchDecl>, Span),
    Scratch(Vec<ScratchDecl>, Span),
    VmemLimit(Expr, Span),
    /// `mesh (x in 2, y in ny)`: the kernel runs once per device of a
    /// mesh of these named axes (row-major device ids).
    Mesh(Vec<MeshAxisDecl>, Span),
    /// `collective_id c`: the id of the kernel's collective, which gives it
    /// a barrier semaphore (`barrier_sem`).
    CollectiveId(Expr, Span),
    Assert(StaticAssert),
    /// `where COND`: a constraint between (tunable) parameters; a
    /// configuration that breaks it is not a configuration of the kernel.
    Where(Expr, Span),
}

/// `assert(cond, "message")`: a condition on compile-time values, checked
/// when the kernel is specialised (in the header or a body).
#[derive(Debug, Clone, PartialEq)]
pub struct StaticAssert {
    pub cond: Expr,
    pub message: Option<String>,
    pub span: Span,
}

/// `i in M / bm parallel`, or a dynamic extent with its compile-time upper
/// bound, `t in n[0] <= 64 arbitrary`.
#[derive(Clone, PartialEq)]
pub struct GridDim {
    pub name: Ident,
    pub extent: Expr,
    /// The bound written after `<=`: present exactly when the extent is
    /// meant to be read at run time.
    pub bound: Option<Expr>,
    pub semantics: Semantics,
    pub span: Span,
}

/// `x in 4`: a mesh axis and its size.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshAxisDecl {
    pub name: Ident,
    pub size: Expr,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semantics {
    Parallel,
    Arbitrary,
}

/// Prints `bound` only when present, so static grids print as before.
impl std::fmt::Debug for GridDim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("GridDim");
        d.field("name", &self.name).field("extent", &self.extent);
        if let Some(b) = &self.bound {
            d.field("bound", b);
        }
        d.field("semantics", &self.semantics)
            .field("span", &self.span)
            .finish()
    }
}

/// `ids: i32[G]`: a scalar-prefetch operand, copied to SMEM before the grid runs.
#[derive(Clone, PartialEq)]
pub struct PrefetchDecl {
    pub docs: Vec<String>,
    pub name: Ident,
    pub dtype: Ident,
    pub dims: Vec<Expr>,
    pub when: Option<Expr>,
    pub span: Span,
}

/// `acc: vmem f32[bm, bn]`, `sem: dma_sem[2]`, optionally `... if COND`.
#[derive(Clone, PartialEq)]
pub struct ScratchDecl {
    pub docs: Vec<String>,
    pub name: Ident,
    pub kind: ScratchKind,
    pub when: Option<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ScratchKind {
    Buffer {
        space: MemSpace,
        dtype: Ident,
        dims: Vec<Expr>,
    },
    DmaSem {
        dims: Vec<Expr>,
    },
    /// `sem[N]`: plain semaphores, signalled and waited by count.
    Sem {
        dims: Vec<Expr>,
    },
    /// `barrier_sem`: the barrier semaphore of the kernel's collective.
    BarrierSem,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub tail: Option<Box<Expr>>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    Let {
        name: Ident,
        mutable: bool,
        ty: Option<TypeExpr>,
        value: Expr,
        span: Span,
    },
    Assign {
        target: Expr,
        op: AssignOp,
        value: Expr,
        span: Span,
    },
    Expr(Expr),
    For {
        var: Ident,
        lo: Expr,
        hi: Expr,
        step: Option<Expr>,
        /// `for ... unroll { }`: the body is repeated for each index, which
        /// is a compile-time integer inside it.
        unroll: bool,
        body: Block,
        span: Span,
    },
    While {
        cond: Expr,
        body: Block,
        span: Span,
    },
    Assert(StaticAssert),
    /// `let (a, mut b, _) = f(x);`: binds the elements of a tuple; `_`
    /// ignores one. Each name is an ordinary (or `let mut`) binding.
    LetTuple {
        names: Vec<(Ident, bool)>,
        value: Expr,
        span: Span,
    },
    /// A function declared inside a kernel (or function) body: it sees the
    /// names in scope where it is declared.
    Fn(Box<FnDecl>),
    /// `print("x = {}, i = {}", x, i);`: prints at run time, with the grid
    /// step; each `{}` takes the next argument.
    Print {
        fmt: String,
        args: Vec<Expr>,
        span: Span,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Int(u64),
    Float(f64),
    Bool(bool),
    Name(Path),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, Ident),
    Call(Path, Vec<Arg>),
    Index(Box<Expr>, Vec<Index>),
    /// `k.at[h, ..]`: a view of a ref (a sub-ref), as Pallas' `ref.at[...]`;
    /// the identifier is the member written (only `at` is one).
    At(Box<Expr>, Ident, Vec<Index>),
    /// `k.reshape(8, 128)`, `k.bitcast(u32)`: a method of a ref, as Pallas'
    /// `ref.reshape(...)` / `ref.bitcast(...)` (the checker knows which
    /// members exist).
    Method(Box<Expr>, Ident, Vec<Arg>),
    List(Vec<Expr>),
    /// `(a, b, c)`: a tuple of values (at least two elements).
    Tuple(Vec<Expr>),
    If(Box<Expr>, Block, Option<Box<Expr>>),
    Block(Block),
    /// A syntax error the parser recovered from; checking skips it.
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
}

/// One index of a ref or value subscript.
#[derive(Debug, Clone, PartialEq)]
pub enum Index {
    /// `:` the whole dimension.
    Full(Span),
    /// `..` all remaining dimensions.
    Rest(Span),
    /// `a..b` a static range.
    Range(Expr, Expr, Span),
    /// A scalar index (drops the dimension) or `ds(start, size)`.
    Expr(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }
}

/// Trees are torn down without recursion: a chain like `a + b + c + ...`
/// from a hostile input can be far deeper than the stack (the depth limit
/// of [`crate::depth`] rejects such trees, and rejecting means dropping).
impl Drop for Expr {
    fn drop(&mut self) {
        if is_leaf(&self.kind) {
            return;
        }
        let mut work = vec![std::mem::replace(&mut self.kind, ExprKind::Error)];
        while let Some(mut kind) = work.pop() {
            // Move each child's contents onto the work list; `kind` keeps
            // only emptied children, so dropping it does not recurse.
            let mut found: Vec<ExprKind> = Vec::new();
            let mut take = |e: &mut Expr| {
                if !is_leaf(&e.kind) {
                    found.push(std::mem::replace(&mut e.kind, ExprKind::Error));
                }
            };
            match &mut kind {
                ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => take(a),
                ExprKind::Binary(_, a, b) => {
                    take(a);
                    take(b);
                }
                ExprKind::Call(_, args) => args.iter_mut().for_each(|a| take(&mut a.value)),
                ExprKind::Method(base, _, args) => {
                    take(base);
                    args.iter_mut().for_each(|a| take(&mut a.value));
                }
                ExprKind::Index(base, idx) | ExprKind::At(base, _, idx) => {
                    take(base);
                    for i in idx {
                        match i {
                            Index::Range(a, b, _) => {
                                take(a);
                                take(b);
                            }
                            Index::Expr(x) => take(x),
                            Index::Full(_) | Index::Rest(_) => {}
                        }
                    }
                }
                ExprKind::List(items) | ExprKind::Tuple(items) => items.iter_mut().for_each(take),
                ExprKind::If(c, then, els) => {
                    take(c);
                    take(&mut block_expr(then));
                    if let Some(x) = els {
                        take(x);
                    }
                }
                ExprKind::Block(b) => {
                    for s in &mut b.stmts {
                        match s {
                            Stmt::Let { value, .. }
                            | Stmt::Expr(value)
                            | Stmt::LetTuple { value, .. } => take(value),
                            Stmt::Fn(f) => {
                                for p in &mut f.params {
                                    if let Some(d) = &mut p.default {
                                        take(d);
                                    }
                                }
                                take(&mut block_expr(&mut f.body));
                            }
                            Stmt::Assign { target, value, .. } => {
                                take(target);
                                take(value);
                            }
                            Stmt::For {
                                lo, hi, step, body, ..
                            } => {
                                take(lo);
                                take(hi);
                                if let Some(s) = step {
                                    take(s);
                                }
                                take(&mut block_expr(body));
                            }
                            Stmt::While { cond, body, .. } => {
                                take(cond);
                                take(&mut block_expr(body));
                            }
                            Stmt::Assert(a) => take(&mut a.cond),
                            Stmt::Print { args, .. } => args.iter_mut().for_each(&mut take),
                        }
                    }
                    if let Some(t) = &mut b.tail {
                        take(t);
                    }
                }
                ExprKind::Int(_)
                | ExprKind::Float(_)
                | ExprKind::Bool(_)
                | ExprKind::Name(_)
                | ExprKind::Error => {}
            }
            work.append(&mut found);
        }
    }
}

fn is_leaf(k: &ExprKind) -> bool {
    matches!(
        k,
        ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Name(_)
            | ExprKind::Error
    )
}

/// A block's contents moved into a block expression (for [`Expr`]'s drop).
fn block_expr(b: &mut Block) -> Expr {
    Expr {
        kind: ExprKind::Block(Block {
            stmts: std::mem::take(&mut b.stmts),
            tail: b.tail.take(),
            span: b.span,
        }),
        span: b.span,
    }
}
