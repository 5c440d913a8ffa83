//! Dynamic grid extents: `t in n[0] <= 64 arbitrary`.
//!
//! Pallas TPU takes a grid bound as a run-time scalar (megablox's grouped
//! matmul runs `num_active_tiles` steps along its middle axis). In pk that
//! scalar is one element of a scalar-prefetch operand, and the axis carries
//! a compile-time upper bound after `<=`.
//!
//! invariant: every static rule sees the bound as the axis extent
//! (`GridAxis::extent`); only the executors (the CPU reference's grid loop,
//! the TPU's pipeline through a dynamic `iteration_bounds` entry) and
//! `num_programs` on that axis read the run-time value.
//!
//! invariant: a `GridAxis::dynamic` names a `Role::Prefetch` operand of
//! dtype `i32` and one in-range compile-time index per dimension of it.

use super::header::KernelCx;
use super::Checker;
use crate::ast::{self, Expr, ExprKind};
use crate::diag::{codes, Diag};
use crate::ir::{self, DType, Dim, Role};

/// The first scalar-prefetch operand an expression reads, if any.
fn prefetch_read<'p>(e: &Expr, prefetch: &'p [&ast::PrefetchDecl]) -> Option<&'p ast::Ident> {
    let mut found = None;
    super::ragged::names(e, &mut |n| {
        if found.is_none() {
            found = prefetch.iter().find(|p| p.name.name == n).map(|p| &p.name);
        }
    });
    found
}

impl KernelCx<'_> {
    /// The extent of grid axis `g` as the static rules see it: the bound
    /// after `<=` for a dynamic axis, else the extent itself. An extent that
    /// reads a prefetch operand without a bound is PK0335.
    pub(super) fn grid_extent(
        &mut self,
        ck: &mut Checker,
        g: &ast::GridDim,
        prefetch: &[&ast::PrefetchDecl],
    ) -> Option<Dim> {
        match (&g.bound, prefetch_read(&g.extent, prefetch)) {
            (Some(bound), _) => self
                .constant(ck)
                .const_dim(bound, "the upper bound of a dynamic grid extent"),
            (None, Some(p)) => {
                ck.error(
                    Diag::new(
                        &codes::DYNAMIC_EXTENT_BOUND,
                        format!(
                            "grid axis `{}` reads its extent from `{}` at run time, and has no upper bound",
                            g.name.name, p.name
                        ),
                        g.extent.span,
                    )
                    .label("known only when the kernel runs")
                    .with(p.span, format!("`{}` is a scalar-prefetch operand", p.name))
                    .help(format!(
                        "write the largest value it may take after the extent, as in `{} in {}[0] <= 64 {}`: the checker's budgets use it, and a run checks it",
                        g.name.name,
                        p.name,
                        match g.semantics {
                            ast::Semantics::Parallel => "parallel",
                            ast::Semantics::Arbitrary => "arbitrary",
                        }
                    )),
                );
                None
            }
            (None, None) => self.constant(ck).const_dim(&g.extent, "a grid extent"),
        }
    }

    /// Resolves each dynamic axis's extent (`n[0]`) to its prefetch element,
    /// once the prefetch operands are known, and records what
    /// `num_programs` gives in index maps. Errors are PK0335 (a bound on a
    /// static extent) and PK0336 (anything but one `i32` prefetch element).
    pub(super) fn dynamic_extents(
        &mut self,
        ck: &mut Checker,
        dims: &[&ast::GridDim],
        grid: &mut [ir::GridAxis],
        operands: &[ir::Operand],
    ) {
        for (g, axis) in dims.iter().zip(grid.iter_mut()) {
            if let Some(bound) = &g.bound {
                axis.dynamic = self.dynamic_extent(ck, g, bound, operands);
            }
        }
        self.grid_extents = grid.iter().map(|a| a.extent.clone()).collect();
        self.grid_dynamic = grid
            .iter()
            .map(|a| {
                let d = a.dynamic.as_ref()?;
                Some((operands[d.operand].ref_id, d.index.clone()))
            })
            .collect();
    }

    fn dynamic_extent(
        &mut self,
        ck: &mut Checker,
        g: &ast::GridDim,
        bound: &Expr,
        operands: &[ir::Operand],
    ) -> Option<ir::DynamicExtent> {
        let source = |what: String| {
            Diag::new(
                &codes::DYNAMIC_EXTENT_SOURCE,
                format!("the extent of dynamic grid axis `{}` {what}", g.name.name),
                g.extent.span,
            )
            .help("read one element of an `i32` scalar-prefetch operand, as written: `prefetch (n: i32[1])` and `t in n[0] <= 64 arbitrary`")
        };
        let mut runtime = false;
        super::ragged::names(&g.extent, &mut |n| {
            runtime |= ck.runtime_names.iter().any(|(m, ..)| m == n);
        });
        if !runtime {
            ck.error(
                Diag::new(
                    &codes::DYNAMIC_EXTENT_BOUND,
                    format!(
                        "grid axis `{}` has an upper bound, but its extent is known at compile time",
                        g.name.name
                    ),
                    bound.span,
                )
                .label("a bound is only for an extent read at run time")
                .with(g.extent.span, "a compile-time extent")
                .help("drop `<= ...`; a dynamic extent reads a scalar-prefetch element, as in `t in n[0] <= 64`"),
            );
            return None;
        }
        let (name, idx) = match &g.extent.kind {
            ExprKind::Index(base, idx) => match &base.kind {
                ExprKind::Name(p) if p.segments.len() == 1 => (&p.segments[0].name, idx),
                _ => {
                    ck.error(source(
                        "must index a scalar-prefetch operand by name".into(),
                    ));
                    return None;
                }
            },
            ExprKind::Name(p) if p.segments.len() == 1 => {
                let n = &p.segments[0].name;
                ck.error(
                    source(format!("is the whole ref `{n}`"))
                        .label("an index is needed: one element"),
                );
                return None;
            }
            _ => {
                ck.error(
                    source("is computed; it must be one scalar-prefetch element as it is".into())
                        .label("not a plain element read"),
                );
                return None;
            }
        };
        let Some((i, o)) = operands.iter().enumerate().find(|(_, o)| &o.name == name) else {
            // Only the prefetch operands exist when dynamic extents are
            // resolved: any other name is not one.
            let found = ck.runtime_names.iter().find(|(m, ..)| m == name).cloned();
            let d = match found {
                // A prefetch operand that is not among the operands is one
                // whose `if COND` is false here.
                Some((_, decl, "a scalar-prefetch operand")) => {
                    source(format!("reads `{name}`, which is absent in this specialisation"))
                        .label("no such operand for these parameters")
                        .with(decl, "declared with a condition that is false here")
                }
                Some((_, decl, kind)) => source(format!("reads `{name}`, which is {kind}"))
                    .label("not scalar prefetch")
                    .with(decl, "declared here; the grid's size must be known before any block is fetched, so only `prefetch (...)` operands may give it"),
                None => source(format!("reads `{name}`, which is not an operand"))
                    .label("not scalar prefetch"),
            };
            ck.error(d);
            return None;
        };
        debug_assert_eq!(o.role, Role::Prefetch);
        if o.dtype != DType::I32 {
            ck.error(
                source(format!("reads `{name}`, an `{}` array", o.dtype))
                    .label("not `i32`")
                    .with(o.span, "declared here"),
            );
            return None;
        }
        let scalars: Vec<&Expr> = idx
            .iter()
            .filter_map(|x| match x {
                ast::Index::Expr(e) => Some(e),
                _ => None,
            })
            .collect();
        if scalars.len() != idx.len() || idx.len() != o.shape.len() {
            ck.error(
                source(format!(
                    "must give {} scalar index(es) into `{name}`, one per dimension",
                    o.shape.len()
                ))
                .label("not one element"),
            );
            return None;
        }
        let mut index = Vec::new();
        for (e, d) in scalars.iter().zip(&o.shape) {
            let v = self
                .constant(ck)
                .const_int(e, "an index of a dynamic grid extent")?;
            if let Some(n) = d.known() {
                if v < 0 || v >= n {
                    ck.error(
                        source(format!("reads index {v} of a dimension of size {n}"))
                            .label("outside the operand"),
                    );
                    return None;
                }
            }
            index.push(v as u64);
        }
        Some(ir::DynamicExtent { operand: i, index })
    }
}
