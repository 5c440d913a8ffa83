//! One small typed function per operation the lowering emits: upstream
//! `arith`, `math`, `vector`, `memref`, `scf` and `func` operations (verified
//! by MLIR) and the `tpu` operations of the public Mosaic dialect (unregistered
//! here; their operands, attributes and operand segments are those of the
//! dialect at serialization version 11).

use super::error::MosaicError;
use super::mlir::{build_error, At, Mlir, Val};
use melior::ir::attribute::IntegerAttribute;
use melior::ir::r#type::{IntegerType, TypeLike};
use melior::ir::{Attribute, Region, Type, ValueLike};

type R<T> = Result<T, MosaicError>;

/// Elementwise operations that Mosaic lowers for vectors but not for scalars
/// ("failed to legalize operation" on a scalar operand, seen with libtpu
/// 0.0.51); [`Mlir::same`] computes them on a one-element vector.
const SCALAR_VIA_VECTOR: &[&str] = &["math.powf"];

/// The operands `lead` followed by `rest` (memory operations list the
/// value and memref before the indices).
fn cat<'c>(lead: &[Val<'c>], rest: &[Val<'c>]) -> Vec<Val<'c>> {
    [lead, rest].concat()
}

impl<'c> Mlir<'c> {
    /// `arith.constant` with a typed value attribute.
    pub fn constant(&self, at: At<'c, '_>, value: Attribute<'c>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, "arith.constant", &[], ty, &[("value", value)])
    }

    pub fn index_const(&self, at: At<'c, '_>, v: i64) -> R<Val<'c>> {
        let ty = self.index();
        self.constant(
            at,
            melior::ir::attribute::IntegerAttribute::new(ty, v).into(),
            ty,
        )
    }

    pub fn i32_const(&self, at: At<'c, '_>, v: i64) -> R<Val<'c>> {
        let ty = self.int(32);
        self.constant(at, self.int_attr(ty, 32, v), ty)
    }

    /// A splat of an integer over `ty` (a vector type) or the scalar itself.
    pub fn int_splat(
        &self,
        at: At<'c, '_>,
        ty: Type<'c>,
        elem: Type<'c>,
        bits: u32,
        v: i64,
    ) -> R<Val<'c>> {
        let a = self.int_attr(elem, bits, v);
        let a = if ty == elem { a } else { self.splat(ty, a) };
        self.constant(at, a, ty)
    }

    /// A splat of a float over `ty` (a vector type) or the scalar itself.
    pub fn float_splat(&self, at: At<'c, '_>, ty: Type<'c>, elem: Type<'c>, v: f64) -> R<Val<'c>> {
        let a = self.float_attr(elem, v);
        let a = if ty == elem { a } else { self.splat(ty, a) };
        self.constant(at, a, ty)
    }

    /// An elementwise `arith`/`math` operation whose result has the type of
    /// its first operand.
    pub fn same(&self, at: At<'c, '_>, name: &str, operands: &[Val<'c>]) -> R<Val<'c>> {
        let ty = operands
            .first()
            .map(|v| v.r#type())
            .ok_or_else(|| build_error(name, "no operands", at.src))?;
        if !ty.is_vector() && SCALAR_VIA_VECTOR.contains(&name) {
            // The TPU's scalar unit has no such instruction: compute it on a
            // one-element vector and read the element back.
            let one = self.vector(&[1, 1], ty);
            let vs = operands
                .iter()
                .map(|&v| self.broadcast(at, v, one))
                .collect::<R<Vec<_>>>()?;
            let r = self.op1(at, name, &vs, one, &[])?;
            return self.extract(at, r, &[0, 0], ty);
        }
        self.op1(at, name, operands, ty, &[])
    }

    /// `tpu.assume_multiple %v, n`: `v`, with the promise that it is a
    /// multiple of `n`, which Mosaic's alignment proofs take (Pallas'
    /// `pl.multiple_of`). The result has the operand's type.
    pub fn assume_multiple(&self, at: At<'c, '_>, v: Val<'c>, n: i64) -> R<Val<'c>> {
        let multiple = self.int_attr(self.int(32), 32, n);
        self.op1(
            at,
            "tpu.assume_multiple",
            &[v],
            v.r#type(),
            &[("multiple", multiple)],
        )
    }

    /// A conversion (`arith.extf`, `arith.sitofp`, ...) to `ty`.
    pub fn convert(&self, at: At<'c, '_>, name: &str, v: Val<'c>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, name, &[v], ty, &[])
    }

    /// `arith.cmpi` / `arith.cmpf` with a predicate number; `ty` is the i1
    /// result type.
    pub fn cmp(
        &self,
        at: At<'c, '_>,
        name: &str,
        pred: i64,
        a: Val<'c>,
        b: Val<'c>,
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        self.op1(at, name, &[a, b], ty, &[("predicate", self.i64_attr(pred))])
    }

    pub fn select(&self, at: At<'c, '_>, c: Val<'c>, t: Val<'c>, f: Val<'c>) -> R<Val<'c>> {
        self.op1(at, "arith.select", &[c, t, f], t.r#type(), &[])
    }

    /// An `i32` scalar as an `index`, for memory indices.
    pub fn to_index(&self, at: At<'c, '_>, v: Val<'c>) -> R<Val<'c>> {
        self.convert(at, "arith.index_cast", v, self.index())
    }

    pub fn broadcast(&self, at: At<'c, '_>, v: Val<'c>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, "vector.broadcast", &[v], ty, &[])
    }

    pub fn shape_cast(&self, at: At<'c, '_>, v: Val<'c>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, "vector.shape_cast", &[v], ty, &[])
    }

    /// `vector.extract` at a static position.
    pub fn extract(&self, at: At<'c, '_>, v: Val<'c>, pos: &[i64], ty: Type<'c>) -> R<Val<'c>> {
        self.op1(
            at,
            "vector.extract",
            &[v],
            ty,
            &[("static_position", self.i64_array(pos))],
        )
    }

    /// `vector.extract_strided_slice` with unit strides; its attributes are
    /// arrays of i64 integer attributes (`I64ArrayAttr`), not dense arrays.
    pub fn extract_strided_slice(
        &self,
        at: At<'c, '_>,
        v: Val<'c>,
        offsets: &[i64],
        sizes: &[i64],
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        let ints = |xs: &[i64]| -> Attribute<'c> {
            let i64t = IntegerType::new(self.ctx, 64).into();
            let items: Vec<Attribute<'c>> = xs
                .iter()
                .map(|x| IntegerAttribute::new(i64t, *x).into())
                .collect();
            self.array(&items)
        };
        let strides = vec![1i64; offsets.len()];
        self.op1(
            at,
            "vector.extract_strided_slice",
            &[v],
            ty,
            &[
                ("offsets", ints(offsets)),
                ("sizes", ints(sizes)),
                ("strides", ints(&strides)),
            ],
        )
    }

    /// `tpu.concatenate` of `sources` along `dimension` (an i32 attribute).
    pub fn tpu_concatenate(
        &self,
        at: At<'c, '_>,
        sources: &[Val<'c>],
        dimension: i32,
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        let i32t = IntegerType::new(self.ctx, 32).into();
        let dim = IntegerAttribute::new(i32t, dimension.into()).into();
        self.op1(at, "tpu.concatenate", sources, ty, &[("dimension", dim)])
    }

    /// `vector.multi_reduction` of `src` over `dims`, starting from `acc`.
    pub fn multi_reduction(
        &self,
        at: At<'c, '_>,
        kind: &str,
        src: Val<'c>,
        acc: Val<'c>,
        dims: &[i64],
    ) -> R<Val<'c>> {
        let kind = self.parse_attr(&format!("#vector.kind<{kind}>"), at.src)?;
        self.op1(
            at,
            "vector.multi_reduction",
            &[src, acc],
            acc.r#type(),
            &[("kind", kind), ("reduction_dims", self.i64_array(dims))],
        )
    }

    pub fn vector_load(
        &self,
        at: At<'c, '_>,
        mem: Val<'c>,
        idx: &[Val<'c>],
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        self.op1(at, "vector.load", &cat(&[mem], idx), ty, &[])
    }

    pub fn memref_load(
        &self,
        at: At<'c, '_>,
        mem: Val<'c>,
        idx: &[Val<'c>],
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        self.op1(at, "memref.load", &cat(&[mem], idx), ty, &[])
    }

    pub fn memref_store(&self, at: At<'c, '_>, v: Val<'c>, mem: Val<'c>, idx: &[Val<'c>]) -> R<()> {
        self.op0(at, "memref.store", &cat(&[v, mem], idx), &[])
    }

    /// A region terminator: `scf.yield`, `func.return`.
    pub fn terminator(&self, at: At<'c, '_>, name: &str, vals: &[Val<'c>]) -> R<()> {
        self.op0(at, name, vals, &[])
    }

    /// `scf.condition(cond) args`: ends the `before` region of `scf.while`.
    pub fn condition(&self, at: At<'c, '_>, cond: Val<'c>, args: &[Val<'c>]) -> R<()> {
        self.op0(at, "scf.condition", &cat(&[cond], args), &[])
    }

    /// A structured control-flow op (`scf.if`, `scf.for`, `scf.while`).
    pub fn control(
        &self,
        at: At<'c, '_>,
        name: &str,
        operands: &[Val<'c>],
        results: &[Type<'c>],
        regions: Vec<Region<'c>>,
    ) -> R<Vec<Val<'c>>> {
        self.op(at, name, operands, results, &[], regions)
    }

    // ---- tpu dialect ----

    /// `tpu.vector_store`: stores a vector at `idx` without accumulation
    /// (`add = false`, required from version 11 on); with `mask` (an `i1`
    /// vector of the stored shape, the op's last, optional operand) only
    /// the lanes where it is true.
    pub fn tpu_vector_store(
        &self,
        at: At<'c, '_>,
        v: Val<'c>,
        mem: Val<'c>,
        idx: &[Val<'c>],
        mask: Option<Val<'c>>,
    ) -> R<()> {
        let seg = [1, 1, idx.len() as i32, i32::from(mask.is_some())];
        let operands = cat(&cat(&[v, mem], idx), mask.as_slice());
        self.op0(
            at,
            "tpu.vector_store",
            &operands,
            &[
                ("add", self.bool_attr(false)),
                ("operandSegmentSizes", self.i32_array(&seg)),
                ("strides", self.i32_array(&[])),
            ],
        )
    }

    /// `tpu.strided_load`: a vector of `ty` read at `idx`, `strides[d]`
    /// elements apart in memref dimension `d`.
    pub fn tpu_strided_load(
        &self,
        at: At<'c, '_>,
        mem: Val<'c>,
        idx: &[Val<'c>],
        strides: &[u64],
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        let s: Vec<i32> = strides.iter().map(|s| *s as i32).collect();
        self.op1(
            at,
            "tpu.strided_load",
            &cat(&[mem], idx),
            ty,
            &[("strides", self.i32_array(&s))],
        )
    }

    /// `tpu.strided_store`: `v` written at `idx`, `strides[d]` elements
    /// apart in memref dimension `d`.
    pub fn tpu_strided_store(
        &self,
        at: At<'c, '_>,
        v: Val<'c>,
        mem: Val<'c>,
        idx: &[Val<'c>],
        strides: &[u64],
    ) -> R<()> {
        let s: Vec<i32> = strides.iter().map(|s| *s as i32).collect();
        self.op0(
            at,
            "tpu.strided_store",
            &cat(&[v, mem], idx),
            &[("strides", self.i32_array(&s))],
        )
    }

    /// `tpu.matmul` with explicit dimension numbers and a zero accumulator.
    pub fn tpu_matmul(
        &self,
        at: At<'c, '_>,
        lhs: Val<'c>,
        rhs: Val<'c>,
        acc: Val<'c>,
        dims: Attribute<'c>,
    ) -> R<Val<'c>> {
        self.op1(
            at,
            "tpu.matmul",
            &[lhs, rhs, acc],
            acc.r#type(),
            &[
                ("dimension_numbers", dims),
                ("transpose_lhs", self.bool_attr(false)),
                ("transpose_rhs", self.bool_attr(false)),
            ],
        )
    }

    pub fn tpu_iota(&self, at: At<'c, '_>, dims: &[i32], ty: Type<'c>) -> R<Val<'c>> {
        self.op1(
            at,
            "tpu.iota",
            &[],
            ty,
            &[("dimensions", self.i32_array(dims))],
        )
    }

    /// `tpu.dynamic_rotate`: `numpy.roll` by a non-negative `i32` amount.
    pub fn tpu_dynamic_rotate(
        &self,
        at: At<'c, '_>,
        v: Val<'c>,
        amount: Val<'c>,
        dim: i32,
    ) -> R<Val<'c>> {
        let si32 = melior::ir::r#type::IntegerType::signed(self.ctx, 32).into();
        let dim = melior::ir::attribute::IntegerAttribute::new(si32, dim.into()).into();
        self.op1(
            at,
            "tpu.dynamic_rotate",
            &[v, amount],
            v.r#type(),
            &[("dimension", dim)],
        )
    }

    pub fn tpu_transpose(
        &self,
        at: At<'c, '_>,
        v: Val<'c>,
        perm: &[i64],
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        self.op1(
            at,
            "tpu.transpose",
            &[v],
            ty,
            &[("permutation", self.i64_array(perm))],
        )
    }

    pub fn tpu_bitcast(&self, at: At<'c, '_>, v: Val<'c>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, "tpu.bitcast", &[v], ty, &[])
    }

    /// `tpu.reduce_index`: the position of the first maximum or minimum.
    pub fn tpu_reduce_index(
        &self,
        at: At<'c, '_>,
        v: Val<'c>,
        axis: i64,
        kind: &str,
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        let kind = self.parse_attr(&format!("#tpu.reduction_kind<{kind}>"), at.src)?;
        let axis = self.int_attr(self.int(32), 32, axis);
        self.op1(
            at,
            "tpu.reduce_index",
            &[v],
            ty,
            &[("axis", axis), ("kind", kind)],
        )
    }

    /// `tpu.memref_slice` at `i32` offsets, static sizes given by `ty`.
    pub fn tpu_memref_slice(
        &self,
        at: At<'c, '_>,
        mem: Val<'c>,
        offsets: &[Val<'c>],
        ty: Type<'c>,
    ) -> R<Val<'c>> {
        let seg = [1, offsets.len() as i32, 0];
        self.op1(
            at,
            "tpu.memref_slice",
            &cat(&[mem], offsets),
            ty,
            &[("operandSegmentSizes", self.i32_array(&seg))],
        )
    }

    pub fn tpu_memref_squeeze(&self, at: At<'c, '_>, mem: Val<'c>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, "tpu.memref_squeeze", &[mem], ty, &[])
    }

    /// `tpu.memref_reshape`: the same memory with another shape (Pallas'
    /// lowering of `ref.reshape(...)`).
    pub fn tpu_memref_reshape(&self, at: At<'c, '_>, mem: Val<'c>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, "tpu.memref_reshape", &[mem], ty, &[])
    }

    /// `tpu.memref_bitcast`: the same memory with another element type
    /// (Pallas' lowering of `ref.bitcast(...)`).
    pub fn tpu_memref_bitcast(&self, at: At<'c, '_>, mem: Val<'c>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, "tpu.memref_bitcast", &[mem], ty, &[])
    }

    /// `tpu.enqueue_dma` of a local copy signalling `sem` (version 11
    /// segments: source, source semaphore, target, target semaphore, device
    /// id, core id).
    pub fn tpu_enqueue_dma(
        &self,
        at: At<'c, '_>,
        src: Val<'c>,
        dst: Val<'c>,
        sem: Val<'c>,
    ) -> R<()> {
        self.op0(
            at,
            "tpu.enqueue_dma",
            &[src, dst, sem],
            &[
                ("operandSegmentSizes", self.i32_array(&[1, 0, 1, 1, 0, 0])),
                ("priority", self.int_attr(self.int(32), 32, 0)),
            ],
        )
    }

    /// `tpu.wait_dma2` for a local copy (segments: semaphore, source, target,
    /// device id, core id).
    pub fn tpu_wait_dma2(&self, at: At<'c, '_>, sem: Val<'c>, src: Val<'c>, dst: Val<'c>) -> R<()> {
        self.op0(
            at,
            "tpu.wait_dma2",
            &[sem, src, dst],
            &[("operandSegmentSizes", self.i32_array(&[1, 1, 1, 0, 0]))],
        )
    }

    /// `tpu.device_id`: this device's logical id (i32).
    pub fn tpu_device_id(&self, at: At<'c, '_>) -> R<Val<'c>> {
        self.op1(at, "tpu.device_id", &[], self.int(32), &[])
    }

    /// `tpu.enqueue_dma` of a remote copy: `send` is signalled here once
    /// the source is read, `recv` on `device` once the data has landed
    /// (Pallas' `make_async_remote_copy(..).start()`).
    pub fn tpu_enqueue_remote_dma(
        &self,
        at: At<'c, '_>,
        src: Val<'c>,
        send: Val<'c>,
        dst: Val<'c>,
        recv: Val<'c>,
        device: Val<'c>,
    ) -> R<()> {
        self.op0(
            at,
            "tpu.enqueue_dma",
            &[src, send, dst, recv, device],
            &[
                ("operandSegmentSizes", self.i32_array(&[1, 1, 1, 1, 1, 0])),
                ("priority", self.int_attr(self.int(32), 32, 0)),
            ],
        )
    }

    /// `tpu.wait_dma2` with a device (and core) id: a remote copy's wait
    /// (Pallas' `wait_recv` passes the peer, `wait_send` device and core 0
    /// with source and target swapped).
    pub fn tpu_wait_remote_dma(
        &self,
        at: At<'c, '_>,
        sem: Val<'c>,
        src: Val<'c>,
        dst: Val<'c>,
        device: Val<'c>,
        core: Option<Val<'c>>,
    ) -> R<()> {
        let mut ops = vec![sem, src, dst, device];
        ops.extend(core);
        let c = i32::from(core.is_some());
        self.op0(
            at,
            "tpu.wait_dma2",
            &ops,
            &[("operandSegmentSizes", self.i32_array(&[1, 1, 1, 1, c]))],
        )
    }

    /// `tpu.sem_signal` (version 11 segments: semaphore, amount, device id,
    /// core id). JAX 0.10's in-memory op has a fifth group, a subcore id;
    /// its serializer writes version 11 with these four, as pk does, and
    /// libtpu 0.0.51 reads them so.
    pub fn tpu_sem_signal(
        &self,
        at: At<'c, '_>,
        sem: Val<'c>,
        n: Val<'c>,
        device: Option<Val<'c>>,
    ) -> R<()> {
        let mut ops = vec![sem, n];
        ops.extend(device);
        let d = i32::from(device.is_some());
        self.op0(
            at,
            "tpu.sem_signal",
            &ops,
            &[("operandSegmentSizes", self.i32_array(&[1, 1, d, 0]))],
        )
    }

    /// `tpu.sem_wait`.
    pub fn tpu_sem_wait(&self, at: At<'c, '_>, sem: Val<'c>, n: Val<'c>) -> R<()> {
        self.op0(at, "tpu.sem_wait", &[sem, n], &[])
    }

    /// `tpu.sem_read` (i32).
    pub fn tpu_sem_read(&self, at: At<'c, '_>, sem: Val<'c>) -> R<Val<'c>> {
        self.op1(at, "tpu.sem_read", &[sem], self.int(32), &[])
    }

    /// `tpu.sem_barrier`: the barrier semaphore of the kernel's collective.
    pub fn tpu_sem_barrier(&self, at: At<'c, '_>, ty: Type<'c>) -> R<Val<'c>> {
        self.op1(at, "tpu.sem_barrier", &[], ty, &[])
    }
}
