//! The per-axis `cdiv` opt-in to partial blocks.
//!
//! A grid axis whose extent is written `cdiv(a, b)` declares that its last
//! step may run past the end of the arrays it walks. A block dimension may
//! then be partial, or larger than its array dimension (which Pallas pads),
//! exactly when its index-map entry reads such an axis. Every other block
//! dimension of the kernel keeps the divisibility rule, so one ragged axis
//! does not hide a wrong block size on another.
//!
//! invariant: the opt-in is read from the source, per axis: an extent whose
//! outermost expression is a call to `cdiv`. A `cdiv` hidden behind a
//! constant or a function does not count (the checker sees only its value).

use crate::ast::{self, Expr, ExprKind};

/// Whether a grid extent opts its axis in to a ragged last block.
pub(super) fn is_cdiv(extent: &Expr) -> bool {
    matches!(&extent.kind, ExprKind::Call(p, _) if p.segments.len() == 1 && p.segments[0].name == "cdiv")
}

/// Whether the bound of a dynamic axis (`t in n[0] <= BOUND`) opts it in:
/// the bound is a call to `cdiv`, or one of the terms of the sum or
/// difference at its top is (`cdiv(M, tm) + G - 1`, the visits of a grouped
/// matmul over `cdiv(M, tm)` row tiles).
pub(super) fn bound_opts_in(bound: &Expr) -> bool {
    match &bound.kind {
        ExprKind::Binary(ast::BinOp::Add | ast::BinOp::Sub, a, b) => {
            bound_opts_in(a) || bound_opts_in(b)
        }
        _ => is_cdiv(bound),
    }
}

/// The grid axes, by name, that one index-map entry reads, in the order it
/// reads them (each once).
pub(super) fn axes_read<'g>(entry: &Expr, grid: &'g [String]) -> Vec<&'g str> {
    let mut out: Vec<&'g str> = Vec::new();
    names(entry, &mut |n| {
        if let Some(g) = grid.iter().find(|g| *g == n) {
            if !out.contains(&g.as_str()) {
                out.push(g);
            }
        }
    });
    out
}

/// Calls `f` with every single-segment name an expression reads.
pub(super) fn names(e: &Expr, f: &mut impl FnMut(&str)) {
    match &e.kind {
        ExprKind::Name(p) if p.segments.len() == 1 => f(&p.segments[0].name),
        ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => names(a, f),
        ExprKind::Binary(_, a, b) => {
            names(a, f);
            names(b, f);
        }
        ExprKind::Call(_, args) => args.iter().for_each(|a| names(&a.value, f)),
        ExprKind::Method(base, _, args) => {
            names(base, f);
            args.iter().for_each(|a| names(&a.value, f));
        }
        ExprKind::Index(base, idx) | ExprKind::At(base, _, idx) => {
            names(base, f);
            for i in idx {
                match i {
                    ast::Index::Range(a, b, _) => {
                        names(a, f);
                        names(b, f);
                    }
                    ast::Index::Expr(a) => names(a, f),
                    ast::Index::Full(_) | ast::Index::Rest(_) => {}
                }
            }
        }
        ExprKind::List(xs) | ExprKind::Tuple(xs) => xs.iter().for_each(|x| names(x, f)),
        ExprKind::If(c, then, els) => {
            names(c, f);
            block(then, f);
            if let Some(e) = els {
                names(e, f);
            }
        }
        ExprKind::Block(b) => block(b, f),
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Name(_)
        | ExprKind::Error => {}
    }
}

/// The names read by a block's tail. Index maps are expressions; a block's
/// statements (rare in an index map) are not searched, which can only miss
/// an opt-in, never grant one.
fn block(b: &ast::Block, f: &mut impl FnMut(&str)) {
    if let Some(t) = &b.tail {
        names(t, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Span;

    fn name(s: &str) -> Expr {
        Expr {
            kind: ExprKind::Name(ast::Path {
                segments: vec![ast::Ident {
                    name: s.into(),
                    span: Span::default(),
                }],
                span: Span::default(),
            }),
            span: Span::default(),
        }
    }

    #[test]
    fn reads_the_axes_of_an_entry_once_each() {
        let grid = vec!["i".to_string(), "j".to_string()];
        let e = Expr {
            kind: ExprKind::Binary(
                ast::BinOp::Add,
                Box::new(name("j")),
                Box::new(Expr {
                    kind: ExprKind::Binary(
                        ast::BinOp::Mul,
                        Box::new(name("bm")),
                        Box::new(name("j")),
                    ),
                    span: Span::default(),
                }),
            ),
            span: Span::default(),
        };
        assert_eq!(axes_read(&e, &grid), vec!["j"]);
        assert!(axes_read(&name("bm"), &grid).is_empty());
    }
}
