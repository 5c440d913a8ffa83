//! Ref views that change a ref's shape or dtype: `k.reshape(d0, d1, ..)`
//! and `k.bitcast(T)`, as Pallas' `ref.reshape(...)` and `ref.bitcast(...)`.
//!
//! Each is a new ref of the kernel ([`RefOrigin::View`]) over the memory of
//! the ref it is taken of, so that every rule and back end that knows refs
//! (windows, `.at[...]` views, `store`, DMAs, the alignment rule) applies
//! to it unchanged and judges accesses in the view's own shape, as Mosaic
//! does after `tpu.memref_reshape` / `tpu.memref_bitcast`. Equal views of
//! one ref are one ref, so a view taken in a loop or a helper declares
//! nothing new.
//!
//! The TPU's rules (PK0353) are those of Mosaic's verifiers for the two
//! ops, which libtpu applies on every target: both sides have rank 2 or
//! more; a reshape keeps the last dimension and changes the second-minor
//! one only between multiples of the ref's sublane tile (libtpu takes a
//! few smaller splits too; `lowering/tests/mosaic_libtpu.rs` lists them).
//! Only VMEM and ANY (HBM) refs have views.

use super::builder::Builder;
use super::value::Val;
use crate::ast::{self, Expr};
use crate::diag::{codes, Diag};
use crate::ir::{Dim, RefDecl, RefId, RefOrigin, RefType, Space};
use crate::span::Span;

impl Builder<'_, '_> {
    /// `base.member(args)`: a method of a ref.
    pub(super) fn method(
        &mut self,
        base: &Expr,
        member: &ast::Ident,
        args: &[ast::Arg],
        span: Span,
    ) -> Val {
        let name = member.name.as_str();
        if name != "reshape" && name != "bitcast" {
            return self.error(
                Diag::new(
                    &codes::REF_VIEW,
                    format!("refs have no method `.{name}(...)`"),
                    member.span,
                )
                .label("unknown method")
                .help("the methods of a ref are `k.reshape(d0, d1, ..)` and `k.bitcast(T)`; a view of part of it is `k.at[h]`"),
            );
        }
        let r = match self.expr(base) {
            Val::Ref(r) => r,
            Val::Err => return Val::Err,
            Val::View(_) => {
                let help = format!(
                    "take `.{name}(...)` of the whole ref, then the part: `k.{name}(..).at[...]`"
                );
                let d = Diag::new(
                    &codes::REF_RESHAPE,
                    format!("`.{name}(...)` of a part of a ref"),
                    span,
                )
                .label("a view taken with `.at[...]`")
                .help(help);
                return self.error(d);
            }
            other => {
                let d = self.describe(&other);
                let value_form = if name == "reshape" {
                    "`reshape(x, [d0, d1])`"
                } else {
                    "`bitcast(x, T)`"
                };
                return self.error(
                    Diag::new(
                        &codes::REF_RESHAPE,
                        format!("`.{name}(...)` is a method of refs; this is {d}"),
                        base.span,
                    )
                    .label("not a ref")
                    .help(format!("a value is reshaped or bitcast with {value_form}")),
                );
            }
        };
        if self.refs[r].ty.dtype.bits() != self.refs[self.root_of(r)].ty.dtype.bits() {
            return self.error(
                Diag::new(
                    &codes::REF_RESHAPE,
                    format!("`.{name}(...)` of a bitcast between widths"),
                    span,
                )
                .label(format!("`{}` packs or unpacks its elements", self.refs[r].name))
                .help("take `.reshape(..)` first and `.bitcast(T)` last: `k.reshape(..).bitcast(i32)`"),
            );
        }
        if let Some(a) = args.iter().find(|a| a.name.is_some()) {
            return self.error(
                Diag::new(
                    &codes::REF_RESHAPE,
                    format!("`.{name}(...)` takes no keyword arguments"),
                    a.value.span,
                )
                .label("a keyword argument")
                .help(if name == "reshape" {
                    "write the new sizes in order: `k.reshape(16, 128)`"
                } else {
                    "write the dtype: `k.bitcast(i32)`"
                }),
            );
        }
        let from = self.refs[r].ty.clone();
        let to = if name == "reshape" {
            self.reshaped(&from, args, span)
        } else {
            self.bitcast_ty(&from, args, span)
        };
        let Some(to) = to else {
            return Val::Err;
        };
        if !matches!(from.space, Space::Vmem | Space::Any) {
            return self.error(
                Diag::new(
                    &codes::RESHAPE_TPU,
                    format!("a {} ref has no `.{name}(...)` view", from.space.name()),
                    span,
                )
                .label(format!("`{}` is in {}", self.refs[r].name, from.space.name()))
                .help("only VMEM and ANY (HBM) refs have reshaped or bitcast views; read the elements and reshape the value"),
            );
        }
        if !self.ck.skip_tpu_rules && !self.view_tpu_rules(&from, &to, name, span) {
            return Val::Err;
        }
        Val::Ref(self.view_ref(r, to, name))
    }

    /// The operand or scratch ref whose memory `r` is.
    fn root_of(&self, r: RefId) -> RefId {
        let mut r = r;
        while let RefOrigin::View(b) = self.refs[r].origin {
            r = b;
        }
        r
    }

    /// The type of `k.reshape(args)`.
    fn reshaped(&mut self, from: &RefType, args: &[ast::Arg], span: Span) -> Option<RefType> {
        if args.is_empty() {
            self.error(
                Diag::new(&codes::REF_RESHAPE, "`.reshape()` without sizes", span)
                    .label("no sizes")
                    .help("give the new sizes in order: `k.reshape(16, 128)`"),
            );
            return None;
        }
        let mut shape = Vec::with_capacity(args.len());
        for a in args {
            shape.push(self.const_dim(&a.value, "a reshaped size")?);
        }
        // In i128, saturating: sizes whose product overflows i64 count as
        // more elements than any ref has, never as a panic.
        let count = |s: &[Dim]| {
            s.iter().try_fold(1i128, |acc, d| {
                Some(acc.saturating_mul(i128::from(d.known()?)))
            })
        };
        if let (Some(a), Some(b)) = (count(&from.shape), count(&shape)) {
            if a != b {
                self.error(
                    Diag::new(
                        &codes::REF_RESHAPE,
                        format!(
                            "cannot reshape a ref of {a} elements into [{}] ({b} elements)",
                            crate::ir::shape_str(&shape)
                        ),
                        span,
                    )
                    .label(format!("the ref is {from}"))
                    .help("a reshaped view has the same elements: the product of the sizes must not change"),
                );
                return None;
            }
        }
        Some(RefType {
            space: from.space,
            dtype: from.dtype,
            shape,
        })
    }

    /// The type of `k.bitcast(T)`: the second-minor dimension scales by
    /// the ratio of the widths.
    fn bitcast_ty(&mut self, from: &RefType, args: &[ast::Arg], span: Span) -> Option<RefType> {
        let [a] = args else {
            self.error(
                Diag::new(
                    &codes::REF_RESHAPE,
                    format!("`.bitcast(...)` takes one dtype, {} given", args.len()),
                    span,
                )
                .label("not one argument")
                .help("write the dtype: `k.bitcast(i32)`"),
            );
            return None;
        };
        let to = self.dtype_arg(&a.value)?;
        let (fb, tb) = (u64::from(from.dtype.bits()), u64::from(to.bits()));
        let mut shape = from.shape.clone();
        if fb != tb {
            let rank = shape.len();
            let rows = if rank >= 2 {
                shape[rank - 2].known()
            } else {
                None
            };
            // In u128: a size near i64::MAX times the bits does not wrap.
            let bits = |r: i64| u128::from(r as u64) * u128::from(fb);
            let Some(rows) = rows.filter(|r| bits(*r).is_multiple_of(u128::from(tb))) else {
                self.error(
                    Diag::new(
                        &codes::REF_RESHAPE,
                        format!("cannot bitcast a `{from}` ref to {to}"),
                        span,
                    )
                    .label(format!("{fb} bits to {tb} bits"))
                    .help(format!(
                        "a bitcast between widths packs or unpacks the second-minor dimension, so the ref needs rank 2 or more and a known second-minor size whose bits ({fb} each) divide into {tb}-bit elements"
                    )),
                );
                return None;
            };
            shape[rank - 2] =
                Dim::Known((bits(rows) / u128::from(tb)).min(i64::MAX as u128) as i64);
        }
        Some(RefType {
            space: from.space,
            dtype: to,
            shape,
        })
    }

    /// Mosaic's rules for `tpu.memref_reshape` / `tpu.memref_bitcast`
    /// (PK0353); false after reporting a broken one.
    fn view_tpu_rules(&mut self, from: &RefType, to: &RefType, name: &str, span: Span) -> bool {
        let broken = |why: String, help: &str| {
            Diag::new(
                &codes::RESHAPE_TPU,
                format!("the TPU cannot view `{from}` as `{to}`"),
                span,
            )
            .label(why)
            .help(help.to_string())
        };
        if from.shape.len() < 2 || to.shape.len() < 2 {
            self.error(broken(
                "a rank-1 side".into(),
                "Mosaic reshapes and bitcasts refs of rank 2 or more: keep a leading size-1 dimension",
            ));
            return false;
        }
        let minor = |s: &[Dim]| s[s.len() - 1].known();
        if name != "reshape" {
            return true;
        }
        if minor(&from.shape) != minor(&to.shape) {
            self.error(broken(
                "the last dimension changes".into(),
                "a reshaped ref keeps its last (lane) dimension; merge or split the leading dimensions instead",
            ));
            return false;
        }
        // libtpu folds and unfolds the second-minor dimension only by whole
        // tiles in general ("tile-aligned folding/unfolding of the first
        // tiled dimension"); it also takes some smaller splits of whole
        // 32- and 16-bit refs, which this rule refuses.
        let second = |s: &[Dim]| s[s.len() - 2].known();
        let tile = from.dtype.sublane_tile() as i64;
        if let (Some(a), Some(b)) = (second(&from.shape), second(&to.shape)) {
            if a != b && (a % tile != 0 || b % tile != 0) {
                self.error(broken(
                    format!("the second-minor dimension changes from {a} to {b}, not both multiples of {tile}"),
                    "the second-minor dimension may change only between multiples of the dtype's sublane tile (8 rows for 32-bit, 16 for 16-bit, 32 for 8-bit elements)",
                ));
                return false;
            }
        }
        true
    }

    /// The ref `k.reshape(..)` / `k.bitcast(T)` names: an existing equal
    /// view of `base`, or a new one.
    fn view_ref(&mut self, base: RefId, ty: RefType, method: &str) -> RefId {
        let found = self.refs.iter().find(|(_, d)| {
            d.origin == RefOrigin::View(base) && d.ty.dtype == ty.dtype && d.ty.shape == ty.shape
        });
        if let Some((id, _)) = found {
            return id;
        }
        let what = if method == "reshape" {
            crate::ir::shape_str(&ty.shape)
        } else {
            ty.dtype.to_string()
        };
        let name = format!("{}.{method}({what})", self.refs[base].name);
        self.refs.to_mut().append(RefDecl {
            name,
            ty,
            origin: RefOrigin::View(base),
        })
    }
}
