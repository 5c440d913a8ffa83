//! Loads and stores through a view between widths (`k.bitcast(T)` of a ref
//! of another width). Its elements are not at row-major positions of the
//! memory it views: as on the TPU, where narrow elements pack along
//! sublanes, element `[.., r, c]` of the wider side holds the narrower
//! elements `[.., p*r + j, c]` (`j = 0..p`) in bits `j*w..(j+1)*w`. So
//! each access walks its window element by element and assembles (or
//! splits) the bits from (into) the viewed ref's elements:
//!
//! - a wider view (bf16 seen as i32) reads `p` narrow elements, one per
//!   row, and writes each of them;
//! - a narrower view (i32 seen as bf16) reads or writes the bits of one
//!   element of a wide word, at its byte in the little-endian word.
//!
//! Lanes of the body's tiles are 32 bits; every value goes through its
//! bits in an i32 ("lane bits": f32 bits, bf16 in the high half, narrow
//! integers sign-extended, u8 zero-extended). Windows are checked against
//! the view's sizes, and, with `check_uninit`, reads and writes use the
//! viewed ref's shadow map, one byte per element it holds.

use super::Em;
use crate::wasm::abi::TrapKind;
use crate::wasm::fb::mem;
use crate::wasm::Error;
use pk_lang::ir::{DType, Dim, RefOrigin, RefView, Slice, Start, Value};
use wasm_encoder::{BlockType, Instruction as I};

/// One window dimension: its start (a checked local or a constant), how
/// many positions it takes and their distance.
struct Axis {
    start: Result<u32, u64>,
    count: u64,
    step: u64,
}

/// What one element access needs: the window's coordinates, the geometry
/// of the viewed ref and the view's widths.
struct Geometry {
    coords: Vec<u32>,
    /// Row-major strides and sizes of the viewed ref.
    strides: Vec<u64>,
    sizes: Vec<u64>,
    offset: u32,
    shadow: Option<u32>,
    view: DType,
    base: DType,
}

impl Geometry {
    fn ratio(&self) -> u32 {
        let (v, b) = (self.view.bits(), self.base.bits());
        v.max(b) / v.min(b)
    }
}

/// `raw load` of `bits` bits (address on the stack), zero-extended.
fn raw_load(em: &mut Em, bits: u32, off: u32) {
    em.fb.op(match bits {
        8 => I::I32Load8U(mem(off, 0)),
        16 => I::I32Load16U(mem(off, 1)),
        _ => I::I32Load(mem(off, 2)),
    });
}

/// Stores the low `bits` bits of the value (address, value on the stack).
fn raw_store(em: &mut Em, bits: u32, off: u32) {
    em.fb.op(match bits {
        8 => I::I32Store8(mem(off, 0)),
        16 => I::I32Store16(mem(off, 1)),
        _ => I::I32Store(mem(off, 2)),
    });
}

/// Lane bits of `d` (on the stack) to the element's bits.
fn from_lane(em: &mut Em, d: DType) {
    match d {
        DType::BF16 => em.fb.i32c(16).op(I::I32ShrU),
        DType::I16 => em.fb.i32c(0xFFFF).op(I::I32And),
        DType::I8 | DType::U8 => em.fb.i32c(0xFF).op(I::I32And),
        _ => &mut em.fb,
    };
}

/// An element's bits of `d` (on the stack) to its lane bits.
fn to_lane(em: &mut Em, d: DType) {
    match d {
        DType::BF16 => em.fb.i32c(16).op(I::I32Shl),
        DType::I16 => em.fb.i32c(16).op(I::I32Shl).i32c(16).op(I::I32ShrS),
        DType::I8 => em.fb.i32c(24).op(I::I32Shl).i32c(24).op(I::I32ShrS),
        _ => &mut em.fb,
    };
}

impl Em<'_, '_> {
    /// Loads (`store` = None) or stores `value` through the window `v` of
    /// a view between widths.
    pub(super) fn packed(&mut self, v: &RefView, value: Value, load: bool) -> Result<(), Error> {
        let k = self.k;
        let r = &k.refs[v.target];
        let RefOrigin::View(b) = r.origin else {
            return Err(self.unsupported(format!("`{}` is not a view", r.name)));
        };
        let (view, base) = (r.ty.dtype, k.refs[b].ty.dtype);
        if [view, base]
            .iter()
            .any(|d| matches!(d, DType::F8E4M3FN | DType::F8E5M2))
        {
            return Err(self.unsupported("bitcast views of fp8 refs"));
        }
        let slot = &self.slots[v.target.index()];
        let Some(offset) = slot.offset else {
            return Err(self.unsupported(format!("direct access to the ANY ref `{}`", r.name)));
        };
        let shadow = slot.shadow.filter(|_| self.check_uninit);
        let shape = slot.shape.clone();
        let sizes: Vec<u64> = k.refs[b].ty.shape.iter().map(Dim::get).collect();
        let mut strides = vec![1u64; sizes.len()];
        for i in (0..sizes.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * sizes[i + 1];
        }
        let verb = if load { "load" } else { "store" };
        let site = self.site(format!("{verb} of `{}`", r.name));
        let mut axes = Vec::with_capacity(v.index.len());
        for (d, s) in v.index.iter().enumerate() {
            let (count, step) = match *s {
                Slice::Index(_) => (1, 1),
                Slice::Range { size, .. } => (size, 1),
                Slice::Strided { size, stride, .. } => (size, stride),
            };
            let start = match s.start() {
                Start::Const(c) => Err(c),
                Start::Dyn(x) => {
                    let xl = self.local(x);
                    let limit = shape[d].saturating_sub(s.extent());
                    self.fb.get(xl).u32c(limit as u32).op(I::I32GtU);
                    self.fb.op(I::If(BlockType::Empty));
                    self.trap(site, TrapKind::OutOfBounds, |fb| {
                        fb.i32c(d as i32).get(xl);
                    });
                    self.fb.op(I::End);
                    Ok(xl)
                }
            };
            axes.push(Axis { start, count, step });
        }
        let g = Geometry {
            coords: (0..axes.len()).map(|_| self.fb.i32l()).collect(),
            strides,
            sizes,
            offset,
            shadow,
            view,
            base,
        };
        let elem = self.fb.i32l();
        self.fb.i32c(0).set(elem);
        let scalar = self.f.ty(value).is_scalar();
        let mut body = |em: &mut Self| {
            if load {
                em.packed_read(&g, site, elem);
                if scalar {
                    let l = em.local(value);
                    if super::is_f(view) {
                        em.fb.op(I::F32ReinterpretI32);
                    }
                    em.fb.set(l);
                } else {
                    let bits = em.fb.i32l();
                    em.fb.set(bits);
                    let tile = em.addr(value);
                    em.push_addr(tile);
                    em.fb
                        .get(elem)
                        .i32c(2)
                        .op(I::I32Shl)
                        .op(I::I32Add)
                        .get(bits);
                    em.fb.op(I::I32Store(mem(0, 2)));
                }
            } else {
                if scalar {
                    em.get(value);
                    if super::is_f(view) {
                        em.fb.op(I::I32ReinterpretF32);
                    }
                } else {
                    let tile = em.addr(value);
                    em.push_addr(tile);
                    em.fb.get(elem).i32c(2).op(I::I32Shl).op(I::I32Add);
                    em.fb.op(I::I32Load(mem(0, 2)));
                }
                let bits = em.fb.i32l();
                em.fb.set(bits);
                em.packed_write(&g, bits);
            }
            em.fb.add_to(elem, 1);
        };
        self.packed_nest(&axes, &g.coords, &mut body);
        Ok(())
    }

    /// Loops over the window's dimensions from the first, setting each
    /// coordinate, and runs `body` for each element.
    fn packed_nest(&mut self, axes: &[Axis], coords: &[u32], body: &mut dyn FnMut(&mut Self)) {
        let Some((a, rest)) = axes.split_first() else {
            body(self);
            return;
        };
        let c = coords[0];
        let set = |em: &mut Self, i: Option<u32>| {
            match a.start {
                Ok(l) => em.fb.get(l),
                Err(k) => em.fb.u32c(k as u32),
            };
            if let Some(i) = i {
                em.fb.get(i).u32c(a.step as u32).op(I::I32Mul).op(I::I32Add);
            }
            em.fb.set(c);
        };
        if a.count == 1 {
            set(self, None);
            self.packed_nest(rest, &coords[1..], body);
            return;
        }
        let i = self.fb.i32l();
        self.count_loop(i, a.count, 1, |em| {
            set(em, Some(i));
            em.packed_nest(rest, &coords[1..], body);
        });
    }

    /// Pushes the element index, in the viewed ref, of the element holding
    /// the current one (a narrower view), or of its first part (a wider
    /// view), leaving the view's second-minor coordinate to `row`.
    fn packed_index(&mut self, g: &Geometry, row: impl FnOnce(&mut Self)) {
        let n = g.coords.len();
        self.fb.i32c(0);
        for d in 0..n - 2 {
            self.fb.get(g.coords[d]).u32c(g.strides[d] as u32);
            self.fb.op(I::I32Mul).op(I::I32Add);
        }
        row(self);
        self.fb
            .u32c(g.sizes[n - 1] as u32)
            .op(I::I32Mul)
            .op(I::I32Add);
        self.fb.get(g.coords[n - 1]).op(I::I32Add);
    }

    /// Traps unless the viewed ref's element `idx` (a local) was written.
    fn packed_check(&mut self, g: &Geometry, idx: u32, site: u32, elem: u32) {
        let Some(sh) = g.shadow else {
            return;
        };
        self.fb.get(idx).u32c(sh).op(I::I32Add);
        self.fb.op(I::I32Load8U(mem(0, 0))).op(I::I32Eqz);
        self.fb.op(I::If(BlockType::Empty));
        self.trap(site, TrapKind::Uninitialized, |fb| {
            fb.get(elem).i32c(0);
        });
        self.fb.op(I::End);
    }

    /// Marks the viewed ref's element `idx` (a local) as written.
    fn packed_mark(&mut self, g: &Geometry, idx: u32) {
        if let Some(sh) = g.shadow {
            self.fb.get(idx).u32c(sh).op(I::I32Add).i32c(1);
            self.fb.op(I::I32Store8(mem(0, 0)));
        }
    }

    /// Pushes the lane bits of the current element.
    fn packed_read(&mut self, g: &Geometry, site: u32, elem: u32) {
        let n = g.coords.len();
        let (vb, bb) = (g.view.bits(), g.base.bits());
        let (eb, p) = (bb / 8, g.ratio());
        let idx = self.fb.i32l();
        if vb > bb {
            // Rows p*r .. p*r + p of the viewed ref, one part each.
            let acc = self.fb.i32l();
            self.fb.i32c(0).set(acc);
            for j in 0..p {
                self.packed_index(g, |em| {
                    em.fb.get(g.coords[n - 2]).u32c(p).op(I::I32Mul);
                    em.fb.u32c(j).op(I::I32Add);
                });
                self.fb.set(idx);
                self.packed_check(g, idx, site, elem);
                self.fb.get(idx).u32c(eb).op(I::I32Mul);
                raw_load(self, bb, g.offset);
                self.fb
                    .u32c(j * bb)
                    .op(I::I32Shl)
                    .get(acc)
                    .op(I::I32Or)
                    .set(acc);
            }
            self.fb.get(acc);
        } else {
            // Part r % p of the word in row r / p.
            self.packed_index(g, |em| {
                em.fb.get(g.coords[n - 2]).u32c(p).op(I::I32DivU);
            });
            self.fb.set(idx);
            self.packed_check(g, idx, site, elem);
            self.fb.get(idx).u32c(eb).op(I::I32Mul);
            self.fb.get(g.coords[n - 2]).u32c(p).op(I::I32RemU);
            self.fb.u32c(vb / 8).op(I::I32Mul).op(I::I32Add);
            raw_load(self, vb, g.offset);
        }
        to_lane(self, g.view);
    }

    /// Writes the current element from the lane bits in local `bits`.
    fn packed_write(&mut self, g: &Geometry, bits: u32) {
        let n = g.coords.len();
        let (vb, bb) = (g.view.bits(), g.base.bits());
        let (eb, p) = (bb / 8, g.ratio());
        self.fb.get(bits);
        from_lane(self, g.view);
        self.fb.set(bits);
        let idx = self.fb.i32l();
        if vb > bb {
            for j in 0..p {
                self.packed_index(g, |em| {
                    em.fb.get(g.coords[n - 2]).u32c(p).op(I::I32Mul);
                    em.fb.u32c(j).op(I::I32Add);
                });
                self.fb.set(idx);
                self.fb.get(idx).u32c(eb).op(I::I32Mul);
                self.fb.get(bits).u32c(j * bb).op(I::I32ShrU);
                raw_store(self, bb, g.offset);
                self.packed_mark(g, idx);
            }
        } else {
            self.packed_index(g, |em| {
                em.fb.get(g.coords[n - 2]).u32c(p).op(I::I32DivU);
            });
            self.fb.set(idx);
            self.fb.get(idx).u32c(eb).op(I::I32Mul);
            self.fb.get(g.coords[n - 2]).u32c(p).op(I::I32RemU);
            self.fb.u32c(vb / 8).op(I::I32Mul).op(I::I32Add);
            self.fb.get(bits);
            raw_store(self, vb, g.offset);
            self.packed_mark(g, idx);
        }
    }
}
