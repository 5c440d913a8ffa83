//! A small builder for one Wasm function body: typed locals, an instruction
//! list, and structured-loop helpers. Instructions are collected first and
//! encoded at the end because Wasm wants every local declared up front.

use wasm_encoder::{BlockType, Function, Instruction as I, MemArg, ValType};

pub(crate) struct Fb {
    nparams: u32,
    locals: Vec<ValType>,
    code: Vec<I<'static>>,
}

/// A memory operand with a static offset; the alignment hint is the natural
/// one for the access width.
pub(crate) fn mem(offset: u32, align_log2: u32) -> MemArg {
    MemArg {
        offset: u64::from(offset),
        align: align_log2,
        memory_index: 0,
    }
}

/// A 32-bit access (`i32.load`, `f32.store`...).
pub(crate) fn m32(offset: u32) -> MemArg {
    mem(offset, 2)
}

/// A 128-bit access; lane data is only 4-byte aligned in general.
pub(crate) fn m128(offset: u32) -> MemArg {
    mem(offset, 2)
}

impl Fb {
    pub fn new(nparams: u32) -> Fb {
        Fb {
            nparams,
            locals: Vec::new(),
            code: Vec::new(),
        }
    }

    /// Declares a fresh local.
    pub fn local(&mut self, t: ValType) -> u32 {
        self.locals.push(t);
        self.nparams + self.locals.len() as u32 - 1
    }

    pub fn i32l(&mut self) -> u32 {
        self.local(ValType::I32)
    }

    pub fn op(&mut self, i: I<'static>) -> &mut Self {
        self.code.push(i);
        self
    }

    pub fn get(&mut self, l: u32) -> &mut Self {
        self.op(I::LocalGet(l))
    }

    pub fn set(&mut self, l: u32) -> &mut Self {
        self.op(I::LocalSet(l))
    }

    pub fn tee(&mut self, l: u32) -> &mut Self {
        self.op(I::LocalTee(l))
    }

    pub fn i32c(&mut self, v: i32) -> &mut Self {
        self.op(I::I32Const(v))
    }

    pub fn u32c(&mut self, v: u32) -> &mut Self {
        self.op(I::I32Const(v as i32))
    }

    pub fn f32c(&mut self, v: f32) -> &mut Self {
        self.op(I::F32Const(v.into()))
    }

    pub fn f64c(&mut self, v: f64) -> &mut Self {
        self.op(I::F64Const(v.into()))
    }

    /// A v128 constant with four equal f32 lanes.
    pub fn f32x4c(&mut self, v: f32) -> &mut Self {
        let b = u128::from(v.to_bits());
        self.op(I::V128Const((b | b << 32 | b << 64 | b << 96) as i128))
    }

    /// A v128 constant with four equal i32 lanes.
    pub fn i32x4c(&mut self, v: i32) -> &mut Self {
        let b = u128::from(v as u32);
        self.op(I::V128Const((b | b << 32 | b << 64 | b << 96) as i128))
    }

    /// `memory.copy` of the (destination, source, bytes) on the stack.
    pub fn memory_copy(&mut self) -> &mut Self {
        self.op(I::MemoryCopy {
            src_mem: 0,
            dst_mem: 0,
        })
    }

    /// Copies `lanes` 4-byte lanes from the address in local `src` to the
    /// one in local `dst`.
    pub fn copy_lanes(&mut self, dst: u32, src: u32, lanes: u64) -> &mut Self {
        self.get(dst)
            .get(src)
            .u32c((lanes * 4) as u32)
            .memory_copy()
    }

    /// Copies one 4-byte lane from the address in local `src` to the one in
    /// local `dst`, through the stack rather than `memory.copy`.
    pub fn copy_lane(&mut self, dst: u32, src: u32) -> &mut Self {
        self.get(dst)
            .get(src)
            .op(I::I32Load(m32(0)))
            .op(I::I32Store(m32(0)))
    }

    /// `local += delta` for an i32 local.
    pub fn add_to(&mut self, l: u32, delta: i32) -> &mut Self {
        self.get(l).i32c(delta).op(I::I32Add).set(l)
    }

    /// `for (l = 0; l < n; l += step) body` where `n` is a local holding a
    /// non-negative count.
    pub fn dyn_loop(&mut self, l: u32, n: u32, step: u32, body: impl FnOnce(&mut Fb)) {
        self.i32c(0).set(l);
        self.op(I::Block(BlockType::Empty));
        self.get(l).get(n).op(I::I32GeU).op(I::BrIf(0));
        self.op(I::Loop(BlockType::Empty));
        body(self);
        self.get(l).u32c(step).op(I::I32Add).tee(l).get(n);
        self.op(I::I32LtU).op(I::BrIf(0)).op(I::End).op(I::End);
    }

    /// `if (cond on the stack) { then }`.
    pub fn if_(&mut self, then: impl FnOnce(&mut Fb)) {
        self.op(I::If(BlockType::Empty));
        then(self);
        self.op(I::End);
    }

    /// Encodes the body.
    pub fn finish(self) -> Function {
        let mut f = Function::new_with_locals_types(self.locals);
        for i in &self.code {
            f.instruction(i);
        }
        f.instruction(&I::End);
        f
    }
}
