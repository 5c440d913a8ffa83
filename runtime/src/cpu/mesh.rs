//! A mesh of devices in one process: one instance of a kernel per device,
//! each with its own host arrays (HBM), linear memory (VMEM + SMEM) and
//! semaphores, run one device at a time.
//!
//! Each device runs on its own thread, but only the device holding the
//! *turn* executes; it gives the turn away only at a `mesh` call (a remote
//! copy, a semaphore signal, wait or read). So remote copies write into a
//! peer that is parked, and the interleaving is decided by the scheduler,
//! never by the operating system: a schedule is a pure function of its
//! seed.
//!
//! - The fixed schedule runs a device until it blocks or ends, then the
//!   next runnable one in id order; remote copies land when they start.
//! - A random schedule (`seed`) holds every remote copy in flight until
//!   the scheduler lands it, and at every `mesh` call picks, uniformly, the
//!   next event among the runnable devices and the copies in flight.
//!
//! When no device can run and no copy is in flight while some device has
//! not ended, the kernel would hang on the TPU: the mesh reports the
//! deadlock (PK1040) with every blocked wait, instead of hanging.
//!
//! Semaphores of the mesh (plain, barrier, and the DMA semaphores of
//! remote copies) live here, keyed by device and byte address of the
//! semaphore in linear memory; a DMA semaphore counts bytes.

use super::buffers::Buffers;
use super::dma::{self, Place, Where};
use super::error::{at, located, Error};
use super::instance::Host;
use super::window::{self, Win};
use miette::{LabeledSpan, NamedSource};
use pk_lang::ir::DType;
use pk_lowering::wasm::abi::{CpuManifest, MeshOp, MeshSite, Space, Window};
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// How the devices of a mesh interleave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Each device runs until it blocks; copies land when they start.
    #[default]
    Fixed,
    /// Devices' progress and copies' landing in the random order of a seed.
    Random(u64),
}

/// A device's seat at a mesh: what a run on one device needs to reach its
/// peers.
#[derive(Clone)]
pub struct Seat {
    pub mesh: Arc<Mesh>,
    pub device: usize,
}

impl std::fmt::Debug for Seat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Seat(device {} of {})", self.device, self.mesh.n)
    }
}

#[derive(Debug, Clone)]
enum Status {
    /// May run when given the turn (not started yet, or preempted).
    Ready,
    Running,
    Blocked(Block),
    Done,
}

/// A wait that could not pass.
#[derive(Debug, Clone)]
struct Block {
    site: u32,
    sem: usize,
    need: i64,
}

/// A remote copy started and not yet waited for on both sides.
#[derive(Debug, Clone)]
struct Flight {
    from: usize,
    to: usize,
    site: u32,
    src: Place,
    dst: Place,
    dtype: DType,
    bytes: i64,
    send_sem: usize,
    recv_sem: usize,
    landed: bool,
    sent: bool,
    received: bool,
}

struct State {
    turn: Option<usize>,
    status: Vec<Status>,
    registered: usize,
    /// Whether each device has been given the turn once (entered its
    /// kernel).
    started: Vec<bool>,
    buffers: Vec<Option<Arc<Buffers>>>,
    /// Each device's linear memory (address, length) while it runs.
    mem: Vec<(usize, usize)>,
    sems: Vec<BTreeMap<usize, i64>>,
    flights: Vec<Flight>,
    rng: u64,
    /// The mesh's own failure (a deadlock), reported for every device.
    error: Option<Error>,
    aborted: bool,
}

/// A mesh of `n` devices running one kernel.
pub struct Mesh {
    n: usize,
    order: Order,
    m: Arc<CpuManifest>,
    state: Mutex<State>,
    cv: Condvar,
}

/// What a device that finds the mesh aborted returns: the mesh's (or
/// another device's) error is the one reported.
pub(crate) fn aborted() -> Error {
    Error::Internal("the mesh stopped: another device failed".into())
}

pub(crate) fn is_aborted(e: &Error) -> bool {
    matches!(e, Error::Internal(m) if m.starts_with("the mesh stopped"))
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Mesh {
    pub fn new(m: Arc<CpuManifest>, order: Order) -> Arc<Mesh> {
        let n = m.devices().max(1) as usize;
        let seed = match order {
            Order::Random(s) => s,
            Order::Fixed => 0,
        };
        Arc::new(Mesh {
            n,
            order,
            m,
            state: Mutex::new(State {
                turn: None,
                status: vec![Status::Ready; n],
                registered: 0,
                started: vec![false; n],
                buffers: vec![None; n],
                mem: vec![(0, 0); n],
                sems: vec![BTreeMap::new(); n],
                flights: Vec::new(),
                rng: seed,
                error: None,
                aborted: false,
            }),
            cv: Condvar::new(),
        })
    }

    pub fn devices(&self) -> usize {
        self.n
    }

    /// The mesh's own error (a deadlock), if it stopped with one.
    pub fn take_error(&self) -> Option<Error> {
        self.lock().error.take()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a device thread panicked; the state is
        // still consistent enough to report.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits (releasing the lock) until `dev` has the turn or the mesh
    /// stopped.
    fn wait_turn<'a>(
        &'a self,
        mut s: MutexGuard<'a, State>,
        dev: usize,
    ) -> Result<MutexGuard<'a, State>, Error> {
        while !s.aborted && s.turn != Some(dev) {
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if s.aborted {
            return Err(aborted());
        }
        Ok(s)
    }

    /// Device `dev` is ready to run: its host arrays are `buffers` and its
    /// memory `mem`. Returns when it has the turn (every device has
    /// entered first, so that no copy lands in a device with no memory).
    pub(crate) fn enter(
        &self,
        dev: usize,
        buffers: Arc<Buffers>,
        mem: (usize, usize),
    ) -> Result<(), Error> {
        let mut s = self.lock();
        s.buffers[dev] = Some(buffers);
        s.mem[dev] = mem;
        s.registered += 1;
        if s.registered == self.n && s.turn.is_none() {
            self.pick(&mut s, 0);
        }
        self.cv.notify_all();
        let _s = self.wait_turn(s, dev)?;
        Ok(())
    }

    /// Device `dev`'s kernel ended (it has the turn): its semaphores must
    /// be back at zero; it leaves the mesh and gives the turn away.
    pub(crate) fn done(&self, dev: usize) -> Result<(), Error> {
        let mut s = self.lock();
        let left: Vec<(usize, i64)> = s.sems[dev]
            .iter()
            .filter(|(_, v)| **v != 0)
            .map(|(a, v)| (*a, *v))
            .collect();
        s.status[dev] = Status::Done;
        s.buffers[dev] = None;
        s.mem[dev] = (0, 0);
        if !left.is_empty() {
            let list = left
                .iter()
                .map(|(a, v)| format!("`{}` holds {v}", self.sem_name(*a)))
                .collect::<Vec<_>>()
                .join(", ");
            let sites = self.sites_of_sems(&left);
            let e = self.error_at(
                |message, src, labels| Error::SemaphoreLeft {
                    message,
                    src,
                    labels,
                },
                format!(
                    "{} ended with semaphores not back at 0: {list}",
                    self.device_name(dev)
                ),
                sites
                    .iter()
                    .map(|&site| (site, format!("{} uses it here", self.device_name(dev))))
                    .collect(),
            );
            return Err(self.abort(s, e));
        }
        self.pick(&mut s, dev);
        self.cv.notify_all();
        Ok(())
    }

    /// Device `dev` stops (it failed, or its run ended whichever way): a
    /// mesh whose device failed stops every other one.
    pub fn leave(&self, dev: usize) {
        let mut s = self.lock();
        if !matches!(s.status[dev], Status::Done) {
            s.aborted = true;
            s.status[dev] = Status::Done;
        }
        s.buffers[dev] = None;
        s.mem[dev] = (0, 0);
        self.cv.notify_all();
    }

    /// Records `e` as the mesh's error and stops every device; returns the
    /// marker the calling device reports.
    fn abort(&self, mut s: MutexGuard<'_, State>, e: Error) -> Error {
        if s.error.is_none() {
            s.error = Some(e);
        }
        s.aborted = true;
        self.cv.notify_all();
        aborted()
    }

    fn runnable(s: &State, d: usize) -> bool {
        match &s.status[d] {
            Status::Ready | Status::Running => true,
            Status::Blocked(b) => s.sems[d].get(&b.sem).copied().unwrap_or(0) >= b.need,
            Status::Done => false,
        }
    }

    /// Gives the turn to the next device to run, after `cur` (landing
    /// copies in flight first where the order says so); reports a
    /// deadlock when nothing can move.
    fn pick(&self, s: &mut State, cur: usize) {
        loop {
            let devices: Vec<usize> = match self.order {
                Order::Fixed => (0..self.n)
                    .map(|i| (cur + i) % self.n)
                    .filter(|&d| Self::runnable(s, d))
                    .take(1)
                    .collect(),
                Order::Random(_) => (0..self.n).filter(|&d| Self::runnable(s, d)).collect(),
            };
            let flights: Vec<usize> = (0..s.flights.len())
                .filter(|&i| !s.flights[i].landed)
                .collect();
            let total = devices.len() + flights.len();
            if total == 0 {
                s.turn = None;
                if s.status.iter().all(|x| matches!(x, Status::Done)) {
                    return;
                }
                let e = self.deadlock(s);
                if s.error.is_none() {
                    s.error = Some(e);
                }
                s.aborted = true;
                return;
            }
            let k = match self.order {
                Order::Fixed => 0,
                Order::Random(_) => (splitmix(&mut s.rng) % total as u64) as usize,
            };
            if k < devices.len() {
                let d = devices[k];
                s.turn = Some(d);
                s.started[d] = true;
                if matches!(s.status[d], Status::Ready) {
                    s.status[d] = Status::Running;
                }
                return;
            }
            let f = flights[k - devices.len()];
            if let Err(e) = self.land(s, f) {
                if s.error.is_none() {
                    s.error = Some(e);
                }
                s.aborted = true;
                s.turn = None;
                return;
            }
        }
    }

    /// Lands flight `i`: the data arrives in the peer, its receive
    /// semaphore and the sender's send semaphore count the bytes.
    fn land(&self, s: &mut State, i: usize) -> Result<(), Error> {
        let f = s.flights[i].clone();
        let eb = f.dtype.bytes() as usize;
        let data = {
            let bufs = s.buffers[f.from].clone();
            let mem = s.mem[f.from];
            // SAFETY: the sender is parked (only the device holding the
            // turn runs, and it is inside the mesh's lock): its memory
            // is not used while the slice lives.
            let mem = unsafe { mem_slice(mem) };
            read_window(bufs.as_deref(), mem, &f.src, eb)?
        };
        let to_done = matches!(s.status[f.to], Status::Done);
        if to_done || s.buffers[f.to].is_none() {
            return Err(self.error_at(
                |message, src, labels| Error::SemaphoreLeft {
                    message,
                    src,
                    labels,
                },
                format!(
                    "a remote copy from {} lands in {}, whose kernel has ended: nothing there waits for it",
                    self.device_name(f.from),
                    self.device_name(f.to)
                ),
                vec![(f.site, format!("{} starts it here", self.device_name(f.from)))],
            ));
        }
        if matches!(f.dst.at, Where::Mem(_)) && !s.started[f.to] {
            return Err(self.not_started(f.from, f.to, f.site, "a remote copy lands in the VMEM"));
        }
        let bufs = s.buffers[f.to].clone();
        // SAFETY: as above, for the receiver.
        let mem = unsafe { mem_slice(s.mem[f.to]) };
        write_window(bufs.as_deref(), mem, &f.dst, eb, &data)?;
        *s.sems[f.to].entry(f.recv_sem).or_insert(0) += f.bytes;
        *s.sems[f.from].entry(f.send_sem).or_insert(0) += f.bytes;
        s.flights[i].landed = true;
        Ok(())
    }

    /// A copy or signal reached `to` before its kernel started: its VMEM
    /// and semaphores may still belong to the kernel before.
    fn not_started(&self, from: usize, to: usize, site: u32, what: &str) -> Error {
        self.error_at(
            |message, src, labels| Error::Barrier {
                message,
                src,
                labels,
            },
            format!(
                "{what} of {} before its kernel started (sent by {}): without a barrier, that memory may still be the previous kernel's",
                self.device_name(to),
                self.device_name(from)
            ),
            vec![(site, format!("{} sends it here", self.device_name(from)))],
        )
    }

    fn deadlock(&self, s: &State) -> Error {
        let mut lines = Vec::new();
        let mut labels = Vec::new();
        for (d, st) in s.status.iter().enumerate() {
            match st {
                Status::Blocked(b) => {
                    let have = s.sems[d].get(&b.sem).copied().unwrap_or(0);
                    let (what, loc) = self.site_text(b.site);
                    lines.push(format!(
                        "  {} waits at {loc}: {what}, `{}` holds {have}, needs {}",
                        self.device_name(d),
                        self.sem_name(b.sem),
                        b.need
                    ));
                    labels.push((b.site, format!("{} waits here", self.device_name(d))));
                }
                Status::Done => lines.push(format!("  {} has ended", self.device_name(d))),
                Status::Ready | Status::Running => {}
            }
        }
        self.error_at(
            |message, src, labels| Error::Deadlock {
                message,
                src,
                labels,
            },
            format!(
                "deadlock: every device of the mesh that has not ended waits, and nothing can signal it\n{}",
                lines.join("\n")
            ),
            labels,
        )
    }

    /// An error with one label per (site, text), labels at one site merged.
    fn error_at(
        &self,
        make: impl FnOnce(String, Option<Arc<NamedSource<String>>>, Vec<LabeledSpan>) -> Error,
        message: String,
        sites: Vec<(u32, String)>,
    ) -> Error {
        let mut merged: Vec<(u32, Vec<String>)> = Vec::new();
        for (site, text) in sites {
            match merged.iter_mut().find(|(s, _)| *s == site) {
                Some((_, v)) => v.push(text),
                None => merged.push((site, vec![text])),
            }
        }
        let mut src = None;
        let mut labels = Vec::new();
        for (site, texts) in merged {
            let Some(s) = self.m.sites.get(site as usize) else {
                continue;
            };
            let (file, span) = located(&self.m, &s.loc);
            if let (Some(f), Some(span)) = (file, span) {
                src.get_or_insert(f);
                labels.push(LabeledSpan::new_with_span(Some(texts.join("; ")), span));
            }
        }
        make(message, src, labels)
    }

    fn site_text(&self, site: u32) -> (String, String) {
        match self.m.sites.get(site as usize) {
            Some(s) => (s.what.clone(), at(&s.loc)),
            None => (format!("site {site}"), "<unknown location>".into()),
        }
    }

    /// "device 5" and, on a mesh of several axes, its coordinates.
    pub fn device_name(&self, d: usize) -> String {
        if self.m.mesh.len() < 2 {
            return format!("device {d}");
        }
        let mut c = Vec::new();
        let mut rest = d as u64;
        for a in self.m.mesh.iter().rev() {
            c.push(rest % a.size.max(1));
            rest /= a.size.max(1);
        }
        c.reverse();
        let c: Vec<String> = c.iter().map(|v| v.to_string()).collect();
        format!("device {d} ({})", c.join(", "))
    }

    /// The semaphore at byte address `addr`: `name` or `name[i]`.
    fn sem_name(&self, addr: usize) -> String {
        for r in &self.m.refs {
            let Some(o) = r.offset else { continue };
            let (o, b) = (o as usize, r.bytes as usize);
            if r.space == Space::Semaphore && addr >= o && addr < o + b {
                let n: u64 = r.shape.iter().product();
                return if n <= 1 {
                    r.name.clone()
                } else {
                    format!("{}[{}]", r.name, (addr - o) / 4)
                };
            }
        }
        format!("the semaphore at {addr}")
    }

    /// The sites that name any of these semaphores (for labels).
    fn sites_of_sems(&self, sems: &[(usize, i64)]) -> Vec<u32> {
        let refs: Vec<usize> = sems
            .iter()
            .filter_map(|(a, _)| {
                self.m.refs.iter().position(|r| {
                    r.offset.is_some_and(|o| {
                        r.space == Space::Semaphore
                            && *a >= o as usize
                            && *a < o as usize + r.bytes as usize
                    })
                })
            })
            .collect();
        self.m
            .meshes
            .iter()
            .filter(|s| {
                [&s.sem, &s.recv_sem]
                    .into_iter()
                    .flatten()
                    .any(|w| refs.contains(&w.ref_index))
            })
            .map(|s| s.site)
            .collect()
    }
}

/// The memory of a parked device as a slice.
///
/// # Safety
/// The device must not run while the slice lives.
unsafe fn mem_slice<'a>((ptr, len): (usize, usize)) -> &'a mut [u8] {
    if ptr == 0 {
        return &mut [];
    }
    std::slice::from_raw_parts_mut(ptr as *mut u8, len)
}

/// The elements of a window, packed row-major.
fn read_window(bufs: Option<&Buffers>, mem: &[u8], p: &Place, eb: usize) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; p.elems() as usize * eb];
    let flat = [p.elems()];
    let z = [0u64];
    let fw = Win {
        shape: &flat,
        start: &z,
        size: &flat,
    };
    match p.at {
        Where::Host(b) => {
            let bufs = bufs.ok_or_else(aborted)?;
            bufs.read(b, |src| window::copy(src, &p.win(), &mut out, &fw, eb))?;
        }
        Where::Mem(o) => {
            let n = p.ref_bytes(eb);
            let src = mem.get(o..o + n).ok_or_else(|| {
                Error::Internal("a remote copy's source lies outside memory".into())
            })?;
            window::copy(src, &p.win(), &mut out, &fw, eb);
        }
    }
    Ok(out)
}

/// Writes packed elements into a window.
fn write_window(
    bufs: Option<&Buffers>,
    mem: &mut [u8],
    p: &Place,
    eb: usize,
    data: &[u8],
) -> Result<(), Error> {
    let flat = [p.elems()];
    let z = [0u64];
    let fw = Win {
        shape: &flat,
        start: &z,
        size: &flat,
    };
    match p.at {
        Where::Host(b) => {
            let bufs = bufs.ok_or_else(aborted)?;
            bufs.write(b, |dst| window::copy(data, &fw, dst, &p.win(), eb))?;
        }
        Where::Mem(o) => {
            let n = p.ref_bytes(eb);
            let dst = mem.get_mut(o..o + n).ok_or_else(|| {
                Error::Internal("a remote copy's destination lies outside memory".into())
            })?;
            window::copy(data, &fw, dst, &p.win(), eb);
            dma::mark(mem, p, 1);
        }
    }
    Ok(())
}

/// Whether two windows of refs may share elements: the same buffer or the
/// same ref, with boxes that intersect.
fn overlap(a: &Place, b: &Place) -> bool {
    let same = match (&a.at, &b.at) {
        (Where::Host(x), Where::Host(y)) => x == y,
        (Where::Mem(x), Where::Mem(y)) => x == y,
        _ => false,
    };
    if !same {
        return false;
    }
    if a.shape != b.shape {
        return true;
    }
    a.start
        .iter()
        .zip(&a.size)
        .zip(b.start.iter().zip(&b.size))
        .all(|((s0, n0), (s1, n1))| s0 < &(s1 + n1) && s1 < &(s0 + n0))
}

/// The byte address of the semaphore a window names.
fn sem_addr(host: &Host, mem: &[u8], site: u32, w: &Window) -> Result<usize, Error> {
    let (p, _) = dma::resolve(host, mem, site, w)?;
    let Where::Mem(base) = p.at else {
        return Err(Error::Internal("semaphore outside memory".into()));
    };
    let mut idx = 0u64;
    for (i, s) in p.start.iter().enumerate() {
        let stride: u64 = p.shape[i + 1..].iter().product();
        idx += s * stride;
    }
    Ok(base + 4 * idx as usize)
}

fn window<'a>(w: &'a Option<Window>, what: &str) -> Result<&'a Window, Error> {
    w.as_ref()
        .ok_or_else(|| Error::Manifest(format!("a mesh site without its {what}")))
}

/// A `mesh(site, device, n)` call of the device of `host`, holding the
/// turn.
pub(crate) fn op(
    host: &mut Host,
    mem: &mut [u8],
    site: u32,
    device: i32,
    n: i32,
) -> Result<i32, Error> {
    let Some(seat) = host.mesh.clone() else {
        return Err(Error::MeshMismatch {
            message: format!(
                "kernel `{}` runs on a mesh of {} devices, but this run has none",
                host.m.kernel,
                host.m.devices()
            ),
        });
    };
    let m = host.m.clone();
    let s: &MeshSite = m
        .mesh_site(site)
        .ok_or_else(|| Error::Internal(format!("mesh call from unknown site {site}")))?;
    let mesh = &seat.mesh;
    let me = seat.device;
    if s.op == MeshOp::DeviceId {
        return Ok(me as i32);
    }
    let target = |d: i32| -> Result<usize, Error> {
        if d < 0 || d as usize >= mesh.n {
            let (what, _) = mesh.site_text(site);
            return Err(mesh.error_at(
                |message, src, labels| Error::DeviceOutOfRange {
                    message,
                    src,
                    labels,
                },
                format!(
                    "{} names device {d} in its {what}, outside the mesh of {} devices",
                    mesh.device_name(me),
                    mesh.n
                ),
                vec![(
                    site,
                    format!("{} names device {d} here", mesh.device_name(me)),
                )],
            ));
        }
        Ok(d as usize)
    };
    // Record where this device's memory is, for peers that write it
    // while it is parked.
    let here = (mem.as_mut_ptr() as usize, mem.len());
    match s.op {
        MeshOp::DeviceId => Ok(me as i32),
        MeshOp::RemoteStart => {
            let to = target(device)?;
            let (src, dt) = dma::resolve(host, mem, site, window(&s.src, "source")?)?;
            let (dst, _) = dma::resolve(host, mem, site, window(&s.dst, "destination")?)?;
            let send_sem = sem_addr(host, mem, site, window(&s.sem, "send semaphore")?)?;
            let recv_sem = sem_addr(host, mem, site, window(&s.recv_sem, "receive semaphore")?)?;
            let bytes = (src.elems() * dt.bytes()) as i64;
            host.traffic.dma += bytes as u64;
            let mut st = mesh.lock();
            st.mem[me] = here;
            mesh.check_access(&st, me, site, Some(&src), None)?;
            // A copy into the same window, not yet received: another
            // device's, or this device's own earlier one (the receiver has
            // not waited for it, let alone read it).
            if let Some(f) = st
                .flights
                .iter()
                .find(|f| f.to == to && !f.received && overlap(&f.dst, &dst))
            {
                let other = f.clone();
                let (message, labels) = if other.from == me {
                    (
                        format!(
                            "{} copies into the same window of {} again before {} has received its last copy there: nothing orders the two",
                            mesh.device_name(me),
                            mesh.device_name(to),
                            mesh.device_name(to)
                        ),
                        vec![
                            (other.site, format!("{} copies here first", mesh.device_name(me))),
                            (site, format!("{} copies here again", mesh.device_name(me))),
                        ],
                    )
                } else {
                    (
                        format!(
                            "{} and {} both copy into the same window of {} with nothing ordering them: the copy from {} has not been received yet",
                            mesh.device_name(other.from),
                            mesh.device_name(me),
                            mesh.device_name(to),
                            mesh.device_name(other.from)
                        ),
                        vec![
                            (other.site, format!("{} copies here", mesh.device_name(other.from))),
                            (site, format!("{} copies here", mesh.device_name(me))),
                        ],
                    )
                };
                let e = mesh.error_at(
                    |message, src, labels| Error::UnorderedWrites {
                        message,
                        src,
                        labels,
                    },
                    message,
                    labels,
                );
                return Err(mesh.abort(st, e));
            }
            st.flights.push(Flight {
                from: me,
                to,
                site,
                src,
                dst,
                dtype: dt,
                bytes,
                send_sem,
                recv_sem,
                landed: false,
                sent: false,
                received: false,
            });
            if mesh.order == Order::Fixed {
                let i = st.flights.len() - 1;
                if let Err(e) = mesh.land(&mut st, i) {
                    return Err(mesh.abort(st, e));
                }
            }
            mesh.yield_now(st, me)?;
            Ok(0)
        }
        MeshOp::WaitSend | MeshOp::WaitRecv => {
            let (src, dt) = dma::resolve(host, mem, site, window(&s.src, "source")?)?;
            let bytes = (src.elems() * dt.bytes()) as i64;
            let send = s.op == MeshOp::WaitSend;
            let sem = if send {
                sem_addr(host, mem, site, window(&s.sem, "send semaphore")?)?
            } else {
                sem_addr(host, mem, site, window(&s.recv_sem, "receive semaphore")?)?
            };
            let mut st = mesh.lock();
            st.mem[me] = here;
            st = mesh.block_on(st, me, site, sem, bytes)?;
            // The oldest copy this wait completes.
            let found = st.flights.iter().position(|f| {
                f.landed
                    && if send {
                        f.from == me && f.send_sem == sem && !f.sent
                    } else {
                        f.to == me && f.recv_sem == sem && !f.received
                    }
            });
            if let Some(i) = found {
                if send {
                    st.flights[i].sent = true;
                } else {
                    st.flights[i].received = true;
                }
            }
            st.flights.retain(|f| !(f.sent && f.received));
            mesh.yield_now(st, me)?;
            Ok(0)
        }
        MeshOp::Signal => {
            let sem = sem_addr(host, mem, site, window(&s.sem, "semaphore")?)?;
            let to = if device < 0 { me } else { target(device)? };
            if s.barrier && to == me {
                let st = mesh.lock();
                let e = mesh.error_at(
                    |message, src, labels| Error::Barrier {
                        message,
                        src,
                        labels,
                    },
                    format!(
                        "{} signals the barrier semaphore on itself: a barrier is passed by the signals of other devices",
                        mesh.device_name(me)
                    ),
                    vec![(site, format!("{} signals itself here", mesh.device_name(me)))],
                );
                return Err(mesh.abort(st, e));
            }
            let mut st = mesh.lock();
            st.mem[me] = here;
            if matches!(st.status[to], Status::Done) {
                let e = mesh.error_at(
                    |message, src, labels| Error::SemaphoreLeft {
                        message,
                        src,
                        labels,
                    },
                    format!(
                        "{} signals `{}` on {}, whose kernel has ended: nothing there waits for it",
                        mesh.device_name(me),
                        mesh.sem_name(sem),
                        mesh.device_name(to)
                    ),
                    vec![(site, format!("{} signals here", mesh.device_name(me)))],
                );
                return Err(mesh.abort(st, e));
            }
            if !s.barrier && !st.started[to] {
                let e = mesh.not_started(me, to, site, "a signal reaches a semaphore");
                return Err(mesh.abort(st, e));
            }
            *st.sems[to].entry(sem).or_insert(0) += i64::from(n);
            mesh.yield_now(st, me)?;
            Ok(0)
        }
        MeshOp::Wait => {
            let sem = sem_addr(host, mem, site, window(&s.sem, "semaphore")?)?;
            let mut st = mesh.lock();
            st.mem[me] = here;
            st = mesh.block_on(st, me, site, sem, i64::from(n))?;
            mesh.yield_now(st, me)?;
            Ok(0)
        }
        MeshOp::Read => {
            let sem = sem_addr(host, mem, site, window(&s.sem, "semaphore")?)?;
            let st = mesh.lock();
            let v = st.sems[me].get(&sem).copied().unwrap_or(0);
            Ok(v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32)
        }
    }
}

impl Mesh {
    /// Waits until `sem` of `me` holds `need`, then takes it; other
    /// devices run meanwhile.
    fn block_on<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        me: usize,
        site: u32,
        sem: usize,
        need: i64,
    ) -> Result<MutexGuard<'a, State>, Error> {
        if st.sems[me].get(&sem).copied().unwrap_or(0) < need {
            st.status[me] = Status::Blocked(Block { site, sem, need });
            self.pick(&mut st, me);
            self.cv.notify_all();
            st = self.wait_turn(st, me)?;
            st.status[me] = Status::Running;
        }
        *st.sems[me].entry(sem).or_insert(0) -= need;
        Ok(st)
    }

    /// After a `mesh` call: under a random order the scheduler may run
    /// another device or land a copy before this one goes on.
    fn yield_now(&self, mut st: MutexGuard<'_, State>, me: usize) -> Result<(), Error> {
        if self.order == Order::Fixed {
            return Ok(());
        }
        st.status[me] = Status::Ready;
        self.pick(&mut st, me);
        self.cv.notify_all();
        let mut st = self.wait_turn(st, me)?;
        st.status[me] = Status::Running;
        Ok(())
    }

    /// A copy of device `me` reads `src` and writes `dst` (its own
    /// windows): neither may touch a window a remote copy still owns.
    fn check_access(
        &self,
        st: &State,
        me: usize,
        site: u32,
        src: Option<&Place>,
        dst: Option<&Place>,
    ) -> Result<(), Error> {
        for f in &st.flights {
            let (bad, text) = if f.to == me && !f.received {
                let r = src.is_some_and(|p| overlap(p, &f.dst));
                let w = dst.is_some_and(|p| overlap(p, &f.dst));
                (
                    r || w,
                    format!(
                        "{} {} the destination of a remote copy from {} before its `remote_wait_recv`",
                        self.device_name(me),
                        if r { "reads" } else { "writes" },
                        self.device_name(f.from)
                    ),
                )
            } else if f.from == me && !f.sent {
                (
                    dst.is_some_and(|p| overlap(p, &f.src)),
                    format!(
                        "{} writes the source of its remote copy to {} before its `remote_wait_send`",
                        self.device_name(me),
                        self.device_name(f.to)
                    ),
                )
            } else {
                (false, String::new())
            };
            if bad {
                return Err(self.error_at(
                    |message, src, labels| Error::WindowInFlight {
                        message,
                        src,
                        labels,
                    },
                    text,
                    vec![
                        (
                            f.site,
                            format!("{} starts the remote copy here", self.device_name(f.from)),
                        ),
                        (
                            site,
                            format!("{} touches its window here", self.device_name(me)),
                        ),
                    ],
                ));
            }
        }
        Ok(())
    }
}

/// A local DMA of a device on a mesh reads `src` and writes `dst`.
pub(crate) fn check_local(host: &Host, site: u32, src: &Place, dst: &Place) -> Result<(), Error> {
    let Some(seat) = &host.mesh else {
        return Ok(());
    };
    let st = seat.mesh.lock();
    match seat
        .mesh
        .check_access(&st, seat.device, site, Some(src), Some(dst))
    {
        Ok(()) => Ok(()),
        Err(e) => Err(seat.mesh.abort(st, e)),
    }
}
