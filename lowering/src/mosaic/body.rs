//! Lowers one Tile IR function body (a kernel body or an index map) into an
//! MLIR block: the state shared by the rules, and the table that picks the
//! rule for each op.

use super::error::{MosaicError, SourceLocation};
use super::mlir::{detach, At, Mlir, Val};
use super::rules::{control, elementwise, memory, shape};
use melior::ir::{Block, BlockLike, Location, Type};
use pk_lang::ir::{self, DType, OpKind, Space};
use pk_lang::span::Span;
use std::collections::HashMap;

pub(crate) type R<T> = Result<T, MosaicError>;

/// A kernel ref as a memref of the function being built.
#[derive(Clone)]
pub(crate) struct PhysRef<'c> {
    pub mem: Val<'c>,
    /// The memref's shape.
    pub shape: Vec<u64>,
    /// Per memref dimension: true when the kernel's view of the ref drops it
    /// (a squeezed block dimension, kept as size 1 in the memref as Pallas
    /// does, and indexed at 0).
    pub squeezed: Vec<bool>,
    pub space: Space,
    pub dtype: DType,
}

/// The state of one function's lowering.
pub(crate) struct Lower<'c, 'k> {
    pub m: &'k Mlir<'c>,
    pub src: &'k ir::Module,
    pub kernel: &'k ir::Kernel,
    pub f: &'k ir::Func,
    pub values: HashMap<ir::Value, Val<'c>>,
    pub refs: HashMap<ir::RefId, PhysRef<'c>>,
}

impl<'c, 'k> Lower<'c, 'k> {
    /// The MLIR location of a span, and the same as text for errors.
    pub fn loc(&self, span: Span) -> (Location<'c>, SourceLocation) {
        let (file, line, col) = self.src.location(span);
        let loc = Location::new(self.m.ctx, &file, line as usize, col as usize);
        (loc, (file, line, col))
    }

    /// The error for Tile IR that breaks an invariant of the kernel being
    /// lowered.
    pub fn invalid(&self, message: impl Into<String>, at: SourceLocation) -> MosaicError {
        MosaicError::InvalidIr {
            kernel: self.kernel.name.clone(),
            message: message.into(),
            at,
        }
    }

    pub fn val(&self, v: ir::Value) -> R<Val<'c>> {
        self.values.get(&v).copied().ok_or_else(|| {
            let message = format!("value %{} is used before it is lowered", v.index());
            self.invalid(message, self.loc(Span::default()).1)
        })
    }

    pub fn ty(&self, v: ir::Value) -> &'k ir::Type {
        self.f.ty(v)
    }

    /// The register type of a Tile IR type.
    pub fn mlir_ty(&self, t: &ir::Type) -> Type<'c> {
        self.m.vector(&dims(t.shape()), self.m.elem(t.dtype()))
    }

    pub fn phys(&self, r: ir::RefId, at: &SourceLocation) -> R<PhysRef<'c>> {
        self.refs.get(&r).cloned().ok_or_else(|| {
            self.invalid(
                format!("ref &{} is not available here", r.index()),
                at.clone(),
            )
        })
    }

    /// Lowers block `b` into `into`, whose arguments stand for the block's
    /// parameters; returns the values the block yields.
    pub fn block(&mut self, b: ir::BlockId, into: &Block<'c>) -> R<Vec<Val<'c>>> {
        let data = &self.f.blocks[b];
        for (i, p) in data.params.iter().enumerate() {
            let arg = into.argument(i).map_err(|e| {
                self.invalid(
                    format!("block parameter {i}: {e}"),
                    self.loc(Span::default()).1,
                )
            })?;
            self.values.insert(*p, detach(arg));
        }
        for &op in &data.ops {
            self.op(op, into)?;
        }
        data.yields.iter().map(|&y| self.val(y)).collect()
    }

    /// A block with one argument per parameter of Tile IR block `b`.
    pub fn new_block(&self, b: ir::BlockId, loc: Location<'c>) -> Block<'c> {
        let args: Vec<(Type<'c>, Location<'c>)> = self.f.blocks[b]
            .params
            .iter()
            .map(|&p| (self.mlir_ty(self.ty(p)), loc))
            .collect();
        Block::new(&args)
    }

    fn op(&mut self, id: ir::OpId, into: &Block<'c>) -> R<()> {
        let op = &self.f.ops[id];
        let (loc, src) = self.loc(self.f.span(id));
        let at = At {
            block: into,
            loc,
            src: &src,
        };
        let results = self.rule(at, op)?;
        if results.len() != op.results.len() {
            let message = format!(
                "op lowered to {} results, expected {}",
                results.len(),
                op.results.len()
            );
            return Err(self.invalid(message, src));
        }
        for (r, v) in op.results.iter().zip(results) {
            self.values.insert(*r, v);
        }
        Ok(())
    }

    /// The lowering rule of each op kind.
    fn rule(&mut self, at: At<'c, '_>, op: &ir::Op) -> R<Vec<Val<'c>>> {
        // The first result's type; ops without results never read it.
        let rt = op
            .results
            .first()
            .map(|&r| self.f.ty(r).clone())
            .unwrap_or(ir::Type::Scalar(DType::I32));
        let one = |v: R<Val<'c>>| v.map(|v| vec![v]);
        match &op.kind {
            OpKind::Const(l) => one(elementwise::constant(self, at, *l, &rt)),
            OpKind::Unary(u, a) => one(elementwise::unary(self, at, *u, *a)),
            OpKind::Binary(b, x, y) => one(elementwise::binary(self, at, *b, *x, *y)),
            OpKind::Compare(c, x, y) => one(elementwise::compare(self, at, *c, *x, *y, &rt)),
            OpKind::Select {
                cond,
                on_true,
                on_false,
            } => one(elementwise::select(self, at, *cond, *on_true, *on_false)),
            OpKind::Cast(a) => one(elementwise::cast(self, at, *a, &rt)),
            OpKind::Bitcast(a) => one(elementwise::bitcast(self, at, *a, &rt)),
            OpKind::Splat(a) | OpKind::Broadcast(a) => one(shape::broadcast(self, at, *a, &rt)),
            OpKind::Reshape(a) => one(shape::reshape(self, at, *a, &rt)),
            OpKind::Transpose(a, perm) => one(shape::transpose(self, at, *a, perm, &rt)),
            OpKind::Slice(a, window) => one(shape::slice(self, at, *a, window, &rt)),
            OpKind::Concat(vs, axis) => one(shape::concat(self, at, vs, *axis, &rt)),
            OpKind::Iota { dim } => one(shape::iota(self, at, *dim, &rt)),
            OpKind::Reduce {
                op: rop,
                value,
                axis,
                keepdims,
            } => one(shape::reduce(self, at, *rop, *value, *axis, *keepdims, &rt)),
            OpKind::Dot {
                lhs,
                rhs,
                trans_lhs,
                trans_rhs,
            } => one(shape::dot(
                self,
                at,
                (*lhs, *trans_lhs),
                (*rhs, *trans_rhs),
                &rt,
            )),
            OpKind::Roll { value, shift, axis } => {
                one(shape::roll(self, at, *value, *shift, *axis))
            }
            OpKind::AssumeMultiple(x, n) => one(self
                .val(*x)
                .and_then(|v| self.m.assume_multiple(at, v, *n as i64))),
            OpKind::Load(view) => one(memory::load(self, at, view, &rt)),
            OpKind::Store(view, v, mask) => {
                memory::store(self, at, view, *v, *mask).map(|()| Vec::new())
            }
            OpKind::DmaStart { src, dst, sem } => {
                memory::dma(self, at, src, dst, sem, true).map(|()| Vec::new())
            }
            OpKind::DmaWait { src, dst, sem } => {
                memory::dma(self, at, src, dst, sem, false).map(|()| Vec::new())
            }
            OpKind::DeviceId => one(self.m.tpu_device_id(at)),
            OpKind::RemoteDma {
                phase,
                src,
                dst,
                send_sem,
                recv_sem,
                device,
            } => memory::remote_dma(self, at, *phase, (src, dst), (send_sem, recv_sem), *device)
                .map(|()| Vec::new()),
            OpKind::SemSignal { sem, n, device } => {
                memory::sem_signal(self, at, sem, *n, *device).map(|()| Vec::new())
            }
            OpKind::SemWait { sem, n } => memory::sem_wait(self, at, sem, *n).map(|()| Vec::new()),
            OpKind::SemRead(sem) => one(memory::sem_read(self, at, sem)),
            OpKind::Print { fmt, args } => {
                super::rules::debug::print(self, at, fmt, args).map(|()| Vec::new())
            }
            OpKind::If {
                cond,
                then_block,
                else_block,
            } => control::if_(self, at, *cond, *then_block, *else_block, op),
            OpKind::For {
                lo,
                hi,
                step,
                inits,
                body,
            } => control::for_(self, at, (*lo, *hi, *step), inits, *body, op),
            OpKind::While { inits, cond, body } => {
                control::while_(self, at, inits, *cond, *body, op)
            }
        }
    }
}

/// The dimensions of a specialised shape (see `Dim::get`).
pub(crate) fn dims(shape: &[ir::Dim]) -> Vec<u64> {
    shape.iter().map(ir::Dim::get).collect()
}

/// The error for a combination the Mosaic dialect cannot express.
pub(crate) fn unsupported<T>(at: At<'_, '_>, what: impl Into<String>) -> R<T> {
    Err(MosaicError::Unsupported {
        what: what.into(),
        at: at.src.clone(),
    })
}
