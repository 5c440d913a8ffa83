//! Tile IR function bodies to Wasm function bodies: one short rule per op,
//! split by concern (elementwise lane rules, memory and host calls, shape
//! ops), with structured control flow mapped to Wasm blocks and loops.
//!
//! Scalars live in locals; tiles live in the buffers [`super::plan`] chose.
//! Every op that can trap or call the host registers a *site* carrying its
//! `.pk` span, and passes the site number to the host.

mod elementwise;
mod f8;
pub(crate) mod fuse;
mod masked;
mod memory;
mod packed;
mod shape;

pub(crate) use memory::view_kind;

use super::abi::{self, DmaSite, DotSite, Loc, Site, TrapKind};
use super::fb::{m32, Fb};
use super::math::Helpers;
use super::plan::{GroupKind, Plan};
use super::Error;
use pk_lang::ir::{BlockId, DType, Func, Kernel, OpId, OpKind, RemotePhase, Value};
use pk_lang::span::{SourceMap, Span};
use std::collections::HashMap;
use wasm_encoder::{BlockType, Instruction as I, ValType};

/// Function indices of the host imports.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Imports {
    pub trap: u32,
    pub dot: u32,
    pub dma_start: u32,
    pub dma_wait: u32,
    pub eup: u32,
    pub fill: u32,
    pub mesh: u32,
    pub print: u32,
}

/// The side tables shared by every function of a module.
pub(crate) struct Sites<'s> {
    pub sources: &'s SourceMap,
    pub sites: Vec<Site>,
    pub dots: Vec<DotSite>,
    pub dmas: Vec<DmaSite>,
    pub meshes: Vec<abi::MeshSite>,
    pub prints: Vec<abi::PrintSite>,
    /// Argument slots the DMA descriptors need.
    pub arg_slots: u32,
}

impl Sites<'_> {
    pub fn loc(&self, span: Span) -> Loc {
        if (span.file.0 as usize) >= self.sources.files().count() {
            return Loc::default();
        }
        let (file, line, col) = self.sources.location(span);
        Loc {
            file,
            line,
            col,
            start: span.start,
            end: span.end,
        }
    }

    pub fn add(&mut self, what: String, span: Span) -> u32 {
        let loc = self.loc(span);
        self.sites.push(Site { what, loc });
        self.sites.len() as u32 - 1
    }
}

/// Where a tile's first element is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Addr {
    Const(u32),
    Local(u32),
}

/// Whether a dtype's lanes are f32 (else i32).
pub(crate) fn is_f(d: DType) -> bool {
    d.is_float()
}

pub(crate) fn lane_type(d: DType) -> ValType {
    if is_f(d) {
        ValType::F32
    } else {
        ValType::I32
    }
}

pub(crate) struct Em<'a, 's> {
    pub k: &'a Kernel,
    pub f: &'a Func,
    pub plan: &'a Plan,
    pub slots: &'a [super::abi::RefSlot],
    pub temps_offset: u32,
    pub args_offset: u32,
    pub fb: Fb,
    pub h: &'a mut Helpers,
    pub sites: &'a mut Sites<'s>,
    pub imp: Imports,
    pub loop_global: u32,
    pub check_uninit: bool,
    locals: Vec<Option<u32>>,
    views: HashMap<u32, Addr>,
    /// Tiles computed inline by their readers (see `fuse`).
    pub inline: Vec<bool>,
    loops: Vec<i32>,
    /// The op being emitted (for spans of errors and sites).
    pub cur: Option<OpId>,
    /// Ops already done by another op's code: the add and store of an
    /// `acc[..] += dot(..)` that the dot accumulates itself.
    pub done: Vec<bool>,
    /// Per-row broadcasts splatted once per row of a fused loop nest, with
    /// the locals holding them (see `fuse`).
    pub row_splats: Vec<(Value, u32)>,
    /// Stores done by the `fill` import instead of the module's code.
    pub host_filled: Vec<bool>,
}

impl<'a, 's> Em<'a, 's> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        k: &'a Kernel,
        f: &'a Func,
        plan: &'a Plan,
        slots: &'a [super::abi::RefSlot],
        layout: &super::abi::Layout,
        h: &'a mut Helpers,
        sites: &'a mut Sites<'s>,
        imp: Imports,
        loop_global: u32,
        check_uninit: bool,
    ) -> Self {
        let nparams = f.entry_block().params.len() as u32;
        let mut em = Em {
            k,
            f,
            plan,
            slots,
            temps_offset: layout.temps_offset,
            args_offset: layout.args_offset,
            fb: Fb::new(nparams),
            h,
            sites,
            imp,
            loop_global,
            check_uninit,
            locals: vec![None; f.values.len()],
            views: HashMap::new(),
            inline: plan.inline.clone(),
            loops: Vec::new(),
            cur: None,
            done: vec![false; f.ops.len()],
            row_splats: Vec::new(),
            host_filled: vec![false; f.ops.len()],
        };
        for (i, &p) in f.entry_block().params.iter().enumerate() {
            em.locals[p.index()] = Some(i as u32);
        }
        em
    }

    pub fn span(&self) -> Span {
        self.cur.map(|o| self.f.span(o)).unwrap_or(self.k.span)
    }

    pub fn unsupported(&self, what: impl Into<String>) -> Error {
        Error::Unsupported {
            what: what.into(),
            span: self.span(),
        }
    }

    /// Registers a site for the current op.
    pub fn site(&mut self, what: impl Into<String>) -> u32 {
        let span = self.span();
        self.sites.add(what.into(), span)
    }

    /// The local of a scalar value, created on first use.
    pub fn local(&mut self, v: Value) -> u32 {
        if let Some(l) = self.locals[v.index()] {
            return l;
        }
        let l = self.fb.local(lane_type(self.f.ty(v).dtype()));
        self.locals[v.index()] = Some(l);
        l
    }

    pub fn bind(&mut self, v: Value, l: u32) {
        self.locals[v.index()] = Some(l);
    }

    pub fn get(&mut self, v: Value) -> &mut Fb {
        let l = self.local(v);
        self.fb.get(l)
    }

    pub fn group_kind(&self, v: Value) -> Option<&GroupKind> {
        self.plan
            .group(v)
            .map(|g| &self.plan.groups[g as usize].kind)
    }

    /// The address of a tile value.
    pub fn addr(&self, v: Value) -> Addr {
        let Some(g) = self.plan.group(v) else {
            return Addr::Const(0);
        };
        let gr = &self.plan.groups[g as usize];
        match gr.kind {
            GroupKind::Temp => Addr::Const(self.temps_offset + gr.offset),
            GroupKind::View { .. } => self.views.get(&g).copied().unwrap_or(Addr::Const(0)),
        }
    }

    pub fn group_addr(&self, g: u32) -> Addr {
        Addr::Const(self.temps_offset + self.plan.groups[g as usize].offset)
    }

    pub fn set_view(&mut self, v: Value, a: Addr) {
        if let Some(g) = self.plan.group(v) {
            self.views.insert(g, a);
        }
    }

    /// Pushes the dynamic part of `a + index` and returns the static offset
    /// for the memory instruction.
    pub fn base(&mut self, a: Addr, index: Option<u32>) -> u32 {
        match (a, index) {
            (Addr::Const(c), Some(i)) => {
                self.fb.get(i);
                c
            }
            (Addr::Const(c), None) => {
                self.fb.i32c(0);
                c
            }
            (Addr::Local(l), Some(i)) => {
                self.fb.get(l).get(i).op(I::I32Add);
                0
            }
            (Addr::Local(l), None) => {
                self.fb.get(l);
                0
            }
        }
    }

    /// Pushes the address itself.
    pub fn push_addr(&mut self, a: Addr) {
        match a {
            Addr::Const(c) => self.fb.u32c(c),
            Addr::Local(l) => self.fb.get(l),
        };
    }

    /// Loads the lane of dtype `d` at the address on the stack plus `off`.
    pub fn lane_load(&mut self, d: DType, off: u32) {
        self.fb.op(if is_f(d) {
            I::F32Load(m32(off))
        } else {
            I::I32Load(m32(off))
        });
    }

    /// Stores the lane of dtype `d` on the stack at the address below it
    /// plus `off`.
    pub fn lane_store(&mut self, d: DType, off: u32) {
        self.fb.op(if is_f(d) {
            I::F32Store(m32(off))
        } else {
            I::I32Store(m32(off))
        });
    }

    /// Pushes four lanes holding the scalar `x` of dtype `d`.
    pub fn splat(&mut self, x: Value, d: DType) {
        self.get(x);
        self.fb.op(if is_f(d) {
            I::F32x4Splat
        } else {
            I::I32x4Splat
        });
    }

    /// `memory.copy(dst, src, bytes)`.
    pub fn copy(&mut self, dst: Addr, src: Addr, bytes: u64) {
        if dst == src || bytes == 0 {
            return;
        }
        self.push_addr(dst);
        self.push_addr(src);
        self.fb.u32c(bytes as u32).memory_copy();
    }

    /// Calls `trap(site, kind, a, b)` with `a` and `b` pushed by `args`.
    pub fn trap(&mut self, site: u32, kind: super::abi::TrapKind, args: impl FnOnce(&mut Fb)) {
        self.fb.u32c(site).i32c(kind as i32);
        args(&mut self.fb);
        self.fb.op(I::Call(self.imp.trap)).op(I::Unreachable);
    }

    /// `for (l = 0; l < end; l += step) body` with a static end.
    pub fn count_loop(&mut self, l: u32, end: u64, step: u32, body: impl FnOnce(&mut Self)) {
        if end == 0 {
            return;
        }
        self.fb.i32c(0).set(l);
        self.fb.op(I::Loop(BlockType::Empty));
        body(self);
        self.fb
            .get(l)
            .u32c(step)
            .op(I::I32Add)
            .tee(l)
            .u32c(end as u32);
        self.fb.op(I::I32LtU).op(I::BrIf(0)).op(I::End);
    }

    /// Emits a block's ops (not its yields).
    pub fn block(&mut self, b: BlockId) -> Result<(), Error> {
        for &op in &self.f.blocks[b].ops {
            self.cur = Some(op);
            self.op(op)?;
        }
        Ok(())
    }

    fn op(&mut self, id: OpId) -> Result<(), Error> {
        if self.done[id.index()] {
            return Ok(());
        }
        let op = &self.f.ops[id];
        let r = op.results.first().copied();
        match &op.kind {
            OpKind::Const(_)
            | OpKind::Unary(..)
            | OpKind::Binary(..)
            | OpKind::Compare(..)
            | OpKind::Select { .. }
            | OpKind::Cast(_)
            | OpKind::Bitcast(_)
            | OpKind::Splat(_) => self.elementwise(id),
            OpKind::Broadcast(_) if r.is_some_and(|r| self.is_inline(r)) => Ok(()),
            OpKind::Broadcast(a) => self.broadcast(*a, res(r)?),
            OpKind::Reshape(a) => self.alias(*a, res(r)?),
            OpKind::Transpose(a, perm) => self.transpose(*a, perm, res(r)?),
            OpKind::Slice(a, window) => self.slice(*a, window, res(r)?),
            OpKind::Concat(..) if r.is_some_and(|r| self.is_inline(r)) => Ok(()),
            OpKind::Concat(vs, axis) => self.concat(vs, *axis, res(r)?),
            OpKind::Iota { dim } => self.iota(*dim, res(r)?),
            OpKind::Reduce {
                op, value, axis, ..
            } => self.reduce(*op, *value, *axis, res(r)?),
            OpKind::Roll { value, shift, axis } => self.roll(*value, *shift, *axis, res(r)?),
            OpKind::Dot {
                lhs,
                rhs,
                trans_lhs,
                trans_rhs,
            } => self.dot(*lhs, *rhs, *trans_lhs, *trans_rhs, res(r)?),
            OpKind::AssumeMultiple(x, n) => self.assume_multiple(*x, *n, res(r)?),
            OpKind::Load(v) => self.load(v, res(r)?),
            OpKind::Store(v, x, None) => self.store(v, *x),
            OpKind::Store(v, x, Some(m)) => self.masked_store(v, *x, *m),
            OpKind::DmaStart { src, dst, sem } => self.dma(src, dst, sem, true),
            OpKind::DmaWait { src, dst, sem } => self.dma(src, dst, sem, false),
            OpKind::DeviceId => self.mesh_op(abi::MeshOp::DeviceId, [None; 4], None, None, r),
            OpKind::RemoteDma {
                phase,
                src,
                dst,
                send_sem,
                recv_sem,
                device,
            } => {
                let op = match phase {
                    RemotePhase::Start => abi::MeshOp::RemoteStart,
                    RemotePhase::WaitSend => abi::MeshOp::WaitSend,
                    RemotePhase::WaitRecv => abi::MeshOp::WaitRecv,
                };
                let w = [Some(src), Some(dst), Some(send_sem), Some(recv_sem)];
                self.mesh_op(op, w, Some(*device), None, None)
            }
            OpKind::SemSignal { sem, n, device } => {
                let w = [None, None, Some(sem), None];
                self.mesh_op(abi::MeshOp::Signal, w, *device, Some(*n), None)
            }
            OpKind::SemWait { sem, n } => {
                let w = [None, None, Some(sem), None];
                self.mesh_op(abi::MeshOp::Wait, w, None, Some(*n), None)
            }
            OpKind::SemRead(sem) => {
                let w = [None, None, Some(sem), None];
                self.mesh_op(abi::MeshOp::Read, w, None, None, r)
            }
            OpKind::Print { fmt, args } => self.print(fmt, args),
            OpKind::If {
                cond,
                then_block,
                else_block,
            } => self.if_(id, *cond, *then_block, *else_block),
            OpKind::For {
                lo,
                hi,
                step,
                inits,
                body,
            } => self.for_(id, *lo, *hi, *step, inits, *body),
            OpKind::While { inits, cond, body } => self.while_(id, inits, *cond, *body),
        }
    }

    /// `multiple_of(x, n)`: the TPU takes the promise on trust, the CPU
    /// reference checks it, so that a wrong hint is found before it turns
    /// into a misaligned access on the TPU.
    fn assume_multiple(&mut self, x: Value, n: u64, r: Value) -> Result<(), Error> {
        let site = self.site("multiple_of");
        // `n` is positive and at most i32::MAX for any index that fits a
        // ref, so the remainder never traps in Wasm.
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        self.get(x).i32c(n).op(I::I32RemS);
        self.fb.op(I::If(BlockType::Empty));
        let l = self.local(x);
        self.trap(site, TrapKind::NotMultiple, |fb| {
            fb.get(l).i32c(n);
        });
        self.fb.op(I::End);
        self.alias(x, r)
    }

    /// A value sharing its operand's buffer (or local).
    pub fn alias(&mut self, a: Value, r: Value) -> Result<(), Error> {
        if self.f.ty(r).is_scalar() {
            let l = self.local(a);
            self.bind(r, l);
        } else if self.plan.group(a) == self.plan.group(r) {
            if let Some(GroupKind::View { .. }) = self.group_kind(a) {
                let at = self.addr(a);
                self.set_view(r, at);
            }
        } else {
            let bytes = elems(self.f, r) * 4;
            let (d, s) = (self.addr(r), self.addr(a));
            self.copy(d, s, bytes);
        }
        Ok(())
    }

    /// Copies `src` into the storage of `dst` (a carried value or a result).
    fn move_value(&mut self, dst: Value, src: Value) {
        if self.f.ty(dst).is_scalar() {
            let l = self.local(dst);
            self.get(src);
            self.fb.set(l);
        } else if self.plan.group(dst) != self.plan.group(src) {
            let bytes = elems(self.f, dst) * 4;
            let (d, s) = (self.addr(dst), self.addr(src));
            self.copy(d, s, bytes);
        }
    }

    /// Assigns yields to carried storage `dst`: scalars all at once through
    /// the stack, tiles through staging buffers where the plan asks.
    fn assign(&mut self, loop_op: OpId, dst: &[Value], ys: &[Value]) {
        let mut staged = Vec::new();
        for (j, (&d, &y)) in dst.iter().zip(ys).enumerate() {
            if self.f.ty(d).is_scalar() {
                continue;
            }
            match self.plan.staging.get(&(loop_op, j)) {
                Some(&g) => {
                    let at = self.group_addr(g);
                    let src = self.addr(y);
                    self.copy(at, src, elems(self.f, d) * 4);
                    staged.push((d, at));
                }
                None => self.move_value(d, y),
            }
        }
        for (d, at) in staged {
            let dst_at = self.addr(d);
            self.copy(dst_at, at, elems(self.f, d) * 4);
        }
        let scalars: Vec<(Value, Value)> = dst
            .iter()
            .zip(ys)
            .filter(|(d, _)| self.f.ty(**d).is_scalar())
            .map(|(d, y)| (*d, *y))
            .collect();
        for &(_, y) in &scalars {
            self.get(y);
        }
        for &(d, _) in scalars.iter().rev() {
            let l = self.local(d);
            self.fb.set(l);
        }
    }

    fn if_(&mut self, id: OpId, cond: Value, t: BlockId, e: BlockId) -> Result<(), Error> {
        let results = self.f.ops[id].results.clone();
        for &r in &results {
            if self.f.ty(r).is_scalar() {
                self.local(r);
            }
        }
        self.get(cond);
        self.fb.op(I::If(BlockType::Empty));
        for (i, b) in [t, e].into_iter().enumerate() {
            if i == 1 {
                self.fb.op(I::Else);
            }
            self.block(b)?;
            let ys = self.f.blocks[b].yields.clone();
            for (&r, &y) in results.iter().zip(&ys) {
                self.move_value(r, y);
            }
        }
        self.fb.op(I::End);
        Ok(())
    }

    /// Shares the storage of carried values: results, and the params of
    /// each given block (offset by `skip` leading params).
    fn bind_carried(&mut self, results: &[Value], blocks: &[(BlockId, usize)]) {
        for (j, &r) in results.iter().enumerate() {
            if !self.f.ty(r).is_scalar() {
                continue;
            }
            let l = self.local(r);
            for &(b, skip) in blocks {
                if let Some(&p) = self.f.blocks[b].params.get(j + skip) {
                    self.bind(p, l);
                }
            }
        }
    }

    fn enter_loop(&mut self, what: &str) {
        let site = self.site(what) as i32;
        self.fb.i32c(site).op(I::GlobalSet(self.loop_global));
        self.loops.push(site);
    }

    fn leave_loop(&mut self) {
        self.loops.pop();
        let outer = self.loops.last().copied().unwrap_or(-1);
        self.fb.i32c(outer).op(I::GlobalSet(self.loop_global));
    }

    fn for_(
        &mut self,
        id: OpId,
        lo: Value,
        hi: Value,
        step: u64,
        inits: &[Value],
        body: BlockId,
    ) -> Result<(), Error> {
        let results = self.f.ops[id].results.clone();
        self.bind_carried(&results, &[(body, 1)]);
        for (&r, &i) in results.iter().zip(inits) {
            self.move_value(r, i);
        }
        let iv = self.f.blocks[body].params[0];
        let ivl = self.local(iv);
        let (n, c) = (self.fb.local(ValType::I64), self.fb.local(ValType::I64));
        let lol = self.local(lo);
        // Trip count in i64, so that no bound or step overflows.
        self.get(hi);
        self.fb
            .op(I::I64ExtendI32S)
            .get(lol)
            .op(I::I64ExtendI32S)
            .op(I::I64Sub);
        self.fb.op(I::I64Const(step as i64 - 1)).op(I::I64Add);
        self.fb.op(I::I64Const(step as i64)).op(I::I64DivS).set(n);
        self.fb.op(I::I64Const(0)).set(c);
        self.enter_loop("for loop");
        self.fb
            .op(I::Block(BlockType::Empty))
            .op(I::Loop(BlockType::Empty));
        self.fb.get(c).get(n).op(I::I64GeS).op(I::BrIf(1));
        self.fb.get(lol).get(c).op(I::I32WrapI64);
        self.fb
            .u32c(step as u32)
            .op(I::I32Mul)
            .op(I::I32Add)
            .set(ivl);
        self.block(body)?;
        self.cur = Some(id);
        let ys = self.f.blocks[body].yields.clone();
        self.assign(id, &results, &ys);
        self.fb.get(c).op(I::I64Const(1)).op(I::I64Add).set(c);
        self.fb.op(I::Br(0)).op(I::End).op(I::End);
        self.leave_loop();
        Ok(())
    }

    fn while_(
        &mut self,
        id: OpId,
        inits: &[Value],
        cond: BlockId,
        body: BlockId,
    ) -> Result<(), Error> {
        let results = self.f.ops[id].results.clone();
        self.bind_carried(&results, &[(cond, 0), (body, 0)]);
        for (&r, &i) in results.iter().zip(inits) {
            self.move_value(r, i);
        }
        self.enter_loop("while loop");
        self.fb
            .op(I::Block(BlockType::Empty))
            .op(I::Loop(BlockType::Empty));
        self.block(cond)?;
        self.cur = Some(id);
        let c = self.f.blocks[cond]
            .yields
            .first()
            .copied()
            .ok_or_else(|| self.unsupported("a while condition that yields nothing"))?;
        self.get(c);
        self.fb.op(I::I32Eqz).op(I::BrIf(1));
        self.block(body)?;
        self.cur = Some(id);
        let ys = self.f.blocks[body].yields.clone();
        self.assign(id, &results, &ys);
        self.fb.op(I::Br(0)).op(I::End).op(I::End);
        self.leave_loop();
        Ok(())
    }
}

fn res(r: Option<Value>) -> Result<Value, Error> {
    r.ok_or_else(|| Error::Internal("op without its result".into()))
}

pub(crate) fn elems(f: &Func, v: Value) -> u64 {
    f.ty(v).elements().unwrap_or(0)
}

pub(crate) fn shape(f: &Func, v: Value) -> Vec<u64> {
    f.ty(v).shape().iter().map(|d| d.get()).collect()
}
