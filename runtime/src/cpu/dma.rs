//! The DMA engine: `dma_start` / `dma_wait` host imports copying windows
//! between host arrays (HBM, ANY refs) and linear memory (VMEM, SMEM).
//!
//! A copy completes either when it starts or when it is waited for
//! ([`DmaMode`]); a correct kernel gives the same result both ways. In
//! wait mode the destination reads as poison (NaN) until the wait, so a
//! kernel that reads it early shows wrong results instead of luckily right
//! ones. Each semaphore counts copies started and not yet waited for; a
//! wait takes the oldest one in flight on its semaphore.

use super::array::fill_poison;
use super::error::{at, located, Error};
use super::instance::{step_str, Host};
use super::window::{self, Win};
use super::DmaMode;
use pk_lang::ir::DType;
use pk_lowering::wasm::abi::{DmaSite, RefOrigin, WinStart};

#[derive(Debug, Clone)]
pub(crate) enum Where {
    /// Byte offset of the ref in linear memory.
    Mem(usize),
    /// Index into the host buffers.
    Host(usize),
}

/// A resolved, bounds-checked window.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub at: Where,
    pub shape: Vec<u64>,
    pub start: Vec<u64>,
    pub size: Vec<u64>,
    pub shadow: Option<usize>,
}

impl Place {
    pub fn win(&self) -> Win<'_> {
        Win {
            shape: &self.shape,
            start: &self.start,
            size: &self.size,
        }
    }

    pub fn elems(&self) -> u64 {
        self.size.iter().product()
    }

    pub fn ref_bytes(&self, eb: usize) -> usize {
        self.shape.iter().product::<u64>() as usize * eb
    }
}

/// A copy started and not yet waited for.
#[derive(Debug, Clone)]
pub(crate) struct Inflight {
    site: u32,
    sem: usize,
    bytes: u64,
    /// The grid step that started the copy: a copy left in flight is
    /// reported there, not at the step where the grid ended.
    step: Vec<u64>,
    /// The copy still to do (wait mode), or `None` when already done.
    copy: Option<(Place, Place, DType)>,
}

fn dma_error(host: &Host, site: u32, what: &str) -> Error {
    dma_error_at(host, site, what, &host.step)
}

fn dma_error_at(host: &Host, site: u32, what: &str, step: &[u64]) -> Error {
    let m = &host.m;
    let Some(s) = m.sites.get(site as usize) else {
        return Error::Internal(format!("DMA from unknown site {site}"));
    };
    let (src, span) = located(m, &s.loc);
    Error::Dma {
        message: format!(
            "{} at {}: {what} (grid step {})",
            s.what,
            at(&s.loc),
            step_str(step)
        ),
        src,
        span,
    }
}

pub(crate) fn read_i32(mem: &[u8], at: usize) -> Option<i32> {
    mem.get(at..at + 4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

pub(crate) fn resolve(
    host: &Host,
    mem: &[u8],
    site: u32,
    w: &pk_lowering::wasm::abi::Window,
) -> Result<(Place, DType), Error> {
    let m = &host.m;
    let slot = m
        .refs
        .get(w.ref_index)
        .ok_or_else(|| Error::Manifest(format!("DMA names ref {}", w.ref_index)))?;
    let dtype = DType::from_name(&slot.dtype)
        .ok_or_else(|| Error::Manifest(format!("dtype {}", slot.dtype)))?;
    let mut start = Vec::with_capacity(w.starts.len());
    for (d, (s, &size)) in w.starts.iter().zip(&w.sizes).enumerate() {
        let v = match s {
            WinStart::Const(c) => *c as i64,
            WinStart::Arg(a) => {
                let addr = m.layout.args_offset as usize + 4 * *a as usize;
                i64::from(
                    read_i32(mem, addr)
                        .ok_or_else(|| Error::Internal("DMA argument outside memory".into()))?,
                )
            }
        };
        let n = slot.shape.get(d).copied().unwrap_or(1);
        if v < 0 || v as u64 + size > n {
            return Err(dma_error(
                host,
                site,
                &format!(
                    "the window of `{}` starts at {v} in dimension {d} with size {size}, outside its extent {n}",
                    slot.name
                ),
            ));
        }
        start.push(v as u64);
    }
    // A view (a reshape or a same-width bitcast; the lowering refuses DMAs
    // through views between widths) is the memory of its root, row-major.
    let origin = match slot.origin {
        RefOrigin::View(root) => m
            .refs
            .get(root)
            .map(|r| r.origin)
            .ok_or_else(|| Error::Internal(format!("view `{}` of a missing ref", slot.name)))?,
        o => o,
    };
    let at = match (slot.offset, origin) {
        (Some(o), _) => Where::Mem(o as usize),
        (None, RefOrigin::Operand(i)) => Where::Host(host.buffers.of_operand[i]),
        (None, RefOrigin::View(_)) => {
            return Err(Error::Internal(format!("view `{}` of a view", slot.name)))
        }
        (None, RefOrigin::Scratch(_)) => {
            return Err(Error::Unsupported {
                message: format!(
                    "scratch `{}` in HBM is not supported by the CPU reference",
                    slot.name
                ),
                src: None,
                span: None,
            })
        }
    };
    Ok((
        Place {
            at,
            shape: slot.shape.clone(),
            start,
            size: w.sizes.clone(),
            shadow: slot.shadow.map(|s| s as usize),
        },
        dtype,
    ))
}

/// Resolves a DMA descriptor: (src, dst, dtype, semaphore byte address).
fn descriptor(host: &Host, mem: &[u8], site: u32) -> Result<(Place, Place, DType, usize), Error> {
    let m = host.m.clone();
    let d: &DmaSite = m
        .dma(site)
        .ok_or_else(|| Error::Internal(format!("DMA from unknown site {site}")))?;
    let (src, dt) = resolve(host, mem, site, &d.src)?;
    let (dst, _) = resolve(host, mem, site, &d.dst)?;
    let (sem, _) = resolve(host, mem, site, &d.sem)?;
    let Where::Mem(base) = sem.at else {
        return Err(Error::Internal("semaphore outside memory".into()));
    };
    let mut idx = 0u64;
    for (i, s) in sem.start.iter().enumerate() {
        let stride: u64 = sem.shape[i + 1..].iter().product();
        idx += s * stride;
    }
    if src.elems() != dst.elems() {
        return Err(dma_error(
            host,
            site,
            "source and destination windows differ in size",
        ));
    }
    Ok((src, dst, dt, base + 4 * idx as usize))
}

fn copy(host: &Host, mem: &mut [u8], src: &Place, dst: &Place, dt: DType) -> Result<(), Error> {
    let eb = dt.bytes() as usize;
    let bufs = &host.buffers;
    match (&src.at, &dst.at) {
        (Where::Host(s), Where::Host(d)) if s == d => {
            bufs.write(*s, |b| {
                let tmp = b.to_vec();
                window::copy(&tmp, &src.win(), b, &dst.win(), eb);
            })?;
        }
        (Where::Host(s), Where::Host(d)) => {
            let tmp = bufs.bytes(*s)?;
            bufs.write(*d, |db| window::copy(&tmp, &src.win(), db, &dst.win(), eb))?;
        }
        (Where::Host(s), Where::Mem(o)) => {
            let n = dst.ref_bytes(eb);
            bufs.read(*s, |sb| {
                window::copy(sb, &src.win(), &mut mem[*o..*o + n], &dst.win(), eb)
            })?;
        }
        (Where::Mem(o), Where::Host(d)) => {
            let n = src.ref_bytes(eb);
            bufs.write(*d, |db| {
                window::copy(&mem[*o..*o + n], &src.win(), db, &dst.win(), eb)
            })?;
        }
        (Where::Mem(so), Where::Mem(d)) => {
            let tmp = mem[*so..*so + src.ref_bytes(eb)].to_vec();
            let n = dst.ref_bytes(eb);
            window::copy(&tmp, &src.win(), &mut mem[*d..*d + n], &dst.win(), eb);
        }
    }
    mark(mem, dst, 1);
    Ok(())
}

/// Sets the shadow bytes of a destination window in linear memory.
pub(crate) fn mark(mem: &mut [u8], dst: &Place, v: u8) {
    if let (Where::Mem(_), Some(sh)) = (&dst.at, dst.shadow) {
        let n = dst.shape.iter().product::<u64>() as usize;
        window::fill(&mut mem[sh..sh + n], &dst.win(), 1, v);
    }
}

fn poison(mem: &mut [u8], dst: &Place, dt: DType) {
    if let Where::Mem(o) = dst.at {
        let eb = dt.bytes() as usize;
        let mut p = vec![0u8; dst.elems() as usize * eb];
        fill_poison(dt, &mut p);
        let n = dst.ref_bytes(eb);
        let flat = [dst.elems()];
        let z = [0u64];
        window::copy(
            &p,
            &Win {
                shape: &flat,
                start: &z,
                size: &flat,
            },
            &mut mem[o..o + n],
            &dst.win(),
            eb,
        );
        mark(mem, dst, 0);
    }
}

fn add_sem(mem: &mut [u8], at: usize, delta: i32) {
    if let Some(v) = read_i32(mem, at) {
        mem[at..at + 4].copy_from_slice(&v.wrapping_add(delta).to_le_bytes());
    }
}

pub(crate) fn start(host: &mut Host, mem: &mut [u8], site: u32) -> Result<(), Error> {
    let (src, dst, dt, sem) = descriptor(host, mem, site)?;
    super::mesh::check_local(host, site, &src, &dst)?;
    let bytes = src.elems() * dt.bytes();
    // Counted when the copy is issued, in either mode: a copy never waited
    // for fails the run anyway.
    host.traffic.dma += bytes;
    let pending = match host.dma_mode {
        DmaMode::AtStart => {
            copy(host, mem, &src, &dst, dt)?;
            add_sem(mem, sem, 1);
            None
        }
        DmaMode::AtWait => {
            poison(mem, &dst, dt);
            Some((src, dst, dt))
        }
    };
    host.inflight.push(Inflight {
        site,
        sem,
        bytes,
        step: host.step.clone(),
        copy: pending,
    });
    Ok(())
}

pub(crate) fn wait(host: &mut Host, mem: &mut [u8], site: u32) -> Result<(), Error> {
    let (src, _, dt, sem) = descriptor(host, mem, site)?;
    let bytes = src.elems() * dt.bytes();
    let Some(i) = host.inflight.iter().position(|f| f.sem == sem) else {
        return Err(dma_error(
            host,
            site,
            "waits on a semaphore with no copy in flight (this would hang the core)",
        ));
    };
    let f = host.inflight.remove(i);
    if f.bytes != bytes {
        return Err(dma_error(
            host,
            site,
            &format!(
                "waits for {bytes} bytes but the copy in flight moves {}",
                f.bytes
            ),
        ));
    }
    match f.copy {
        Some((s, d, dt)) => copy(host, mem, &s, &d, dt)?,
        None => add_sem(mem, sem, -1),
    }
    Ok(())
}

/// At the end of a run: every started copy must have been waited for.
pub(crate) fn finish(host: &mut Host) -> Result<(), Error> {
    match host.inflight.first() {
        Some(f) => {
            let (site, started) = (f.site, f.step.clone());
            host.inflight.clear();
            let what = format!(
                "this copy was started but never waited for (the grid ended at step {})",
                step_str(&host.step)
            );
            Err(dma_error_at(host, site, &what, &started))
        }
        None => Ok(()),
    }
}
