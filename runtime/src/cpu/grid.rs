//! Pallas's grid contract on one instance.
//!
//! The grid runs in row-major order. Its leading `parallel` axes split it
//! into *units* (one per index of those axes), the work a TensorCore of a
//! megacore chip would take; a unit's steps run in order on one instance.
//! Per step: each blocked operand's index map gives its block; an input
//! block is copied from HBM into VMEM when its index changes; an output
//! block is written back to HBM when its index changes and at the end of
//! the unit, so consecutive steps on one block accumulate in VMEM. Scratch
//! and whole-array operands live for the whole unit; scratch starts each
//! unit as poison (unless the kernel overwrites it whole before any read),
//! so results never depend on which units share a core.
//! An input block that nothing writes (not the kernel, not an aliased
//! output, not a DMA) is still valid when the next unit starts on the same
//! block, and is not copied again.

use super::array::fill_poison;
use super::buffers::{Buf, Buffers};
use super::error::{at, located, Error};
use super::instance::{step_str, Instance};
use super::mxu::Direct;
use super::window::{self, Win};
use super::CpuKernel;
use pk_lang::ir::DType;
use pk_lowering::wasm::abi::{
    DynamicAxis, GridAxis, OperandInfo, RefOrigin, Role, Semantics, Space,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::Val;

/// How the grid splits into units.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    pub extents: Vec<u64>,
    /// The number of leading parallel axes.
    pub prefix: usize,
    pub units: u64,
    pub per_unit: u64,
}

fn unravel(mut i: u64, extents: &[u64], out: &mut Vec<u64>) {
    let start = out.len();
    for &e in extents.iter().rev() {
        out.push(i % e.max(1));
        i /= e.max(1);
    }
    out[start..].reverse();
}

impl Schedule {
    /// The schedule of one run: a dynamic axis takes its number of steps
    /// from its prefetch element in `buffers` (PK1035 when it is negative or
    /// above the axis's bound).
    pub fn new(k: &CpuKernel, buffers: &Buffers) -> Result<Schedule, Error> {
        let m = &k.m;
        let mut extents: Vec<u64> = Vec::with_capacity(m.grid.len());
        for a in &m.grid {
            extents.push(match &a.dynamic {
                Some(d) => dynamic_extent(k, a, d, buffers)?,
                None => a.extent,
            });
        }
        let prefix = m
            .grid
            .iter()
            .take_while(|a| a.semantics == Semantics::Parallel)
            .count();
        Ok(Schedule {
            units: extents[..prefix].iter().product(),
            per_unit: extents[prefix..].iter().product(),
            extents,
            prefix,
        })
    }

    /// The grid indices of step `s` of unit `u`.
    pub fn step(&self, u: u64, s: u64) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.extents.len());
        unravel(u, &self.extents[..self.prefix], &mut v);
        unravel(s, &self.extents[self.prefix..], &mut v);
        v
    }
}

/// The number of steps of dynamic axis `a`: its prefetch element, checked
/// against the bound the kernel declared.
fn dynamic_extent(
    k: &CpuKernel,
    a: &GridAxis,
    d: &DynamicAxis,
    buffers: &Buffers,
) -> Result<u64, Error> {
    let o = &k.m.operands[d.operand];
    let at_byte = d.element as usize * 4;
    let value = buffers.read(buffers.of_operand[d.operand], |b| {
        b.get(at_byte..at_byte + 4)
            .map(|w| i32::from_le_bytes([w[0], w[1], w[2], w[3]]))
    })?;
    let Some(value) = value else {
        return Err(Error::Internal(format!(
            "dynamic grid axis `{}` reads element {} of `{}`, past its end",
            a.name, d.element, o.name
        )));
    };
    if value < 0 || value as u64 > a.extent {
        let (src, span) = located(&k.m, &o.loc);
        return Err(Error::DynamicExtent {
            message: format!(
                "grid axis `{}` reads {value} steps from element {} of `{}`, outside 0..={} (its declared bound) ({})",
                a.name,
                d.element,
                o.name,
                a.extent,
                at(&o.loc)
            ),
            src,
            span,
        });
    }
    Ok(value as u64)
}

/// The output blocks a unit wrote, with the first step writing each.
pub(crate) type Visits = Vec<HashMap<Vec<i64>, Vec<u64>>>;

/// The most blocks of one output whose owners [`Claims`] records (8 bytes
/// each); an output with more is written back through VMEM as usual.
const MAX_CLAIMED_BLOCKS: u64 = 1 << 20;

/// Per output whose blocks the MXU may write in place (`RefSlot::mxu_out`),
/// the unit that first wrote each block in this run (0: none yet, else the
/// unit + 1). A unit writes a block of such an output in the array only
/// after claiming it, so that no two workers ever write the same bytes of
/// the array, even for a kernel whose units race (which the race check
/// reports after the run: a unit that finds its block claimed by another
/// computes it in VMEM and drops it).
pub(crate) struct Claims {
    outputs: Vec<Option<Claimed>>,
}

/// One output's blocks and the buffer they are written into.
struct Claimed {
    /// Blocks per dimension.
    counts: Vec<u64>,
    owners: Vec<AtomicU64>,
    /// The output buffer's first byte and length, taken once before the
    /// workers start.
    array: (*mut u8, usize),
}

// SAFETY: the pointer is only handed to runners, which write through it
// the blocks they claimed here (disjoint bytes), while the buffer lives:
// the claims are dropped before the run's buffers are.
unsafe impl Sync for Claims {}
// SAFETY: as above.
unsafe impl Send for Claims {}

impl Claims {
    pub fn new(k: &CpuKernel, buffers: &Buffers) -> Claims {
        let outputs =
            k.m.operands
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    let slot = k.m.refs.get(o.ref_index)?;
                    let bs = o.block.as_ref()?;
                    if o.role != Role::Output || o.aliases.is_some() || !slot.mxu_out {
                        return None;
                    }
                    let array = buffers.out_ptr(*buffers.of_operand.get(i)?)?;
                    let counts = blocks_per_dim(&o.shape, bs);
                    let total = counts.iter().try_fold(1u64, |a, &c| a.checked_mul(c))?;
                    if total > MAX_CLAIMED_BLOCKS {
                        return None;
                    }
                    Some(Claimed {
                        counts,
                        owners: (0..total).map(|_| AtomicU64::new(0)).collect(),
                        array,
                    })
                })
                .collect();
        Claims { outputs }
    }

    /// Output `i`'s buffer, when its blocks may be written in place.
    fn array(&self, i: usize) -> Option<(*mut u8, usize)> {
        Some(self.outputs.get(i)?.as_ref()?.array)
    }

    /// Claims block `b` of output `i` for unit `u`: whether no other unit
    /// has it.
    fn claim(&self, i: usize, b: &[i64], u: u64) -> bool {
        let Some(Some(Claimed { counts, owners, .. })) = self.outputs.get(i) else {
            return false;
        };
        let mut flat = 0u64;
        for (&x, &c) in b.iter().zip(counts) {
            flat = flat * c + x as u64;
        }
        let Some(owner) = owners.get(flat as usize) else {
            return false;
        };
        match owner.compare_exchange(0, u + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(o) => o == u + 1,
        }
    }
}

/// Where the current block of an output whose blocks the MXU may write in
/// place lives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placed {
    /// In VMEM, copied into the array at write-back.
    Vmem,
    /// In the output array, written there by the MXU and `fill`.
    Array,
    /// In VMEM, and dropped: another unit claimed the block (a race the
    /// check after the run reports).
    Dropped,
}

/// What the executor knows of one operand.
struct Op<'a> {
    info: &'a OperandInfo,
    dtype: DType,
    eb: usize,
    offset: Option<usize>,
    shadow: Option<usize>,
    /// The VMEM buffer's shape: the block (squeezed dims 1) or the array.
    buf_shape: Vec<u64>,
    buffer: usize,
    last: Option<Vec<i64>>,
    /// A blocked input that neither the kernel nor the run writes: its
    /// block stays valid from one unit to the next.
    keep: bool,
    /// Each step writes the whole buffer before reading it, so a new
    /// output block needs no poison.
    filled_first: bool,
    /// A blocked float input that only the MXU reads, whole, from an
    /// array nothing writes: a full block stays in the array and the MXU
    /// reads it there (a partial block is copied in, padding and all).
    direct: bool,
    /// A blocked f32 output that only the MXU and `fill` write (with
    /// [`Claims`] for it): the output buffer's first byte and length. A
    /// full block is written where it lies in the array; every block of
    /// such an output is written through this pointer.
    out_array: Option<(*mut u8, usize)>,
    placed: Placed,
}

fn loc_err(
    k: &CpuKernel,
    i: usize,
    make: impl FnOnce(
        String,
        Option<std::sync::Arc<miette::NamedSource<String>>>,
        Option<miette::SourceSpan>,
    ) -> Error,
    msg: String,
) -> Error {
    let loc = &k.m.operands[i].loc;
    let (src, span) = located(&k.m, loc);
    make(format!("{msg} ({})", at(loc)), src, span)
}

pub(crate) struct Runner<'a> {
    k: &'a CpuKernel,
    pub inst: Instance,
    ops: Vec<Op<'a>>,
    sched: &'a Schedule,
    claims: &'a Claims,
    /// The unit running.
    unit: u64,
}

/// A blocked operand whose blocks are matrices: every block dimension but
/// the last two is 1, so a block is rows of the array.
fn rows_of_array(o: &OperandInfo) -> bool {
    o.block
        .as_ref()
        .is_some_and(|b| b.len() >= 2 && b[..b.len() - 2].iter().all(|&d| d == 1))
}

impl<'a> Runner<'a> {
    pub fn new(
        k: &'a CpuKernel,
        inst: Instance,
        sched: &'a Schedule,
        claims: &'a Claims,
    ) -> Result<Runner<'a>, Error> {
        let m = &k.m;
        let mut ops = Vec::new();
        for (i, o) in m.operands.iter().enumerate() {
            let slot = &m.refs[o.ref_index];
            let dtype = k.dtypes[i];
            let out_array = claims
                .array(i)
                .filter(|_| dtype == DType::F32 && slot.shadow.is_none() && rows_of_array(o));
            ops.push(Op {
                info: o,
                dtype,
                eb: dtype.bytes() as usize,
                offset: slot.offset.map(|x| x as usize),
                shadow: slot.shadow.map(|x| x as usize),
                buf_shape: o.block.clone().unwrap_or_else(|| o.shape.clone()),
                buffer: inst.store.data().buffers.of_operand[i],
                last: None,
                keep: o.role != Role::Output
                    && o.block.is_some()
                    && !slot.written
                    && inst.store.data().buffers.read_only(i),
                filled_first: slot.filled_first,
                direct: o.role == Role::Input
                    && slot.mxu_only
                    && matches!(dtype, DType::F32 | DType::BF16)
                    && rows_of_array(o)
                    && inst.store.data().buffers.read_only(i),
                out_array,
                placed: Placed::Vmem,
            });
        }
        Ok(Runner {
            k,
            inst,
            ops,
            sched,
            claims,
            unit: 0,
        })
    }

    pub fn into_instance(self) -> Instance {
        self.inst
    }

    /// Runs unit `u`, returning the output blocks it wrote.
    pub fn unit(&mut self, u: u64) -> Result<Visits, Error> {
        self.unit = u;
        self.start_unit()?;
        let mut visits: Visits = vec![HashMap::new(); self.ops.len()];
        let mut left: Vec<HashMap<Vec<i64>, Vec<u64>>> = vec![HashMap::new(); self.ops.len()];
        let mut prev: Vec<u64> = Vec::new();
        for s in 0..self.sched.per_unit {
            let step = self.sched.step(u, s);
            self.inst.store.data_mut().step = step.clone();
            let args: Vec<Val> = step.iter().map(|&v| Val::I32(v as i32)).collect();
            for i in 0..self.ops.len() {
                let Some(f) = self.inst.index_maps[i] else {
                    continue;
                };
                let mut res = vec![Val::I32(0); self.ops[i].info.shape.len()];
                self.inst.call(f, &args, &mut res)?;
                let b: Vec<i64> = res
                    .iter()
                    .map(|v| i64::from(v.i32().unwrap_or(-1)))
                    .collect();
                self.check_block(i, &b, &step)?;
                if self.ops[i].last.as_ref() == Some(&b) {
                    continue;
                }
                match self.ops[i].info.role {
                    Role::Output => {
                        if let Some(old) = self.ops[i].last.take() {
                            self.write_back(i, &old)?;
                            left[i].insert(old, prev.clone());
                        }
                        if let Some(when) = left[i].get(&b) {
                            return Err(loc_err(
                                self.k,
                                i,
                                |message, src, span| Error::Revisit { message, src, span },
                                format!(
                                    "output `{}`: grid step {} maps to block {}, which was written back after step {} and is now visited again",
                                    self.ops[i].info.name,
                                    step_str(&step),
                                    block_str(&b),
                                    step_str(when)
                                ),
                            ));
                        }
                        visits[i].entry(b.clone()).or_insert_with(|| step.clone());
                        self.place_out(i, &b)?;
                    }
                    _ => self.copy_in(i, &b)?,
                }
                self.ops[i].last = Some(b);
            }
            let kernel = self.inst.kernel;
            self.inst.call(kernel, &args, &mut [])?;
            prev = step;
        }
        self.end_unit(&prev, &mut visits)?;
        Ok(visits)
    }

    fn check_block(&self, i: usize, b: &[i64], step: &[u64]) -> Result<(), Error> {
        let o = &self.ops[i];
        for (d, &bi) in b.iter().enumerate() {
            let bs = o.buf_shape[d] as i64;
            let n = o.info.shape[d] as i64;
            if bi < 0 || bi.saturating_mul(bs) >= n {
                return Err(loc_err(
                    self.k,
                    i,
                    |message, src, span| Error::BlockIndex { message, src, span },
                    format!(
                        "operand `{}`: at grid step {} the index map gives block {} whose dimension {d} starts at element {} of {n}",
                        o.info.name,
                        step_str(step),
                        block_str(b),
                        bi.saturating_mul(bs)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The window of block `b` in the array, clipped at its end.
    fn block_window(&self, i: usize, b: &[i64]) -> (Vec<u64>, Vec<u64>) {
        let o = &self.ops[i];
        let start: Vec<u64> = b
            .iter()
            .zip(&o.buf_shape)
            .map(|(&bi, &bs)| bi as u64 * bs)
            .collect();
        let size = start
            .iter()
            .zip(&o.buf_shape)
            .zip(&o.info.shape)
            .map(|((&s, &bs), &n)| bs.min(n - s))
            .collect();
        (start, size)
    }

    fn mem(&mut self) -> &mut [u8] {
        self.inst.memory.data_mut(&mut self.inst.store)
    }

    /// Copies an input block into VMEM; padding past the array's end reads
    /// as poison. A full block that only the MXU reads stays in the array.
    fn copy_in(&mut self, i: usize, b: &[i64]) -> Result<(), Error> {
        let (start, size) = self.block_window(i, b);
        if self.ops[i].direct && size == self.ops[i].buf_shape {
            if let Some(block) = self.in_array(i, &start) {
                // The MXU reads the block from the array, as the chip's
                // copy would: it counts as moved in.
                let bytes = size.iter().product::<u64>() * self.ops[i].eb as u64;
                self.inst.store.data_mut().traffic.blocks_in += bytes;
                let r = self.ops[i].info.ref_index;
                self.inst.store.data_mut().mxu.read_from_array(r, block);
                // The block is whole array data, as if it had been copied
                // in: with `check_uninit` its shadow says every element was
                // written, so the loads that feed the MXU pass the check.
                // (Partial blocks take the copy below, padding unmarked.)
                if let Some(sh) = self.ops[i].shadow {
                    let n = self.ops[i].buf_shape.iter().product::<u64>() as usize;
                    self.mem()[sh..sh + n].fill(1);
                }
                return Ok(());
            }
        }
        self.load_window(i, &start, &size)
    }

    /// Block `start` of input `i` where it lies in the input array (whose
    /// last two dimensions are the block's rows and columns).
    fn in_array(&self, i: usize, start: &[u64]) -> Option<Direct> {
        let o = &self.ops[i];
        let Buf::Shared(array) = self.inst.store.data().buffers.bufs.get(o.buffer)? else {
            return None;
        };
        let mut elem = 0u64;
        for (&s, &n) in start.iter().zip(&o.info.shape) {
            elem = elem * n + s;
        }
        let at = usize::try_from(elem).ok()?.checked_mul(o.eb)?;
        if !(array.bytes().as_ptr() as usize + at).is_multiple_of(o.eb) {
            return None;
        }
        Some(Direct {
            array: array.clone(),
            at,
            ld: u32::try_from(*o.info.shape.last()?).ok()?,
            vmem: u32::try_from(o.offset?).ok()?,
        })
    }

    fn load_window(&mut self, i: usize, start: &[u64], size: &[u64]) -> Result<(), Error> {
        let (off, eb, dtype, buffer) = {
            let o = &self.ops[i];
            (o.offset, o.eb, o.dtype, o.buffer)
        };
        let Some(off) = off else {
            return Ok(());
        };
        let r = self.ops[i].info.ref_index;
        let h = self.inst.store.data_mut();
        h.mxu.copied(r);
        h.traffic.blocks_in += size.iter().product::<u64>() * eb as u64;
        let buf_shape = self.ops[i].buf_shape.clone();
        let shape = self.ops[i].info.shape.clone();
        let n: usize = buf_shape.iter().product::<u64>() as usize;
        let partial = size.iter().zip(&buf_shape).any(|(a, b)| a != b);
        let buffers = self.inst.store.data().buffers.clone();
        let shadow = self.ops[i].shadow;
        let mem = self.mem();
        let dst = &mut mem[off..off + n * eb];
        if partial {
            fill_poison(dtype, dst);
        }
        let zero = vec![0u64; buf_shape.len()];
        buffers.read(buffer, |src| {
            window::copy(
                src,
                &Win {
                    shape: &shape,
                    start,
                    size,
                },
                dst,
                &Win {
                    shape: &buf_shape,
                    start: &zero,
                    size,
                },
                eb,
            )
        })?;
        if let Some(sh) = shadow {
            let s = &mut mem[sh..sh + n];
            s.fill(0);
            window::fill(
                s,
                &Win {
                    shape: &buf_shape,
                    start: &zero,
                    size,
                },
                1,
                1,
            );
        }
        Ok(())
    }

    /// Block `b` of output `i` where it lies in the output array: its
    /// first element and the array's row stride (elements), checked to lie
    /// inside the buffer. Only for outputs with `out_array`.
    fn out_rows(&self, i: usize, start: &[u64], size: &[u64]) -> Result<(*mut u8, usize), Error> {
        let o = &self.ops[i];
        let bad = || Error::Internal(format!("block of `{}` outside its array", o.info.name));
        let (base, len) = o.out_array.ok_or_else(bad)?;
        let mut elem = 0u64;
        for (&s, &n) in start.iter().zip(&o.info.shape) {
            elem = elem * n + s;
        }
        let ld = *o.info.shape.last().ok_or_else(bad)?;
        let rows = size[size.len() - 2];
        let cols = size[size.len() - 1];
        let end = elem + rows.saturating_sub(1) * ld + cols;
        if end.saturating_mul(o.eb as u64) > len as u64 {
            return Err(bad());
        }
        // SAFETY: `elem` lies inside the buffer (checked above).
        Ok((unsafe { base.add(elem as usize * o.eb) }, ld as usize))
    }

    /// Sets up a newly visited block of output `i`: where a kernel's output
    /// is written only by the MXU and `fill`, a full block claimed by this
    /// unit is written in the output array itself, else the block is in
    /// VMEM (see [`Self::prepare_out`]).
    fn place_out(&mut self, i: usize, b: &[i64]) -> Result<(), Error> {
        if self.ops[i].out_array.is_none() {
            self.prepare_out(i);
            return Ok(());
        }
        let r = self.ops[i].info.ref_index;
        let (start, size) = self.block_window(i, b);
        let placed = if !self.claims.claim(i, b, self.unit) {
            Placed::Dropped
        } else if size == self.ops[i].buf_shape {
            Placed::Array
        } else {
            Placed::Vmem
        };
        self.ops[i].placed = placed;
        if placed != Placed::Array {
            self.inst.store.data_mut().mxu.write_in_array(r, None);
            self.prepare_out(i);
            return Ok(());
        }
        let (ptr, ld) = self.out_rows(i, &start, &size)?;
        let vmem = self.ops[i]
            .offset
            .ok_or_else(|| Error::Internal("an output block without VMEM".into()))?;
        let block = super::mxu::DirectOut {
            ptr: ptr as *mut f32,
            ld,
            rows: size[size.len() - 2] as usize,
            cols: size[size.len() - 1] as usize,
            vmem: vmem as u32,
            // A block the kernel overwrites whole first needs no poison.
            fresh: !self.ops[i].filled_first,
        };
        self.inst
            .store
            .data_mut()
            .mxu
            .write_in_array(r, Some(block));
        Ok(())
    }

    /// A newly visited output block starts as poison (not loaded from HBM),
    /// unless the kernel overwrites it whole first.
    fn prepare_out(&mut self, i: usize) {
        let (off, eb, dtype, shadow) = {
            let o = &self.ops[i];
            (o.offset, o.eb, o.dtype, o.shadow)
        };
        let n: usize = self.ops[i].buf_shape.iter().product::<u64>() as usize;
        let filled = self.ops[i].filled_first;
        if let Some(off) = off {
            let mem = self.mem();
            if !filled {
                fill_poison(dtype, &mut mem[off..off + n * eb]);
            }
            if let Some(sh) = shadow {
                mem[sh..sh + n].fill(0);
            }
        }
    }

    fn write_back(&mut self, i: usize, b: &[i64]) -> Result<(), Error> {
        let (start, size) = self.block_window(i, b);
        if self.ops[i].out_array.is_none() {
            return self.store_window(i, &start, &size);
        }
        let bytes = size.iter().product::<u64>() * self.ops[i].eb as u64;
        let r = self.ops[i].info.ref_index;
        match self.ops[i].placed {
            Placed::Array => {
                let h = self.inst.store.data_mut();
                h.traffic.blocks_out += bytes;
                if let Some(mut block) = h.mxu.write_in_array(r, None) {
                    if block.fresh {
                        block.fill(pk_lowering::wasm::abi::poison::F32);
                    }
                }
            }
            Placed::Vmem => {
                self.inst.store.data_mut().traffic.blocks_out += bytes;
                let (ptr, ld) = self.out_rows(i, &start, &size)?;
                let (rows, cols) = (size[size.len() - 2] as usize, size[size.len() - 1] as usize);
                let (off, eb) = (self.ops[i].offset.unwrap_or(0), self.ops[i].eb);
                let bcols = self.ops[i].buf_shape[self.ops[i].buf_shape.len() - 1] as usize;
                let mem = self.inst.memory.data(&self.inst.store);
                for row in 0..rows {
                    let src = &mem[off + row * bcols * eb..off + (row * bcols + cols) * eb];
                    // SAFETY: row `row` of the block lies inside the output
                    // buffer (checked by `out_rows`), this unit claimed the
                    // block, and the buffer is written only through its
                    // pointer during the run.
                    let dst = unsafe {
                        std::slice::from_raw_parts_mut(ptr.add(row * ld * eb), cols * eb)
                    };
                    dst.copy_from_slice(src);
                }
            }
            Placed::Dropped => {}
        }
        self.ops[i].placed = Placed::Vmem;
        Ok(())
    }

    fn store_window(&mut self, i: usize, start: &[u64], size: &[u64]) -> Result<(), Error> {
        let (off, eb, buffer) = {
            let o = &self.ops[i];
            (o.offset, o.eb, o.buffer)
        };
        let Some(off) = off else {
            return Ok(());
        };
        self.inst.store.data_mut().traffic.blocks_out += size.iter().product::<u64>() * eb as u64;
        let buf_shape = self.ops[i].buf_shape.clone();
        let shape = self.ops[i].info.shape.clone();
        let n: usize = buf_shape.iter().product::<u64>() as usize;
        let buffers = self.inst.store.data().buffers.clone();
        let mem = self.inst.memory.data(&self.inst.store);
        let zero = vec![0u64; buf_shape.len()];
        buffers.write(buffer, |dst| {
            window::copy(
                &mem[off..off + n * eb],
                &Win {
                    shape: &buf_shape,
                    start: &zero,
                    size,
                },
                dst,
                &Win {
                    shape: &shape,
                    start,
                    size,
                },
                eb,
            )
        })
    }

    fn start_unit(&mut self) -> Result<(), Error> {
        let m = self.k.m.clone();
        for (r, slot) in m.refs.iter().enumerate() {
            let (Some(off), RefOrigin::Scratch(_)) = (slot.offset, slot.origin) else {
                continue;
            };
            let off = off as usize;
            let n: usize = slot.shape.iter().product::<u64>() as usize;
            let d = self.k.ref_dtypes[r];
            let mem = self.mem();
            if slot.space == Space::Semaphore {
                mem[off..off + 4 * n].fill(0);
                continue;
            }
            if !slot.filled_first {
                fill_poison(d, &mut mem[off..off + n * d.bytes() as usize]);
            }
            if let Some(sh) = slot.shadow {
                mem[sh as usize..sh as usize + n].fill(0);
            }
        }
        for i in 0..self.ops.len() {
            if !self.ops[i].keep {
                self.ops[i].last = None;
            }
            let o = &self.ops[i];
            if o.info.block.is_some() || o.offset.is_none() {
                continue;
            }
            let full = o.info.shape.clone();
            let zero = vec![0u64; full.len()];
            if o.info.role == Role::Output {
                self.prepare_out(i);
            } else {
                self.load_window(i, &zero, &full)?;
            }
        }
        self.inst.store.data_mut().inflight.clear();
        Ok(())
    }

    fn end_unit(&mut self, last_step: &[u64], visits: &mut Visits) -> Result<(), Error> {
        super::dma::finish(self.inst.store.data_mut())?;
        for i in 0..self.ops.len() {
            if self.ops[i].info.role != Role::Output {
                continue;
            }
            if self.ops[i].info.block.is_some() {
                if let Some(b) = self.ops[i].last.take() {
                    self.write_back(i, &b)?;
                }
            } else if self.ops[i].offset.is_some() {
                let full = self.ops[i].info.shape.clone();
                let zero = vec![0u64; full.len()];
                self.store_window(i, &zero, &full)?;
                if let Some(v) = visits.get_mut(i) {
                    v.insert(Vec::new(), last_step.to_vec());
                }
            }
        }
        Ok(())
    }
}

pub(crate) fn block_str(b: &[i64]) -> String {
    format!(
        "({})",
        b.iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Finds two units writing one output block (in unit order, so the report
/// does not depend on the thread count).
pub(crate) fn check_races(k: &CpuKernel, units: &[(u64, Visits)]) -> Result<(), Error> {
    for i in 0..k.m.operands.len() {
        let mut owner: HashMap<&Vec<i64>, (u64, &Vec<u64>)> = HashMap::new();
        for (u, v) in units {
            let Some(blocks) = v.get(i) else {
                continue;
            };
            let mut sorted: Vec<_> = blocks.iter().collect();
            sorted.sort();
            for (b, step) in sorted {
                if let Some((u0, s0)) = owner.get(b) {
                    if *u0 != *u {
                        return Err(loc_err(
                            k,
                            i,
                            |message, src, span| Error::Race { message, src, span },
                            format!(
                                "output `{}`: block {} is written by grid steps {} and {}, which differ in a `parallel` index",
                                k.m.operands[i].name,
                                block_str(b),
                                step_str(s0),
                                step_str(step)
                            ),
                        ));
                    }
                } else {
                    owner.insert(b, (*u, step));
                }
            }
        }
    }
    Ok(())
}

/// Fills the blocks of blocked outputs that no step wrote with poison (the
/// rest of the output was written by block write-backs).
pub(crate) fn poison_unwritten(
    k: &CpuKernel,
    buffers: &super::buffers::Buffers,
    units: &[(u64, Visits)],
) -> Result<(), Error> {
    for (i, o) in k.m.operands.iter().enumerate() {
        let (Role::Output, Some(bs), None) = (o.role, &o.block, o.aliases) else {
            continue;
        };
        let counts = blocks_per_dim(&o.shape, bs);
        let total: u64 = counts.iter().product();
        let mut written: std::collections::HashSet<&Vec<i64>> = std::collections::HashSet::new();
        for (_, v) in units {
            if let Some(m) = v.get(i) {
                written.extend(m.keys());
            }
        }
        if written.len() as u64 >= total {
            continue;
        }
        let d = k.dtypes[i];
        let eb = d.bytes() as usize;
        let mut pattern = vec![0u8; bs.iter().product::<u64>() as usize * eb];
        fill_poison(d, &mut pattern);
        for flat in 0..total {
            let mut b = Vec::with_capacity(counts.len());
            unravel(flat, &counts, &mut b);
            let key: Vec<i64> = b.iter().map(|&x| x as i64).collect();
            if written.contains(&key) {
                continue;
            }
            let start: Vec<u64> = b.iter().zip(bs).map(|(&x, &s)| x * s).collect();
            let size: Vec<u64> = start
                .iter()
                .zip(bs)
                .zip(&o.shape)
                .map(|((&s, &b), &n)| b.min(n - s))
                .collect();
            let zero = vec![0u64; bs.len()];
            buffers.write(buffers.of_operand[i], |dst| {
                window::copy(
                    &pattern,
                    &Win {
                        shape: bs,
                        start: &zero,
                        size: &size,
                    },
                    dst,
                    &Win {
                        shape: &o.shape,
                        start: &start,
                        size: &size,
                    },
                    eb,
                )
            })?;
        }
    }
    Ok(())
}

/// How many blocks of `block` cover `shape`, per dimension (a ragged last
/// block counts).
fn blocks_per_dim(shape: &[u64], block: &[u64]) -> Vec<u64> {
    shape
        .iter()
        .zip(block)
        .map(|(&n, &b)| n.div_ceil(b.max(1)))
        .collect()
}
