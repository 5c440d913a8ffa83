//! The kernel header, one stage per part: parameters, clauses, grid,
//! operands, aliases, scratch and the VMEM limit. [`super::check_kernel`]
//! runs the stages in this order over one [`KernelCx`].
//!
//! invariant: names are declared (and duplicates reported) in source-stage
//! order: parameters, grid indices, operands (prefetch, inputs, outputs),
//! scratch. Each stage sees, by name, only what the stages before it bound,
//! so a default or a shape can use earlier parameters but not operands.

use super::builder::{Binding, Builder};
use super::value::Val;
use super::{describe_const, missing_param, unknown_name, unsupported_dtype, Checker, Expr2, Spec};
use crate::ast::{self, BlockDim as AstBlockDim, Clause, ParamKind, Placement};
use crate::diag::{codes, Diag};
use crate::ir::{self, Arena, BlockDim, Dim, ParamValue, RefDecl, RefOrigin, RefType, Role, Space};
use crate::resolve::ModId;
use crate::span::Span;
use std::collections::HashMap;

/// What the header stages share: the kernel's refs, the names bound so far
/// and the first declaration of each name.
pub(super) struct KernelCx<'a> {
    pub m: ModId,
    pub decl: &'a ast::KernelDecl,
    pub refs: Arena<RefDecl>,
    /// What the body (and later header stages) see by name.
    pub bindings: Vec<(String, Binding)>,
    seen: HashMap<String, Span>,
    /// What `num_programs` gives in index maps: each axis's extent, and for
    /// a dynamic axis the prefetch element it reads (set once the prefetch
    /// operands exist, before the first index map is built).
    pub grid_extents: Vec<Dim>,
    pub grid_dynamic: Vec<Option<(ir::RefId, Vec<u64>)>>,
    /// The mesh axes (`mesh (..)`), for the body and the index maps.
    pub mesh: Vec<ir::MeshAxis>,
    /// The `mesh (..)` clause's span.
    pub mesh_span: Span,
}

/// The clauses of a kernel, gathered (`grid`, `prefetch`, `scratch` may be
/// split across several clauses of the same kind only by mistake, which
/// [`KernelCx::clauses`] reports).
#[derive(Default)]
pub(super) struct Clauses<'a> {
    pub grid: Vec<&'a ast::GridDim>,
    pub prefetch: Vec<&'a ast::PrefetchDecl>,
    pub scratch: Vec<&'a ast::ScratchDecl>,
    pub vmem_limit: Option<&'a ast::Expr>,
    pub asserts: Vec<&'a ast::StaticAssert>,
    /// `where COND` constraints, with their spans.
    pub wheres: Vec<(&'a ast::Expr, Span)>,
    pub mesh: Vec<&'a ast::MeshAxisDecl>,
    /// The `mesh (..)` clause, where the device's coordinates are read.
    pub mesh_span: Option<Span>,
    pub collective_id: Option<(&'a ast::Expr, Span)>,
}

impl<'a> KernelCx<'a> {
    pub fn new(m: ModId, decl: &'a ast::KernelDecl) -> Self {
        KernelCx {
            m,
            decl,
            refs: Arena::new(),
            bindings: Vec::new(),
            seen: HashMap::new(),
            grid_extents: Vec::new(),
            grid_dynamic: Vec::new(),
            mesh: Vec::new(),
            mesh_span: Span::default(),
        }
    }

    /// A builder for compile-time expressions over the names bound so far.
    pub(super) fn constant<'c, 'p>(&'c self, ck: &'c mut Checker<'p>) -> Builder<'c, 'p> {
        Builder::constant(ck, self.m, &self.refs, &self.bindings)
    }

    /// Records a declaration, reporting a name declared twice.
    fn declare(&mut self, ck: &mut Checker, name: &ast::Ident) {
        if let Some(first) = self.seen.get(&name.name) {
            ck.error(
                Diag::new(&codes::DUPLICATE, format!("`{}` is declared twice in kernel", name.name), name.span)
                    .label("second declaration")
                    .with(*first, "first declared here")
                    .help("parameters, operands, grid indices and scratch buffers share one namespace; rename one"),
            );
        } else {
            self.seen.insert(name.name.clone(), name.span);
        }
    }

    /// Parameters, in order: each default may use the ones before it.
    pub fn params(
        &mut self,
        ck: &mut Checker,
        spec: &Spec,
        param_values: &[(String, Expr2)],
    ) -> Vec<ir::Param> {
        let mut params = Vec::new();
        for p in &self.decl.params {
            self.declare(ck, &p.name);
            let given = param_values
                .iter()
                .find(|(n, _)| *n == p.name.name)
                .map(|(_, e)| e);
            let val = self.param_value(ck, p, given);
            let (bound, value) = match val {
                Val::None => self.none_param(ck, p, given),
                val => self.param_binding(ck, spec, p, given, val),
            };
            // The default is checked against the candidates only when it is
            // the value used: `-p` may set any value.
            let default = match (given, &value) {
                (None, ParamValue::Int(v)) => Some(*v),
                _ => None,
            };
            let candidates = self.candidates(ck, p, default);
            self.bindings
                .push((p.name.name.clone(), Binding::Val(bound)));
            params.push(ir::Param {
                name: p.name.name.clone(),
                value,
                docs: p.docs.clone(),
                candidates,
            });
        }
        params
    }

    /// The value of one parameter: its `-p` value, else its default, else
    /// [`Val::Unit`].
    fn param_value(&self, ck: &mut Checker, p: &ast::KernelParam, given: Option<&Expr2>) -> Val {
        let mut b = self.constant(ck);
        match (given, &p.default) {
            (Some(e), _) => match unknown_name(&e.expr, &self.bindings) {
                Some(bad) if unsupported_dtype(&bad.name, bad.span).is_some() => {
                    b.error(unsupported_dtype(&bad.name, bad.span).expect("checked above"))
                }
                Some(bad) => {
                    let want = p.kind.noun();
                    b.error(
                        Diag::new(
                            &codes::BAD_PARAM_VALUE,
                            format!("parameter `{}` takes {want}", p.name.name),
                            bad.span,
                        )
                        .label(format!(
                            "`{}` is not a number, dtype or parameter",
                            bad.name
                        ))
                        .help(
                            "values are integers, integer expressions of earlier parameters \
                             (`4 * bm`) or dtype names (`bf16`)",
                        ),
                    )
                }
                None => b.const_expr(&e.expr),
            },
            (None, Some(d)) => b.const_expr(d),
            (None, None) => Val::Unit,
        }
    }

    /// Checks a parameter's value against its kind: what its name is bound
    /// to, and its value in the IR.
    fn param_binding(
        &self,
        ck: &mut Checker,
        spec: &Spec,
        p: &ast::KernelParam,
        given: Option<&Expr2>,
        val: Val,
    ) -> (Val, ParamValue) {
        let written = || {
            given
                .map(|e| e.expr.span)
                .or(p.default.as_ref().map(|d| d.span))
                .unwrap_or(p.span)
        };
        match (p.kind, val) {
            (ParamKind::Int, Val::Int(d)) => (
                Val::Int(d.clone()),
                d.known()
                    .map(ParamValue::Int)
                    .unwrap_or(ParamValue::Unbound),
            ),
            (ParamKind::Dtype, Val::Dtype(d)) if !ck.target.supports(d) => {
                let t = ck.target;
                ck.error(
                    Diag::new(
                        &codes::DTYPE_TARGET,
                        format!("`{d}` is not supported on {t}"),
                        written(),
                    )
                    .label(format!("no {d} on this generation"))
                    .with(p.name.span, "parameter declared here")
                    .help("fp8 types need v5e or later; pick another --target or dtype"),
                );
                (Val::Err, ParamValue::Unbound)
            }
            (ParamKind::Dtype, Val::Dtype(d)) => (Val::Dtype(d), ParamValue::Dtype(d)),
            (ParamKind::Int, Val::Unit) => {
                if spec.specialise {
                    ck.error(missing_param(&p.name, self.decl));
                }
                (Val::Int(Dim::param(&p.name.name)), ParamValue::Unbound)
            }
            // Infinity and NaN (from `inf`, or an expression that
            // overflows) would become part of a package's name and a
            // kernel's constants: refused as `inf` itself is.
            (ParamKind::Float, Val::Float(x)) if !x.is_finite() => {
                ck.error(
                    Diag::new(
                        &codes::BAD_PARAM_VALUE,
                        format!("parameter `{}` takes a finite float", p.name.name),
                        written(),
                    )
                    .label(format!("this is {x}"))
                    .with(p.name.span, "parameter declared here")
                    .help("give a number within the range of a 64-bit float"),
                );
                (Val::Err, ParamValue::Unbound)
            }
            (ParamKind::Float, Val::Float(x)) => (Val::Float(x), ParamValue::Float(x)),
            // An integer written for a float parameter (`-p scale=1`) is
            // exact as a float.
            (ParamKind::Float, Val::Int(Dim::Known(v))) => {
                (Val::Float(v as f64), ParamValue::Float(v as f64))
            }
            (ParamKind::Bool, Val::Bool(b)) => (Val::Bool(b), ParamValue::Bool(b)),
            // Dtypes, floats and bools have no symbolic form, so even
            // `pkc check` needs their value.
            (ParamKind::Dtype | ParamKind::Float | ParamKind::Bool, Val::Unit) => {
                ck.error(missing_param(&p.name, self.decl));
                (Val::Err, ParamValue::Unbound)
            }
            (_, Val::Err) => (Val::Err, ParamValue::Unbound),
            (kind, other) => {
                let want = kind.noun();
                ck.error(
                    Diag::new(
                        &codes::BAD_PARAM_VALUE,
                        format!("parameter `{}` takes {want}", p.name.name),
                        written(),
                    )
                    .label(format!("this is {}", describe_const(&other, given)))
                    .with(p.name.span, "parameter declared here"),
                );
                (Val::Err, ParamValue::Unbound)
            }
        }
    }

    /// Gathers the clauses, reporting a clause given twice.
    pub fn clauses(&self, ck: &mut Checker) -> Clauses<'a> {
        let mut out = Clauses::default();
        let mut seen_clause: HashMap<&'static str, Span> = HashMap::new();
        for c in &self.decl.clauses {
            let (name, span) = match c {
                Clause::Grid(g, s) => {
                    out.grid.extend(g.iter());
                    ("grid", *s)
                }
                Clause::Prefetch(p, s) => {
                    out.prefetch.extend(p.iter());
                    ("prefetch", *s)
                }
                Clause::Scratch(x, s) => {
                    out.scratch.extend(x.iter());
                    ("scratch", *s)
                }
                Clause::VmemLimit(e, s) => {
                    out.vmem_limit = Some(e);
                    ("vmem_limit", *s)
                }
                Clause::Mesh(axes, s) => {
                    out.mesh.extend(axes.iter());
                    out.mesh_span = Some(*s);
                    ("mesh", *s)
                }
                Clause::CollectiveId(e, s) => {
                    out.collective_id = Some((e, *s));
                    ("collective_id", *s)
                }
                // Any number of assertions may be given.
                Clause::Assert(a) => {
                    out.asserts.push(a);
                    continue;
                }
                Clause::Where(e, s) => {
                    out.wheres.push((e, *s));
                    continue;
                }
            };
            if let Some(first) = seen_clause.insert(name, span) {
                ck.error(
                    Diag::new(
                        &codes::DUPLICATE,
                        format!("`{name}` clause given twice"),
                        span,
                    )
                    .label("second clause")
                    .with(first, "first here")
                    .help("merge the two clauses into one"),
                );
            }
        }
        out
    }

    /// The header's assertions, over the parameters; `false` when one
    /// fails.
    pub fn asserts(&self, ck: &mut Checker, asserts: &[&ast::StaticAssert]) -> bool {
        let mut ok = true;
        for a in asserts {
            ok &= self.constant(ck).static_assert(a);
        }
        ok
    }

    /// The grid axes, and the names of those that opt in to a ragged last
    /// block (an extent written `cdiv(...)`, see [`super::ragged`]).
    pub fn grid(
        &mut self,
        ck: &mut Checker,
        dims: &[&ast::GridDim],
        prefetch: &[&ast::PrefetchDecl],
    ) -> (Vec<ir::GridAxis>, Vec<String>) {
        let mut grid = Vec::new();
        let mut ragged = Vec::new();
        for g in dims {
            self.declare(ck, &g.name);
            if super::ragged::is_cdiv(&g.extent)
                || g.bound.as_ref().is_some_and(super::ragged::bound_opts_in)
            {
                ragged.push(g.name.name.clone());
            }
            let extent = self.grid_extent(ck, g, prefetch).unwrap_or(Dim::Known(1));
            grid.push(ir::GridAxis {
                name: g.name.name.clone(),
                extent,
                semantics: match g.semantics {
                    ast::Semantics::Parallel => ir::Semantics::Parallel,
                    ast::Semantics::Arbitrary => ir::Semantics::Arbitrary,
                },
                // Set by `dynamic_extents` once the operands are known.
                dynamic: None,
            });
        }
        (grid, ragged)
    }

    /// Operands in call order: prefetch, then inputs, then outputs. Each is
    /// bound as it is declared, so index maps see the prefetch refs. Once
    /// the prefetch operands exist, the grid's dynamic extents are resolved
    /// (see [`super::dyngrid`]), so that index maps see them too.
    pub fn operands(
        &mut self,
        ck: &mut Checker,
        prefetch: &[&'a ast::PrefetchDecl],
        (dims, grid): (&[&ast::GridDim], &mut [ir::GridAxis]),
        grid_names: &[String],
    ) -> Vec<ir::Operand> {
        let mut operands: Vec<ir::Operand> = Vec::new();
        let mut resolved = false;
        for src in operand_sources(self.decl, prefetch) {
            if !resolved && matches!(src, OperandSrc::Operand(..)) {
                self.dynamic_extents(ck, dims, grid, &operands);
                resolved = true;
            }
            let (name, when) = src.name_when();
            if !self.present(ck, name, when) {
                self.declare(ck, name);
                continue;
            }
            let op = self.operand(ck, &src, operands.len(), grid_names);
            operands.push(op);
        }
        if !resolved {
            self.dynamic_extents(ck, dims, grid, &operands);
        }
        operands
    }

    fn operand(
        &mut self,
        ck: &mut Checker,
        src: &OperandSrc<'a>,
        op_index: usize,
        grid_names: &[String],
    ) -> ir::Operand {
        let (name, docs, dtype_id, dims, span) = src.parts();
        self.declare(ck, name);
        let dtype = self.constant(ck).dtype_name(dtype_id);
        let shape = {
            let mut b = self.constant(ck);
            dims.iter()
                .map(|d| {
                    b.const_dim(d, "an array dimension")
                        .unwrap_or(Dim::Known(1))
                })
                .collect::<Vec<_>>()
        };
        let dtype = dtype.unwrap_or(ir::DType::F32);
        let (space, block, ref_shape) = match src {
            OperandSrc::Prefetch(_) => (Space::Smem, None, shape.clone()),
            OperandSrc::Operand(o, _) => match &o.placement {
                Placement::Whole { space, .. } => (mem_space(*space), None, shape.clone()),
                Placement::Block {
                    dims: bdims,
                    index_map,
                    space,
                    buffers,
                    span: pspan,
                } => {
                    let space = space.map(|(s, _)| mem_space(s)).unwrap_or(Space::Vmem);
                    let (mut block, ref_shape) =
                        self.block(ck, name, &shape, bdims, index_map, *pspan, grid_names);
                    if let Some(e) = buffers {
                        block.buffers = self.buffer_count(ck, name, e);
                    }
                    (space, Some(block), ref_shape)
                }
            },
        };
        let role = match src {
            OperandSrc::Prefetch(_) => Role::Prefetch,
            OperandSrc::Operand(_, r) => *r,
        };
        let ref_id = self.refs.append(RefDecl {
            name: name.name.clone(),
            ty: RefType {
                space,
                dtype,
                shape: ref_shape,
            },
            origin: RefOrigin::Operand(op_index),
        });
        self.bindings
            .push((name.name.clone(), Binding::Val(Val::Ref(ref_id))));
        ir::Operand {
            name: name.name.clone(),
            docs: docs.to_vec(),
            role,
            dtype,
            shape,
            space,
            block,
            ref_id,
            aliases: None,
            span,
        }
    }

    /// The buffer count of `buffered(e)`: a compile-time 1 or 2, the two
    /// pipeline modes Mosaic's grid pipeline has (`synchronous` and
    /// `double_buffered`; Pallas's `pallas_call` refuses other counts on
    /// TPU too). An error leaves the default of two.
    fn buffer_count(&self, ck: &mut Checker, name: &ast::Ident, e: &ast::Expr) -> Dim {
        let Some(d) = self.constant(ck).const_dim(e, "a buffer count") else {
            return Dim::Known(2);
        };
        match d.known() {
            Some(n) if !(1..=2).contains(&n) => {
                ck.error(
                    Diag::new(
                        &codes::BUFFER_COUNT,
                        format!("`{}` asks for {n} buffers; a grid's blocks have 1 or 2", name.name),
                        e.span,
                    )
                    .label(format!("this is {n}"))
                    .help("`buffered(1)` for a block whose index rarely changes (weights, scales), `buffered(2)` (the default) to fetch the next block while this one is used; deeper prefetching is a loop of `copy_start`/`copy_wait` over an `in any` operand"),
                );
                Dim::Known(2)
            }
            _ => d,
        }
    }

    /// A blocked operand's block spec and the shape of its ref (the block
    /// without its squeezed dimensions).
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        ck: &mut Checker,
        name: &ast::Ident,
        shape: &[Dim],
        bdims: &[AstBlockDim],
        index_map: &[ast::Expr],
        pspan: Span,
        grid_names: &[String],
    ) -> (ir::BlockSpec, Vec<Dim>) {
        let bd: Vec<BlockDim> = {
            let mut b = self.constant(ck);
            bdims
                .iter()
                .map(|d| match d {
                    AstBlockDim::Squeezed(_) => BlockDim::Squeezed,
                    AstBlockDim::Size(e) => {
                        BlockDim::Size(b.const_dim(e, "a block dimension").unwrap_or(Dim::Known(1)))
                    }
                })
                .collect()
        };
        if bd.len() != shape.len() {
            ck.error(
                Diag::new(
                    &codes::INDEX_MAP_ARITY,
                    format!(
                        "block of `{}` has {} dimensions, the array has {}",
                        name.name,
                        bd.len(),
                        shape.len()
                    ),
                    pspan,
                )
                .label("block shape")
                .help("give one block size (or `_` to squeeze) per array dimension"),
            );
        }
        if index_map.len() != shape.len() {
            let span = index_map
                .first()
                .map(|e| e.span.to(index_map[index_map.len() - 1].span))
                .unwrap_or(pspan);
            ck.error(
                Diag::new(&codes::INDEX_MAP_ARITY, format!("index map of `{}` returns {} block indices, the array has {} dimensions", name.name, index_map.len(), shape.len()), span)
                    .label("index map")
                    .help("return one block index per array dimension, squeezed ones included (e.g. `at (i, 0)`)"),
            );
        }
        let mut b = Builder::index_map(ck, self.m, &self.refs, &self.bindings, grid_names);
        b.grid_extents = self.grid_extents.clone();
        b.grid_dynamic = self.grid_dynamic.clone();
        b.bind_mesh(&self.mesh, self.mesh_span);
        let f = b.index_map_func(index_map, shape.len());
        let ref_shape: Vec<Dim> = bd
            .iter()
            .filter_map(|d| match d {
                BlockDim::Squeezed => None,
                BlockDim::Size(s) => Some(s.clone()),
            })
            .collect();
        (
            ir::BlockSpec {
                dims: bd,
                index_map: f,
                buffers: Dim::Known(2),
            },
            ref_shape,
        )
    }

    /// Aliases: an output reusing an input's buffer.
    pub fn aliases(&self, ck: &mut Checker, operands: &mut [ir::Operand]) {
        // Absent operands are not in `operands`: find each by name.
        let sources = self
            .decl
            .inputs
            .iter()
            .map(|o| (o, Role::Input))
            .chain(self.decl.outputs.iter().map(|o| (o, Role::Output)));
        for (o, role) in sources {
            let Some(i) = operands
                .iter()
                .position(|x| x.name == o.name.name && x.role == role)
            else {
                continue;
            };
            let Some(a) = &o.aliases else {
                continue;
            };
            // An output aliasing an absent input is a buffer of its own.
            if self
                .bindings
                .iter()
                .any(|(n, b)| *n == a.name && matches!(b, Binding::Absent(_)))
            {
                continue;
            }
            let target = operands
                .iter()
                .position(|x| x.name == a.name && x.role != Role::Output);
            match (role, target) {
                (Role::Output, Some(t)) => {
                    if operands[t].shape != operands[i].shape
                        || operands[t].dtype != operands[i].dtype
                    {
                        ck.error(
                            Diag::new(&codes::SHAPE_MISMATCH, format!("`{}` aliases `{}` but their arrays differ", o.name.name, a.name), a.span)
                                .label(format!("`{}` is {}[{}]", a.name, operands[t].dtype, ir::shape_str(&operands[t].shape)))
                                .with(o.name.span, format!("`{}` is {}[{}]", o.name.name, operands[i].dtype, ir::shape_str(&operands[i].shape)))
                                .help("an output can reuse an input's buffer only when shape and dtype agree"),
                        );
                    } else {
                        operands[i].aliases = Some(t);
                    }
                }
                _ => ck.error(
                    Diag::new(
                        &codes::UNKNOWN_NAME,
                        format!("`aliases {}` must name an input of this kernel", a.name),
                        a.span,
                    )
                    .label("not an input")
                    .help("only outputs alias, and only inputs can be aliased"),
                ),
            }
        }
    }

    /// Scratch buffers and DMA semaphores.
    pub fn scratch(&mut self, ck: &mut Checker, decls: &[&ast::ScratchDecl]) -> Vec<ir::Scratch> {
        let mut scratch = Vec::new();
        for s in decls {
            self.declare(ck, &s.name);
            if !self.present(ck, &s.name, s.when.as_ref()) {
                continue;
            }
            let (space, dtype, dims) = match &s.kind {
                ast::ScratchKind::Buffer { space, dtype, dims } => {
                    let d = self.constant(ck).dtype_name(dtype);
                    (
                        mem_space(*space),
                        d.unwrap_or(ir::DType::F32),
                        dims.as_slice(),
                    )
                }
                ast::ScratchKind::DmaSem { dims } => {
                    (Space::Semaphore, ir::DType::I32, dims.as_slice())
                }
                ast::ScratchKind::Sem { dims } => (Space::Sem, ir::DType::I32, dims.as_slice()),
                ast::ScratchKind::BarrierSem => (Space::Barrier, ir::DType::I32, &[][..]),
            };
            let mut shape: Vec<Dim> = {
                let mut b = self.constant(ck);
                dims.iter()
                    .map(|d| {
                        b.const_dim(d, "a scratch dimension")
                            .unwrap_or(Dim::Known(1))
                    })
                    .collect()
            };
            // A barrier semaphore is one semaphore of rank 0, as Mosaic's
            // `tpu.sem_barrier` gives it.
            if shape.is_empty() && space != Space::Barrier {
                shape.push(Dim::Known(1));
            }
            if space == Space::Any {
                ck.error(
                    Diag::new(
                        &codes::ANY_ACCESS,
                        "scratch buffers live in VMEM or SMEM",
                        s.span,
                    )
                    .label("`any` is HBM, which the kernel does not allocate")
                    .help("write `vmem` or `smem`"),
                );
            }
            let ref_id = self.refs.append(RefDecl {
                name: s.name.name.clone(),
                ty: RefType {
                    space,
                    dtype,
                    shape,
                },
                origin: RefOrigin::Scratch(scratch.len()),
            });
            self.bindings
                .push((s.name.name.clone(), Binding::Val(Val::Ref(ref_id))));
            scratch.push(ir::Scratch {
                name: s.name.name.clone(),
                ref_id,
                span: s.span,
            });
        }
        scratch
    }

    /// The mesh axes: each name is bound (in the body and index maps) to
    /// this device's coordinate along it, each size is a positive
    /// compile-time integer (PK0360).
    pub fn mesh(&mut self, ck: &mut Checker, axes: &[&ast::MeshAxisDecl]) {
        for a in axes {
            self.declare(ck, &a.name);
            let size = match self.constant(ck).const_expr(&a.size) {
                Val::Int(d) => match d.known() {
                    Some(v) if v <= 0 => {
                        ck.error(
                            Diag::new(
                                &codes::MESH,
                                format!("mesh axis `{}` has {v} devices", a.name.name),
                                a.size.span,
                            )
                            .label(format!("this is {v}"))
                            .help("a mesh axis has at least one device: `mesh (x in 4)`"),
                        );
                        Dim::Known(1)
                    }
                    _ => d,
                },
                Val::Err => Dim::Known(1),
                other => {
                    let d = self.constant(ck).describe(&other);
                    ck.error(
                        Diag::new(&codes::MESH, format!("the size of mesh axis `{}` must be a compile-time integer", a.name.name), a.size.span)
                            .label(format!("this is {d}"))
                            .help("write the size as a parameter: `kernel k<n: int = 4>(..) mesh (x in n)`"),
                    );
                    Dim::Known(1)
                }
            };
            self.mesh.push(ir::MeshAxis {
                name: a.name.name.clone(),
                size,
            });
        }
    }

    /// The collective id (`collective_id c`): a compile-time integer in
    /// `0..2^31` (PK0364); and a barrier semaphore only with one.
    pub fn collective_id(
        &mut self,
        ck: &mut Checker,
        clause: Option<(&ast::Expr, Span)>,
        scratch: &[&ast::ScratchDecl],
    ) -> Option<u64> {
        let id = clause.and_then(|(e, _)| match self.constant(ck).const_expr(e) {
            Val::Int(d) => match d.known() {
                Some(v) if (0..=i32::MAX as i64).contains(&v) => Some(v as u64),
                Some(v) => {
                    ck.error(
                        Diag::new(&codes::BARRIER, format!("collective id {v} is out of range"), e.span)
                            .label(format!("this is {v}"))
                            .help("a collective id is an integer from 0 to 2147483647"),
                    );
                    None
                }
                // `pkc check` without values: no id yet.
                None => Some(0),
            },
            Val::Err => None,
            other => {
                let d = self.constant(ck).describe(&other);
                ck.error(
                    Diag::new(&codes::BARRIER, "the collective id must be a compile-time integer", e.span)
                        .label(format!("this is {d}"))
                        .help("make it a kernel parameter: `kernel k<cid: int = 0>(..) collective_id cid`"),
                );
                None
            }
        });
        if clause.is_none() {
            for s in scratch {
                if matches!(s.kind, ast::ScratchKind::BarrierSem) {
                    ck.error(
                        Diag::new(&codes::BARRIER, format!("barrier semaphore `{}` without a collective id", s.name.name), s.span)
                            .label("the TPU gives a barrier semaphore only to a kernel with a collective id")
                            .help("add `collective_id cid` to the kernel header, with `cid` a kernel parameter"),
                    );
                }
            }
        }
        let barriers: Vec<_> = scratch
            .iter()
            .filter(|s| matches!(s.kind, ast::ScratchKind::BarrierSem))
            .collect();
        if let [first, second, ..] = barriers.as_slice() {
            ck.error(
                Diag::new(
                    &codes::BARRIER,
                    "a kernel has one barrier semaphore",
                    second.span,
                )
                .label("second barrier semaphore")
                .with(first.span, "first here")
                .help("the collective has one barrier; count several phases on it"),
            );
        }
        id
    }

    /// The `vmem_limit` clause, in bytes.
    pub fn vmem_limit(&self, ck: &mut Checker, e: Option<&ast::Expr>) -> Option<u64> {
        e.and_then(|e| {
            self.constant(ck)
                .const_dim(e, "a VMEM limit")
                .and_then(|d| d.known())
                .map(|v| v.max(0) as u64)
        })
    }
}

/// Where an operand is declared: the prefetch clause or the signature.
enum OperandSrc<'a> {
    Prefetch(&'a ast::PrefetchDecl),
    Operand(&'a ast::OperandDecl, Role),
}

/// The operands in call order: prefetch, then inputs, then outputs.
fn operand_sources<'a>(
    decl: &'a ast::KernelDecl,
    prefetch: &[&'a ast::PrefetchDecl],
) -> Vec<OperandSrc<'a>> {
    let mut out: Vec<OperandSrc> = prefetch.iter().map(|p| OperandSrc::Prefetch(p)).collect();
    out.extend(
        decl.inputs
            .iter()
            .map(|o| OperandSrc::Operand(o, Role::Input)),
    );
    out.extend(
        decl.outputs
            .iter()
            .map(|o| OperandSrc::Operand(o, Role::Output)),
    );
    out
}

impl<'a> OperandSrc<'a> {
    fn name_when(&self) -> (&'a ast::Ident, Option<&'a ast::Expr>) {
        match self {
            OperandSrc::Prefetch(p) => (&p.name, p.when.as_ref()),
            OperandSrc::Operand(o, _) => (&o.name, o.when.as_ref()),
        }
    }

    fn parts(
        &self,
    ) -> (
        &'a ast::Ident,
        &'a [String],
        &'a ast::Ident,
        &'a [ast::Expr],
        Span,
    ) {
        match self {
            OperandSrc::Prefetch(p) => (&p.name, &p.docs, &p.dtype, &p.dims, p.span),
            OperandSrc::Operand(o, _) => (&o.name, &o.docs, &o.dtype, &o.dims, o.span),
        }
    }
}

fn mem_space(s: ast::MemSpace) -> Space {
    match s {
        ast::MemSpace::Vmem => Space::Vmem,
        ast::MemSpace::Smem => Space::Smem,
        ast::MemSpace::Any => Space::Any,
    }
}
