//! Ref access and host calls: loads and stores of windows (with bounds
//! checks on dynamic starts and, optionally, the shadow "written" maps),
//! DMA descriptors, and the MXU `dot` call on tiles in place.

use super::{elems, f8, is_f, shape, Addr, Em};
use crate::wasm::abi::{self, DmaSite, DotKind, DotSite, TrapKind, WinStart};
use crate::wasm::fb::{m128, mem, Fb};
use crate::wasm::math::Helper;
use crate::wasm::plan::GroupKind;
use crate::wasm::Error;
use pk_lang::ir::{
    BinaryOp, DType, Kernel, Literal, OpId, OpKind, RefId, RefOrigin, RefView, Role, Slice, Space,
    Start, Value, ValueDef,
};
use wasm_encoder::{BlockType, Instruction as I, ValType};

/// A window of a ref in linear memory.
pub(super) struct Win {
    pub dtype: DType,
    pub eb: u32,
    pub base: Addr,
    /// Byte offset of the ref's buffer and of its shadow map.
    pub ref_offset: u32,
    pub shadow: Option<u32>,
    /// Range dimensions of size > 1: (size, stride in elements).
    pub dims: Vec<(u64, u64)>,
}

/// One contiguous (or single-strided) run of a window.
pub(super) struct Run {
    /// Local holding the byte address of the run's first element.
    pub addr: u32,
    /// Local holding the window-order index of the run's first element.
    pub elem: u32,
    pub len: u64,
    /// Element stride inside the run (1 when contiguous).
    pub stride: u64,
}

fn strides(shape: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Whether a load of this window can be read in place (see `plan`).
pub(crate) fn view_kind(k: &Kernel, v: &RefView, all_dot: bool) -> Option<GroupKind> {
    let r = k.refs.get(v.target)?;
    // A view between widths has no row-major window to read in place.
    if k.is_packed_view(v.target) {
        return None;
    }
    // Tiles are 32-bit lanes, so only 32-bit refs can stand in for one;
    // the MXU also reads bf16 refs as they are stored.
    let lanes = matches!(r.ty.dtype, DType::F32 | DType::I32 | DType::Bool);
    if !matches!(r.ty.space, Space::Vmem | Space::Smem)
        || !(lanes || all_dot && r.ty.dtype == DType::BF16)
    {
        return None;
    }
    let shape: Vec<u64> = r.ty.shape.iter().map(|d| d.get()).collect();
    let st = strides(&shape);
    let ranges: Vec<(u64, u64)> = v
        .index
        .iter()
        .zip(&st)
        .filter_map(|(s, &stride)| match s {
            Slice::Range { size, .. } => Some((*size, stride)),
            Slice::Strided {
                size, stride: s, ..
            } => Some((*size, stride * s)),
            Slice::Index(_) => None,
        })
        .collect();
    let mut expected = 1u64;
    let mut contiguous = true;
    for &(size, stride) in ranges.iter().rev() {
        if size > 1 && stride != expected {
            contiguous = false;
        }
        expected *= size;
    }
    if contiguous {
        return Some(GroupKind::View { ld: None });
    }
    match ranges.as_slice() {
        [(_, s0), (n1, s1)] if all_dot && (*s1 == 1 || *n1 == 1) && *s0 >= *n1 => {
            Some(GroupKind::View {
                ld: Some(*s0 as u32),
            })
        }
        _ => None,
    }
}

/// Loads one element of storage dtype `d` (address on the stack) as a lane.
pub(super) fn load_elem(fb: &mut Fb, d: DType, off: u32) {
    match d {
        DType::F32 => fb.op(I::F32Load(mem(off, 2))),
        DType::BF16 => fb
            .op(I::I32Load16U(mem(off, 1)))
            .i32c(16)
            .op(I::I32Shl)
            .op(I::F32ReinterpretI32),
        DType::I16 => fb.op(I::I32Load16S(mem(off, 1))),
        DType::I8 => fb.op(I::I32Load8S(mem(off, 0))),
        DType::U8 => fb.op(I::I32Load8U(mem(off, 0))),
        DType::F8E4M3FN | DType::F8E5M2 => {
            fb.op(I::I32Load8U(mem(off, 0)));
            f8::decode_s(fb, d);
            fb
        }
        _ => fb.op(I::I32Load(mem(off, 2))),
    };
}

/// Stores a lane (address and value on the stack) as storage dtype `d`.
/// bf16 lanes are already rounded, so the store keeps the high half.
pub(super) fn store_elem(fb: &mut Fb, d: DType, off: u32) {
    match d {
        DType::F32 => fb.op(I::F32Store(mem(off, 2))),
        DType::BF16 => fb
            .op(I::I32ReinterpretF32)
            .i32c(16)
            .op(I::I32ShrU)
            .op(I::I32Store16(mem(off, 1))),
        DType::I16 => fb.op(I::I32Store16(mem(off, 1))),
        DType::I8 | DType::U8 => fb.op(I::I32Store8(mem(off, 0))),
        DType::F8E4M3FN | DType::F8E5M2 => {
            f8::encode_s(fb, d);
            fb.op(I::I32Store8(mem(off, 0)))
        }
        _ => fb.op(I::I32Store(mem(off, 2))),
    };
}

/// Loads four consecutive elements as four lanes.
fn load_vec(fb: &mut Fb, d: DType, off: u32) {
    match d {
        DType::BF16 => {
            fb.op(I::V128Load16x4U(mem(off, 1)))
                .i32c(16)
                .op(I::I32x4Shl);
        }
        DType::I16 => {
            fb.op(I::V128Load16x4S(mem(off, 1)));
        }
        DType::I8 => {
            fb.op(I::V128Load32Zero(mem(off, 0)));
            fb.op(I::I16x8ExtendLowI8x16S).op(I::I32x4ExtendLowI16x8S);
        }
        DType::U8 => {
            fb.op(I::V128Load32Zero(mem(off, 0)));
            fb.op(I::I16x8ExtendLowI8x16U).op(I::I32x4ExtendLowI16x8U);
        }
        DType::F8E4M3FN | DType::F8E5M2 => {
            fb.op(I::V128Load32Zero(mem(off, 0)));
            fb.op(I::I16x8ExtendLowI8x16U).op(I::I32x4ExtendLowI16x8U);
            f8::decode_v(fb, d);
        }
        _ => {
            fb.op(I::V128Load(m128(off)));
        }
    }
}

/// Stores four lanes as four consecutive elements.
fn store_vec(fb: &mut Fb, d: DType, off: u32) {
    let t = fb.local(ValType::V128);
    match d {
        DType::BF16 => {
            fb.i32c(16)
                .op(I::I32x4ShrU)
                .tee(t)
                .get(t)
                .op(I::I16x8NarrowI32x4U);
            fb.op(I::V128Store64Lane {
                memarg: mem(off, 1),
                lane: 0,
            });
        }
        DType::I16 => {
            fb.tee(t).get(t).op(I::I16x8NarrowI32x4S);
            fb.op(I::V128Store64Lane {
                memarg: mem(off, 1),
                lane: 0,
            });
        }
        DType::I8 | DType::U8 | DType::F8E4M3FN | DType::F8E5M2 => {
            if matches!(d, DType::F8E4M3FN | DType::F8E5M2) {
                f8::encode_v(fb, d);
            }
            let (n16, n8) = if d == DType::I8 {
                (I::I16x8NarrowI32x4S, I::I8x16NarrowI16x8S)
            } else {
                (I::I16x8NarrowI32x4U, I::I8x16NarrowI16x8U)
            };
            fb.tee(t).get(t).op(n16).tee(t).get(t).op(n8);
            fb.op(I::V128Store32Lane {
                memarg: mem(off, 0),
                lane: 0,
            });
        }
        _ => {
            fb.op(I::V128Store(m128(off)));
        }
    }
}

pub(super) fn log2(eb: u32) -> i32 {
    eb.trailing_zeros() as i32
}

impl Em<'_, '_> {
    /// Resolves a window: bounds-checks dynamic starts and computes the
    /// address of its first element.
    pub(super) fn window(&mut self, v: &RefView, what: &str) -> Result<Win, Error> {
        let slot = &self.slots[v.target.index()];
        let r = &self.k.refs[v.target];
        let Some(ref_offset) = slot.offset else {
            return Err(self.unsupported(format!("direct access to the ANY ref `{}`", r.name)));
        };
        let dtype = r.ty.dtype;
        let eb = dtype.bytes() as u32;
        let shape: Vec<u64> = slot.shape.clone();
        let st = strides(&shape);
        let name = r.name.clone();
        let mut fixed = u64::from(ref_offset);
        let mut dynamic = Vec::new();
        let mut dims = Vec::new();
        for (d, s) in v.index.iter().enumerate() {
            let (start, size) = match s {
                Slice::Index(st) => (*st, 1),
                Slice::Range { start, size } => {
                    if *size > 1 {
                        dims.push((*size, st[d]));
                    }
                    (*start, *size)
                }
                // Bounds are checked over the positions the window spans.
                Slice::Strided {
                    start,
                    size,
                    stride,
                } => {
                    if *size > 1 {
                        dims.push((*size, st[d] * stride));
                    }
                    (*start, s.extent())
                }
            };
            match start {
                Start::Const(c) => fixed += c * st[d] * u64::from(eb),
                Start::Dyn(x) => dynamic.push((d, x, size)),
            }
        }
        let base = if dynamic.is_empty() {
            Addr::Const(fixed as u32)
        } else {
            let site = self.site(format!("{what} of `{name}`"));
            let a = self.fb.i32l();
            self.fb.u32c(fixed as u32).set(a);
            for (d, x, size) in dynamic {
                let xl = self.local(x);
                let limit = shape[d].saturating_sub(size);
                self.fb.get(xl).u32c(limit as u32).op(I::I32GtU);
                self.fb.op(I::If(BlockType::Empty));
                self.trap(site, TrapKind::OutOfBounds, |fb| {
                    fb.i32c(d as i32).get(xl);
                });
                self.fb.op(I::End);
                self.fb.get(a).get(xl).u32c((st[d] * u64::from(eb)) as u32);
                self.fb.op(I::I32Mul).op(I::I32Add).set(a);
            }
            Addr::Local(a)
        };
        Ok(Win {
            dtype,
            eb,
            base,
            ref_offset,
            shadow: slot.shadow,
            dims,
        })
    }

    /// Emits `body` once per run of the window, inside loops over the
    /// window's outer dimensions.
    pub(super) fn walk(&mut self, w: &Win, body: impl FnOnce(&mut Self, &Run)) {
        let dims = &w.dims;
        let (len, stride, nouter) = match dims.last() {
            None => (1, 1, 0),
            Some(&(s, 1)) => {
                let mut run = s;
                let mut k = dims.len() - 1;
                while k > 0 && dims[k - 1].1 == run {
                    run *= dims[k - 1].0;
                    k -= 1;
                }
                (run, 1, k)
            }
            Some(&(s, st)) => (s, st, dims.len() - 1),
        };
        let (addr, elem) = (self.fb.i32l(), self.fb.i32l());
        self.push_addr(w.base);
        self.fb.set(addr).i32c(0).set(elem);
        let run = Run {
            addr,
            elem,
            len,
            stride,
        };
        let outer: Vec<(u64, u64)> = dims[..nouter].to_vec();
        self.nest(&outer, w.eb, &run, body);
    }

    fn nest(
        &mut self,
        outer: &[(u64, u64)],
        eb: u32,
        run: &Run,
        body: impl FnOnce(&mut Self, &Run),
    ) {
        let Some((&(size, stride), rest)) = outer.split_first() else {
            body(self, run);
            self.fb.add_to(run.elem, run.len as i32);
            return;
        };
        let (c, a0) = (self.fb.i32l(), self.fb.i32l());
        self.fb.get(run.addr).set(a0);
        self.count_loop(c, size, 1, |em| {
            em.fb.get(a0).get(c).u32c((stride * u64::from(eb)) as u32);
            em.fb.op(I::I32Mul).op(I::I32Add).set(run.addr);
            em.nest(rest, eb, run, body);
        });
    }

    /// Copies a run between the window and a contiguous tile of lanes.
    fn copy_run(&mut self, w: &Win, run: &Run, tile: Addr, into_tile: bool) {
        let d = self.fb.i32l();
        self.push_addr(tile);
        self.fb
            .get(run.elem)
            .i32c(2)
            .op(I::I32Shl)
            .op(I::I32Add)
            .set(d);
        let (dt, eb) = (w.dtype, w.eb);
        if run.stride == 1 && eb == 4 {
            let (dst, src) = if into_tile {
                (d, run.addr)
            } else {
                (run.addr, d)
            };
            self.fb.copy_lanes(dst, src, run.len);
            return;
        }
        let j = self.fb.i32l();
        if run.stride == 1 {
            let nvec = run.len / 4;
            let shift = 2 - log2(eb);
            self.count_loop(j, nvec * 16, 16, |em| {
                let fb = &mut em.fb;
                if into_tile {
                    fb.get(d).get(j).op(I::I32Add);
                    fb.get(run.addr)
                        .get(j)
                        .i32c(shift)
                        .op(I::I32ShrU)
                        .op(I::I32Add);
                    load_vec(fb, dt, 0);
                    fb.op(I::V128Store(m128(0)));
                } else {
                    fb.get(run.addr)
                        .get(j)
                        .i32c(shift)
                        .op(I::I32ShrU)
                        .op(I::I32Add);
                    fb.get(d).get(j).op(I::I32Add).op(I::V128Load(m128(0)));
                    store_vec(fb, dt, 0);
                }
            });
            for t in nvec * 4..run.len {
                let (to, so) = ((t * 4) as u32, (t * u64::from(eb)) as u32);
                self.scalar_move(dt, d, to, run.addr, so, into_tile);
            }
        } else {
            let step = (run.stride * u64::from(eb)) as u32;
            let s = self.fb.i32l();
            self.fb.get(run.addr).set(s);
            self.count_loop(j, run.len * 4, 4, |em| {
                let fb = &mut em.fb;
                if into_tile {
                    fb.get(d).get(j).op(I::I32Add).get(s);
                    load_elem(fb, dt, 0);
                    fb.op(if is_f(dt) {
                        I::F32Store(mem(0, 2))
                    } else {
                        I::I32Store(mem(0, 2))
                    });
                } else {
                    fb.get(s).get(d).get(j).op(I::I32Add);
                    fb.op(if is_f(dt) {
                        I::F32Load(mem(0, 2))
                    } else {
                        I::I32Load(mem(0, 2))
                    });
                    store_elem(fb, dt, 0);
                }
                fb.add_to(s, step as i32);
            });
        }
    }

    /// Moves one element between a tile lane (`tile + to`) and storage
    /// (`addr + so`).
    fn scalar_move(&mut self, dt: DType, tile: u32, to: u32, addr: u32, so: u32, into_tile: bool) {
        let fb = &mut self.fb;
        if into_tile {
            fb.get(tile).get(addr);
            load_elem(fb, dt, so);
            fb.op(if is_f(dt) {
                I::F32Store(mem(to, 2))
            } else {
                I::I32Store(mem(to, 2))
            });
        } else {
            fb.get(addr).get(tile);
            fb.op(if is_f(dt) {
                I::F32Load(mem(to, 2))
            } else {
                I::I32Load(mem(to, 2))
            });
            store_elem(fb, dt, so);
        }
    }

    /// Pushes the shadow address of a run's first element.
    fn shadow_addr(&mut self, w: &Win, run: &Run, shadow: u32) {
        self.fb.get(run.addr).u32c(w.ref_offset).op(I::I32Sub);
        self.fb
            .i32c(log2(w.eb))
            .op(I::I32ShrU)
            .u32c(shadow)
            .op(I::I32Add);
    }

    /// Traps if a run holds an element never written (`check_uninit`).
    fn check_run(&mut self, w: &Win, run: &Run, shadow: u32, site: u32) {
        let check = self.h.func(Helper::CheckInit);
        let r = self.fb.i32l();
        if run.stride == 1 {
            self.shadow_addr(w, run, shadow);
            self.fb.u32c(run.len as u32).op(I::Call(check)).tee(r);
            self.fb.i32c(0).op(I::I32GeS);
            self.fb.op(I::If(BlockType::Empty));
            self.trap(site, TrapKind::Uninitialized, |fb| {
                fb.get(run.elem).get(r).op(I::I32Add).i32c(0);
            });
            self.fb.op(I::End);
            return;
        }
        let (j, s) = (self.fb.i32l(), self.fb.i32l());
        self.shadow_addr(w, run, shadow);
        self.fb.set(s);
        self.count_loop(j, run.len, 1, |em| {
            em.fb.get(s).op(I::I32Load8U(mem(0, 0))).op(I::I32Eqz);
            em.fb.op(I::If(BlockType::Empty));
            em.trap(site, TrapKind::Uninitialized, |fb| {
                fb.get(run.elem).get(j).op(I::I32Add).i32c(0);
            });
            em.fb.op(I::End);
            em.fb.add_to(s, run.stride as i32);
        });
    }

    /// Marks a run as written.
    fn mark_run(&mut self, w: &Win, run: &Run, shadow: u32) {
        if run.stride == 1 {
            self.shadow_addr(w, run, shadow);
            self.fb.i32c(1).u32c(run.len as u32).op(I::MemoryFill(0));
            return;
        }
        let (j, s) = (self.fb.i32l(), self.fb.i32l());
        self.shadow_addr(w, run, shadow);
        self.fb.set(s);
        self.count_loop(j, run.len, 1, |em| {
            em.fb.get(s).i32c(1).op(I::I32Store8(mem(0, 0)));
            em.fb.add_to(s, run.stride as i32);
        });
    }

    pub(super) fn load(&mut self, v: &RefView, r: Value) -> Result<(), Error> {
        if self.k.is_packed_view(v.target) {
            return self.packed(v, r, true);
        }
        let w = self.window(v, "load")?;
        if self.check_uninit {
            if let Some(sh) = w.shadow {
                let name = self.k.refs[v.target].name.clone();
                let site = self.site(format!("load of `{name}`"));
                self.walk(&w, |em, run| em.check_run(&w, run, sh, site));
            }
        }
        if self.f.ty(r).is_scalar() {
            let l = self.local(r);
            let off = self.base(w.base, None);
            load_elem(&mut self.fb, w.dtype, off);
            self.fb.set(l);
        } else if let Some(GroupKind::View { .. }) = self.group_kind(r) {
            self.set_view(r, w.base);
        } else {
            let tile = self.addr(r);
            self.walk(&w, |em, run| em.copy_run(&w, run, tile, true));
        }
        Ok(())
    }

    pub(super) fn store(&mut self, v: &RefView, x: Value) -> Result<(), Error> {
        if self.k.is_packed_view(v.target) {
            return self.packed(v, x, false);
        }
        if let Some(bits) = self.host_fill(v, x) {
            self.fb.u32c(v.target.index() as u32).u32c(bits);
            self.fb.op(I::Call(self.imp.fill));
            if let Some(op) = self.cur {
                self.host_filled[op.index()] = true;
            }
            return Ok(());
        }
        let w = self.window(v, "store")?;
        if self.f.ty(x).is_scalar() {
            let off = self.base(w.base, None);
            self.get(x);
            store_elem(&mut self.fb, w.dtype, off);
        } else if self.is_inline(x) {
            // A contiguous 32-bit window (see `fuse`): compute in place.
            self.fused_store(w.base, x);
        } else {
            let tile = self.addr(x);
            self.walk(&w, |em, run| em.copy_run(&w, run, tile, false));
        }
        if self.check_uninit {
            if let Some(sh) = w.shadow {
                self.walk(&w, |em, run| em.mark_run(&w, run, sh));
            }
        }
        Ok(())
    }

    /// For `o[..] = c` with `c` a float constant and `o` the whole block of
    /// an f32 output that is no view and has none: the bits of `c`, for
    /// the host's `fill`, which writes the block wherever the host keeps
    /// it (see `RefSlot::mxu_out`). Not under `check_uninit`, whose
    /// written-maps the store keeps.
    fn host_fill(&self, v: &RefView, x: Value) -> Option<u32> {
        if self.check_uninit || self.whole_vmem(v).is_none() || !self.out_block(v.target) {
            return None;
        }
        let ValueDef::Result(op, _) = self.f.values[x].def else {
            return None;
        };
        let c = match &self.f.ops[op].kind {
            OpKind::Splat(c) => *c,
            OpKind::Const(_) => x,
            _ => return None,
        };
        let ValueDef::Result(op, _) = self.f.values[c].def else {
            return None;
        };
        match self.f.ops[op].kind {
            OpKind::Const(Literal::Float(f)) => Some((f as f32).to_bits()),
            _ => None,
        }
    }

    /// Whether ref `r` is the block of a blocked f32 output that aliases
    /// no input, is no view and has none: the refs whose blocks the host
    /// may keep in the output array.
    pub(crate) fn out_block(&self, r: RefId) -> bool {
        let k = self.k;
        let viewed = k.refs.iter().any(|(id, d)| {
            id == r && matches!(d.origin, RefOrigin::View(_)) || id != r && k.root(id) == r
        });
        !viewed
            && k.refs[r].ty.dtype == DType::F32
            && k.refs[r].ty.space == Space::Vmem
            && k.operands.iter().any(|o| {
                o.ref_id == r && o.role == Role::Output && o.block.is_some() && o.aliases.is_none()
            })
    }

    /// A DMA descriptor window: constant starts, or argument slots the
    /// module fills before the call.
    fn dma_window(&mut self, v: &RefView, slot: &mut u32) -> abi::Window {
        let mut starts = Vec::new();
        let mut sizes = Vec::new();
        for s in &v.index {
            // The checker gives DMAs unit-stride windows only.
            let (st, size) = match s {
                Slice::Index(st) => (*st, 1),
                Slice::Range { start, size } | Slice::Strided { start, size, .. } => {
                    (*start, *size)
                }
            };
            sizes.push(size);
            starts.push(match st {
                Start::Const(c) => WinStart::Const(c),
                Start::Dyn(x) => {
                    let at = self.args_offset + 4 * *slot;
                    self.fb.u32c(at);
                    self.get(x);
                    self.fb.op(I::I32Store(mem(0, 2)));
                    *slot += 1;
                    WinStart::Arg(*slot - 1)
                }
            });
        }
        abi::Window {
            ref_index: v.target.index(),
            starts,
            sizes,
        }
    }

    pub(super) fn dma(
        &mut self,
        src: &RefView,
        dst: &RefView,
        sem: &RefView,
        start: bool,
    ) -> Result<(), Error> {
        if let Some(v) = [src, dst]
            .into_iter()
            .find(|v| self.k.is_packed_view(v.target))
        {
            let name = &self.k.refs[v.target].name;
            return Err(self.unsupported(format!(
                "a DMA through `{name}`, a view between widths (copy the ref it views)"
            )));
        }
        let (sn, dn) = (
            self.k.refs[src.target].name.clone(),
            self.k.refs[dst.target].name.clone(),
        );
        let verb = if start {
            "start of the DMA"
        } else {
            "wait for the DMA"
        };
        let site = self.site(format!("{verb} `{sn}` -> `{dn}`"));
        let mut slot = 0;
        let desc = DmaSite {
            site,
            src: self.dma_window(src, &mut slot),
            dst: self.dma_window(dst, &mut slot),
            sem: self.dma_window(sem, &mut slot),
        };
        self.sites.arg_slots = self.sites.arg_slots.max(slot);
        self.sites.dmas.push(desc);
        let f = if start {
            self.imp.dma_start
        } else {
            self.imp.dma_wait
        };
        self.fb.u32c(site).op(I::Call(f));
        Ok(())
    }

    /// A communicating op: a `mesh(site, device, n)` call, its result
    /// (a device id or a semaphore's value) in `r` when it has one.
    /// `print`: the scalar arguments into the argument area, then the
    /// host prints the format with them, or with the tile at its address.
    pub(super) fn print(&mut self, fmt: &str, args: &[Value]) -> Result<(), Error> {
        let site = self.site("`print`");
        let mut tile = None;
        let mut slot = 0;
        for &v in args {
            if self.f.ty(v).is_scalar() {
                let at = self.args_offset + 4 * slot;
                self.fb.u32c(at);
                self.get(v);
                self.fb.op(I::I32Store(mem(0, 2)));
                slot += 1;
            } else {
                tile = Some(v);
            }
        }
        self.sites.arg_slots = self.sites.arg_slots.max(slot);
        self.sites.prints.push(abi::PrintSite {
            site,
            fmt: fmt.to_string(),
            scalars: slot,
            tile: tile.map(|v| {
                let t = self.f.ty(v);
                (
                    t.dtype().to_string(),
                    t.shape().iter().map(|d| d.get()).collect(),
                )
            }),
        });
        self.fb.u32c(site);
        match tile {
            Some(v) => {
                let a = self.addr(v);
                self.push_addr(a);
            }
            None => {
                self.fb.i32c(0);
            }
        }
        self.fb.op(I::Call(self.imp.print));
        Ok(())
    }

    pub(super) fn mesh_op(
        &mut self,
        op: abi::MeshOp,
        windows: [Option<&RefView>; 4],
        device: Option<Value>,
        n: Option<Value>,
        r: Option<Value>,
    ) -> Result<(), Error> {
        use abi::MeshOp as M;
        let name = |em: &Self, v: Option<&RefView>| {
            v.map(|v| em.k.refs[v.target].name.clone())
                .unwrap_or_default()
        };
        let what = match op {
            M::DeviceId => "`device_id`".to_string(),
            M::RemoteStart => format!(
                "start of the remote copy `{}` -> `{}`",
                name(self, windows[0]),
                name(self, windows[1])
            ),
            M::WaitSend => format!(
                "`remote_wait_send` of `{}` -> `{}`",
                name(self, windows[0]),
                name(self, windows[1])
            ),
            M::WaitRecv => format!(
                "`remote_wait_recv` of `{}` -> `{}`",
                name(self, windows[0]),
                name(self, windows[1])
            ),
            M::Signal => format!("`sem_signal` of `{}`", name(self, windows[2])),
            M::Wait => format!("`sem_wait` of `{}`", name(self, windows[2])),
            M::Read => format!("`sem_read` of `{}`", name(self, windows[2])),
        };
        let site = self.site(what);
        let mut slot = 0;
        let mut win = |em: &mut Self, v: Option<&RefView>| v.map(|v| em.dma_window(v, &mut slot));
        let src = win(self, windows[0]);
        let dst = win(self, windows[1]);
        let sem = win(self, windows[2]);
        let recv_sem = win(self, windows[3]);
        let barrier = windows[2].is_some_and(|v| self.k.refs[v.target].ty.space == Space::Barrier);
        self.sites.arg_slots = self.sites.arg_slots.max(slot);
        self.sites.meshes.push(abi::MeshSite {
            site,
            op,
            src,
            dst,
            sem,
            recv_sem,
            barrier,
        });
        self.fb.u32c(site);
        match device {
            Some(d) => {
                self.get(d);
            }
            None => {
                self.fb.i32c(-1);
            }
        }
        match n {
            Some(n) => {
                self.get(n);
            }
            None => {
                self.fb.i32c(0);
            }
        }
        self.fb.op(I::Call(self.imp.mesh));
        match r {
            Some(r) => {
                let l = self.local(r);
                self.fb.set(l);
            }
            None => {
                self.fb.op(I::Drop);
            }
        }
        Ok(())
    }

    pub(super) fn dot(
        &mut self,
        lhs: Value,
        rhs: Value,
        tl: bool,
        tr: bool,
        r: Value,
    ) -> Result<(), Error> {
        let (ld, rd, od) = (
            self.f.ty(lhs).dtype(),
            self.f.ty(rhs).dtype(),
            self.f.ty(r).dtype(),
        );
        let kind = match (is_f(ld), is_f(rd), od) {
            (true, true, DType::F32) => DotKind::F32,
            (false, false, DType::I32) => DotKind::I32,
            _ => {
                return Err(self.unsupported(format!("dot of {ld} and {rd} into {od}")));
            }
        };
        let (ls, rs, os) = (shape(self.f, lhs), shape(self.f, rhs), shape(self.f, r));
        let ld_of = |em: &Self, v: Value, cols: u64| match em.group_kind(v) {
            Some(GroupKind::View { ld: Some(ld) }) => *ld,
            _ => cols as u32,
        };
        let kdim = if tl { ls[0] } else { ls[1] };
        let site = self.site("dot");
        let desc = DotSite {
            site,
            m: os[0] as u32,
            n: os[1] as u32,
            k: kdim as u32,
            trans_lhs: tl,
            trans_rhs: tr,
            lhs_ld: ld_of(self, lhs, ls[1]),
            rhs_ld: ld_of(self, rhs, rs[1]),
            lhs_dims: (ls[0] as u32, ls[1] as u32),
            rhs_dims: (rs[0] as u32, rs[1] as u32),
            kind,
            lhs_dtype: ld.name().into(),
            rhs_dtype: rd.name().into(),
            out_dtype: od.name().into(),
            accumulate: false,
            lhs_bf16: self.bf16_view(lhs),
            rhs_bf16: self.bf16_view(rhs),
            lhs_ref: self.stable_view(lhs),
            rhs_ref: self.stable_view(rhs),
            out_ref: None,
        };
        debug_assert_eq!(elems(self.f, r), os[0] * os[1]);
        let (into, accumulate) = match self.accumulate_into(lhs, rhs, r) {
            Some((ops, base)) => (Some((ops.to_vec(), base)), true),
            None => (self.store_into(lhs, rhs, r), false),
        };
        // The ref the GEMM writes in place: the target of the fused store.
        let out_ref = into
            .as_ref()
            .and_then(|(ops, _)| match &self.f.ops[*ops.last()?].kind {
                OpKind::Store(w, _, _) => Some(w.target.index() as u32),
                _ => None,
            });
        let desc = DotSite {
            accumulate,
            out_ref,
            ..desc
        };
        self.sites.dots.push(desc);
        self.fb.u32c(site);
        for v in [lhs, rhs] {
            let a = self.addr(v);
            self.push_addr(a);
        }
        match into {
            Some((ops, base)) => {
                self.push_addr(Addr::Const(base));
                for op in ops {
                    self.done[op.index()] = true;
                }
            }
            None => {
                let a = self.addr(r);
                self.push_addr(a);
            }
        }
        self.fb.op(I::Call(self.imp.dot));
        Ok(())
    }

    /// For `acc[..] += dot(a, b)` on a whole VMEM ref `acc` (a load of
    /// `acc`, the dot, their add and its store back, with nothing else
    /// reading the load, the product or the sum, and nothing else writing
    /// `acc` in between): the load, add and store ops and `acc`'s address, so that
    /// the GEMM adds the product into `acc` in place instead of writing a
    /// temporary that a second pass adds. Not under `check_uninit`, whose
    /// written-maps the store keeps.
    fn accumulate_into(&self, lhs: Value, rhs: Value, r: Value) -> Option<([OpId; 3], u32)> {
        if self.check_uninit {
            return None;
        }
        let f = self.f;
        let users = |v: Value| -> Vec<OpId> {
            f.ops
                .iter()
                .filter(|(_, o)| o.kind.operands().contains(&v))
                .map(|(id, _)| id)
                .collect()
        };
        let yielded = |v: Value| f.blocks.iter().any(|(_, b)| b.yields.contains(&v));
        let op_of = |v: Value| match f.values[v].def {
            ValueDef::Result(op, _) => Some(op),
            ValueDef::Param(..) => None,
        };
        if yielded(r) {
            return None;
        }
        let [add] = users(r)[..] else {
            return None;
        };
        let OpKind::Binary(BinaryOp::Add, a, b) = f.ops[add].kind else {
            return None;
        };
        let x = match (a == r, b == r) {
            (true, false) => b,
            (false, true) => a,
            _ => return None,
        };
        let sum = *f.ops[add].results.first()?;
        if yielded(sum) || yielded(x) || users(x) != [add] {
            return None;
        }
        let [store] = users(sum)[..] else {
            return None;
        };
        let OpKind::Store(ref view, stored, None) = f.ops[store].kind else {
            return None;
        };
        let load = op_of(x)?;
        if stored != sum || f.ops[load].kind != OpKind::Load(view.clone()) {
            return None;
        }
        let base = self.whole_vmem(view)?;
        // The dot's operands are not `acc` itself, and nothing between the
        // load and the store (all in one block) writes `acc`.
        if self.loads_of(lhs, view.target) || self.loads_of(rhs, view.target) {
            return None;
        }
        let block = f.blocks.iter().find(|(_, b)| b.ops.contains(&store))?.1;
        let pos = |op: OpId| block.ops.iter().position(|&o| o == op);
        // The GEMM reads `acc` where the dot is, the program where the load
        // is: nothing may write `acc` from the first of them to the store.
        let (dot, to) = (pos(op_of(r)?)?, pos(store)?);
        let from = pos(load)?.min(dot);
        pos(add)?;
        let writes_target = block.ops[from + 1..to]
            .iter()
            .any(|&o| match &f.ops[o].kind {
                OpKind::Store(w, _, _) => self.same_memory(w.target, view.target),
                OpKind::DmaStart { dst, .. } | OpKind::DmaWait { dst, .. } => {
                    self.same_memory(dst.target, view.target)
                }
                OpKind::RemoteDma { .. } => true,
                OpKind::If { .. } | OpKind::For { .. } | OpKind::While { .. } => true,
                _ => false,
            });
        (!writes_target).then_some(([load, add, store], base))
    }

    /// Whether two refs are (views of) the same memory.
    fn same_memory(&self, a: RefId, b: RefId) -> bool {
        self.k.root(a) == self.k.root(b)
    }

    /// The address of a view that is the whole of a VMEM ref.
    fn whole_vmem(&self, view: &RefView) -> Option<u32> {
        let target = &self.k.refs[view.target].ty;
        let whole = view.index.len() == target.shape.len()
            && view.index.iter().zip(&target.shape).all(|(s, d)| {
                matches!(s, Slice::Range { start: Start::Const(0), size } if Some(*size as i64) == d.known())
            });
        if !whole || target.space != Space::Vmem {
            return None;
        }
        self.slots.get(view.target.index())?.offset
    }

    /// Whether value `v` is a load of ref `r`.
    fn loads_of(&self, v: Value, r: RefId) -> bool {
        match self.f.values[v].def {
            ValueDef::Result(o, _) => {
                matches!(&self.f.ops[o].kind, OpKind::Load(w) if self.same_memory(w.target, r))
            }
            ValueDef::Param(..) => false,
        }
    }

    /// For `out[..] = dot(a, b)` on a whole VMEM ref `out` of the product's
    /// dtype (the dot's only reader is that store, and nothing from the
    /// dot to the store reads or writes `out`): the store op and `out`'s
    /// address, so that the GEMM writes the product in place instead of
    /// into a temporary that a second pass copies. Not under
    /// `check_uninit`, whose written-maps the store keeps.
    fn store_into(&self, lhs: Value, rhs: Value, r: Value) -> Option<(Vec<OpId>, u32)> {
        if self.check_uninit {
            return None;
        }
        let f = self.f;
        if f.blocks.iter().any(|(_, b)| b.yields.contains(&r)) {
            return None;
        }
        let users: Vec<OpId> = f
            .ops
            .iter()
            .filter(|(_, o)| o.kind.operands().contains(&r))
            .map(|(id, _)| id)
            .collect();
        let [store] = users[..] else {
            return None;
        };
        let OpKind::Store(ref view, stored, None) = f.ops[store].kind else {
            return None;
        };
        if stored != r || self.k.refs[view.target].ty.dtype != f.ty(r).dtype() {
            return None;
        }
        let base = self.whole_vmem(view)?;
        if self.loads_of(lhs, view.target) || self.loads_of(rhs, view.target) {
            return None;
        }
        let ValueDef::Result(dot, _) = f.values[r].def else {
            return None;
        };
        let block = f.blocks.iter().find(|(_, b)| b.ops.contains(&store))?.1;
        let pos = |op: OpId| block.ops.iter().position(|&o| o == op);
        let (from, to) = (pos(dot)?, pos(store)?);
        // The GEMM writes `out` where the dot is: nothing up to the store
        // may read or write it.
        let target = view.target;
        let touches = block.ops[from + 1..to]
            .iter()
            .any(|&o| match &f.ops[o].kind {
                OpKind::Load(w) | OpKind::Store(w, _, _) => self.same_memory(w.target, target),
                OpKind::DmaStart { src, dst, .. } | OpKind::DmaWait { src, dst, .. } => {
                    self.same_memory(src.target, target) || self.same_memory(dst.target, target)
                }
                OpKind::RemoteDma { .. } => true,
                OpKind::If { .. } | OpKind::For { .. } | OpKind::While { .. } => true,
                _ => false,
            });
        (!touches).then_some((vec![store], base))
    }

    /// The ref a dot operand is read from in place, when nothing in the
    /// kernel writes that ref.
    fn stable_view(&self, v: Value) -> Option<u32> {
        if !matches!(self.group_kind(v), Some(GroupKind::View { .. })) {
            return None;
        }
        let ValueDef::Result(op, _) = self.f.values[v].def else {
            return None;
        };
        let OpKind::Load(w) = &self.f.ops[op].kind else {
            return None;
        };
        let slot = self.slots.get(w.target.index())?;
        (!slot.written).then_some(w.target.index() as u32)
    }

    /// Whether a dot operand is a bf16 ref's window read in place.
    fn bf16_view(&self, v: Value) -> bool {
        self.f.ty(v).dtype() == DType::BF16
            && matches!(self.group_kind(v), Some(GroupKind::View { .. }))
    }
}
