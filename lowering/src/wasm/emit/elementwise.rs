//! Elementwise ops: one lane rule per op, used as is for scalars and once
//! per lane (or on four lanes at a time with SIMD128) for tiles, so that a
//! value computes to the same bits in either form.
//!
//! Lane conventions: float dtypes are f32 lanes (a bf16 value is an f32
//! whose low 16 bits are zero), integer and bool dtypes are i32 lanes
//! holding the value sign- or zero-extended (bool is 0 or 1). Every rule
//! leaves its result in that canonical form: bf16 results are rounded to
//! nearest even, narrow integers wrap.

use super::{elems, is_f, lane_type, Em};
use crate::wasm::abi::TrapKind;
use crate::wasm::fb::{m128, Fb};
use crate::wasm::math::Helper;
use crate::wasm::plan::{same_lanes_bitcast, same_lanes_cast};
use crate::wasm::Error;
use pk_lang::ir::{BinaryOp, CmpOp, DType, Literal, OpId, OpKind, UnaryOp, Value};
use wasm_encoder::{Instruction as I, ValType};

#[derive(Debug, Clone, Copy)]
pub(crate) enum Rule {
    Unary(UnaryOp, DType),
    Binary(BinaryOp, DType),
    Compare(CmpOp, DType),
    Select,
    Cast(DType, DType),
    Bitcast(DType, DType),
}

/// Wraps an i32 to a narrow integer dtype (scalar).
pub(super) fn canon(fb: &mut Fb, d: DType) {
    match d {
        DType::I8 => {
            fb.op(I::I32Extend8S);
        }
        DType::I16 => {
            fb.op(I::I32Extend16S);
        }
        DType::U8 => {
            fb.i32c(0xff).op(I::I32And);
        }
        _ => {}
    }
}

/// Wraps four i32 lanes to a narrow integer dtype.
pub(super) fn canon_v(fb: &mut Fb, d: DType) {
    match d {
        DType::I8 => {
            fb.i32c(24).op(I::I32x4Shl).i32c(24).op(I::I32x4ShrS);
        }
        DType::I16 => {
            fb.i32c(16).op(I::I32x4Shl).i32c(16).op(I::I32x4ShrS);
        }
        DType::U8 => {
            fb.i32x4c(0xff).op(I::V128And);
        }
        _ => {}
    }
}

/// Rounds the f32 on the stack to the nearest bf16 (ties to even); NaN
/// stays NaN (made quiet so that truncation cannot turn it into inf).
pub(super) fn round_bf16(fb: &mut Fb) {
    let (x, t) = (fb.local(ValType::F32), fb.local(ValType::I32));
    fb.tee(x).op(I::I32ReinterpretF32).set(t);
    fb.get(t).i32c(0x40_0000).op(I::I32Or);
    fb.get(t).i32c(0x7FFF).op(I::I32Add);
    fb.get(t)
        .i32c(16)
        .op(I::I32ShrU)
        .i32c(1)
        .op(I::I32And)
        .op(I::I32Add);
    fb.get(x).get(x).op(I::F32Ne).op(I::Select);
    fb.i32c(0xFFFF_0000u32 as i32)
        .op(I::I32And)
        .op(I::F32ReinterpretI32);
}

pub(super) fn round_bf16_v(fb: &mut Fb) {
    let x = fb.local(ValType::V128);
    fb.set(x);
    fb.get(x).i32x4c(0x40_0000).op(I::V128Or);
    fb.get(x).i32x4c(0x7FFF).op(I::I32x4Add);
    fb.get(x)
        .i32c(16)
        .op(I::I32x4ShrU)
        .i32x4c(1)
        .op(I::V128And)
        .op(I::I32x4Add);
    fb.get(x).get(x).op(I::F32x4Ne).op(I::V128Bitselect);
    fb.i32x4c(0xFFFF_0000u32 as i32).op(I::V128And);
}

fn inexact_unary(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(
        op,
        Exp | Exp2 | Log | Log1p | Sqrt | Rsqrt | Tanh | Sin | Cos | Erf | Logistic
    )
}

fn simd_helper(op: UnaryOp) -> Option<Helper> {
    Some(match op {
        UnaryOp::Exp => Helper::ExpV,
        UnaryOp::Exp2 => Helper::Exp2V,
        UnaryOp::Log => Helper::LogV,
        UnaryOp::Tanh => Helper::TanhV,
        UnaryOp::Logistic => Helper::LogisticV,
        _ => return None,
    })
}

/// The one instruction of a float unary op that has one, for a lane or for
/// four lanes.
fn float_unary_ins(op: UnaryOp, simd: bool) -> Option<I<'static>> {
    use UnaryOp as U;
    let (lane, lanes) = match op {
        U::Neg => (I::F32Neg, I::F32x4Neg),
        U::Abs => (I::F32Abs, I::F32x4Abs),
        U::Sqrt => (I::F32Sqrt, I::F32x4Sqrt),
        U::Floor => (I::F32Floor, I::F32x4Floor),
        U::Ceil => (I::F32Ceil, I::F32x4Ceil),
        U::Round => (I::F32Nearest, I::F32x4Nearest),
        _ => return None,
    };
    Some(if simd { lanes } else { lane })
}

/// The comparison instruction of `op` on f32 or i32 lanes (`f`), for a
/// lane or for four lanes; the result is 0 or 1 per lane for a scalar and
/// 0 or all ones for a vector.
fn compare_ins(op: CmpOp, f: bool, simd: bool) -> I<'static> {
    let [f32, i32, f32x4, i32x4] = match op {
        CmpOp::Eq => [I::F32Eq, I::I32Eq, I::F32x4Eq, I::I32x4Eq],
        CmpOp::Ne => [I::F32Ne, I::I32Ne, I::F32x4Ne, I::I32x4Ne],
        CmpOp::Lt => [I::F32Lt, I::I32LtS, I::F32x4Lt, I::I32x4LtS],
        CmpOp::Le => [I::F32Le, I::I32LeS, I::F32x4Le, I::I32x4LeS],
        CmpOp::Gt => [I::F32Gt, I::I32GtS, I::F32x4Gt, I::I32x4GtS],
        CmpOp::Ge => [I::F32Ge, I::I32GeS, I::F32x4Ge, I::I32x4GeS],
    };
    match (f, simd) {
        (true, false) => f32,
        (false, false) => i32,
        (true, true) => f32x4,
        (false, true) => i32x4,
    }
}

fn lane_helper(op: UnaryOp) -> Option<Helper> {
    Some(match op {
        UnaryOp::Sin => Helper::Sin,
        UnaryOp::Cos => Helper::Cos,
        UnaryOp::Erf => Helper::Erf,
        UnaryOp::Log1p => Helper::Log1p,
        _ => return None,
    })
}

impl Em<'_, '_> {
    /// Emits an elementwise op (scalar or tile).
    pub(super) fn elementwise(&mut self, id: OpId) -> Result<(), Error> {
        let op = &self.f.ops[id];
        let r = op.results[0];
        let rt = self.f.ty(r).clone();
        let d = rt.dtype();
        if self.is_inline(r) {
            return Ok(());
        }
        match &op.kind {
            OpKind::Const(l) => {
                let push = |fb: &mut Fb, vec: bool| push_const(fb, *l, d, vec);
                if rt.is_scalar() {
                    push(&mut self.fb, false);
                    let l = self.local(r);
                    self.fb.set(l);
                } else {
                    push(&mut self.fb, true);
                    self.fill_v128(r);
                }
                return Ok(());
            }
            OpKind::Splat(x) => {
                self.splat(*x, d);
                self.fill_v128(r);
                return Ok(());
            }
            // Casts that keep the lanes as they are share their operand's
            // storage; they have no lane rule.
            OpKind::Cast(a) if same_lanes_cast(self.f.ty(*a).dtype(), d) => {
                return self.alias(*a, r);
            }
            OpKind::Bitcast(a) if same_lanes_bitcast(self.f.ty(*a).dtype(), d) => {
                return self.alias(*a, r);
            }
            _ => {}
        }
        let (rule, ins) = super::fuse::rule_of(self.f, id)
            .ok_or_else(|| Error::Internal("not an elementwise op".into()))?;
        if rt.is_scalar() {
            for &v in &ins {
                self.get(v);
            }
            self.scalar_rule(rule)?;
            let l = self.local(r);
            self.fb.set(l);
            return Ok(());
        }
        let out = self.addr(r);
        if let Some(code) = super::fuse::eup_fn(self.f, id) {
            // The transcendental unit, on the whole (materialised) tile.
            let src = self.addr(ins[0]);
            self.fb.i32c(code);
            self.push_addr(src);
            self.push_addr(out);
            self.fb.u32c(elems(self.f, r) as u32);
            self.fb.op(I::Call(self.imp.eup));
            return Ok(());
        }
        let addrs: Vec<_> = ins
            .iter()
            .map(|&v| (self.addr(v), self.f.ty(v).dtype()))
            .collect();
        let i = self.fb.i32l();
        let mut res = Ok(());
        if super::fuse::vector_ok(rule) {
            self.fused_loop(r, rule, &ins);
        } else {
            self.count_loop(i, elems(self.f, r) * 4, 4, |em| {
                let o = em.base(out, Some(i));
                for &(a, dt) in &addrs {
                    let off = em.base(a, Some(i));
                    em.lane_load(dt, off);
                }
                res = em.scalar_rule(rule);
                em.lane_store(d, o);
            });
        }
        res
    }

    /// Fills a tile with the v128 on the stack.
    pub(super) fn fill_v128(&mut self, r: Value) {
        let v = self.fb.local(ValType::V128);
        self.fb.set(v);
        let out = self.addr(r);
        let bytes = (elems(self.f, r) * 4).div_ceil(16) * 16;
        let i = self.fb.i32l();
        self.count_loop(i, bytes, 16, |em| {
            let o = em.base(out, Some(i));
            em.fb.get(v).op(I::V128Store(m128(o)));
        });
    }

    /// Four lanes: operands are v128s on the stack, in rule order.
    pub(super) fn vector_rule(&mut self, rule: Rule) {
        use BinaryOp as B;
        use UnaryOp as U;
        let fb = &mut self.fb;
        match rule {
            Rule::Unary(op, d) if is_f(d) => {
                match (float_unary_ins(op, true), op) {
                    (Some(ins), _) => fb.op(ins),
                    (None, U::Rsqrt) => {
                        let t = fb.local(ValType::V128);
                        fb.set(t)
                            .f32x4c(1.0)
                            .get(t)
                            .op(I::F32x4Sqrt)
                            .op(I::F32x4Div)
                    }
                    (None, U::Sign) => {
                        let t = fb.local(ValType::V128);
                        fb.set(t).f32x4c(1.0).f32x4c(-1.0).get(t);
                        fb.get(t).f32x4c(0.0).op(I::F32x4Lt).op(I::V128Bitselect);
                        fb.get(t).f32x4c(0.0).op(I::F32x4Gt).op(I::V128Bitselect)
                    }
                    (None, _) => {
                        let h = simd_helper(op).unwrap_or(Helper::ExpV);
                        let t = fb.local(ValType::V128);
                        fb.set(t);
                        if !crate::wasm::math::inline(h, fb, t) {
                            let f = self.h.func(h);
                            fb.get(t).op(I::Call(f));
                        }
                        &mut *fb
                    }
                };
                if d == DType::BF16 && inexact_unary(op) {
                    round_bf16_v(fb);
                }
            }
            Rule::Unary(op, d) => {
                match op {
                    U::Neg => {
                        let t = fb.local(ValType::V128);
                        fb.set(t).i32x4c(0).get(t).op(I::I32x4Sub);
                    }
                    U::Not if d == DType::Bool => {
                        fb.i32x4c(1).op(I::V128Xor);
                    }
                    U::Not => {
                        fb.op(I::V128Not);
                    }
                    U::Abs => {
                        fb.op(I::I32x4Abs);
                    }
                    U::Sign => {
                        let t = fb.local(ValType::V128);
                        fb.set(t).get(t).i32x4c(0).op(I::I32x4GtS);
                        fb.get(t).i32x4c(0).op(I::I32x4LtS).op(I::I32x4Sub);
                        fb.op(I::I32x4Neg);
                    }
                    _ => {}
                }
                canon_v(fb, d);
            }
            Rule::Binary(op, d) if is_f(d) => {
                fb.op(match op {
                    B::Add => I::F32x4Add,
                    B::Sub => I::F32x4Sub,
                    B::Mul => I::F32x4Mul,
                    B::Div => I::F32x4Div,
                    B::Max => I::F32x4Max,
                    _ => I::F32x4Min,
                });
                if d == DType::BF16 && !matches!(op, B::Max | B::Min) {
                    round_bf16_v(fb);
                }
            }
            Rule::Binary(op, d) => {
                fb.op(match op {
                    B::Add => I::I32x4Add,
                    B::Sub => I::I32x4Sub,
                    B::Mul => I::I32x4Mul,
                    B::Max => I::I32x4MaxS,
                    B::Min => I::I32x4MinS,
                    B::And => I::V128And,
                    B::Or => I::V128Or,
                    _ => I::V128Xor,
                });
                canon_v(fb, d);
            }
            Rule::Compare(op, d) => {
                fb.op(compare_ins(op, is_f(d), true));
                fb.i32x4c(1).op(I::V128And);
            }
            Rule::Select => {
                // bool lanes are 0/1; bitselect wants all-ones masks.
                fb.op(I::I32x4Neg).op(I::V128Bitselect);
            }
            Rule::Cast(from, to) => cast_v(fb, from, to),
            Rule::Bitcast(from, to) => bitcast_v(fb, from, to),
        }
    }

    /// One lane: operands are scalars on the stack, in rule order.
    pub(super) fn scalar_rule(&mut self, rule: Rule) -> Result<(), Error> {
        match rule {
            Rule::Unary(op, d) if is_f(d) => self.unary_f(op, d),
            Rule::Unary(op, d) => self.unary_i(op, d),
            Rule::Binary(op, d) if is_f(d) => self.binary_f(op, d),
            Rule::Binary(op, d) => self.binary_i(op, d),
            Rule::Compare(op, d) => {
                self.fb.op(compare_ins(op, is_f(d), false));
                Ok(())
            }
            Rule::Select => {
                self.fb.op(I::Select);
                Ok(())
            }
            Rule::Cast(from, to) => self.cast_s(from, to),
            Rule::Bitcast(from, to) => self.bitcast_s(from, to),
        }
    }

    fn unary_f(&mut self, op: UnaryOp, d: DType) -> Result<(), Error> {
        use UnaryOp as U;
        if is_f8(d) {
            return Err(self.unsupported(format!("`{op:?}` on {d}")));
        }
        let fb = &mut self.fb;
        match (float_unary_ins(op, false), op) {
            (Some(ins), _) => {
                fb.op(ins);
            }
            (None, U::Rsqrt) => {
                let t = fb.local(ValType::F32);
                fb.set(t).f32c(1.0).get(t).op(I::F32Sqrt).op(I::F32Div);
            }
            (None, U::Sign) => {
                let t = fb.local(ValType::F32);
                fb.set(t)
                    .f32c(1.0)
                    .f32c(-1.0)
                    .get(t)
                    .get(t)
                    .f32c(0.0)
                    .op(I::F32Lt);
                fb.op(I::Select).get(t).f32c(0.0).op(I::F32Gt).op(I::Select);
            }
            (None, U::Not) => return Err(self.unsupported("`not` on a float")),
            (None, _) => {
                if let Some(h) = simd_helper(op) {
                    let h = self.h.func(h);
                    fb.op(I::F32x4Splat)
                        .op(I::Call(h))
                        .op(I::F32x4ExtractLane(0));
                } else if let Some(h) = lane_helper(op) {
                    let h = self.h.func(h);
                    fb.op(I::Call(h));
                }
            }
        }
        if d == DType::BF16 && inexact_unary(op) {
            round_bf16(&mut self.fb);
        }
        Ok(())
    }

    fn unary_i(&mut self, op: UnaryOp, d: DType) -> Result<(), Error> {
        use UnaryOp as U;
        let fb = &mut self.fb;
        let t = fb.local(ValType::I32);
        fb.set(t);
        match op {
            U::Neg => {
                fb.i32c(0).get(t).op(I::I32Sub);
            }
            U::Not if d == DType::Bool => {
                fb.get(t).i32c(1).op(I::I32Xor);
            }
            U::Not => {
                fb.get(t).i32c(-1).op(I::I32Xor);
            }
            U::Abs => {
                fb.i32c(0)
                    .get(t)
                    .op(I::I32Sub)
                    .get(t)
                    .get(t)
                    .i32c(0)
                    .op(I::I32LtS);
                fb.op(I::Select);
            }
            U::Sign => {
                fb.get(t)
                    .i32c(0)
                    .op(I::I32GtS)
                    .get(t)
                    .i32c(0)
                    .op(I::I32LtS)
                    .op(I::I32Sub);
            }
            U::Floor | U::Ceil | U::Round => {
                fb.get(t);
            }
            _ => return Err(self.unsupported(format!("`{op:?}` on the integer dtype {d}"))),
        }
        canon(&mut self.fb, d);
        Ok(())
    }

    fn binary_f(&mut self, op: BinaryOp, d: DType) -> Result<(), Error> {
        use BinaryOp as B;
        if is_f8(d) {
            return Err(self.unsupported(format!("`{op:?}` on {d}")));
        }
        let ins = match op {
            B::Add => I::F32Add,
            B::Sub => I::F32Sub,
            B::Mul => I::F32Mul,
            B::Div => I::F32Div,
            B::Max => I::F32Max,
            B::Min => I::F32Min,
            B::Rem => I::Call(self.h.func(Helper::Fmod)),
            B::Pow => I::Call(self.h.func(Helper::Pow)),
            _ => return Err(self.unsupported(format!("`{op:?}` on a float"))),
        };
        self.fb.op(ins);
        if d == DType::BF16 && !matches!(op, B::Max | B::Min) {
            round_bf16(&mut self.fb);
        }
        Ok(())
    }

    fn binary_i(&mut self, op: BinaryOp, d: DType) -> Result<(), Error> {
        use BinaryOp as B;
        let (a, b) = (self.fb.i32l(), self.fb.i32l());
        self.fb.set(b).set(a);
        let width = d.bits() as i32;
        match op {
            B::Add | B::Sub | B::Mul | B::And | B::Or | B::Xor => {
                self.fb.get(a).get(b).op(match op {
                    B::Add => I::I32Add,
                    B::Sub => I::I32Sub,
                    B::Mul => I::I32Mul,
                    B::And => I::I32And,
                    B::Or => I::I32Or,
                    _ => I::I32Xor,
                });
            }
            B::Max | B::Min => {
                let c = if op == B::Max { I::I32GtS } else { I::I32LtS };
                self.fb.get(a).get(b).get(a).get(b).op(c).op(I::Select);
            }
            B::Div | B::Rem => {
                let site = self.site(if op == B::Div {
                    "integer division"
                } else {
                    "integer remainder"
                });
                self.fb.get(b).op(I::I32Eqz);
                self.fb.op(I::If(wasm_encoder::BlockType::Empty));
                self.trap(site, TrapKind::DivideByZero, |fb| {
                    fb.get(a).i32c(0);
                });
                self.fb.op(I::End);
                // x / -1 is a negation (which wraps for the minimum); the
                // remainder is 0. Wasm would trap on i32::MIN / -1, so that
                // divisor becomes 1 and the result for -1 is selected after.
                if op == B::Div {
                    self.fb.i32c(0).get(a).op(I::I32Sub);
                } else {
                    self.fb.i32c(0);
                }
                self.fb
                    .get(a)
                    .get(b)
                    .i32c(1)
                    .get(b)
                    .i32c(-1)
                    .op(I::I32Ne)
                    .op(I::Select);
                self.fb
                    .op(if op == B::Div { I::I32DivS } else { I::I32RemS });
                self.fb.get(b).i32c(-1).op(I::I32Eq).op(I::Select);
            }
            B::Pow => {
                let h = self.h.func(Helper::IPow);
                self.fb.get(a).get(b).op(I::Call(h));
            }
            B::Shl => {
                self.fb.i32c(0).get(a).get(b).op(I::I32Shl);
                self.fb.get(b).i32c(width).op(I::I32GeU).op(I::Select);
            }
            B::Shr if d.is_signed_int() => {
                self.fb
                    .get(a)
                    .i32c(31)
                    .op(I::I32ShrS)
                    .get(a)
                    .get(b)
                    .op(I::I32ShrS);
                self.fb.get(b).i32c(width).op(I::I32GeU).op(I::Select);
            }
            B::Shr => {
                self.fb.i32c(0).get(a).get(b).op(I::I32ShrU);
                self.fb.get(b).i32c(width).op(I::I32GeU).op(I::Select);
            }
        }
        canon(&mut self.fb, d);
        Ok(())
    }

    fn cast_s(&mut self, from: DType, to: DType) -> Result<(), Error> {
        // fp8 lanes are f32 lanes holding fp8 values: a cast from fp8 is a
        // cast from f32, and a cast to it rounds, as one to bf16 does.
        let fb = &mut self.fb;
        match (is_f(from), is_f(to)) {
            (true, true) => {
                if to == DType::BF16 {
                    round_bf16(fb);
                } else if is_f8(to) {
                    super::f8::round_s(fb, to);
                }
            }
            (true, false) if to == DType::Bool => {
                fb.f32c(0.0).op(I::F32Ne);
            }
            (true, false) => {
                fb.op(I::I32TruncSatF32S);
                if let Some((lo, hi)) = int_range(to) {
                    // Saturate: a value past a bound becomes the bound.
                    let t = fb.i32l();
                    for (bound, past) in [(lo, I::I32LtS), (hi, I::I32GtS)] {
                        fb.set(t)
                            .i32c(bound)
                            .get(t)
                            .get(t)
                            .i32c(bound)
                            .op(past)
                            .op(I::Select);
                    }
                }
            }
            (false, true) => {
                fb.op(I::F32ConvertI32S);
                if to == DType::BF16 {
                    round_bf16(fb);
                } else if is_f8(to) {
                    super::f8::round_s(fb, to);
                }
            }
            (false, false) if to == DType::Bool => {
                fb.i32c(0).op(I::I32Ne);
            }
            (false, false) => canon(fb, to),
        }
        Ok(())
    }

    fn bitcast_s(&mut self, from: DType, to: DType) -> Result<(), Error> {
        if is_f8(from) || is_f8(to) {
            return Err(self.unsupported(format!("a bitcast from {from} to {to}")));
        }
        let fb = &mut self.fb;
        if is_f(from) {
            fb.op(I::I32ReinterpretF32);
            if from == DType::BF16 {
                fb.i32c(16).op(I::I32ShrS);
            }
        }
        if is_f(to) {
            if to == DType::BF16 {
                fb.i32c(16).op(I::I32Shl);
            }
            fb.op(I::F32ReinterpretI32);
        } else if to == DType::Bool {
            fb.i32c(0).op(I::I32Ne);
        } else {
            canon(fb, to);
        }
        Ok(())
    }
}

fn is_f8(d: DType) -> bool {
    matches!(d, DType::F8E4M3FN | DType::F8E5M2)
}

/// The saturation bounds of a float-to-integer cast to a narrow dtype.
fn int_range(d: DType) -> Option<(i32, i32)> {
    match d {
        DType::I8 => Some((-128, 127)),
        DType::I16 => Some((-32768, 32767)),
        DType::U8 => Some((0, 255)),
        _ => None,
    }
}

fn cast_v(fb: &mut Fb, from: DType, to: DType) {
    match (is_f(from), is_f(to)) {
        (true, true) => {
            if to == DType::BF16 {
                round_bf16_v(fb);
            }
        }
        (true, false) if to == DType::Bool => {
            fb.f32x4c(0.0).op(I::F32x4Ne).i32x4c(1).op(I::V128And);
        }
        (true, false) => {
            fb.op(I::I32x4TruncSatF32x4S);
            if let Some((lo, hi)) = int_range(to) {
                fb.i32x4c(lo).op(I::I32x4MaxS).i32x4c(hi).op(I::I32x4MinS);
            }
        }
        (false, true) => {
            fb.op(I::F32x4ConvertI32x4S);
            if to == DType::BF16 {
                round_bf16_v(fb);
            }
        }
        (false, false) if to == DType::Bool => {
            fb.i32x4c(0).op(I::I32x4Ne).i32x4c(1).op(I::V128And);
        }
        (false, false) => canon_v(fb, to),
    }
}

fn bitcast_v(fb: &mut Fb, from: DType, to: DType) {
    if from == DType::BF16 {
        fb.i32c(16).op(I::I32x4ShrS);
    }
    if to == DType::BF16 {
        fb.i32c(16).op(I::I32x4Shl);
    } else if to == DType::Bool {
        fb.i32x4c(0).op(I::I32x4Ne).i32x4c(1).op(I::V128And);
    } else if !is_f(to) {
        canon_v(fb, to);
    }
}

/// Pushes a literal as a lane value (or four of them).
pub(super) fn push_const(fb: &mut Fb, l: Literal, d: DType, vec: bool) {
    let bits: u32 = match l {
        Literal::Float(x) if is_f(d) => {
            let f = x as f32;
            let b = f.to_bits();
            if d == DType::BF16 {
                // Round the literal to bf16 as a cast would.
                let r = if f.is_nan() {
                    b | 0x40_0000
                } else {
                    b.wrapping_add(0x7FFF + ((b >> 16) & 1))
                };
                r & 0xFFFF_0000
            } else {
                b
            }
        }
        Literal::Int(v) if is_f(d) => (v as f32).to_bits(),
        Literal::Float(x) => x as i32 as u32,
        Literal::Int(v) => {
            let v = v as i32;
            match d {
                DType::I8 => v as i8 as i32 as u32,
                DType::I16 => v as i16 as i32 as u32,
                DType::U8 => v as u8 as u32,
                DType::Bool => u32::from(v != 0),
                _ => v as u32,
            }
        }
        Literal::Bool(b) => u32::from(b),
    };
    match (vec, lane_type(d)) {
        (true, _) => {
            fb.i32x4c(bits as i32);
        }
        (false, ValType::F32) => {
            fb.f32c(f32::from_bits(bits));
        }
        (false, _) => {
            fb.i32c(bits as i32);
        }
    }
}
