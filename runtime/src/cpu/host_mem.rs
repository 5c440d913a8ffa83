//! How much host memory a run needs, and whether the host has it.
//!
//! A run holds its inputs, a private copy of each input the kernel writes,
//! its outputs, and one linear memory per worker instance. All of these
//! follow from the operand table and the layout, so the executor (and the
//! CLI, before it reads any input file) can refuse a run that cannot fit
//! with a diagnostic that names the sizes, instead of an allocation failure
//! that aborts the process or an OOM kill. Every size is computed with
//! overflow-checked arithmetic: a shape whose byte count does not fit in 64
//! bits is refused the same way.
//!
//! invariant: [`Need::total`] is at least what `run_shared` allocates for
//! buffers and instances (the few kilobytes of bookkeeping aside).

use super::error::Error;
use super::CpuKernel;
use pk_lowering::wasm::abi::Role;

/// The bytes one run needs, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Need {
    /// The caller's input arrays (scalar prefetch included).
    pub inputs: u64,
    /// Private copies of inputs the kernel writes (aliased by an output or
    /// a DMA destination).
    pub copies: u64,
    /// Output arrays that do not reuse an input's buffer.
    pub outputs: u64,
    /// The linear memories of the worker instances.
    pub instances: u64,
    /// How many worker instances the run starts.
    pub workers: u64,
}

impl Need {
    /// Everything, inputs included.
    pub fn total(&self) -> u64 {
        self.inputs
            .saturating_add(self.copies)
            .saturating_add(self.outputs)
            .saturating_add(self.instances)
    }

    /// What a run still allocates once its inputs are in memory.
    pub fn to_allocate(&self) -> u64 {
        self.total() - self.inputs
    }
}

/// A byte count in binary units, for messages.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The bytes of an array of `shape` whose elements take `elem` bytes, or
/// `None` when the count overflows 64 bits.
pub(crate) fn array_bytes(elem: u64, shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(elem, |a, &d| a.checked_mul(d))
}

pub(crate) fn overflow(name: &str, dtype: &str, shape: &[u64]) -> Error {
    Error::HostMemory {
        message: format!(
            "operand `{name}` ({dtype}[{}]) has more bytes than a 64-bit count holds",
            super::join(shape)
        ),
    }
}

impl CpuKernel {
    /// The bytes of operand `i`'s whole array, or the coded error when
    /// they overflow.
    pub fn operand_bytes(&self, i: usize) -> Result<u64, Error> {
        let o = &self.m.operands[i];
        array_bytes(self.dtypes[i].bytes(), &o.shape)
            .ok_or_else(|| overflow(&o.name, &o.dtype, &o.shape))
    }

    /// The host memory a run on `threads` workers needs.
    pub fn host_need(&self, threads: usize) -> Result<Need, Error> {
        let m = &self.m;
        let written = self.written_inputs();
        let mut need = Need::default();
        let add = |to: &mut u64, b: u64, i: usize| {
            let o = &m.operands[i];
            *to = to
                .checked_add(b)
                .ok_or_else(|| overflow(&o.name, &o.dtype, &o.shape))?;
            Ok::<(), Error>(())
        };
        for (i, o) in m.operands.iter().enumerate() {
            let b = self.operand_bytes(i)?;
            match o.role {
                Role::Output if o.aliases.is_some() => {}
                Role::Output => add(&mut need.outputs, b, i)?,
                _ => {
                    add(&mut need.inputs, b, i)?;
                    if written[i] {
                        add(&mut need.copies, b, i)?;
                    }
                }
            }
        }
        need.workers = (threads.max(1) as u64).min(self.units().max(1));
        need.instances = m.layout.memory_bytes.saturating_mul(need.workers);
        Ok(need)
    }

    /// Refuses a run on `threads` workers that the host cannot hold, inputs
    /// included: call it before reading the input files.
    pub fn check_host_memory(&self, threads: usize) -> Result<Need, Error> {
        let need = self.host_need(threads)?;
        self.check_need(&need, need.total(), available())?;
        Ok(need)
    }

    /// Refuses a run whose `bytes` (part of `need`) exceed what is
    /// available.
    pub(crate) fn check_need(
        &self,
        need: &Need,
        bytes: u64,
        avail: Option<(u64, &'static str)>,
    ) -> Result<(), Error> {
        let Some((avail, source)) = avail else {
            return Ok(());
        };
        if bytes <= avail {
            return Ok(());
        }
        let largest = (0..self.m.operands.len())
            .filter(|&i| self.m.operands[i].aliases.is_none())
            .filter_map(|i| Some((self.operand_bytes(i).ok()?, i)))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let largest = largest
            .map(|(b, i)| {
                let o = &self.m.operands[i];
                format!(
                    "; the largest operand is `{}` ({}[{}], {})",
                    o.name,
                    o.dtype,
                    super::join(&o.shape),
                    human(b)
                )
            })
            .unwrap_or_default();
        Err(Error::HostMemory {
            message: format!(
                "kernel `{}` needs {} of host memory (inputs {}, private copies {}, outputs {}, linear memories of {} worker{} {}){largest}, but {} is available ({source})",
                self.m.kernel,
                human(bytes),
                human(need.inputs),
                human(need.copies),
                human(need.outputs),
                need.workers,
                if need.workers == 1 { "" } else { "s" },
                human(need.instances),
                human(avail),
            ),
        })
    }
}

/// The memory this process may still allocate, and where the figure comes
/// from: the tighter of the cgroup's limit (v2, else v1) less its usage,
/// and the kernel's `MemAvailable`. `None` where neither is known.
pub fn available() -> Option<(u64, &'static str)> {
    let meminfo = mem_available().map(|b| (b, "MemAvailable in /proc/meminfo"));
    let cgroup = cgroup_available().map(|b| (b, "the cgroup's memory limit less its usage"));
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Limits at or above this are "no limit" (v1 reports one near 2^63).
const UNLIMITED: u64 = 1 << 60;

fn read_u64(path: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A `memory.stat` entry, in bytes.
fn stat(dir: &std::path::Path, key: &str) -> u64 {
    std::fs::read_to_string(dir.join("memory.stat"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The room left under the tightest memory limit of this process's cgroup
/// and its ancestors. Inactive file pages count as free: the kernel drops
/// them before it would kill the process.
fn cgroup_available() -> Option<u64> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // (controller path, mount point, limit file, usage file, stat key)
    let mut places = Vec::new();
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (id, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        if id == "0" && ctrls.is_empty() {
            if let Some(mp) = mount_point(&mounts, |fs, _| fs == "cgroup2") {
                places.push((path, mp, "memory.max", "memory.current", "inactive_file"));
            }
        } else if ctrls.split(',').any(|c| c == "memory") {
            let memory =
                |fs: &str, opts: &str| fs == "cgroup" && opts.split(',').any(|o| o == "memory");
            if let Some(mp) = mount_point(&mounts, memory) {
                places.push((
                    path,
                    mp,
                    "memory.limit_in_bytes",
                    "memory.usage_in_bytes",
                    "total_inactive_file",
                ));
            }
        }
    }
    let mut best: Option<u64> = None;
    for (path, mount, limit_file, usage_file, inactive) in places {
        let root = std::path::PathBuf::from(mount);
        let mut dir = root.join(path.trim_start_matches('/'));
        // Inside a cgroup namespace the mount is the process's own cgroup,
        // and the path from /proc/self/cgroup may not exist below it.
        if !dir.exists() {
            dir = root.clone();
        }
        loop {
            if let Some(limit) = read_u64(&dir.join(limit_file)).filter(|&l| l < UNLIMITED) {
                let used = read_u64(&dir.join(usage_file)).unwrap_or(0);
                let free = limit.saturating_sub(used.saturating_sub(stat(&dir, inactive)));
                best = Some(best.map_or(free, |b| b.min(free)));
            }
            if dir == root || !dir.pop() {
                break;
            }
        }
    }
    best
}

/// The mount point of the first mount whose file system type and super
/// options `pick` accepts.
fn mount_point(mountinfo: &str, pick: impl Fn(&str, &str) -> bool) -> Option<String> {
    mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let mp = left.split_whitespace().nth(4)?;
        let mut r = right.split_whitespace();
        let fs = r.next()?;
        let opts = r.nth(1).unwrap_or("");
        pick(fs, opts).then(|| mp.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human(512), "512 bytes");
        assert_eq!(human(3 << 20), "3.0 MiB");
        assert_eq!(human(64 << 30), "64.0 GiB");
    }

    #[test]
    fn mount_points_by_type_and_options() {
        let info = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                    35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_point(info, |fs, _| fs == "cgroup2").as_deref(),
            Some("/sys/fs/cgroup/unified")
        );
        assert_eq!(
            mount_point(info, |fs, o| fs == "cgroup"
                && o.split(',').any(|x| x == "memory"))
            .as_deref(),
            Some("/sys/fs/cgroup/memory")
        );
    }

    #[test]
    fn this_host_reports_some_memory() {
        let (bytes, _) = available().expect("Linux reports MemAvailable");
        assert!(bytes > 0);
    }
}
