//! The Tile IR verifier, separate from the type checker. It checks the
//! invariants every backend relies on; tests run it after every lowering.
//!
//! Invariants, checked in this order:
//!
//! 1. Handles: every value, op, block and ref a function mentions exists.
//! 2. Structure: every op is in exactly one block; every block is the entry
//!    or owned by exactly one op (`If`, `For`, `While`).
//! 3. Scoping: a value is used only after its definition, in its own block or
//!    a block nested inside it (structured dominance).
//! 4. Types: each op's operands and results have the types its
//!    documentation in `ir/mod.rs` states; blocks yield what their owner
//!    expects.
//! 5. Refs: loads and stores index every ref dimension; static windows lie
//!    inside the ref; SMEM is accessed only by scalars; ANY refs only by DMA.
//! 6. Kernels: the body and every index map take one i32 per grid axis;
//!    index maps yield one i32 per array dimension and touch only prefetch refs;
//!    a block's buffer count, where known, is 1 or 2 (Mosaic's two
//!    pipeline modes).
//! 7. Specialisation (when asked): every dimension is known and positive.
//! 8. Views (`RefOrigin::View`): the viewed ref is declared earlier, in the
//!    same memory space, and is not itself a view between widths; a view
//!    of the same dtype has the same number of elements (a reshape), one of
//!    another dtype has the same dimensions but the second-minor, which
//!    holds the same bits (a bitcast).

use super::*;
use std::collections::HashSet;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    pub message: String,
    pub span: Span,
}

type Result<T> = std::result::Result<T, VerifyError>;

fn err<T>(span: Span, message: impl Into<String>) -> Result<T> {
    Err(VerifyError {
        message: message.into(),
        span,
    })
}

/// Invariant 8 for the view `id` of `base`.
fn view_decl(k: &Kernel, id: RefId, base: RefId, specialised: bool) -> Result<()> {
    let name = &k.refs[id].name;
    if base.index() >= id.index() {
        return err(
            k.span,
            format!("view `{name}` is of a ref declared after it"),
        );
    }
    let (v, b) = (&k.refs[id].ty, &k.refs[base].ty);
    if v.space != b.space {
        return err(k.span, format!("view `{name}` is in another memory space"));
    }
    if k.is_packed_view(base) {
        return err(k.span, format!("view `{name}` is of a view between widths"));
    }
    if !specialised {
        return Ok(());
    }
    let dims = |t: &RefType| t.shape.iter().map(Dim::get).collect::<Vec<u64>>();
    let (vs, bs) = (dims(v), dims(b));
    let ok = if v.dtype == b.dtype {
        vs.iter().product::<u64>() == bs.iter().product::<u64>()
    } else {
        let n = vs.len();
        n >= 2
            && n == bs.len()
            && vs[..n - 2] == bs[..n - 2]
            && vs[n - 1] == bs[n - 1]
            && vs[n - 2] * u64::from(v.dtype.bits()) == bs[n - 2] * u64::from(b.dtype.bits())
    };
    if !ok {
        return err(
            k.span,
            format!("view `{name}` does not cover the memory of what it views"),
        );
    }
    Ok(())
}

/// Verifies a kernel; `specialised` additionally requires known dimensions.
pub fn verify_kernel(k: &Kernel, specialised: bool) -> Result<()> {
    let grid_rank = k.grid.len();
    let i32t = Type::Scalar(DType::I32);
    if specialised {
        for a in &k.grid {
            known_positive(&a.extent, k.span, "grid extent")?;
        }
        for (_, r) in k.refs.iter() {
            for d in &r.ty.shape {
                known_positive(d, k.span, "ref dimension")?;
            }
        }
        for o in &k.operands {
            for d in &o.shape {
                known_positive(d, o.span, "operand dimension")?;
            }
        }
    }
    for (id, r) in k.refs.iter() {
        if let RefOrigin::View(b) = r.origin {
            view_decl(k, id, b, specialised)?;
        }
    }
    for a in &k.grid {
        if let Some(d) = &a.dynamic {
            dynamic_extent(k, d)?;
        }
    }
    for (i, o) in k.operands.iter().enumerate() {
        if !k.refs.contains(o.ref_id) {
            return err(o.span, format!("operand {i} names a missing ref"));
        }
        if let Some(b) = &o.block {
            if b.dims.len() != o.shape.len() {
                return err(
                    o.span,
                    format!("operand `{}`: block rank differs from array rank", o.name),
                );
            }
            if let Some(n) = b.buffers.known() {
                if !(1..=2).contains(&n) {
                    return err(
                        o.span,
                        format!("operand `{}`: {n} buffers (1 or 2 are lowered)", o.name),
                    );
                }
            }
            let ctx = Ctx {
                k,
                f: &b.index_map,
                index_map: true,
            };
            ctx.func(
                &vec![i32t.clone(); grid_rank],
                Some(&vec![i32t.clone(); o.shape.len()]),
            )?;
        }
    }
    let ctx = Ctx {
        k,
        f: &k.body,
        index_map: false,
    };
    ctx.func(&vec![i32t; grid_rank], None)
}

fn known_positive(d: &Dim, span: Span, what: &str) -> Result<()> {
    match d.known() {
        Some(v) if v > 0 => Ok(()),
        Some(v) => err(span, format!("{what} {v} is not positive")),
        None => err(span, format!("{what} `{d}` is not specialised")),
    }
}

struct Ctx<'a> {
    k: &'a Kernel,
    f: &'a Func,
    index_map: bool,
}

impl Ctx<'_> {
    fn func(&self, params: &[Type], yields: Option<&[Type]>) -> Result<()> {
        let f = self.f;
        let entry = match f.entry {
            Some(e) if f.blocks.contains(e) => e,
            _ => return err(self.k.span, "function has no entry block"),
        };
        // 1. Handles.
        for (id, op) in f.ops.iter() {
            for &r in &op.results {
                if !f.values.contains(r) {
                    return err(f.span(id), "op result is a missing value");
                }
            }
        }
        for (_, b) in f.blocks.iter() {
            for &o in &b.ops {
                if !f.ops.contains(o) {
                    return err(self.k.span, "block lists a missing op");
                }
            }
            for &v in b.params.iter().chain(&b.yields) {
                if !f.values.contains(v) {
                    return err(self.k.span, "block mentions a missing value");
                }
            }
        }
        if f.spans.len() != f.ops.len() {
            return err(self.k.span, "span table does not match the op arena");
        }
        // 2. Structure.
        let mut op_seen = vec![false; f.ops.len()];
        let mut block_seen = vec![false; f.blocks.len()];
        block_seen[entry.index()] = true;
        for (_, b) in f.blocks.iter() {
            for &o in &b.ops {
                if std::mem::replace(&mut op_seen[o.index()], true) {
                    return err(f.span(o), "op appears in two blocks");
                }
                for child in f.ops[o].kind.blocks() {
                    if !f.blocks.contains(child)
                        || std::mem::replace(&mut block_seen[child.index()], true)
                    {
                        return err(f.span(o), "block owned twice or missing");
                    }
                }
            }
        }
        // 3-5. Scoping and types, walking from the entry.
        let ptypes: Vec<Type> = f.blocks[entry]
            .params
            .iter()
            .map(|p| f.ty(*p).clone())
            .collect();
        if ptypes != params {
            return err(self.k.span, "entry block must take one i32 per grid axis");
        }
        let mut scope: HashSet<Value> = HashSet::new();
        self.block(entry, &mut scope)?;
        if let Some(ys) = yields {
            let got: Vec<Type> = f.blocks[entry]
                .yields
                .iter()
                .map(|v| f.ty(*v).clone())
                .collect();
            if got != ys {
                return err(
                    self.k.span,
                    "index map must yield one i32 per array dimension",
                );
            }
        } else if !f.blocks[entry].yields.is_empty() {
            return err(self.k.span, "kernel body yields values");
        }
        Ok(())
    }

    fn block(&self, b: BlockId, scope: &mut HashSet<Value>) -> Result<()> {
        let f = self.f;
        let mark: Vec<Value> = f.blocks[b].params.clone();
        scope.extend(mark.iter().copied());
        let mut defined = mark;
        for &op in &f.blocks[b].ops {
            self.op(op, scope)?;
            for &r in &f.ops[op].results {
                scope.insert(r);
                defined.push(r);
            }
        }
        for &y in &f.blocks[b].yields {
            if !scope.contains(&y) {
                return err(self.k.span, format!("yield of %{} out of scope", y.index()));
            }
        }
        for v in defined {
            scope.remove(&v);
        }
        Ok(())
    }

    fn use_(&self, op: OpId, v: Value, scope: &HashSet<Value>) -> Result<&Type> {
        if !self.f.values.contains(v) {
            return err(self.f.span(op), "use of a missing value");
        }
        if !scope.contains(&v) {
            return err(
                self.f.span(op),
                format!(
                    "use of %{} before its definition or out of scope",
                    v.index()
                ),
            );
        }
        Ok(self.f.ty(v))
    }

    fn yields_of(&self, b: BlockId) -> Vec<Type> {
        self.f.blocks[b]
            .yields
            .iter()
            .map(|v| self.f.ty(*v).clone())
            .collect()
    }

    fn params_of(&self, b: BlockId) -> Vec<Type> {
        self.f.blocks[b]
            .params
            .iter()
            .map(|v| self.f.ty(*v).clone())
            .collect()
    }

    fn op(&self, id: OpId, scope: &mut HashSet<Value>) -> Result<()> {
        let f = self.f;
        let op = &f.ops[id];
        let sp = f.span(id);
        let res: Vec<Type> = op.results.iter().map(|r| f.ty(*r).clone()).collect();
        let one = |n: usize| -> Result<&Type> {
            if res.len() != n || n != 1 {
                return err(sp, "op must have exactly one result");
            }
            Ok(&res[0])
        };
        let scalar_i32 = Type::Scalar(DType::I32);
        if self.index_map {
            match &op.kind {
                OpKind::Const(_)
                | OpKind::Unary(..)
                | OpKind::Binary(..)
                | OpKind::Compare(..)
                | OpKind::Select { .. }
                | OpKind::Cast(_)
                | OpKind::Load(_)
                | OpKind::DeviceId
                | OpKind::If { .. } => {}
                _ => return err(sp, "index maps compute scalars only"),
            }
        }
        match &op.kind {
            OpKind::Const(l) => {
                let t = one(1)?;
                let ok = match l {
                    Literal::Int(_) => t.dtype().is_int(),
                    Literal::Float(_) => t.dtype().is_float(),
                    Literal::Bool(_) => t.dtype() == DType::Bool,
                };
                if !ok {
                    return err(sp, "literal does not match its type");
                }
            }
            OpKind::Unary(_, a) => {
                let a = self.use_(id, *a, scope)?.clone();
                if &a != one(1)? {
                    return err(sp, "unary op changes type");
                }
            }
            OpKind::Binary(_, a, b) => {
                let a = self.use_(id, *a, scope)?.clone();
                let b = self.use_(id, *b, scope)?.clone();
                if a != b || &a != one(1)? {
                    return err(sp, format!("binary op types differ: {a}, {b}"));
                }
            }
            OpKind::Compare(_, a, b) => {
                let a = self.use_(id, *a, scope)?.clone();
                let b = self.use_(id, *b, scope)?.clone();
                if a != b || one(1)? != &a.with_dtype(DType::Bool) {
                    return err(sp, "compare operands differ or result is not bool");
                }
            }
            OpKind::Select {
                cond,
                on_true,
                on_false,
            } => {
                let c = self.use_(id, *cond, scope)?.clone();
                let t = self.use_(id, *on_true, scope)?.clone();
                let e = self.use_(id, *on_false, scope)?.clone();
                let r = one(1)?;
                if t != e || &t != r || c != r.with_dtype(DType::Bool) {
                    return err(sp, "select types differ");
                }
            }
            OpKind::Cast(a) => {
                let a = self.use_(id, *a, scope)?.clone();
                if a.shape() != one(1)?.shape() {
                    return err(sp, "cast changes shape");
                }
            }
            OpKind::Bitcast(a) => {
                let a = self.use_(id, *a, scope)?.clone();
                let r = one(1)?;
                if a.shape() != r.shape() || a.dtype().bits() != r.dtype().bits() {
                    return err(sp, "bitcast changes shape or width");
                }
            }
            OpKind::Splat(a) => {
                let a = self.use_(id, *a, scope)?.clone();
                let r = one(1)?;
                if !a.is_scalar() || r.is_scalar() || a.dtype() != r.dtype() {
                    return err(sp, "splat takes a scalar to a vector of its dtype");
                }
            }
            OpKind::Broadcast(a) => {
                let a = self.use_(id, *a, scope)?.clone();
                let r = one(1)?;
                let ok = a.dtype() == r.dtype()
                    && a.rank() == r.rank()
                    && a.shape()
                        .iter()
                        .zip(r.shape())
                        .all(|(x, y)| x == y || *x == Dim::Known(1));
                if !ok {
                    return err(sp, format!("cannot broadcast {a} to {r}"));
                }
            }
            OpKind::Reshape(a) => {
                let a = self.use_(id, *a, scope)?.clone();
                let r = one(1)?;
                if a.dtype() != r.dtype()
                    || (a.elements().is_some() && a.elements() != r.elements())
                {
                    return err(sp, "reshape changes the element count");
                }
            }
            OpKind::Concat(vs, axis) => {
                let r = one(1)?.clone();
                let mut total = 0i64;
                for v in vs {
                    let t = self.use_(id, *v, scope)?.clone();
                    let same = t.dtype() == r.dtype()
                        && t.rank() == r.rank()
                        && *axis < r.rank()
                        && t.shape()
                            .iter()
                            .zip(r.shape())
                            .enumerate()
                            .all(|(k, (d, rd))| k == *axis || d == rd);
                    if !same {
                        return err(sp, "concat operand does not match the result");
                    }
                    total += t.shape()[*axis].known().unwrap_or(0);
                }
                if vs.is_empty() || r.shape()[*axis].known() != Some(total) {
                    return err(sp, "concat result size is not the sum of its operands'");
                }
            }
            OpKind::Slice(a, win) => {
                let a = self.use_(id, *a, scope)?.clone();
                let r = one(1)?;
                let fits = win.len() == a.rank()
                    && r.rank() == a.rank()
                    && r.dtype() == a.dtype()
                    && win
                        .iter()
                        .zip(a.shape())
                        .zip(r.shape())
                        .all(|(((st, sz), d), rd)| {
                            rd.known() == Some(*sz as i64)
                                && d.known().is_none_or(|d| st + sz <= d as u64)
                        });
                if !fits {
                    return err(sp, "slice window does not fit its operand or result");
                }
            }
            OpKind::Transpose(a, perm) => {
                let a = self.use_(id, *a, scope)?.clone();
                let r = one(1)?;
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                if sorted != (0..a.rank()).collect::<Vec<_>>()
                    || r.rank() != a.rank()
                    || perm
                        .iter()
                        .enumerate()
                        .any(|(i, p)| r.shape()[i] != a.shape()[*p])
                {
                    return err(sp, "transpose permutation does not match");
                }
            }
            OpKind::Iota { dim } => {
                let r = one(1)?;
                if r.is_scalar() || *dim >= r.rank() || r.dtype() != DType::I32 {
                    return err(sp, "iota needs an i32 vector and a dim inside it");
                }
            }
            OpKind::Reduce {
                op: rop,
                value,
                axis,
                keepdims,
            } => {
                let a = self.use_(id, *value, scope)?.clone();
                let r = one(1)?;
                if *axis >= a.rank() {
                    return err(sp, "reduce axis out of range");
                }
                let mut shape = a.shape().to_vec();
                if *keepdims {
                    shape[*axis] = Dim::Known(1);
                } else {
                    shape.remove(*axis);
                }
                let dt = if matches!(rop, ReduceOp::ArgMax | ReduceOp::ArgMin) {
                    DType::I32
                } else {
                    a.dtype()
                };
                if r != &Type::of(dt, shape) {
                    return err(sp, "reduce result type is wrong");
                }
            }
            OpKind::Dot {
                lhs,
                rhs,
                trans_lhs,
                trans_rhs,
            } => {
                let a = self.use_(id, *lhs, scope)?.clone();
                let b = self.use_(id, *rhs, scope)?.clone();
                let r = one(1)?;
                if a.rank() != 2 || b.rank() != 2 || r.rank() != 2 || r.dtype().bits() != 32 {
                    return err(sp, "dot takes 2-D operands and a 32-bit result");
                }
                let (m, ka) = if *trans_lhs {
                    (&a.shape()[1], &a.shape()[0])
                } else {
                    (&a.shape()[0], &a.shape()[1])
                };
                let (kb, n) = if *trans_rhs {
                    (&b.shape()[1], &b.shape()[0])
                } else {
                    (&b.shape()[0], &b.shape()[1])
                };
                if ka != kb || &r.shape()[0] != m || &r.shape()[1] != n {
                    return err(sp, "dot shapes do not match");
                }
            }
            OpKind::Roll { value, shift, axis } => {
                let a = self.use_(id, *value, scope)?.clone();
                let s = self.use_(id, *shift, scope)?.clone();
                if &a != one(1)? || s != scalar_i32 || *axis >= a.rank() {
                    return err(sp, "roll types are wrong");
                }
            }
            OpKind::AssumeMultiple(x, n) => {
                let a = self.use_(id, *x, scope)?.clone();
                if a != scalar_i32 || one(1)? != &scalar_i32 || *n == 0 {
                    return err(
                        sp,
                        "assume_multiple takes and gives a scalar i32, of a positive n",
                    );
                }
            }
            OpKind::Load(v) => {
                let t = self.view(id, v, scope)?;
                if self.index_map && self.k.refs[v.target].ty.space != Space::Smem {
                    return err(sp, "index maps read only scalar-prefetch (SMEM) refs");
                }
                self.check_access(id, v, &t)?;
                if one(1)? != &t {
                    return err(sp, format!("load result should be {t}"));
                }
            }
            OpKind::Store(v, x, mask) => {
                let t = self.view(id, v, scope)?;
                self.check_access(id, v, &t)?;
                let x = self.use_(id, *x, scope)?.clone();
                if x != t || !res.is_empty() {
                    return err(sp, format!("stored value {x} does not match window {t}"));
                }
                if let Some(m) = mask {
                    let m = self.use_(id, *m, scope)?.clone();
                    if t.is_scalar() || m != t.with_dtype(DType::Bool) {
                        return err(sp, format!("mask {m} does not match window {t}"));
                    }
                }
            }
            OpKind::DmaStart { src, dst, sem } | OpKind::DmaWait { src, dst, sem } => {
                let s = self.view(id, src, scope)?;
                let d = self.view(id, dst, scope)?;
                let m = self.view(id, sem, scope)?;
                let rs = &self.k.refs[src.target].ty;
                let rd = &self.k.refs[dst.target].ty;
                if s.shape() != d.shape() || rs.dtype != rd.dtype {
                    return err(sp, "DMA windows differ in shape or dtype");
                }
                if self.k.refs[sem.target].ty.space != Space::Semaphore || !m.is_scalar() {
                    return err(sp, "DMA needs one semaphore");
                }
                if rs.space.is_semaphore() || rd.space.is_semaphore() {
                    return err(sp, "DMA copies data refs");
                }
            }
            OpKind::DeviceId => {
                if one(1)? != &scalar_i32 {
                    return err(sp, "a device id is a scalar i32");
                }
            }
            OpKind::RemoteDma {
                src,
                dst,
                send_sem,
                recv_sem,
                device,
                ..
            } => {
                let s = self.view(id, src, scope)?;
                let d = self.view(id, dst, scope)?;
                let rs = &self.k.refs[src.target].ty;
                let rd = &self.k.refs[dst.target].ty;
                if s.shape() != d.shape() || rs.dtype != rd.dtype {
                    return err(sp, "remote DMA windows differ in shape or dtype");
                }
                if rs.space.is_semaphore() || rd.space.is_semaphore() {
                    return err(sp, "remote DMA copies data refs");
                }
                for m in [send_sem, recv_sem] {
                    let t = self.view(id, m, scope)?;
                    if self.k.refs[m.target].ty.space != Space::Semaphore || !t.is_scalar() {
                        return err(sp, "remote DMA needs one DMA semaphore each side");
                    }
                }
                if self.use_(id, *device, scope)? != &scalar_i32 || !res.is_empty() {
                    return err(sp, "remote DMA device is a scalar i32");
                }
            }
            OpKind::SemSignal { sem, n, device } => {
                let t = self.view(id, sem, scope)?;
                if !matches!(
                    self.k.refs[sem.target].ty.space,
                    Space::Sem | Space::Barrier
                ) || !t.is_scalar()
                {
                    return err(sp, "a signal needs one plain semaphore");
                }
                for v in std::iter::once(n).chain(device) {
                    if self.use_(id, *v, scope)? != &scalar_i32 {
                        return err(sp, "signal count and device are scalar i32");
                    }
                }
            }
            OpKind::SemWait { sem, n } => {
                let t = self.view(id, sem, scope)?;
                if !matches!(
                    self.k.refs[sem.target].ty.space,
                    Space::Sem | Space::Barrier
                ) || !t.is_scalar()
                {
                    return err(sp, "a wait needs one plain semaphore");
                }
                if self.use_(id, *n, scope)? != &scalar_i32 {
                    return err(sp, "a wait count is a scalar i32");
                }
            }
            OpKind::SemRead(sem) => {
                let t = self.view(id, sem, scope)?;
                if !self.k.refs[sem.target].ty.space.is_semaphore() || !t.is_scalar() {
                    return err(sp, "a read needs one semaphore");
                }
                if one(1)? != &scalar_i32 {
                    return err(sp, "a semaphore reads as a scalar i32");
                }
            }
            OpKind::Print { fmt, args } => {
                let mut tiles = 0;
                for v in args {
                    match self.use_(id, *v, scope)? {
                        t if *t == scalar_i32 => {}
                        Type::Vector(..) => tiles += 1,
                        _ => return err(sp, "print takes scalar i32s or one tile"),
                    }
                }
                if fmt.matches("{}").count() != args.len()
                    || (tiles > 0 && (args.len() != 1 || !fmt.ends_with("{}")))
                {
                    return err(sp, "a print's format does not match its arguments");
                }
            }
            OpKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let c = self.use_(id, *cond, scope)?.clone();
                if c != Type::Scalar(DType::Bool) {
                    return err(sp, "if condition must be a scalar bool");
                }
                for b in [*then_block, *else_block] {
                    if !self.f.blocks[b].params.is_empty() {
                        return err(sp, "if branches take no parameters");
                    }
                    self.block(b, scope)?;
                    if self.yields_of(b) != res {
                        return err(sp, "if branch yields do not match results");
                    }
                }
            }
            OpKind::For {
                lo,
                hi,
                step,
                inits,
                body,
            } => {
                for v in [lo, hi] {
                    if self.use_(id, *v, scope)? != &scalar_i32 {
                        return err(sp, "loop bounds must be i32 scalars");
                    }
                }
                if *step == 0 {
                    return err(sp, "loop step must be positive");
                }
                let mut carried = Vec::new();
                for v in inits {
                    carried.push(self.use_(id, *v, scope)?.clone());
                }
                let mut ps = vec![scalar_i32.clone()];
                ps.extend(carried.iter().cloned());
                if self.params_of(*body) != ps || self.yields_of(*body) != carried || res != carried
                {
                    return err(sp, "for loop carried types do not match");
                }
                self.block(*body, scope)?;
            }
            OpKind::While { inits, cond, body } => {
                let mut carried = Vec::new();
                for v in inits {
                    carried.push(self.use_(id, *v, scope)?.clone());
                }
                if self.params_of(*cond) != carried
                    || self.yields_of(*cond) != vec![Type::Scalar(DType::Bool)]
                    || self.params_of(*body) != carried
                    || self.yields_of(*body) != carried
                    || res != carried
                {
                    return err(sp, "while loop carried types do not match");
                }
                self.block(*cond, scope)?;
                self.block(*body, scope)?;
            }
        }
        Ok(())
    }

    /// The type of a window (scalar when every dimension is indexed).
    fn view(&self, id: OpId, v: &RefView, scope: &HashSet<Value>) -> Result<Type> {
        let sp = self.f.span(id);
        let Some(r) = self.k.refs.get(v.target) else {
            return err(sp, "access to a missing ref");
        };
        if v.index.len() != r.ty.shape.len() {
            return err(
                sp,
                format!(
                    "window of `{}` has {} indices for rank {}",
                    r.name,
                    v.index.len(),
                    r.ty.shape.len()
                ),
            );
        }
        let mut shape = Vec::new();
        for (s, dim) in v.index.iter().zip(&r.ty.shape) {
            let (st, size) = match s {
                Slice::Index(st) => (st, 1),
                // Size 0 of a symbolic dimension is the whole of it (only
                // in unspecialised kernels, which are checked, not lowered).
                Slice::Range { start, size: 0 } if dim.known().is_none() => {
                    shape.push(dim.clone());
                    (start, 0)
                }
                Slice::Range { start, size } => {
                    shape.push(Dim::Known(*size as i64));
                    (start, *size)
                }
                Slice::Strided { start, size, .. } => {
                    shape.push(Dim::Known(*size as i64));
                    (start, s.extent())
                }
            };
            match st {
                Start::Dyn(x) => {
                    if self.use_(id, *x, scope)? != &Type::Scalar(DType::I32) {
                        return err(sp, "dynamic start must be a scalar i32");
                    }
                }
                Start::Const(c) => {
                    if let Some(n) = dim.known() {
                        if c + size > n as u64 {
                            return err(
                                sp,
                                format!("window {c}+{size} outside dimension {n} of `{}`", r.name),
                            );
                        }
                    }
                }
            }
        }
        Ok(Type::of(r.ty.dtype, shape))
    }

    fn check_access(&self, id: OpId, v: &RefView, t: &Type) -> Result<()> {
        let r = &self.k.refs[v.target];
        match r.ty.space {
            Space::Smem if !t.is_scalar() => {
                err(self.f.span(id), "SMEM is accessed by scalars only")
            }
            Space::Any | Space::Semaphore | Space::Sem | Space::Barrier => err(
                self.f.span(id),
                format!("`{}` is reached only by DMA", r.name),
            ),
            _ => Ok(()),
        }
    }
}

/// A dynamic grid extent reads one in-range element of an `i32`
/// scalar-prefetch operand.
fn dynamic_extent(k: &Kernel, d: &crate::ir::DynamicExtent) -> Result<()> {
    let Some(o) = k.operands.get(d.operand) else {
        return err(
            k.span,
            format!("dynamic grid extent names missing operand {}", d.operand),
        );
    };
    if o.role != crate::ir::Role::Prefetch || o.dtype != DType::I32 {
        return err(
            o.span,
            "a dynamic grid extent reads an operand that is not i32 prefetch",
        );
    }
    let in_range = d.index.len() == o.shape.len()
        && d.index
            .iter()
            .zip(&o.shape)
            .all(|(&i, n)| n.known().is_none_or(|n| (i as i64) < n));
    if !in_range {
        return err(
            o.span,
            "a dynamic grid extent's index is not one element of its operand",
        );
    }
    Ok(())
}
