//! The CPU reference executor: runs a kernel lowered to WebAssembly with
//! wasmtime (Cranelift), under Pallas's grid contract, strictly.
//!
//! The host plays HBM (the [`HostArray`]s), the DMA engine, the MXU and the
//! EUP; a Wasm instance's linear memory plays one TensorCore's VMEM + SMEM.
//! The units of the grid's leading `parallel` axes are handed out to
//! threads, one instance per thread; results are bit-identical whatever the
//! thread count.
//!
//! A kernel runs from its `.wasm` and [`CpuManifest`] alone, so a kernel
//! package needs no compiler to run.

mod array;
mod buffers;
mod dma;
mod error;
mod eup;
mod grid;
mod host_mem;
mod instance;
pub mod mesh;
mod mxu;
pub mod npy;
mod npy_header;
mod pin;
mod print;
mod vnni;
mod window;

pub use array::{bf16_from_f32, bf16_to_f32, fill_poison, HostArray};
pub use error::{Error, EXPLANATIONS};
pub use host_mem::{available as available_host_memory, human as human_bytes, Need};
pub use pk_lowering::wasm::abi::CpuManifest;

use buffers::{Buf, Buffers, Input, Lent};
use grid::{Runner, Schedule, Visits};
use instance::{Host, Instance};
use pk_lang::ir::DType;
use pk_lowering::wasm::abi::{self, OperandInfo, Role};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use wasmtime::{Config, Engine, Linker, Module, OptLevel, UpdateDeadline};

/// Checks an array read from `path` against an operand (its name, dtype
/// and shape) and converts it to the operand's memory form: the dtype
/// first, then the shape.
pub fn check_operand(
    name: &str,
    d: DType,
    shape: &[u64],
    a: npy::NpyArray,
    path: &str,
) -> Result<HostArray, Error> {
    check_type(name, d, a.ty, path)?;
    check_shape(name, shape, &a.shape, path)?;
    npy::to_host(a, d).ok_or_else(|| Error::Internal("the dtype was checked".into()))
}

/// Reads the `.npy` file at `path` (`-` for standard input) as an operand:
/// its header is checked against the operand (the dtype first, then the
/// shape) before any data is read, and the data is read once, into the
/// buffer the run uses. Every device's `--in` files go through this.
pub fn read_operand(name: &str, d: DType, shape: &[u64], path: &Path) -> Result<HostArray, Error> {
    let r = npy::open(path)?;
    check_header(name, d, shape, &r.header, &r.path)?;
    r.read_as(d)
}

/// Checks a `.npy` header read from `path` against an operand.
pub fn check_header(
    name: &str,
    d: DType,
    shape: &[u64],
    h: &npy::Header,
    path: &str,
) -> Result<(), Error> {
    check_type(name, d, h.ty, path)?;
    check_shape(name, shape, &h.shape, path)
}

fn check_type(name: &str, d: DType, found: npy::NpyType, path: &str) -> Result<(), Error> {
    if npy::accepted(d).contains(&found) {
        return Ok(());
    }
    Err(Error::DtypeMismatch {
        operand: name.to_string(),
        expected: format!(
            "{d} (a {} array, {})",
            npy::numpy_spelling(d),
            npy::accepted(d)[0].describe()
        ),
        found: found.describe(),
        path: path.to_string(),
    })
}

/// Checks the shape of an array read from `path` against an operand's.
pub fn check_shape(name: &str, expected: &[u64], shape: &[usize], path: &str) -> Result<(), Error> {
    if shape.iter().map(|&d| d as u64).ne(expected.iter().copied()) {
        let s = |v: Vec<String>| v.join(", ");
        return Err(Error::ShapeMismatch {
            operand: name.to_string(),
            expected: s(expected.iter().map(|d| d.to_string()).collect()),
            found: s(shape.iter().map(|d| d.to_string()).collect()),
            path: path.to_string(),
        });
    }
    Ok(())
}

/// When a DMA's copy happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DmaMode {
    /// At `dma_start` (the destination is ready immediately).
    #[default]
    AtStart,
    /// At `dma_wait` (the destination reads as poison until then).
    AtWait,
}

/// The bytes a run moved between the host arrays ("HBM") and the
/// instances' memories, counted as the copies happen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Input blocks (and whole-array VMEM inputs) brought in, padding not
    /// included; a full block the MXU reads in place counts too. A block
    /// kept from the previous step is not moved again.
    pub blocks_in: u64,
    /// Output blocks (and whole-array VMEM outputs) written back.
    pub blocks_out: u64,
    /// Bytes of the DMA copies the kernel started.
    pub dma: u64,
}

impl Traffic {
    pub fn total(&self) -> u64 {
        self.blocks_in + self.blocks_out + self.dma
    }

    fn add(&mut self, o: &Traffic) {
        self.blocks_in += o.blocks_in;
        self.blocks_out += o.blocks_out;
        self.dma += o.dma;
    }
}

/// Options of one run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Worker threads (each one instance, like a TensorCore); capped by
    /// the number of units of the grid's leading `parallel` axes.
    pub threads: usize,
    pub dma: DmaMode,
    /// Wall-clock limit of the run (epoch interruption), if any.
    pub timeout: Option<Duration>,
    /// Fuel per thread (needs a kernel created with fuel metering).
    pub fuel: Option<u64>,
    /// Pin worker `t` to the `t`-th CPU the process may run on (Linux), as
    /// a TensorCore stays one core: no worker migrates away from its
    /// caches mid-run. The pins are released when the first worker runs
    /// out of units, so that the last units never wait on a busy CPU while
    /// another idles (`pin.rs`). Turn off when several runs share the CPUs.
    pub pin: bool,
    /// The device's seat when the kernel runs on a mesh (see
    /// [`CpuKernel::run_mesh`]).
    pub mesh: Option<mesh::Seat>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            dma: DmaMode::AtStart,
            timeout: Some(Duration::from_secs(300)),
            fuel: None,
            pin: true,
            mesh: None,
        }
    }
}

/// An input of a run, with the dtype and shape to check it against when it
/// has them (lent bytes have only their size, checked beforehand).
type Given<'a> = (Input, Option<(DType, &'a [usize])>);

/// A compiled kernel, ready to run any number of times.
pub struct CpuKernel {
    engine: Engine,
    module: Module,
    linker: Linker<Host>,
    pub(crate) m: Arc<CpuManifest>,
    /// Operand dtypes, parsed once.
    pub(crate) dtypes: Vec<DType>,
    pub(crate) ref_dtypes: Vec<DType>,
    fuel: bool,
    /// Idle instances, reused by later runs.
    pool: Mutex<Vec<Instance>>,
}

/// Hands out the grid's units in order, a few consecutive ones at a time,
/// to whichever worker asks next, so that a worker the machine slows down
/// takes fewer. After a failure no more are handed out: every unit before
/// the failing one was handed out earlier and runs to its end, so the
/// first failure in grid order is always found.
struct Grab {
    next: AtomicU64,
    chunk: u64,
    units: u64,
    failed: AtomicBool,
}

impl Grab {
    fn take(&self) -> Option<std::ops::Range<u64>> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        let lo = self.next.fetch_add(self.chunk, Ordering::Relaxed);
        (lo < self.units).then(|| lo..(lo + self.chunk).min(self.units))
    }
}

/// The units a worker ran and the bytes it moved, or the first unit that
/// failed and why.
type WorkerResult = Result<(Vec<(u64, Visits)>, Traffic), (u64, Box<Error>)>;

/// How often the ticker advances the epoch once the deadline has passed.
const TICK: Duration = Duration::from_millis(10);

impl CpuKernel {
    /// Compiles a `.wasm` with its manifest. `fuel` enables fuel metering
    /// (slower; needed for [`RunOptions::fuel`]).
    pub fn new(wasm: &[u8], manifest: CpuManifest, fuel: bool) -> Result<CpuKernel, Error> {
        if manifest.abi_version != abi::ABI_VERSION {
            return Err(Error::Manifest(format!(
                "ABI version {} (this runtime reads {})",
                manifest.abi_version,
                abi::ABI_VERSION
            )));
        }
        let dtype = |s: &str| {
            DType::from_name(s).ok_or_else(|| Error::Manifest(format!("unknown dtype `{s}`")))
        };
        let dtypes = manifest
            .operands
            .iter()
            .map(|o| dtype(&o.dtype))
            .collect::<Result<Vec<_>, _>>()?;
        let ref_dtypes = manifest
            .refs
            .iter()
            .map(|r| dtype(&r.dtype))
            .collect::<Result<Vec<_>, _>>()?;
        if manifest.grid.iter().any(|a| a.extent == 0)
            || manifest
                .operands
                .iter()
                .any(|o| o.ref_index >= manifest.refs.len())
        {
            return Err(Error::Manifest("inconsistent grid or operand table".into()));
        }
        // A view's memory is that of an earlier ref that is not a view.
        for (i, r) in manifest.refs.iter().enumerate() {
            if let abi::RefOrigin::View(root) = r.origin {
                let ok = root < i
                    && !matches!(manifest.refs[root].origin, abi::RefOrigin::View(_))
                    && manifest.refs[root].offset == r.offset;
                if !ok {
                    return Err(Error::Manifest(format!(
                        "ref `{}` is a view of no ref before it",
                        r.name
                    )));
                }
            }
        }
        // Every later size computation may rely on an operand's byte count
        // fitting in a u64.
        for (o, d) in manifest.operands.iter().zip(&dtypes) {
            if host_mem::array_bytes(d.bytes(), &o.shape).is_none() {
                return Err(host_mem::overflow(&o.name, &o.dtype, &o.shape));
            }
        }
        // Grid indices reach the module as i32, and the run counts its
        // steps in a u64.
        if let Some(a) = manifest.grid.iter().find(|a| a.extent > i32::MAX as u64) {
            return Err(Error::Unsupported {
                message: format!(
                    "grid axis `{}` has {} steps; the CPU reference indexes a grid axis with an i32 (at most {})",
                    a.name,
                    a.extent,
                    i32::MAX
                ),
                src: None,
                span: None,
            });
        }
        if manifest
            .grid
            .iter()
            .try_fold(1u64, |n, a| n.checked_mul(a.extent))
            .is_none()
        {
            return Err(Error::Unsupported {
                message: "the grid has more steps than a 64-bit count holds".into(),
                src: None,
                span: None,
            });
        }
        let mut c = Config::new();
        c.cranelift_opt_level(OptLevel::Speed);
        c.epoch_interruption(true);
        c.consume_fuel(fuel);
        let engine = Engine::new(&c).map_err(|e| Error::Compile(e.to_string()))?;
        let module = Module::new(&engine, wasm).map_err(|e| Error::Compile(e.to_string()))?;
        let linker = instance::linker(&engine)?;
        Ok(CpuKernel {
            engine,
            module,
            linker,
            m: Arc::new(manifest),
            dtypes,
            ref_dtypes,
            fuel,
            pool: Mutex::new(Vec::new()),
        })
    }

    /// Compiles a kernel just lowered.
    pub fn from_lowered(k: &pk_lowering::wasm::WasmKernel, fuel: bool) -> Result<CpuKernel, Error> {
        CpuKernel::new(&k.bytes, k.manifest.clone(), fuel)
    }

    /// The CPU reference of a checked kernel: Tile IR lowered to Wasm and
    /// compiled, with a lowering failure located in `sources` (the module's
    /// or the session's the kernel was checked in).
    pub fn from_ir(
        k: &pk_lang::ir::Kernel,
        sources: &pk_lang::span::SourceMap,
        opts: &pk_lowering::wasm::Options,
        fuel: bool,
    ) -> Result<CpuKernel, Error> {
        let w = pk_lowering::wasm::lower(k, sources, opts)
            .map_err(|e| Error::from_lowering(&e, sources))?;
        CpuKernel::from_lowered(&w, fuel)
    }

    pub fn manifest(&self) -> &CpuManifest {
        &self.m
    }

    /// A mesh for this kernel whose devices are run by the caller, each
    /// from a thread of its own (one [`Self::run_in_place`] per device,
    /// with the device's [`mesh::Seat`] in its options), as a host
    /// framework runs one call per device; the devices run at once
    /// ([`mesh::Order::Parallel`]). A device waits at most `bound`
    /// for the others to enter (PK1047 after it).
    pub fn joined_mesh(&self, bound: Duration) -> Arc<mesh::Mesh> {
        mesh::Mesh::joined_within(self.m.clone(), mesh::Order::Parallel, bound)
    }

    /// The operands the caller provides, in call order.
    pub fn inputs(&self) -> impl Iterator<Item = (usize, &OperandInfo)> {
        self.m
            .operands
            .iter()
            .enumerate()
            .filter(|(_, o)| o.role != Role::Output)
    }

    pub fn outputs(&self) -> impl Iterator<Item = (usize, &OperandInfo)> {
        self.m
            .operands
            .iter()
            .enumerate()
            .filter(|(_, o)| o.role == Role::Output)
    }

    /// The dtype of operand `i`.
    pub fn dtype(&self, i: usize) -> DType {
        self.dtypes[i]
    }

    /// Reads an input from a `.npy` file (`-` for standard input),
    /// checking its header against operand `i` before its data is read.
    pub fn read_input(&self, i: usize, path: &Path) -> Result<HostArray, Error> {
        let o = &self.m.operands[i];
        read_operand(&o.name, self.dtypes[i], &o.shape, path)
    }

    /// Checks a file array against operand `i` and converts it.
    pub fn check(&self, i: usize, a: npy::NpyArray, path: &str) -> Result<HostArray, Error> {
        let o = &self.m.operands[i];
        check_operand(&o.name, self.dtypes[i], &o.shape, a, path)
    }

    fn check_shape(&self, i: usize, shape: &[usize], path: &str) -> Result<(), Error> {
        let o = &self.m.operands[i];
        check_shape(&o.name, &o.shape, shape, path)
    }

    /// Runs the kernel on its inputs (in the order of [`Self::inputs`]) and
    /// returns its outputs (in the order of [`Self::outputs`]).
    pub fn run(&self, inputs: Vec<HostArray>, opts: &RunOptions) -> Result<Vec<HostArray>, Error> {
        let shared: Vec<Arc<HostArray>> = inputs.into_iter().map(Arc::new).collect();
        self.run_shared(&shared, opts)
    }

    /// [`Self::run`] without copying the inputs: they are read in place.
    pub fn run_shared(
        &self,
        inputs: &[Arc<HostArray>],
        opts: &RunOptions,
    ) -> Result<Vec<HostArray>, Error> {
        self.run_measured(inputs, opts).map(|(out, _)| out)
    }

    /// [`Self::run_shared`], also returning the bytes the run moved.
    pub fn run_measured(
        &self,
        inputs: &[Arc<HostArray>],
        opts: &RunOptions,
    ) -> Result<(Vec<HostArray>, Traffic), Error> {
        let given: Vec<Given> = inputs
            .iter()
            .map(|a| (Input::Array(a.clone()), Some((a.dtype, a.shape.as_slice()))))
            .collect();
        self.run_inputs(given, None, opts)
    }

    /// Runs the kernel on a mesh of devices in this process, one instance
    /// per device (see [`mesh`]): `inputs[d]` are device `d`'s inputs, and
    /// the result holds each device's outputs, with the bytes all devices
    /// moved. `order` chooses the interleaving of the devices and of
    /// their remote copies.
    pub fn run_mesh(
        &self,
        inputs: &[Vec<Arc<HostArray>>],
        opts: &RunOptions,
        order: mesh::Order,
    ) -> Result<(Vec<Vec<HostArray>>, Traffic), Error> {
        let n = self.m.devices() as usize;
        if self.m.mesh.is_empty() || inputs.len() != n {
            return Err(Error::MeshMismatch {
                message: format!(
                    "kernel `{}` runs on {}, but {} devices' inputs were given",
                    self.m.kernel,
                    mesh_text(&self.m),
                    inputs.len()
                ),
            });
        }
        let mesh = mesh::Mesh::new(self.m.clone(), order);
        let results: Vec<Result<(Vec<HostArray>, Traffic), Error>> = std::thread::scope(|s| {
            let handles: Vec<_> = inputs
                .iter()
                .enumerate()
                .map(|(d, ins)| {
                    let mut o = opts.clone();
                    o.threads = 1;
                    o.pin = false;
                    o.mesh = Some(mesh::Seat {
                        mesh: mesh.clone(),
                        device: d,
                    });
                    let mesh = &mesh;
                    s.spawn(move || {
                        ieee_floats();
                        let r = self.run_measured(ins, &o);
                        mesh.leave(d);
                        r
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Internal("a device thread panicked".into())))
                })
                .collect()
        });
        if let Some(e) = mesh.take_error() {
            return Err(e);
        }
        let mut outs = Vec::with_capacity(n);
        let mut traffic = Traffic::default();
        let mut first_abort = None;
        let mut first = None;
        for r in results {
            match r {
                Ok((o, t)) => {
                    traffic.add(&t);
                    outs.push(o);
                }
                Err(e) if mesh::is_aborted(&e) => {
                    first_abort.get_or_insert(e);
                }
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        match first.or(first_abort) {
            Some(e) => Err(e),
            None => Ok((outs, traffic)),
        }
    }

    /// Runs the kernel on memory the caller owns, such as a host
    /// framework's buffers: each input's bytes (row-major, in the element
    /// layout of [`HostArray`]) are read in place and each output is written
    /// in place, with no copy beyond those [`Self::run_shared`] makes.
    /// Every slice must have its operand's exact size.
    pub fn run_in_place(
        &self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
        opts: &RunOptions,
    ) -> Result<(), Error> {
        let outs: Vec<usize> = self.outputs().map(|(i, _)| i).collect();
        if outputs.len() != outs.len() {
            return Err(Error::Internal(format!(
                "{} output buffers given, kernel `{}` has {} outputs",
                outputs.len(),
                self.m.kernel,
                outs.len()
            )));
        }
        for (&i, b) in outs.iter().zip(outputs.iter()) {
            self.check_bytes(i, b.len())?;
        }
        let ins: Vec<usize> = self.inputs().map(|(i, _)| i).collect();
        for (&i, b) in ins.iter().zip(inputs) {
            self.check_bytes(i, b.len())?;
        }
        // The lent views stop being used when `run_inputs` returns: the
        // workers have joined and the pooled instances hold no buffers.
        let given = inputs
            .iter()
            .map(|b| (Input::Lent(Lent::input(b)), None))
            .collect();
        let lent = outputs.iter_mut().map(|b| Lent::output(b)).collect();
        self.run_inputs(given, Some(lent), opts)?;
        Ok(())
    }

    /// Checks that a lent buffer has the size of operand `i`.
    fn check_bytes(&self, i: usize, len: usize) -> Result<(), Error> {
        let o = &self.m.operands[i];
        let want = o.shape.iter().product::<u64>() as usize * self.dtypes[i].bytes() as usize;
        if len != want {
            return Err(Error::Internal(format!(
                "the buffer of `{}` holds {len} bytes, {}[{}] needs {want}",
                o.name,
                o.dtype,
                join(&o.shape)
            )));
        }
        Ok(())
    }

    /// Runs on `inputs` (each with its dtype and shape to check, when it has
    /// them). Outputs are returned, or with `lent` written in place (and
    /// none returned), with the bytes the run moved.
    fn run_inputs(
        &self,
        inputs: Vec<Given<'_>>,
        mut lent: Option<Vec<Lent>>,
        opts: &RunOptions,
    ) -> Result<(Vec<HostArray>, Traffic), Error> {
        let m = &self.m;
        let ins: Vec<usize> = self.inputs().map(|(i, _)| i).collect();
        if inputs.len() < ins.len() {
            let o = &m.operands[ins[inputs.len()]];
            return Err(Error::MissingInput {
                operand: o.name.clone(),
                expected: format!("{}[{}]", o.dtype, join(&o.shape)),
            });
        }
        if inputs.len() > ins.len() {
            return Err(Error::Internal(format!(
                "{} inputs given, kernel `{}` takes {}",
                inputs.len(),
                m.kernel,
                ins.len()
            )));
        }
        if !m.mesh.is_empty() && opts.mesh.is_none() {
            return Err(Error::MeshMismatch {
                message: format!(
                    "kernel `{}` runs on {}: run it on a mesh (pkc run --mesh {})",
                    m.kernel,
                    mesh_text(m),
                    m.mesh
                        .iter()
                        .map(|a| a.size.to_string())
                        .collect::<Vec<_>>()
                        .join("x")
                ),
            });
        }
        // The inputs are in memory already; what the run allocates next
        // (outputs, private copies, instances) must fit beside them.
        let need = self.host_need(opts.threads)?;
        self.check_need(&need, need.to_allocate(), host_mem::available())?;
        let written = self.written_inputs();
        let mut bufs = Vec::new();
        let mut fresh = Vec::new();
        let mut of_operand = vec![0; m.operands.len()];
        let mut given = inputs.iter();
        // Each operand's position among the outputs (for lent outputs).
        let mut out_pos = vec![0; m.operands.len()];
        for (k, (i, _)) in self.outputs().enumerate() {
            out_pos[i] = k;
        }
        for (i, o) in m.operands.iter().enumerate() {
            if o.role != Role::Output {
                let (a, sig) = given
                    .next()
                    .ok_or_else(|| Error::Internal("input count".into()))?;
                if let Some((dtype, shape)) = sig {
                    if *dtype != self.dtypes[i] {
                        return Err(Error::DtypeMismatch {
                            operand: o.name.clone(),
                            expected: self.dtypes[i].to_string(),
                            found: dtype.to_string(),
                            path: "<memory>".into(),
                        });
                    }
                    self.check_shape(i, shape, "<memory>")?;
                }
                of_operand[i] = bufs.len();
                bufs.push(if written[i] {
                    Buf::Owned(RwLock::new(a.bytes().to_vec()))
                } else {
                    Buf::Shared(a.clone())
                });
            } else if let Some(j) = o.aliases {
                of_operand[i] = of_operand.get(j).copied().unwrap_or(0);
            } else if let Some(l) = lent.as_mut().and_then(|v| v.get_mut(out_pos[i])) {
                // Written in place. Unblocked outputs start as poison here
                // too; blocked ones are poisoned where no block was written.
                if o.block.is_none() {
                    fill_poison(self.dtypes[i], l.bytes_mut());
                }
                of_operand[i] = bufs.len();
                bufs.push(Buf::Lent(RwLock::new(*l)));
            } else {
                let bytes =
                    usize::try_from(self.operand_bytes(i)?).map_err(|_| Error::HostMemory {
                        message: format!(
                            "output `{}` does not fit in this host's address space",
                            o.name
                        ),
                    })?;
                let mut data = array::zeroed(bytes);
                // Blocked outputs are poisoned after the run where no block
                // was written (usually nowhere, which saves a pass over the
                // array); others here.
                if o.block.is_none() {
                    fill_poison(self.dtypes[i], &mut data);
                } else {
                    fresh.push(bufs.len());
                }
                of_operand[i] = bufs.len();
                bufs.push(Buf::Owned(RwLock::new(data)));
            }
        }
        let of_operand_copy = of_operand.clone();
        let buffers = Arc::new(Buffers {
            bufs,
            of_operand,
            fresh,
        });
        let (units, traffic) = self.execute(&buffers, opts)?;
        grid::check_races(self, &units)?;
        grid::poison_unwritten(self, &buffers, &units)?;
        // The workers are done: take the output buffers without copying.
        let (mut owned, of_operand) = match Arc::try_unwrap(buffers) {
            Ok(b) => (b.into_owned(), of_operand_copy),
            Err(_) => {
                return Err(Error::Internal(
                    "host buffers still shared after the run".into(),
                ))
            }
        };
        if let Some(mut lent) = lent {
            // Outputs written in place are done; one that aliases an input
            // was written into that input's private copy.
            for ((i, _), l) in self.outputs().zip(lent.iter_mut()) {
                if let Some(Some(d)) = owned.get(of_operand[i]) {
                    l.bytes_mut().copy_from_slice(d);
                }
            }
            return Ok((Vec::new(), traffic));
        }
        let mut out: Vec<HostArray> = Vec::new();
        let mut taken: Vec<(usize, usize)> = Vec::new();
        for (i, o) in self.outputs() {
            let b = of_operand[i];
            let data = match owned.get_mut(b).and_then(Option::take) {
                Some(d) => d,
                None => match taken.iter().find(|(tb, _)| *tb == b) {
                    Some(&(_, k)) => out[k].data.clone(),
                    None => return Err(Error::Internal("an output has no buffer".into())),
                },
            };
            taken.push((b, out.len()));
            let shape = o.shape.iter().map(|&d| d as usize).collect();
            out.push(HostArray::new(self.dtypes[i], shape, data));
        }
        Ok((out, traffic))
    }

    /// Which operands are inputs the kernel writes (aliased by an output,
    /// or a DMA destination): they get a private copy, the others are
    /// read in place.
    pub(crate) fn written_inputs(&self) -> Vec<bool> {
        let m = &self.m;
        let mut written = vec![false; m.operands.len()];
        for o in &m.operands {
            if let Some(j) = o.aliases {
                if let Some(w) = written.get_mut(j) {
                    *w = true;
                }
            }
        }
        for d in &m.dmas {
            let origin = |r: usize| m.refs.get(r).map(|r| r.origin);
            let dst = match origin(d.dst.ref_index) {
                Some(abi::RefOrigin::View(root)) => origin(root),
                o => o,
            };
            if let Some(abi::RefOrigin::Operand(i)) = dst {
                if let Some(w) = written.get_mut(i) {
                    *w = true;
                }
            }
        }
        // A remote copy from a peer may land in any operand it names.
        for d in m.meshes.iter().filter(|d| d.op == abi::MeshOp::RemoteStart) {
            let origin = |r: usize| m.refs.get(r).map(|r| r.origin);
            let Some(dst) = &d.dst else { continue };
            let dst = match origin(dst.ref_index) {
                Some(abi::RefOrigin::View(root)) => origin(root),
                o => o,
            };
            if let Some(abi::RefOrigin::Operand(i)) = dst {
                if let Some(w) = written.get_mut(i) {
                    *w = true;
                }
            }
        }
        written
    }

    /// The units of the grid (one per index of its leading parallel
    /// axes); [`CpuKernel::new`] made sure the product fits.
    pub(crate) fn units(&self) -> u64 {
        self.m
            .grid
            .iter()
            .take_while(|a| a.semantics == abi::Semantics::Parallel)
            .map(|a| a.extent)
            .product()
    }

    /// Runs every unit of the grid on up to `opts.threads` workers.
    fn execute(
        &self,
        buffers: &Arc<Buffers>,
        opts: &RunOptions,
    ) -> Result<(Vec<(u64, Visits)>, Traffic), Error> {
        let sched = Schedule::new(self, buffers)?;
        let threads = (opts.threads.max(1) as u64).min(sched.units.max(1));
        // The deadline is a point on the monotonic clock, fixed before any
        // worker starts: a run stops at the limit however late the ticker
        // thread is scheduled while the workers load every CPU.
        let deadline = opts.timeout.and_then(|t| Instant::now().checked_add(t));
        // The ticker sleeps until the deadline, then advances the epoch
        // every TICK until the workers are done (a worker that sets its
        // deadline just after one tick sees the next). Dropping `stop`
        // wakes it at once, so a short run does not wait out a tick.
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let grab = Grab {
            next: AtomicU64::new(0),
            chunk: (sched.units / (threads * 4)).max(1),
            units: sched.units,
            failed: AtomicBool::new(false),
        };
        let pins = pin::Pins::new(opts.pin, threads as usize);
        let claims = grid::Claims::new(self, buffers);
        let results: Vec<WorkerResult> = std::thread::scope(|s| {
            if let Some(deadline) = deadline {
                let engine = &self.engine;
                s.spawn(move || loop {
                    let wait = deadline.saturating_duration_since(Instant::now()).max(TICK);
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {
                            if Instant::now() >= deadline {
                                engine.increment_epoch();
                            }
                        }
                        _ => break,
                    }
                });
            }
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (sched, grab, pins, claims) = (&sched, &grab, &pins, &claims);
                    s.spawn(move || {
                        ieee_floats();
                        pins.enter(t as usize);
                        buffers.populate(t as usize, threads as usize);
                        let r = self.worker(buffers, (sched, claims), grab, opts, deadline);
                        if r.is_err() {
                            grab.failed.store(true, Ordering::Relaxed);
                        }
                        // No unit is left for this worker: the others may
                        // finish on the CPU it leaves idle (see pin.rs).
                        pins.release();
                        pins.leave(t as usize);
                        r
                    })
                })
                .collect();
            let r = handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err((
                            u64::MAX,
                            Box::new(Error::Internal("a worker thread panicked".into())),
                        ))
                    })
                })
                .collect();
            drop(stop);
            r
        });
        let mut units = Vec::new();
        let mut traffic = Traffic::default();
        let mut first: Option<(u64, Box<Error>)> = None;
        for r in results {
            match r {
                Ok((v, t)) => {
                    units.extend(v);
                    traffic.add(&t);
                }
                Err((u, e)) => {
                    if first.as_ref().is_none_or(|(fu, _)| u < *fu) {
                        first = Some((u, e));
                    }
                }
            }
        }
        // Workers take units in chunks, so their lists interleave: in unit
        // order, reports (races, unwritten blocks) do not depend on timing.
        units.sort_unstable_by_key(|(u, _)| *u);
        match first {
            Some((_, e)) => Err(*e),
            None => Ok((units, traffic)),
        }
    }

    fn worker(
        &self,
        buffers: &Arc<Buffers>,
        (sched, claims): (&Schedule, &grid::Claims),
        grab: &Grab,
        opts: &RunOptions,
        deadline: Option<Instant>,
    ) -> WorkerResult {
        let fail = |e| (0, Box::new(e));
        // Instances are kept between runs: their memory is already mapped
        // and touched, and every buffer is reset before it is read (scratch
        // and output blocks to poison, input blocks copied in).
        let pooled = self.pool.lock().ok().and_then(|mut p| p.pop());
        let mut inst = match pooled {
            Some(i) => i,
            None => {
                let host = Host {
                    m: self.m.clone(),
                    buffers: buffers.clone(),
                    dma_mode: opts.dma,
                    inflight: Vec::new(),
                    step: Vec::new(),
                    error: None,
                    mxu: mxu::Scratch::new(self.m.refs.len()),
                    traffic: Traffic::default(),
                    mesh: None,
                };
                Instance::new(&self.engine, &self.module, &self.linker, host).map_err(fail)?
            }
        };
        {
            let h = inst.store.data_mut();
            h.buffers = buffers.clone();
            h.dma_mode = opts.dma;
            h.inflight.clear();
            h.error = None;
            h.traffic = Traffic::default();
            h.mesh = opts.mesh.clone();
        }
        if let Some(seat) = &opts.mesh {
            let ptr = inst.memory.data_ptr(&inst.store) as usize;
            let len = inst.memory.data_size(&inst.store);
            seat.mesh
                .enter(seat.device, buffers.clone(), (ptr, len))
                .map_err(fail)?;
        }
        match deadline {
            // Any epoch change (this run's ticker, or another run's on the
            // same engine) asks the clock; only the deadline stops the run.
            Some(deadline) => {
                inst.store.set_epoch_deadline(1);
                inst.store.epoch_deadline_callback(move |_| {
                    Ok(if Instant::now() >= deadline {
                        UpdateDeadline::Interrupt
                    } else {
                        UpdateDeadline::Continue(1)
                    })
                });
            }
            None => inst.store.set_epoch_deadline(u64::MAX / 2),
        }
        if self.fuel {
            let f = opts.fuel.unwrap_or(u64::MAX / 2);
            inst.store
                .set_fuel(f)
                .map_err(|e| fail(Error::Internal(e.to_string())))?;
        }
        let mut runner = Runner::new(self, inst, sched, claims).map_err(fail)?;
        let mut out = Vec::new();
        while let Some(units) = grab.take() {
            for u in units {
                // An instance that stopped with an error is not reused.
                let v = runner.unit(u).map_err(|e| (u, Box::new(e)))?;
                out.push((u, v));
            }
        }
        if let Some(seat) = &opts.mesh {
            seat.mesh.done(seat.device).map_err(fail)?;
        }
        let mut inst = runner.into_instance();
        inst.store.data_mut().mesh = None;
        let traffic = std::mem::take(&mut inst.store.data_mut().traffic);
        inst.store.data_mut().buffers = Arc::new(Buffers {
            bufs: Vec::new(),
            of_operand: Vec::new(),
            fresh: Vec::new(),
        });
        if let Ok(mut p) = self.pool.lock() {
            p.push(inst);
        }
        Ok((out, traffic))
    }
}

/// Gives this thread IEEE floating point: subnormals are neither flushed
/// to zero in results nor read as zero. A new thread inherits the control
/// register of the thread that spawned it, and some hosts run pk from
/// threads that flush subnormals (XLA's CPU runtime, through the Python
/// package's FFI handler); the TPU's numerics and WebAssembly's both keep
/// them, so the workers always do.
fn ieee_floats() {
    #[cfg(target_arch = "x86_64")]
    {
        // MXCSR bits: 15 flush-to-zero, 6 denormals-are-zero.
        const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr/ldmxcsr read and write this thread's SSE control
        // register through a valid pointer to a local; clearing the two
        // flush bits keeps every other setting (rounding, exception masks).
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
            if csr & FTZ_DAZ != 0 {
                csr &= !FTZ_DAZ;
                std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack));
            }
        }
    }
}

/// "a mesh of 4 devices (d: 4)".
pub fn mesh_text(m: &CpuManifest) -> String {
    let axes: Vec<String> = m
        .mesh
        .iter()
        .map(|a| format!("{}: {}", a.name, a.size))
        .collect();
    format!("a mesh of {} devices ({})", m.devices(), axes.join(", "))
}

fn join(v: &[u64]) -> String {
    v.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
