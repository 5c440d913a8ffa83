//! Masked stores on the CPU reference: `store(y[win], v, mask=m)` writes
//! the elements whose mask lane is true, one at a time, and leaves the
//! others (and, under `check_uninit`, their written-maps) untouched.

use super::memory::{log2, store_elem, Run, Win};
use super::{is_f, Addr, Em};
use crate::wasm::fb::mem;
use crate::wasm::Error;
use pk_lang::ir::{RefView, Value};
use wasm_encoder::{BlockType, Instruction as I};

impl Em<'_, '_> {
    /// A masked store (`store(y[win], v, mask=m)`): the elements whose
    /// mask lane is true are written (and, under `check_uninit`, marked
    /// written); the others keep their contents and their shadow, so that a
    /// never-written element stays uninitialised, as on the TPU.
    pub(super) fn masked_store(&mut self, v: &RefView, x: Value, m: Value) -> Result<(), Error> {
        let w = self.window(v, "store")?;
        let (tile, mask) = (self.addr(x), self.addr(m));
        let shadow = if self.check_uninit { w.shadow } else { None };
        self.walk(&w, |em, run| em.masked_run(&w, run, tile, mask, shadow));
        Ok(())
    }

    /// Writes the lanes of one run whose mask lane is not zero, one
    /// element at a time.
    fn masked_run(&mut self, w: &Win, run: &Run, tile: Addr, mask: Addr, shadow: Option<u32>) {
        let (d, mk, s, j) = (
            self.fb.i32l(),
            self.fb.i32l(),
            self.fb.i32l(),
            self.fb.i32l(),
        );
        for (local, base) in [(d, tile), (mk, mask)] {
            self.push_addr(base);
            self.fb
                .get(run.elem)
                .i32c(2)
                .op(I::I32Shl)
                .op(I::I32Add)
                .set(local);
        }
        self.fb.get(run.addr).set(s);
        let (dt, step) = (w.dtype, (run.stride * u64::from(w.eb)) as i32);
        self.count_loop(j, run.len, 1, |em| {
            em.fb.get(mk).op(I::I32Load(mem(0, 2)));
            em.fb.op(I::If(BlockType::Empty));
            em.fb.get(s).get(d);
            em.fb.op(if is_f(dt) {
                I::F32Load(mem(0, 2))
            } else {
                I::I32Load(mem(0, 2))
            });
            store_elem(&mut em.fb, dt, 0);
            if let Some(sh) = shadow {
                em.fb.get(s).u32c(w.ref_offset).op(I::I32Sub);
                em.fb.i32c(log2(w.eb)).op(I::I32ShrU).u32c(sh).op(I::I32Add);
                em.fb.i32c(1).op(I::I32Store8(mem(0, 0)));
            }
            em.fb.op(I::End);
            em.fb.add_to(d, 4).add_to(mk, 4).add_to(s, step);
        });
    }
}
