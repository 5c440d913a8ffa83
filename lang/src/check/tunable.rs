//! Tunable parameters: the candidates a parameter declares (`bm = 256 in
//! [128, 256, 512]`, `in 128..=1024 step 128`, `in pow2(128, 1024)`, and
//! lists that join powers of two and values, `in [pow2(128, K), K]`) and the
//! kernel's `where` constraints between parameters.
//!
//! The checker evaluates the candidates of every parameter it checks and
//! records them in [`ir::Param::candidates`], so that `pkc tune` reads the
//! space from the IR rather than re-evaluating source. A `where` that is
//! false for the values being checked is PK0262; the tuner counts such
//! configurations as outside the space.
//!
//! invariant: candidates are evaluated over the parameters declared before
//! the one that declares them (as its default is), never over later ones,
//! and never over another tunable parameter, so that the space is the
//! product of the candidate sets (constraints between tunable parameters
//! are `where` clauses).
//! invariant: a candidate list in the IR is sorted, without repeats, and
//! non-empty.

use super::assert::names_in;
use super::builder::Builder;
use super::header::KernelCx;
use super::value::Val;
use super::Checker;
use crate::ast::{self, Candidates, Expr, ParamKind};
use crate::diag::{codes, Diag};
use crate::span::Span;

/// Spaces larger than this are a mistake in the declaration (a step of 1
/// over a block size), not something to tune over.
pub const MAX_CANDIDATES: usize = 4096;

impl KernelCx<'_> {
    /// The candidates of `p`, evaluated; `None` when it declares none, when
    /// they depend on a parameter without a value, or when they are wrong
    /// (reported). `default` is the value the parameter takes when no `-p`
    /// sets it, checked against the candidates.
    pub(super) fn candidates(
        &self,
        ck: &mut Checker,
        p: &ast::KernelParam,
        default: Option<i64>,
    ) -> Option<Vec<i64>> {
        let c = p.candidates.as_ref()?;
        if p.kind != ParamKind::Int || p.optional {
            ck.error(
                Diag::new(
                    &codes::BAD_CANDIDATES,
                    format!("parameter `{}` cannot be tuned", p.name.name),
                    c.span(),
                )
                .label(format!("`{}` is not a plain `int`", p.name.name))
                .help("only `int` parameters (block sizes, counts) have candidates"),
            );
            return None;
        }
        // Candidates over another tunable parameter would make the space
        // something other than a product; `where` relates them instead.
        let mut read = std::collections::BTreeSet::new();
        match c {
            Candidates::List(items, _) => items.iter().for_each(|e| names_in(e, &mut read)),
            Candidates::Range { lo, hi, step, .. } => {
                names_in(lo, &mut read);
                names_in(hi, &mut read);
                step.iter().for_each(|e| names_in(e, &mut read));
            }
            Candidates::Pow2 { lo, hi, .. } => {
                names_in(lo, &mut read);
                names_in(hi, &mut read);
            }
        }
        let tunable = self.decl.params.iter().find(|q| {
            q.candidates.is_some() && q.name.name != p.name.name && read.contains(&q.name.name)
        });
        if let Some(q) = tunable {
            ck.error(
                Diag::new(
                    &codes::BAD_CANDIDATES,
                    format!("the candidates of `{}` depend on the tunable parameter `{}`", p.name.name, q.name.name),
                    c.span(),
                )
                .label(format!("reads `{}`", q.name.name))
                .with(q.name.span, "tunable parameter declared here")
                .help("give fixed candidates and relate the two with a `where` clause: `where bn % bm == 0`"),
            );
            return None;
        }
        let mut b = self.constant(ck);
        let mut values = match c {
            Candidates::List(items, span) => {
                // An element `pow2(lo, hi)` stands for its powers of two, so
                // that `[pow2(128, K), K]` reaches the whole dimension when
                // it is not a power of two; such an element may be empty
                // (`pow2(128, K)` for K = 64) as long as the list is not.
                let mut out = Vec::new();
                for e in items {
                    match pow2_call(e) {
                        Some((lo, hi)) => {
                            let (lo, hi) = (known_int(&mut b, lo)?, known_int(&mut b, hi)?);
                            out.extend(powers_of_two(lo, hi));
                        }
                        None => out.push(known_int(&mut b, e)?),
                    }
                }
                if out.is_empty() {
                    b.error(empty(*span, "the list has no values"));
                    return None;
                }
                out
            }
            Candidates::Range { lo, hi, step, span } => {
                let (lo, hi) = (known_int(&mut b, lo)?, known_int(&mut b, hi)?);
                let step = match step {
                    Some(s) => {
                        let v = known_int(&mut b, s)?;
                        if v <= 0 {
                            b.error(
                                Diag::new(
                                    &codes::BAD_CANDIDATES,
                                    "a range's step must be positive",
                                    s.span,
                                )
                                .label(format!("this is {v}"))
                                .help("write `lo..=hi step s` with `s >= 1`"),
                            );
                            return None;
                        }
                        v
                    }
                    None => 1,
                };
                if lo > hi {
                    b.error(empty(*span, &format!("{lo}..={hi} is empty")));
                    return None;
                }
                if (hi - lo) / step >= MAX_CANDIDATES as i64 {
                    b.error(too_many(*span));
                    return None;
                }
                (0..=(hi - lo) / step).map(|i| lo + i * step).collect()
            }
            Candidates::Pow2 { lo, hi, span } => {
                let (lo, hi) = (known_int(&mut b, lo)?, known_int(&mut b, hi)?);
                let out = powers_of_two(lo, hi);
                if out.is_empty() {
                    b.error(empty(
                        *span,
                        &format!("no power of two lies between {lo} and {hi}"),
                    ));
                    return None;
                }
                out
            }
        };
        if values.len() > MAX_CANDIDATES {
            b.error(too_many(c.span()));
            return None;
        }
        values.sort_unstable();
        values.dedup();
        if let Some(d) = default.filter(|d| !values.contains(d)) {
            let shown: Vec<String> = values.iter().take(8).map(i64::to_string).collect();
            let more = if values.len() > 8 { ", ..." } else { "" };
            let at = p.default.as_ref().map_or(p.span, |e| e.span);
            b.error(
                Diag::new(
                    &codes::DEFAULT_NOT_CANDIDATE,
                    format!(
                        "the default of `{}` is not one of its candidates",
                        p.name.name
                    ),
                    at,
                )
                .label(format!("{d} is not in {{{}{more}}}", shown.join(", ")))
                .with(c.span(), "candidates declared here")
                .help("make the default one of the candidates, or add it to them"),
            );
        }
        Some(values)
    }

    /// The kernel's `where` constraints over its parameters; `false` when
    /// one fails (reported as PK0262).
    pub(super) fn wheres(&self, ck: &mut Checker, wheres: &[(&Expr, Span)]) -> bool {
        let mut ok = true;
        for &(cond, span) in wheres {
            let mut b = self.constant(ck);
            match b.const_expr(cond) {
                Val::Bool(true) | Val::Err => {}
                Val::Bool(false) => {
                    let d = super::assert::where_failed(&b.ck.shown_params, cond, span);
                    b.error(d);
                    ok = false;
                }
                other => {
                    let what = b.describe(&other);
                    b.error(
                        Diag::new(
                            &codes::BAD_CONDITION,
                            "a `where` constraint must be a bool",
                            cond.span,
                        )
                        .label(format!("this is {what}"))
                        .help("compare parameters: `where bk % bn == 0`"),
                    );
                    ok = false;
                }
            }
        }
        ok
    }
}

/// A candidate as a known integer; `None` (silently) when it depends on a
/// parameter without a value, as every rule on unknown sizes is skipped.
/// The powers of two in `lo..=hi`.
fn powers_of_two(lo: i64, hi: i64) -> Vec<i64> {
    (0..62)
        .map(|s| 1i64 << s)
        .filter(|v| (lo..=hi).contains(v))
        .collect()
}

/// The bounds of a list element written `pow2(lo, hi)`.
fn pow2_call(e: &Expr) -> Option<(&Expr, &Expr)> {
    match &e.kind {
        ast::ExprKind::Call(path, args)
            if path.segments.len() == 1
                && path.segments[0].name == "pow2"
                && args.len() == 2
                && args.iter().all(|a| a.name.is_none()) =>
        {
            Some((&args[0].value, &args[1].value))
        }
        _ => None,
    }
}

fn known_int(b: &mut Builder, e: &Expr) -> Option<i64> {
    match b.const_expr(e) {
        Val::Int(d) => d.known(),
        Val::Err => None,
        other => {
            let what = b.describe(&other);
            b.error(
                Diag::new(
                    &codes::BAD_CANDIDATES,
                    "a candidate must be a compile-time integer",
                    e.span,
                )
                .label(format!("this is {what}"))
                .help("candidates are integers or integer expressions of earlier parameters"),
            );
            None
        }
    }
}

fn empty(span: Span, why: &str) -> Diag {
    Diag::new(
        &codes::BAD_CANDIDATES,
        "a tunable parameter has no candidates",
        span,
    )
    .label(why.to_string())
    .help(
        "give at least one value: `in [128, 256]`, `in 128..=1024 step 128`, `in pow2(128, 1024)`",
    )
}

fn too_many(span: Span) -> Diag {
    Diag::new(
        &codes::BAD_CANDIDATES,
        format!("more than {MAX_CANDIDATES} candidates"),
        span,
    )
    .label("too many values to tune over")
    .help("use a larger step or `pow2(lo, hi)`")
}
