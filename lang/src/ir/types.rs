//! Tile IR types: dtypes, dimensions, value types, ref types.

use std::fmt;
use std::sync::Arc;

/// Element types. 64-bit types do not exist on the TPU and have no variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    BF16,
    I32,
    I16,
    I8,
    U8,
    Bool,
    F8E4M3FN,
    F8E5M2,
}

impl DType {
    pub const ALL: [DType; 9] = [
        DType::F32,
        DType::BF16,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::Bool,
        DType::F8E4M3FN,
        DType::F8E5M2,
    ];

    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "f32" => DType::F32,
            "bf16" => DType::BF16,
            "i32" => DType::I32,
            "i16" => DType::I16,
            "i8" => DType::I8,
            "u8" => DType::U8,
            "bool" => DType::Bool,
            "f8e4m3fn" => DType::F8E4M3FN,
            "f8e5m2" => DType::F8E5M2,
            _ => return None,
        })
    }

    /// The `.pk` spelling.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::Bool => "bool",
            DType::F8E4M3FN => "f8e4m3fn",
            DType::F8E5M2 => "f8e5m2",
        }
    }

    /// Storage width in bits. `bool` is stored as 32 bits in memory, as on
    /// the TPU (a predicate in registers).
    pub fn bits(self) -> u32 {
        match self {
            DType::F32 | DType::I32 | DType::Bool => 32,
            DType::BF16 | DType::I16 => 16,
            DType::I8 | DType::U8 | DType::F8E4M3FN | DType::F8E5M2 => 8,
        }
    }

    pub fn bytes(self) -> u64 {
        u64::from(self.bits() / 8)
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F32 | DType::BF16 | DType::F8E4M3FN | DType::F8E5M2
        )
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I16 | DType::I8 | DType::U8)
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I32 | DType::I16 | DType::I8)
    }

    /// Rows per (sublane x lane) tile in VMEM: narrow types pack along sublanes.
    pub fn sublane_tile(self) -> u64 {
        match self.bits() {
            32 => 8,
            16 => 16,
            _ => 32,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A symbolic size: an expression over kernel parameters that have no value
/// in this specialisation (only `pkc check` produces these). Canonical
/// constructors fold constants, so equal expressions compare equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SymExpr {
    Param(String),
    Bin(SymOp, Dim, Dim),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    CDiv,
    Min,
    Max,
}

impl SymOp {
    fn symbol(self) -> &'static str {
        match self {
            SymOp::Add => "+",
            SymOp::Sub => "-",
            SymOp::Mul => "*",
            SymOp::Div => "/",
            SymOp::Rem => "%",
            SymOp::CDiv => "cdiv",
            SymOp::Min => "min",
            SymOp::Max => "max",
        }
    }
}

/// One dimension (or compile-time integer): known, or symbolic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    Known(i64),
    Sym(Arc<SymExpr>),
}

impl Dim {
    pub fn param(name: &str) -> Dim {
        Dim::Sym(Arc::new(SymExpr::Param(name.to_string())))
    }

    pub fn known(&self) -> Option<i64> {
        match self {
            Dim::Known(v) => Some(*v),
            Dim::Sym(_) => None,
        }
    }

    /// The value of a known dimension. Backends run only on specialised
    /// kernels (see `verify`), where every dimension is known; a symbolic
    /// one yields 0 here rather than a panic.
    pub fn get(&self) -> u64 {
        self.known().map(|v| v.max(0) as u64).unwrap_or(0)
    }

    /// Folds `a op b`; `None` on division by zero or overflow. `/` and `%`
    /// truncate toward zero, as they do at run time.
    pub fn bin(op: SymOp, a: &Dim, b: &Dim) -> Option<Dim> {
        if let (Some(x), Some(y)) = (a.known(), b.known()) {
            let v = match op {
                SymOp::Add => x.checked_add(y)?,
                SymOp::Sub => x.checked_sub(y)?,
                SymOp::Mul => x.checked_mul(y)?,
                // Truncating, like the same operators on run-time integers.
                SymOp::Div => x.checked_div(y)?,
                SymOp::Rem => x.checked_rem(y)?,
                SymOp::CDiv => {
                    if y == 0 {
                        return None;
                    }
                    x.checked_add(y - 1)?.checked_div_euclid(y)?
                }
                SymOp::Min => x.min(y),
                SymOp::Max => x.max(y),
            };
            return Some(Dim::Known(v));
        }
        // Identities that keep symbolic shapes readable.
        match (op, a.known(), b.known()) {
            (SymOp::Mul, _, Some(1))
            | (SymOp::Div, _, Some(1))
            | (SymOp::Add, _, Some(0))
            | (SymOp::Sub, _, Some(0)) => return Some(a.clone()),
            (SymOp::Mul, Some(1), _) | (SymOp::Add, Some(0), _) => return Some(b.clone()),
            (SymOp::Div | SymOp::Rem | SymOp::CDiv, _, Some(0)) => return None,
            _ => {}
        }
        Some(Dim::Sym(Arc::new(SymExpr::Bin(op, a.clone(), b.clone()))))
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Known(v) => write!(f, "{v}"),
            Dim::Sym(e) => match &**e {
                SymExpr::Param(p) => f.write_str(p),
                SymExpr::Bin(op @ (SymOp::CDiv | SymOp::Min | SymOp::Max), a, b) => {
                    write!(f, "{}({a}, {b})", op.symbol())
                }
                SymExpr::Bin(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
            },
        }
    }
}

pub type Shape = Vec<Dim>;

pub fn shape_str(shape: &[Dim]) -> String {
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The type of an SSA value: a scalar, or a vector (a tile) of rank >= 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    Scalar(DType),
    Vector(DType, Shape),
}

impl Type {
    pub fn dtype(&self) -> DType {
        match self {
            Type::Scalar(d) | Type::Vector(d, _) => *d,
        }
    }

    pub fn shape(&self) -> &[Dim] {
        match self {
            Type::Scalar(_) => &[],
            Type::Vector(_, s) => s,
        }
    }

    pub fn rank(&self) -> usize {
        self.shape().len()
    }

    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::Scalar(_))
    }

    /// The same shape with another dtype.
    pub fn with_dtype(&self, d: DType) -> Type {
        match self {
            Type::Scalar(_) => Type::Scalar(d),
            Type::Vector(_, s) => Type::Vector(d, s.clone()),
        }
    }

    /// A vector type, or a scalar for an empty shape.
    pub fn of(d: DType, shape: Shape) -> Type {
        if shape.is_empty() {
            Type::Scalar(d)
        } else {
            Type::Vector(d, shape)
        }
    }

    /// The element count, when known.
    pub fn elements(&self) -> Option<u64> {
        self.shape().iter().try_fold(1u64, |acc, d| {
            d.known().map(|v| acc.saturating_mul(v.max(0) as u64))
        })
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(d) => write!(f, "{d}"),
            Type::Vector(d, s) => write!(f, "{d}[{}]", shape_str(s)),
        }
    }
}

/// Where a ref lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// Vector memory of one TensorCore.
    Vmem,
    /// Scalar memory.
    Smem,
    /// HBM (`any`): reached only by DMA.
    Any,
    /// DMA semaphores. Their dtype is i32: each is a counter of completed copies.
    Semaphore,
    /// Plain semaphores (`sem`), i32 counters signalled and waited by count
    /// (`sem_signal`, `sem_wait`), locally or from another device.
    Sem,
    /// The barrier semaphore of the kernel's collective (`barrier_sem`):
    /// a plain semaphore shared by the devices taking part, which the TPU
    /// gives the kernel rather than the kernel allocating it.
    Barrier,
}

impl Space {
    pub fn name(self) -> &'static str {
        match self {
            Space::Vmem => "vmem",
            Space::Smem => "smem",
            Space::Any => "any",
            Space::Semaphore => "dma_sem",
            Space::Sem => "sem",
            Space::Barrier => "barrier_sem",
        }
    }

    /// Any kind of semaphore (DMA, plain or barrier).
    pub fn is_semaphore(self) -> bool {
        matches!(self, Space::Semaphore | Space::Sem | Space::Barrier)
    }
}

/// The type of a ref as the kernel body sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RefType {
    pub space: Space,
    pub dtype: DType,
    pub shape: Shape,
}

impl RefType {
    pub fn bytes(&self) -> Option<u64> {
        Type::of(self.dtype, self.shape.clone())
            .elements()
            .map(|n| n.saturating_mul(self.dtype.bytes()))
    }
}

impl fmt::Display for RefType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.space.is_semaphore() {
            return write!(f, "ref<{}[{}]>", self.space.name(), shape_str(&self.shape));
        }
        write!(
            f,
            "ref<{} {}[{}]>",
            self.space.name(),
            self.dtype,
            shape_str(&self.shape)
        )
    }
}
