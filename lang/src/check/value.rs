//! What an expression evaluates to while the checker builds IR, and the
//! conversions between compile-time constants and IR values.

use crate::ir::{DType, Dim, RefId, Slice, Type, Value};
use crate::span::Span;

/// The result of checking an expression.
///
/// Constants stay symbolic until they meet a typed value: a literal adopts
/// the dtype of the value it is combined with (`x_bf16 * 2.0` is bf16), as in
/// JAX's weak typing.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// A typed IR value.
    V(Value),
    /// A compile-time integer (possibly symbolic in `pkc check`).
    Int(Dim),
    Float(f64),
    Bool(bool),
    Dtype(DType),
    Ref(RefId),
    /// `k.at[h]`: a view of a ref ([`SubRef`]).
    View(Box<SubRef>),
    /// `none`: an optional parameter without a value (`window: int? = none`).
    None,
    /// `[a, b, ...]`: shapes, permutations.
    List(Vec<(Val, Span)>),
    /// `(a, b)`: several values, flattened into their elements wherever
    /// they are bound, carried or yielded (no tuple reaches the IR).
    Tuple(Vec<(Val, Span)>),
    /// Statements and `if` without `else` produce no value.
    Unit,
    /// An error was already reported; uses of this value report nothing more.
    Err,
}

/// A view of a ref: the window of `target` it stands for (a slice per
/// dimension of the ref) and the sizes of the dimensions it keeps (its
/// `Range`s, in order).
#[derive(Debug, Clone, PartialEq)]
pub struct SubRef {
    pub target: RefId,
    pub index: Vec<Slice>,
    pub shape: Vec<Dim>,
}

impl Val {
    pub fn is_const(&self) -> bool {
        matches!(self, Val::Int(_) | Val::Float(_) | Val::Bool(_))
    }

    /// A short description for messages.
    pub fn describe(&self, ty: impl Fn(Value) -> Type) -> String {
        match self {
            Val::V(v) => format!("a value of type `{}`", ty(*v)),
            Val::Int(d) => format!("the integer constant `{d}`"),
            Val::Float(x) => format!("the constant `{x}`"),
            Val::Bool(b) => format!("the constant `{b}`"),
            Val::Dtype(d) => format!("the dtype `{d}`"),
            Val::Ref(_) => "a ref".to_string(),
            Val::View(_) => "a view of a ref".to_string(),
            Val::List(_) => "a list".to_string(),
            Val::Tuple(items) => format!("a tuple of {} values", items.len()),
            Val::None => "`none`".to_string(),
            Val::Unit => "no value".to_string(),
            Val::Err => "an invalid value".to_string(),
        }
    }
}
