//! One wasmtime instance of a kernel (one "TensorCore"): its store, its
//! memory, and the host imports that play the MXU, the EUP, the DMA engine
//! and the strictness checks.
//!
//! A host import that finds a violation records the full diagnostic in the
//! store's [`Host`] and stops the Wasm call with a marker error; the
//! executor then reports the recorded diagnostic, never a wasmtime trace.

use super::buffers::Buffers;
use super::dma::{self, Inflight};
use super::error::{at, located, Error};
use super::DmaMode;
use pk_lowering::wasm::abi::{self, CpuManifest, TrapKind};
use std::sync::Arc;
use wasmtime::{Caller, Engine, Extern, Func, Global, Linker, Memory, Module, Store, Val};

/// Per-instance host state.
pub(crate) struct Host {
    pub m: Arc<CpuManifest>,
    pub buffers: Arc<Buffers>,
    pub dma_mode: DmaMode,
    pub inflight: Vec<Inflight>,
    /// The grid step running, for messages.
    pub step: Vec<u64>,
    /// The diagnostic of the violation that stopped the call.
    pub error: Option<Error>,
    /// The MXU's buffers for operands it widens.
    pub mxu: super::mxu::Scratch,
    /// The bytes this instance moved in the current run.
    pub traffic: super::Traffic,
    /// The device's seat, when the kernel runs on a mesh.
    pub mesh: Option<super::mesh::Seat>,
}

/// The marker a host import returns after recording its diagnostic.
#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped by the host")
    }
}

impl std::error::Error for Stop {}

pub(crate) fn step_str(s: &[u64]) -> String {
    format!(
        "({})",
        s.iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl Host {
    /// Builds the diagnostic for a `trap(site, kind, a, b)` call.
    fn trap_error(&self, site: i32, kind: i32, a: i32, b: i32) -> Error {
        let m = &self.m;
        let Some(s) = usize::try_from(site).ok().and_then(|i| m.sites.get(i)) else {
            return Error::Internal(format!("trap from unknown site {site}"));
        };
        let (src, span) = located(m, &s.loc);
        let step = step_str(&self.step);
        match TrapKind::from_code(kind) {
            Some(TrapKind::OutOfBounds) => Error::OutOfBounds {
                message: format!(
                    "out-of-bounds {} at {}: start {b} of dimension {a} puts the window outside the ref (grid step {step})",
                    s.what,
                    at(&s.loc)
                ),
                src,
                span,
            },
            Some(TrapKind::DivideByZero) => Error::DivideByZero {
                message: format!(
                    "{} by zero at {} ({a} / 0, grid step {step})",
                    s.what,
                    at(&s.loc)
                ),
                src,
                span,
            },
            Some(TrapKind::NotMultiple) => Error::NotMultiple {
                message: format!(
                    "`multiple_of` at {}: {a} is not a multiple of {b} (grid step {step})",
                    at(&s.loc)
                ),
                src,
                span,
            },
            Some(TrapKind::Uninitialized) => Error::Uninitialized {
                message: format!(
                    "{} at {} reads element {a} of its window, which was never written (grid step {step})",
                    s.what,
                    at(&s.loc)
                ),
                src,
                span,
            },
            None => Error::Internal(format!("unknown trap kind {kind} at {}", at(&s.loc))),
        }
    }
}

/// Records `e` and returns the marker that stops the Wasm call.
fn stop(host: &mut Host, e: Error) -> wasmtime::Error {
    if host.error.is_none() {
        host.error = Some(e);
    }
    wasmtime::Error::new(Stop)
}

fn memory(caller: &mut Caller<'_, Host>) -> Option<Memory> {
    match caller.get_export(abi::EXPORT_MEMORY) {
        Some(Extern::Memory(m)) => Some(m),
        _ => None,
    }
}

/// Runs a host import's work on the instance's memory and host state; an
/// error is recorded and stops the Wasm call.
fn on_memory(
    c: &mut Caller<'_, Host>,
    f: impl FnOnce(&mut [u8], &mut Host) -> Result<(), Error>,
) -> wasmtime::Result<()> {
    let Some(mem) = memory(c) else {
        return Err(stop(
            c.data_mut(),
            Error::Internal("no memory export".into()),
        ));
    };
    let (data, host) = mem.data_and_store_mut(c);
    f(data, host).map_err(|e| stop(host, e))
}

/// A kernel instance with its exports.
pub(crate) struct Instance {
    pub store: Store<Host>,
    pub memory: Memory,
    pub kernel: Func,
    /// Per operand: its index map, when blocked.
    pub index_maps: Vec<Option<Func>>,
    pub loop_site: Global,
}

pub(crate) fn linker(engine: &Engine) -> Result<Linker<Host>, Error> {
    let mut l = Linker::new(engine);
    let wrap = |e: wasmtime::Error| Error::Internal(format!("cannot define a host import: {e}"));
    l.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_TRAP,
        |mut c: Caller<'_, Host>, site: i32, kind: i32, a: i32, b: i32| -> wasmtime::Result<()> {
            let e = c.data().trap_error(site, kind, a, b);
            Err(stop(c.data_mut(), e))
        },
    )
    .map_err(wrap)?;
    l.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_DOT,
        |mut c: Caller<'_, Host>, site: i32, lhs: i32, rhs: i32, out: i32| {
            on_memory(&mut c, |data, host| {
                let m = host.m.clone();
                let d = m
                    .dot(site as u32)
                    .ok_or_else(|| Error::Internal(format!("dot from unknown site {site}")))?;
                super::mxu::dot(data, d, lhs as u32, rhs as u32, out as u32, &mut host.mxu)
                    .map_err(Error::Internal)
            })
        },
    )
    .map_err(wrap)?;
    l.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_EUP,
        |mut c: Caller<'_, Host>, code: i32, src: i32, dst: i32, lanes: i32| {
            on_memory(&mut c, |data, _| {
                super::eup::apply(data, code, src as u32, dst as u32, lanes as u32)
                    .map_err(Error::Internal)
            })
        },
    )
    .map_err(wrap)?;
    l.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_FILL,
        |mut c: Caller<'_, Host>, r: i32, bits: i32| {
            on_memory(&mut c, |data, host| fill(data, host, r, bits as u32))
        },
    )
    .map_err(wrap)?;
    for (name, start) in [(abi::IMPORT_DMA_START, true), (abi::IMPORT_DMA_WAIT, false)] {
        l.func_wrap(
            abi::IMPORT_MODULE,
            name,
            move |mut c: Caller<'_, Host>, site: i32| {
                on_memory(&mut c, |data, host| {
                    if start {
                        dma::start(host, data, site as u32)
                    } else {
                        dma::wait(host, data, site as u32)
                    }
                })
            },
        )
        .map_err(wrap)?;
    }
    l.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_MESH,
        |mut c: Caller<'_, Host>, site: i32, device: i32, n: i32| -> wasmtime::Result<i32> {
            let mut out = 0;
            on_memory(&mut c, |data, host| {
                out = super::mesh::op(host, data, site as u32, device, n)?;
                Ok(())
            })?;
            Ok(out)
        },
    )
    .map_err(wrap)?;
    l.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_PRINT,
        |mut c: Caller<'_, Host>, site: i32, tile: i32| {
            on_memory(&mut c, |data, host| {
                super::print::print(host, data, site as u32, tile as u32)
            })
        },
    )
    .map_err(wrap)?;
    Ok(l)
}

/// `fill(ref, bits)`: every 32-bit element of ref `r` set to `bits`, in
/// the output array when the ref's block is there, else in VMEM.
fn fill(data: &mut [u8], host: &mut Host, r: i32, bits: u32) -> Result<(), Error> {
    let slot = usize::try_from(r).ok().and_then(|i| host.m.refs.get(i));
    let Some(slot) = slot else {
        return Err(Error::Internal(format!("fill of unknown ref {r}")));
    };
    if host.mxu.fill_in_array(r as usize, bits) {
        return Ok(());
    }
    let elems = slot.shape.iter().product::<u64>();
    let (Some(off), true) = (slot.offset, u64::from(slot.bytes) == 4 * elems) else {
        return Err(Error::Internal(format!(
            "fill of `{}`, which is not a 32-bit VMEM ref",
            slot.name
        )));
    };
    let range = off as usize..off as usize + slot.bytes as usize;
    let Some(dst) = data.get_mut(range) else {
        return Err(Error::Internal(format!(
            "fill of `{}` past memory",
            slot.name
        )));
    };
    // SAFETY: every bit pattern is a valid u32; align_to_mut only
    // reinterprets the aligned middle.
    let (head, mid, tail) = unsafe { dst.align_to_mut::<u32>() };
    if head.is_empty() && tail.is_empty() {
        mid.fill(bits);
    } else {
        for w in dst.chunks_exact_mut(4) {
            w.copy_from_slice(&bits.to_le_bytes());
        }
    }
    Ok(())
}

impl Instance {
    pub fn new(
        engine: &Engine,
        module: &Module,
        linker: &Linker<Host>,
        host: Host,
    ) -> Result<Instance, Error> {
        let n = host.m.operands.len();
        let mut store = Store::new(engine, host);
        let inst = linker
            .instantiate(&mut store, module)
            .map_err(|e| Error::Manifest(format!("cannot instantiate the module: {e}")))?;
        let missing = |what: &str| Error::Manifest(format!("the module does not export `{what}`"));
        let memory = inst
            .get_memory(&mut store, abi::EXPORT_MEMORY)
            .ok_or_else(|| missing(abi::EXPORT_MEMORY))?;
        // VMEM is walked by every block copy and by the GEMM's packing:
        // huge pages spare those the TLB misses of 4 KiB pages.
        // SAFETY: the range is the instance's linear memory, which the
        // store keeps mapped for as long as the instance lives.
        unsafe {
            super::array::advise_huge_pages(memory.data_ptr(&store), memory.data_size(&store));
        }
        let kernel = inst
            .get_func(&mut store, abi::EXPORT_KERNEL)
            .ok_or_else(|| missing(abi::EXPORT_KERNEL))?;
        let loop_site = inst
            .get_global(&mut store, abi::EXPORT_LOOP_SITE)
            .ok_or_else(|| missing(abi::EXPORT_LOOP_SITE))?;
        let mut index_maps = Vec::with_capacity(n);
        for i in 0..n {
            let blocked = store.data().m.operands[i].block.is_some();
            index_maps.push(if blocked {
                let name = abi::index_map_export(i);
                Some(
                    inst.get_func(&mut store, &name)
                        .ok_or_else(|| missing(&name))?,
                )
            } else {
                None
            });
        }
        Ok(Instance {
            store,
            memory,
            kernel,
            index_maps,
            loop_site,
        })
    }

    /// Calls a kernel export; host-recorded violations and interrupts
    /// become diagnostics.
    pub fn call(&mut self, f: Func, args: &[Val], results: &mut [Val]) -> Result<(), Error> {
        match f.call(&mut self.store, args, results) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.explain(e)),
        }
    }

    fn explain(&mut self, e: wasmtime::Error) -> Error {
        if let Some(err) = self.store.data_mut().error.take() {
            return err;
        }
        let step = step_str(&self.store.data().step);
        let m = self.store.data().m.clone();
        let site = self.loop_site.get(&mut self.store).i32().unwrap_or(-1);
        let loc = usize::try_from(site).ok().and_then(|s| m.sites.get(s));
        let (src, span) = loc.map(|s| located(&m, &s.loc)).unwrap_or((None, None));
        let where_ = loc
            .map(|s| format!("; the {} at {} was running", s.what, at(&s.loc)))
            .unwrap_or_default();
        match e.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::Interrupt) => Error::Runaway {
                message: format!(
                    "kernel `{}` did not finish within the time limit (grid step {step}){where_}",
                    m.kernel
                ),
                src,
                span,
            },
            Some(wasmtime::Trap::OutOfFuel) => Error::Runaway {
                message: format!(
                    "kernel `{}` ran out of fuel (grid step {step}){where_}",
                    m.kernel
                ),
                src,
                span,
            },
            Some(t) => Error::Internal(format!(
                "unexpected trap in `{}` ({t}) at grid step {step}",
                m.kernel
            )),
            None => Error::Internal(format!("kernel call failed: {e}")),
        }
    }
}
