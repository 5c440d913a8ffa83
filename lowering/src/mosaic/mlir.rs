//! The MLIR context of one lowering, and the typed constructors every rule uses to
//! make types, attributes and operations.
//!
//! Memory spaces: upstream MLIR (no `tpu` dialect registered) rejects
//! `#tpu.memory_space<...>` on a memref and any `!tpu.*` memref element type.
//! The module is therefore built with small integer memory spaces
//! ([`MemSpace`]) and `i32` as the stand-in element of semaphore memrefs; the
//! serializer maps both to their `tpu` spellings. This keeps every upstream op
//! verified by MLIR itself. IRDL declarations were the alternative, but an
//! IRDL type cannot implement `MemRefElementTypeInterface`, so semaphore
//! memrefs would still need a stand-in; one mechanism is simpler than two.

use super::error::{MosaicError, SourceLocation};
use melior::dialect::{DialectHandle, DialectRegistry};
use melior::ir::attribute::{
    ArrayAttribute, BoolAttribute, DenseElementsAttribute, DenseI32ArrayAttribute,
    DenseI64ArrayAttribute, FloatAttribute, IntegerAttribute,
};
use melior::ir::r#type::{IntegerType, MemRefType};
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Location, OperationRef, Region, RegionLike, Type,
    Value, ValueLike,
};
use melior::Context;
use pk_lang::ir::{DType, Space};
use std::sync::{Arc, Mutex};

/// A value of the module being built.
///
/// invariant: every `Val` belongs to an operation or block of the module that
/// [`Mlir`] builds, and none outlives it. melior ties a value's lifetime to a
/// borrow of its block; the lowering needs values from enclosing blocks while
/// it fills nested ones, so values are kept detached from those borrows (see
/// [`detach`]) and the module, which owns them all, outlives every use.
pub(crate) type Val<'c> = Value<'c, 'c>;

/// Forgets the block borrow of a value; see [`Val`].
pub(crate) fn detach<'c>(v: impl ValueLike<'c>) -> Val<'c> {
    // SAFETY: the raw value stays valid while the module that owns its
    // defining operation or block exists, which outlives every `Val` (see the
    // invariant on `Val`).
    unsafe { Value::from_raw(v.to_raw()) }
}

/// Memory spaces as the module carries them while it is built; the serializer
/// writes them as `#tpu.memory_space<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemSpace {
    Vmem = 1,
    Smem = 2,
    Any = 3,
    Semaphore = 4,
    /// Plain (and barrier) semaphores: `!tpu.semaphore` in semaphore memory.
    Sem = 5,
}

impl MemSpace {
    pub(crate) const ALL: [MemSpace; 5] = [
        MemSpace::Vmem,
        MemSpace::Smem,
        MemSpace::Any,
        MemSpace::Semaphore,
        MemSpace::Sem,
    ];

    pub(crate) fn of(space: Space) -> MemSpace {
        match space {
            Space::Vmem => MemSpace::Vmem,
            Space::Smem => MemSpace::Smem,
            Space::Any => MemSpace::Any,
            Space::Semaphore => MemSpace::Semaphore,
            Space::Sem | Space::Barrier => MemSpace::Sem,
        }
    }

    /// The name inside `#tpu.memory_space<...>`.
    pub(crate) fn tpu_name(self) -> &'static str {
        match self {
            MemSpace::Vmem => "vmem",
            MemSpace::Smem => "smem",
            MemSpace::Any => "any",
            MemSpace::Semaphore | MemSpace::Sem => "semaphore_mem",
        }
    }
}

/// Collects MLIR's diagnostics (verifier and builder messages) while a
/// lowering runs.
pub(crate) type Diagnostics = Arc<Mutex<Vec<String>>>;

/// The upstream dialects a Mosaic kernel body uses (besides `builtin`, which
/// every context has).
///
/// Only these are registered: registering all of MLIR's dialects would link
/// every one of them (and its dependencies) into each binary.
fn dialect_handles() -> [DialectHandle; 6] {
    // SAFETY: each function returns a static handle of a dialect compiled into
    // the MLIR C API libraries that mlir-sys links.
    unsafe {
        [
            DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__func__()),
            DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__arith__()),
            DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__math__()),
            DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__vector__()),
            DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__memref__()),
            DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__scf__()),
        ]
    }
}

/// A context with the upstream dialects that Mosaic kernels use, unregistered
/// (`tpu`) operations allowed, and a diagnostic collector attached.
pub(crate) fn new_context() -> (Context, Diagnostics) {
    let registry = DialectRegistry::new();
    let handles = dialect_handles();
    for h in &handles {
        h.insert_dialect(&registry);
    }
    let ctx = Context::new();
    ctx.append_dialect_registry(&registry);
    for h in &handles {
        h.load_dialect(&ctx);
    }
    ctx.set_allow_unregistered_dialects(true);
    let diags: Diagnostics = Arc::default();
    let sink = diags.clone();
    ctx.attach_diagnostic_handler(move |d| {
        if let Ok(mut v) = sink.lock() {
            v.push(format!("{}: {d}", d.location()));
        }
        true
    });
    (ctx, diags)
}

/// Takes the diagnostics collected so far.
pub(crate) fn take(diags: &Diagnostics) -> String {
    diags
        .lock()
        .map(|mut v| std::mem::take(&mut *v).join("\n"))
        .unwrap_or_default()
}

/// Where new operations go: a block, and the source location they carry.
#[derive(Clone, Copy)]
pub(crate) struct At<'c, 'b> {
    pub block: &'b Block<'c>,
    pub loc: Location<'c>,
    /// The same location, for error messages.
    pub src: &'b SourceLocation,
}

/// Typed constructors for types, attributes and operations.
pub(crate) struct Mlir<'c> {
    pub ctx: &'c Context,
    pub diags: Diagnostics,
}

impl<'c> Mlir<'c> {
    pub fn index(&self) -> Type<'c> {
        Type::index(self.ctx)
    }

    pub fn int(&self, bits: u32) -> Type<'c> {
        IntegerType::new(self.ctx, bits).into()
    }

    /// The register type of a dtype's elements: `bool` is `i1`; unsigned
    /// bytes are signless `i8`, as Mosaic has no unsigned types (the
    /// lowering picks unsigned arithmetic where it matters).
    pub fn elem(&self, d: DType) -> Type<'c> {
        match d {
            DType::F32 => Type::float32(self.ctx),
            DType::BF16 => Type::bfloat16(self.ctx),
            DType::F8E4M3FN => Type::float8_e4m3fn(self.ctx),
            DType::F8E5M2 => Type::float8_e5m2(self.ctx),
            DType::Bool => self.int(1),
            DType::I32 | DType::I16 | DType::I8 | DType::U8 => self.int(d.bits()),
        }
    }

    /// The element type of a dtype in memory: `bool` is stored as `i32`.
    pub fn storage(&self, d: DType) -> Type<'c> {
        if d == DType::Bool {
            self.int(32)
        } else {
            self.elem(d)
        }
    }

    /// A vector type; an empty shape gives the element type itself.
    pub fn vector(&self, shape: &[u64], elem: Type<'c>) -> Type<'c> {
        if shape.is_empty() {
            elem
        } else {
            Type::vector(shape, elem)
        }
    }

    /// A memref in one of the build-time memory spaces (see [`MemSpace`]).
    pub fn memref(&self, shape: &[u64], elem: Type<'c>, space: MemSpace) -> Type<'c> {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let ms = IntegerAttribute::new(self.int(64), space as i64).into();
        MemRefType::new(elem, &dims, None, Some(ms)).into()
    }

    pub fn i64_attr(&self, v: i64) -> Attribute<'c> {
        IntegerAttribute::new(self.int(64), v).into()
    }

    /// An integer attribute of `ty`, with `v` wrapped to the type's width
    /// (so `255` becomes the `i8` bit pattern `-1`).
    pub fn int_attr(&self, ty: Type<'c>, bits: u32, v: i64) -> Attribute<'c> {
        IntegerAttribute::new(ty, wrap(v, bits)).into()
    }

    pub fn float_attr(&self, ty: Type<'c>, v: f64) -> Attribute<'c> {
        FloatAttribute::new(self.ctx, ty, v).into()
    }

    pub fn bool_attr(&self, v: bool) -> Attribute<'c> {
        BoolAttribute::new(self.ctx, v).into()
    }

    pub fn i32_array(&self, v: &[i32]) -> Attribute<'c> {
        DenseI32ArrayAttribute::new(self.ctx, v).into()
    }

    pub fn i64_array(&self, v: &[i64]) -> Attribute<'c> {
        DenseI64ArrayAttribute::new(self.ctx, v).into()
    }

    pub fn array(&self, v: &[Attribute<'c>]) -> Attribute<'c> {
        ArrayAttribute::new(self.ctx, v).into()
    }

    /// A splat dense attribute of a vector type.
    pub fn splat(&self, ty: Type<'c>, elem: Attribute<'c>) -> Attribute<'c> {
        DenseElementsAttribute::splat(ty, elem).into()
    }

    /// An attribute in its textual form; used for the `tpu` dialect's
    /// attributes, which MLIR keeps as opaque attributes, and for enum
    /// attributes of upstream dialects.
    pub fn parse_attr(
        &self,
        text: &str,
        at: &SourceLocation,
    ) -> Result<Attribute<'c>, MosaicError> {
        Attribute::parse(self.ctx, text).ok_or_else(|| {
            let message = format!("cannot parse attribute: {}", take(&self.diags));
            build_error(text, message, at)
        })
    }

    /// Creates an operation and appends it to `at.block`; returns its results.
    pub fn op(
        &self,
        at: At<'c, '_>,
        name: &str,
        operands: &[Val<'c>],
        results: &[Type<'c>],
        attrs: &[(&str, Attribute<'c>)],
        regions: Vec<Region<'c>>,
    ) -> Result<Vec<Val<'c>>, MosaicError> {
        let named: Vec<(Identifier<'c>, Attribute<'c>)> = attrs
            .iter()
            .map(|(k, v)| (Identifier::new(self.ctx, k), *v))
            .collect();
        let op = melior::ir::operation::OperationBuilder::new(name, at.loc)
            .add_operands(operands)
            .add_results(results)
            .add_attributes(&named)
            .add_regions_vec(regions)
            .build()
            .map_err(|e| build_error(name, format!("{e} {}", take(&self.diags)), at.src))?;
        let op = at.block.append_operation(op);
        Ok(results_of(op))
    }

    /// Like [`Mlir::op`] for operations without results or regions.
    pub fn op0(
        &self,
        at: At<'c, '_>,
        name: &str,
        operands: &[Val<'c>],
        attrs: &[(&str, Attribute<'c>)],
    ) -> Result<(), MosaicError> {
        self.op(at, name, operands, &[], attrs, Vec::new())
            .map(drop)
    }

    /// Like [`Mlir::op`] for single-result operations.
    pub fn op1(
        &self,
        at: At<'c, '_>,
        name: &str,
        operands: &[Val<'c>],
        result: Type<'c>,
        attrs: &[(&str, Attribute<'c>)],
    ) -> Result<Val<'c>, MosaicError> {
        let r = self.op(at, name, operands, &[result], attrs, Vec::new())?;
        r.into_iter()
            .next()
            .ok_or_else(|| build_error(name, "operation has no result", at.src))
    }
}

/// The error for an operation (or attribute) that MLIR could not build.
pub(crate) fn build_error(
    op: &str,
    message: impl Into<String>,
    at: &SourceLocation,
) -> MosaicError {
    MosaicError::Build {
        op: op.to_string(),
        message: message.into(),
        at: at.clone(),
    }
}

/// The results of an appended operation, detached (see [`Val`]).
pub(crate) fn results_of<'c>(op: OperationRef<'c, '_>) -> Vec<Val<'c>> {
    use melior::ir::operation::OperationLike;
    op.results().map(detach).collect()
}

/// Sign-extends the low `bits` of `v`: the bit pattern of `v` in a `bits`-wide
/// two's-complement integer.
pub(crate) fn wrap(v: i64, bits: u32) -> i64 {
    if bits == 0 || bits >= 64 {
        return v;
    }
    let shift = 64 - bits;
    (v << shift) >> shift
}

/// Wraps one block into a region.
pub(crate) fn region<'c>(block: Block<'c>) -> Region<'c> {
    let r = Region::new();
    r.append_block(block);
    r
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_keeps_bit_patterns() {
        assert_eq!(wrap(255, 8), -1);
        assert_eq!(wrap(127, 8), 127);
        assert_eq!(wrap(-1, 32), -1);
        assert_eq!(wrap(0x8000_0000, 32), i32::MIN as i64);
        assert_eq!(wrap(1, 1), -1);
    }
}
