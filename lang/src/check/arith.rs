//! Operators on values: implicit broadcasting and type unification, unary
//! and binary operators with constant folding, and casts.

use super::builder::{Builder, Mode};
use super::value::Val;
use crate::ast::{BinOp as AstBin, UnOp};
use crate::diag::{codes, Diag};
use crate::ir::{self, BinaryOp, CmpOp, DType, Dim, OpKind, SymOp, Type, UnaryOp, Value};
use crate::span::Span;

impl Builder<'_, '_> {
    /// Materialises `v` with exactly type `ty` (dtype conversion for
    /// constants, splat or broadcast for shapes).
    pub fn coerce(&mut self, v: Val, ty: &Type, span: Span) -> Option<Value> {
        let x = self.value_as(v, ty.dtype(), span)?;
        self.broadcast_to(x, ty.shape(), span)
    }

    /// Broadcasts a value to `shape` with numpy rules.
    pub fn broadcast_to(&mut self, x: Value, shape: &[Dim], span: Span) -> Option<Value> {
        let t = self.ty(x);
        if t.shape() == shape {
            return Some(x);
        }
        let d = t.dtype();
        if t.is_scalar() {
            return self.emit_v(OpKind::Splat(x), Type::of(d, shape.to_vec()), span);
        }
        let (r, n) = (t.rank(), shape.len());
        let ok = r <= n
            && t.shape()
                .iter()
                .zip(&shape[n - r..])
                .all(|(a, b)| a == b || *a == Dim::Known(1));
        if !ok {
            self.error(
                Diag::new(
                    &codes::SHAPE_MISMATCH,
                    format!("cannot broadcast `{t}` to shape [{}]", ir::shape_str(shape)),
                    span,
                )
                .label(format!("this is `{t}`"))
                .help("dimensions must match from the right, or be 1"),
            );
            return None;
        }
        let mut x = x;
        if r < n {
            let mut s = vec![Dim::Known(1); n - r];
            s.extend(t.shape().iter().cloned());
            x = self.emit_v(OpKind::Reshape(x), Type::of(d, s), span)?;
        }
        if self.ty(x).shape() != shape {
            x = self.emit_v(OpKind::Broadcast(x), Type::of(d, shape.to_vec()), span)?;
        }
        Some(x)
    }

    /// The common shape of two shapes under numpy broadcasting.
    pub fn broadcast_shape(&mut self, a: &Type, b: &Type, span: Span) -> Option<Vec<Dim>> {
        let (sa, sb) = (a.shape(), b.shape());
        let n = sa.len().max(sb.len());
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let da = if i + sa.len() >= n {
                sa[i + sa.len() - n].clone()
            } else {
                Dim::Known(1)
            };
            let db = if i + sb.len() >= n {
                sb[i + sb.len() - n].clone()
            } else {
                Dim::Known(1)
            };
            let d = if da == db || db == Dim::Known(1) {
                da
            } else if da == Dim::Known(1) {
                db
            } else {
                self.error(
                    Diag::new(
                        &codes::SHAPE_MISMATCH,
                        format!("shapes `{a}` and `{b}` do not broadcast"),
                        span,
                    )
                    .label(format!("dimension {i}: {da} vs {db}"))
                    .help("dimensions must match from the right, or be 1"),
                );
                return None;
            };
            out.push(d);
        }
        Some(out)
    }

    /// Two operands to one type: constants adopt the other's dtype, shapes
    /// broadcast. Reports a dtype mismatch between two typed values.
    pub fn unify(
        &mut self,
        a: Val,
        sa: Span,
        b: Val,
        sb: Span,
        span: Span,
    ) -> Option<(Value, Value)> {
        let (x, y) = match (a.is_const(), b.is_const()) {
            (true, false) => {
                let y = self.value(b, sb)?;
                let d = self.ty(y).dtype();
                (self.value_as(a, d, sa)?, y)
            }
            (false, true) => {
                let x = self.value(a, sa)?;
                let d = self.ty(x).dtype();
                (x, self.value_as(b, d, sb)?)
            }
            _ => {
                let x = self.value(a, sa);
                let y = self.value(b, sb);
                (x?, y?)
            }
        };
        let (tx, ty) = (self.ty(x), self.ty(y));
        if tx.dtype() != ty.dtype() {
            self.error(
                Diag::new(
                    &codes::TYPE_MISMATCH,
                    format!("mismatched dtypes `{}` and `{}`", tx.dtype(), ty.dtype()),
                    span,
                )
                .with(sa, format!("this is {}", tx))
                .with(sb, format!("this is {}", ty))
                .help(format!(
                    "pk never converts implicitly; write `(... as {})` on one side",
                    tx.dtype()
                )),
            );
            return None;
        }
        let shape = self.broadcast_shape(&tx, &ty, span)?;
        let x = self.broadcast_to(x, &shape, sa)?;
        let y = self.broadcast_to(y, &shape, sb)?;
        Some((x, y))
    }

    pub(super) fn unary(&mut self, op: UnOp, a: Val, span: Span) -> Val {
        match (op, &a) {
            (_, Val::Err) => Val::Err,
            (UnOp::Neg, Val::Int(d)) => match Dim::bin(SymOp::Sub, &Dim::Known(0), d) {
                Some(d) => Val::Int(d),
                None => Val::Err,
            },
            (UnOp::Neg, Val::Float(x)) => Val::Float(-x),
            (UnOp::Not, Val::Bool(b)) => Val::Bool(!b),
            _ => {
                let Some(x) = self.value(a, span) else {
                    return Val::Err;
                };
                let t = self.ty(x);
                let d = t.dtype();
                let ok = match op {
                    UnOp::Neg => d != DType::Bool && d != DType::U8,
                    UnOp::Not => d == DType::Bool || d.is_int(),
                };
                if !ok {
                    let what = if op == UnOp::Neg {
                        "negate"
                    } else {
                        "apply `!` to"
                    };
                    return self.error(
                        Diag::new(&codes::BAD_OPERAND, format!("cannot {what} `{t}`"), span)
                            .label(format!("this is {t}"))
                            .help("`-` needs a signed number; `!` needs bool or an integer"),
                    );
                }
                let u = if op == UnOp::Neg {
                    UnaryOp::Neg
                } else {
                    UnaryOp::Not
                };
                self.emit(OpKind::Unary(u, x), t, span)
            }
        }
    }

    pub fn binary(&mut self, op: AstBin, a: Val, sa: Span, b: Val, sb: Span, span: Span) -> Val {
        if matches!(a, Val::Err) || matches!(b, Val::Err) {
            return Val::Err;
        }
        if matches!(a, Val::None) || matches!(b, Val::None) {
            return self.none_operand(op, &a, sa, &b, sb);
        }
        if let Some(v) = self.fold(op, &a, &b, span) {
            return v;
        }
        if matches!(a, Val::Dtype(_)) || matches!(b, Val::Dtype(_)) {
            return self.dtype_operand(op, &a, sa, &b, sb, span);
        }
        let Some((x, y)) = self.unify(a, sa, b, sb, span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        let d = t.dtype();
        let (class, ok) = match op {
            AstBin::Add | AstBin::Sub | AstBin::Mul | AstBin::Div | AstBin::Rem => {
                ("arithmetic", d != DType::Bool)
            }
            AstBin::BitAnd | AstBin::BitOr | AstBin::BitXor => {
                ("bitwise", d.is_int() || d == DType::Bool)
            }
            AstBin::Shl | AstBin::Shr => ("shift", d.is_int()),
            AstBin::And | AstBin::Or => ("logical", d == DType::Bool),
            AstBin::Eq | AstBin::Ne => ("comparison", true),
            AstBin::Lt | AstBin::Le | AstBin::Gt | AstBin::Ge => ("comparison", d != DType::Bool),
        };
        if !ok {
            let help = match class {
                "logical" => "`&&` and `||` take bool; for numbers compare first (`x > 0.0`)",
                "bitwise" | "shift" => {
                    "bitwise operators take integers; use `bitcast` to reach a float's bits"
                }
                _ => "arithmetic takes numbers; convert bool with `as i32`",
            };
            return self.error(
                Diag::new(
                    &codes::BAD_OPERAND,
                    format!("`{}` is not defined for `{d}`", op.symbol()),
                    span,
                )
                .label(format!("{class} operator on {d}"))
                .help(help),
            );
        }
        let bin = |o: BinaryOp| OpKind::Binary(o, x, y);
        let cmp = |o: CmpOp| OpKind::Compare(o, x, y);
        let booly = t.with_dtype(DType::Bool);
        match op {
            AstBin::Add => self.emit(bin(BinaryOp::Add), t, span),
            AstBin::Sub => self.emit(bin(BinaryOp::Sub), t, span),
            AstBin::Mul => self.emit(bin(BinaryOp::Mul), t, span),
            AstBin::Div => self.emit(bin(BinaryOp::Div), t, span),
            AstBin::Rem => self.emit(bin(BinaryOp::Rem), t, span),
            AstBin::BitAnd | AstBin::And => self.emit(bin(BinaryOp::And), t, span),
            AstBin::BitOr | AstBin::Or => self.emit(bin(BinaryOp::Or), t, span),
            AstBin::BitXor => self.emit(bin(BinaryOp::Xor), t, span),
            AstBin::Shl => self.emit(bin(BinaryOp::Shl), t, span),
            AstBin::Shr => self.emit(bin(BinaryOp::Shr), t, span),
            AstBin::Eq => self.emit(cmp(CmpOp::Eq), booly, span),
            AstBin::Ne => self.emit(cmp(CmpOp::Ne), booly, span),
            AstBin::Lt => self.emit(cmp(CmpOp::Lt), booly, span),
            AstBin::Le => self.emit(cmp(CmpOp::Le), booly, span),
            AstBin::Gt => self.emit(cmp(CmpOp::Gt), booly, span),
            AstBin::Ge => self.emit(cmp(CmpOp::Ge), booly, span),
        }
    }

    /// A dtype in an operation other than a dtype query (`T == bf16`): one
    /// diagnostic for the whole expression.
    fn dtype_operand(
        &mut self,
        op: AstBin,
        a: &Val,
        sa: Span,
        b: &Val,
        sb: Span,
        span: Span,
    ) -> Val {
        let both = matches!((a, b), (Val::Dtype(_), Val::Dtype(_)));
        let (bad, bad_span) = if matches!(a, Val::Dtype(_)) && !both {
            (b, sb)
        } else {
            (a, sa)
        };
        let d = if both {
            Diag::new(
                &codes::BAD_OPERAND,
                format!(
                    "dtypes compare only with `==` and `!=`, not `{}`",
                    op.symbol()
                ),
                span,
            )
            .label("a dtype query")
            .help("to compare sizes, compare `bits(T)`")
        } else {
            let what = self.describe(bad);
            Diag::new(
                &codes::WRONG_KIND,
                "a dtype is compared only with another dtype",
                span,
            )
            .label("a dtype query")
            .with(bad_span, format!("this is {what}"))
            .help("write `T == bf16`, or `bits(T)` for its width")
        };
        self.error(d)
    }

    /// Folds an operator on two constants.
    fn fold(&mut self, op: AstBin, a: &Val, b: &Val, span: Span) -> Option<Val> {
        match (a, b) {
            (Val::Int(x), Val::Int(y)) => {
                let sym = match op {
                    AstBin::Add => Some(SymOp::Add),
                    AstBin::Sub => Some(SymOp::Sub),
                    AstBin::Mul => Some(SymOp::Mul),
                    AstBin::Div => Some(SymOp::Div),
                    AstBin::Rem => Some(SymOp::Rem),
                    _ => None,
                };
                if let Some(s) = sym {
                    return Some(match Dim::bin(s, x, y) {
                        Some(d) => Val::Int(d),
                        None => self.error(
                            Diag::new(
                                &codes::CONST_EVAL,
                                "constant arithmetic divides by zero or overflows",
                                span,
                            )
                            .label(format!("{x} {} {y}", op.symbol())),
                        ),
                    });
                }
                let (Some(x), Some(y)) = (x.known(), y.known()) else {
                    // Comparisons of symbolic sizes are decided at build time.
                    return if self.mode == Mode::Const {
                        Some(Val::Err)
                    } else {
                        None
                    };
                };
                Some(match op {
                    AstBin::Eq => Val::Bool(x == y),
                    AstBin::Ne => Val::Bool(x != y),
                    AstBin::Lt => Val::Bool(x < y),
                    AstBin::Le => Val::Bool(x <= y),
                    AstBin::Gt => Val::Bool(x > y),
                    AstBin::Ge => Val::Bool(x >= y),
                    AstBin::BitAnd => Val::Int(Dim::Known(x & y)),
                    AstBin::BitOr => Val::Int(Dim::Known(x | y)),
                    AstBin::BitXor => Val::Int(Dim::Known(x ^ y)),
                    AstBin::Shl => Val::Int(Dim::Known(x.checked_shl(y as u32).unwrap_or(0))),
                    AstBin::Shr => Val::Int(Dim::Known(x.checked_shr(y as u32).unwrap_or(0))),
                    _ => return None,
                })
            }
            (Val::Float(_), Val::Float(_))
            | (Val::Int(_), Val::Float(_))
            | (Val::Float(_), Val::Int(_)) => {
                let f = |v: &Val| match v {
                    Val::Float(x) => Some(*x),
                    Val::Int(d) => d.known().map(|v| v as f64),
                    _ => None,
                };
                let (x, y) = (f(a)?, f(b)?);
                Some(match op {
                    AstBin::Add => Val::Float(x + y),
                    AstBin::Sub => Val::Float(x - y),
                    AstBin::Mul => Val::Float(x * y),
                    AstBin::Div => Val::Float(x / y),
                    AstBin::Rem => Val::Float(x % y),
                    AstBin::Eq => Val::Bool(x == y),
                    AstBin::Ne => Val::Bool(x != y),
                    AstBin::Lt => Val::Bool(x < y),
                    AstBin::Le => Val::Bool(x <= y),
                    AstBin::Gt => Val::Bool(x > y),
                    AstBin::Ge => Val::Bool(x >= y),
                    _ => return None,
                })
            }
            // Dtype queries (`T == bf16`) are decided when the kernel is
            // specialised, like any other comparison of constants.
            (Val::Dtype(x), Val::Dtype(y)) => match op {
                AstBin::Eq => Some(Val::Bool(x == y)),
                AstBin::Ne => Some(Val::Bool(x != y)),
                _ => None,
            },
            (Val::Bool(x), Val::Bool(y)) => Some(match op {
                AstBin::And | AstBin::BitAnd => Val::Bool(*x && *y),
                AstBin::Or | AstBin::BitOr => Val::Bool(*x || *y),
                AstBin::BitXor | AstBin::Ne => Val::Bool(x != y),
                AstBin::Eq => Val::Bool(x == y),
                _ => return None,
            }),
            _ => None,
        }
    }

    /// `v as d` (and `cast(v, d)`).
    pub fn cast(&mut self, v: Val, d: DType, span: Span) -> Val {
        match v {
            Val::Err => Val::Err,
            Val::Int(n) if d.is_float() => match n.known() {
                Some(n) => Val::Float(n as f64),
                None => Val::Err,
            },
            Val::Int(n) if d.is_int() => Val::Int(n),
            Val::Float(x) if d.is_float() => Val::Float(x),
            Val::Float(x) if d.is_int() && x.is_finite() => Val::Int(Dim::Known(x.trunc() as i64)),
            Val::Bool(b) if d.is_int() => Val::Int(Dim::Known(b as i64)),
            Val::Bool(b) if d.is_float() => Val::Float(if b { 1.0 } else { 0.0 }),
            other => {
                let Some(x) = self.value(other, span) else {
                    return Val::Err;
                };
                let t = self.ty(x);
                if t.dtype() == d {
                    return Val::V(x);
                }
                self.emit(OpKind::Cast(x), t.with_dtype(d), span)
            }
        }
    }

    // ---- Refs ----------------------------------------------------------------
}
