//! Ahead-of-time compilation of a StableHLO module for a TPU generation that
//! need not be present: a topology description stands in for the hardware.

use std::ffi::c_char;
use std::ptr;
use std::time::{Duration, Instant};

use pjrt_sys::protos::xla::{CompileOptionsProto, ExecutableBuildOptionsProto};
use pjrt_sys::{PJRT_Executable, PJRT_TopologyDescription};
use prost::Message as _;

use super::abi;
use super::error::{source_locations, PjrtError};
use super::log::{capture_stderr, print_log};
use super::plugin::{api_fn, named_value, numeric_value, raw_slice, raw_string, Plugin, RawError};
use super::target::TpuTarget;

/// A kernel compiled for one TPU generation.
#[derive(Debug, Clone)]
pub struct CompiledKernel {
    pub target: TpuTarget,
    /// The topology it was compiled against ([`TpuTarget::topology_for`]).
    pub topology: &'static str,
    /// libtpu's serialization of the executable (`PJRT_Executable_Serialize`),
    /// which a TPU host loads with `PJRT_Executable_DeserializeAndLoad`. It is
    /// tied to the libtpu version that produced it.
    pub serialized_executable: Vec<u8>,
    /// Size of the generated TPU machine code.
    pub generated_code_bytes: u64,
    /// The compiler's memory accounting, when the plugin provides it; see
    /// [`Executable::memory_stats`].
    pub memory_stats: Option<MemoryStats>,
    /// The compiler's cost analysis as `(property, value)`, e.g.
    /// `("bytes accessed0{}", 524288.0)` (operand 0) or `("utilization1{}",
    /// 1.0)`; numeric properties only, sorted by name. Empty when the plugin
    /// offers none.
    pub cost_analysis: Vec<(String, f64)>,
    /// Wall time of `PJRT_Compile` alone.
    pub compile_time: Duration,
    /// libtpu's schedule of the compile, when the plugin keeps it
    /// ([`Plugin::load_capturing`]).
    pub schedule: super::Captured,
}

/// Memory the compiled program needs, per device, as XLA accounts it.
/// Device figures are HBM; `host_*` are host memory. Package reports store
/// it as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemoryStats {
    pub generated_code_bytes: u64,
    pub argument_bytes: u64,
    pub output_bytes: u64,
    /// Bytes of arguments reused as outputs.
    pub alias_bytes: u64,
    pub temp_bytes: u64,
    pub host_generated_code_bytes: u64,
    pub host_argument_bytes: u64,
    pub host_output_bytes: u64,
    pub host_alias_bytes: u64,
    pub host_temp_bytes: u64,
    pub peak_memory_bytes: u64,
}

/// A libtpu topology description: the stand-in for a TPU slice that the
/// compiler targets.
pub struct Topology {
    plugin: &'static Plugin,
    raw: *mut PJRT_TopologyDescription,
    target: TpuTarget,
    name: &'static str,
}

impl Plugin {
    /// Describes the topology `target` is compiled against
    /// ([`TpuTarget::topology_name`]).
    pub fn topology(&'static self, target: TpuTarget) -> Result<Topology, PjrtError> {
        self.topology_named(target, target.topology_name())
    }

    /// Describes the topology a program of `devices` SPMD partitions is
    /// compiled against for `target` ([`TpuTarget::topology_for`]; the
    /// largest slice when there are more devices than any has).
    pub fn topology_for(
        &'static self,
        target: TpuTarget,
        devices: u64,
    ) -> Result<Topology, PjrtError> {
        let name = target
            .topology_for(devices)
            .or_else(|| target.topology_for(super::MAX_MESH_DEVICES))
            .unwrap_or(target.topology_name());
        self.topology_named(target, name)
    }

    fn topology_named(
        &'static self,
        target: TpuTarget,
        name: &'static str,
    ) -> Result<Topology, PjrtError> {
        let create = api_fn!(self, PJRT_TopologyDescription_Create)?;
        let mut args = pjrt_sys::PJRT_TopologyDescription_Create_Args::new();
        args.topology_name = name.as_ptr().cast::<c_char>();
        args.topology_name_size = name.len();
        // SAFETY: `args` is a valid 0.54 struct (unchanged since) whose name
        // outlives the call; no create options are passed.
        let err = unsafe { create(&mut args) };
        if let Some(e) = self.take_error(err) {
            return Err(PjrtError::Topology {
                target: target.to_string(),
                topology: name.to_string(),
                message: e.message,
            });
        }
        if args.topology.is_null() {
            return Err(PjrtError::Topology {
                target: target.to_string(),
                topology: name.to_string(),
                message: "libtpu returned no topology and no error".into(),
            });
        }
        Ok(Topology {
            plugin: self,
            raw: args.topology,
            target,
            name,
        })
    }

    /// Compiles `stablehlo` (an MLIR text module) for `target`. What
    /// libtpu writes to standard error meanwhile is dropped, unless the
    /// compile fails; see [`Plugin::compile_logged`].
    pub fn compile(
        &'static self,
        target: TpuTarget,
        stablehlo: &str,
    ) -> Result<CompiledKernel, PjrtError> {
        self.compile_logged(target, stablehlo, false)
    }

    /// [`Plugin::compile`], printing what libtpu writes to standard error
    /// while creating the topology and compiling when `verbose`. When the
    /// compile fails, that text is part of the error's message either way.
    pub fn compile_logged(
        &'static self,
        target: TpuTarget,
        stablehlo: &str,
        verbose: bool,
    ) -> Result<CompiledKernel, PjrtError> {
        let devices = u64::from(module_partitions(stablehlo));
        let (result, log) =
            capture_stderr(|| self.topology_for(target, devices)?.compile(stablehlo));
        if verbose {
            print_log(&log);
        }
        result.map_err(|e| e.with_log(&log))
    }
}

impl Topology {
    pub fn target(&self) -> TpuTarget {
        self.target
    }

    /// The topology's libtpu name, e.g. `v5e:2x2`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The device kind libtpu reports for the topology's chips, e.g.
    /// `TPU v5 lite`.
    pub fn device_kind(&self) -> Result<String, PjrtError> {
        let describe = api_fn!(self.plugin, PJRT_TopologyDescription_GetDeviceDescriptions)?;
        let kind = api_fn!(self.plugin, PJRT_DeviceDescription_Kind)?;
        let mut args = pjrt_sys::PJRT_TopologyDescription_GetDeviceDescriptions_Args::new();
        args.topology = self.raw;
        // SAFETY: `self.raw` is a live topology; the descriptions it returns
        // live as long as it does.
        let err = unsafe { describe(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(self.topology_error(e.message));
        }
        // SAFETY: as above.
        let descriptions = unsafe { raw_slice(args.descriptions, args.num_descriptions) };
        let Some(&first) = descriptions.first() else {
            return Err(self.topology_error("the topology has no devices".into()));
        };
        let mut kind_args = pjrt_sys::PJRT_DeviceDescription_Kind_Args::new();
        kind_args.device_description = first;
        // SAFETY: `first` is a live description owned by the topology.
        let err = unsafe { kind(&mut kind_args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(self.topology_error(e.message));
        }
        // SAFETY: the kind string lives as long as the description.
        Ok(unsafe { raw_string(kind_args.device_kind, kind_args.device_kind_size) })
    }

    fn topology_error(&self, message: String) -> PjrtError {
        PjrtError::Topology {
            target: self.target.to_string(),
            topology: self.name.to_string(),
            message,
        }
    }

    /// Compiles `stablehlo` (an MLIR text module) for this topology and
    /// collects what pk records about the result.
    pub fn compile(&self, stablehlo: &str) -> Result<CompiledKernel, PjrtError> {
        let started = Instant::now();
        let (executable, schedule) = self.plugin.capture(|| self.compile_executable(stablehlo));
        let mut k = self.record(&executable?, started)?;
        k.schedule = schedule;
        Ok(k)
    }

    /// Compiles `stablehlo` as [`Topology::compile`] does, for a caller
    /// that keeps what libtpu says of the kernel and not the executable
    /// (`pkc tune`): the module is renamed so that its schedule is captured
    /// while compiles on other threads capture theirs, and the executable
    /// is not serialized (`serialized_executable` is empty).
    pub fn compile_for_tuning(&self, stablehlo: &str) -> Result<CompiledKernel, PjrtError> {
        let started = Instant::now();
        let (executable, schedule) = self
            .plugin
            .capture_named(stablehlo, |text| self.compile_executable(text));
        let executable = executable?;
        Ok(CompiledKernel {
            target: self.target,
            topology: self.name,
            serialized_executable: Vec::new(),
            generated_code_bytes: executable.generated_code_bytes()?,
            memory_stats: executable.memory_stats().ok(),
            cost_analysis: executable.cost_analysis().unwrap_or_default(),
            compile_time: started.elapsed(),
            schedule,
        })
    }

    /// Compiles a whole program, such as a model exported by `jax.export`:
    /// MLIR text or bytecode (a serialized, versioned StableHLO portable
    /// artifact is bytecode too), over `partitions` SPMD partitions and
    /// `replicas` replicas as the module's `mhlo.num_partitions` and
    /// `mhlo.num_replicas` say. libtpu reads the module's own sharding
    /// annotations; the topology must have enough devices for them. A
    /// partitioned module that uses the Shardy dialect (`sdy`, what JAX
    /// emits for `shard_map` and sharded arguments) is partitioned by
    /// Shardy, as JAX compiles it.
    pub fn compile_program(
        &self,
        code: &[u8],
        replicas: u32,
        partitions: u32,
    ) -> Result<CompiledKernel, PjrtError> {
        let started = Instant::now();
        let shardy = partitions > 1 && code.windows(4).any(|w| w == b"sdy.");
        let options = program_options(replicas, partitions, shardy);
        let (executable, schedule) = self.plugin.capture(|| self.compile_with(code, &options));
        let mut k = self.record(&executable?, started)?;
        k.schedule = schedule;
        Ok(k)
    }

    /// Runs `PJRT_Compile` and returns the executable itself, for callers
    /// that want to query it further.
    /// What pk records about a compiled executable (`started` is when its
    /// compile began).
    fn record(
        &self,
        executable: &Executable,
        started: Instant,
    ) -> Result<CompiledKernel, PjrtError> {
        Ok(CompiledKernel {
            target: self.target,
            topology: self.name,
            serialized_executable: executable.serialize()?,
            generated_code_bytes: executable.generated_code_bytes()?,
            memory_stats: executable.memory_stats().ok(),
            cost_analysis: executable.cost_analysis().unwrap_or_default(),
            compile_time: started.elapsed(),
            schedule: super::Captured::Off,
        })
    }

    /// Compiles one kernel's module: a single-device program, or the SPMD
    /// program of a kernel across devices when its first line says
    /// `mhlo.num_partitions = N` (see `CustomCall::spmd_partitions`).
    pub fn compile_executable(&self, stablehlo: &str) -> Result<Executable, PjrtError> {
        match module_partitions(stablehlo) {
            n if n > 1 => self.compile_with(stablehlo.as_bytes(), &program_options(1, n, false)),
            _ => self.compile_with(stablehlo.as_bytes(), &compile_options()),
        }
    }

    fn compile_with(&self, code: &[u8], options: &[u8]) -> Result<Executable, PjrtError> {
        let compile = api_fn!(self.plugin, PJRT_Compile)?;
        let program = mlir_program_bytes(code);
        let mut args = pjrt_sys::PJRT_Compile_Args::new();
        args.topology = self.raw;
        args.program = &program;
        args.compile_options = options.as_ptr().cast::<c_char>();
        args.compile_options_size = options.len();
        // SAFETY: every pointer in `args` (program text, format, options,
        // topology) outlives the call; the structs are unchanged since 0.54.
        let err = unsafe { compile(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(compile_failed(self.target, e));
        }
        if args.executable.is_null() {
            return Err(no_executable(self.target));
        }
        Ok(Executable {
            plugin: self.plugin,
            raw: args.executable,
            target: self.target,
        })
    }
}

/// The program PJRT compiles: `stablehlo` as MLIR text. The result points
/// into `stablehlo` and must not outlive it.
pub(super) fn mlir_program(stablehlo: &str) -> pjrt_sys::PJRT_Program {
    mlir_program_bytes(stablehlo.as_bytes())
}

/// [`mlir_program`] for MLIR text or bytecode; PJRT tells them apart by
/// the bytecode's magic number.
fn mlir_program_bytes(code: &[u8]) -> pjrt_sys::PJRT_Program {
    const FORMAT: &str = "mlir";
    let mut program = pjrt_sys::PJRT_Program::new();
    // PJRT_Program's `code` is declared mutable because other calls fill it
    // in; the compile calls only read it.
    program.code = code.as_ptr().cast::<c_char>().cast_mut();
    program.code_size = code.len();
    program.format = FORMAT.as_ptr().cast::<c_char>();
    program.format_size = FORMAT.len();
    program
}

/// libtpu's rejection of a kernel compiled for `target`, with the `.pk`
/// locations its message quotes.
pub(super) fn compile_failed(target: TpuTarget, e: RawError) -> PjrtError {
    PjrtError::Compile {
        target: target.to_string(),
        status: e.status().to_string(),
        locations: source_locations(&e.message),
        message: e.message,
    }
}

/// A compile call that reported success but returned nothing.
pub(super) fn no_executable(target: TpuTarget) -> PjrtError {
    PjrtError::Compile {
        target: target.to_string(),
        status: "UNKNOWN".into(),
        message: "libtpu returned no executable and no error".into(),
        locations: vec![],
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if let Ok(destroy) = api_fn!(self.plugin, PJRT_TopologyDescription_Destroy) {
            let mut args = pjrt_sys::PJRT_TopologyDescription_Destroy_Args::new();
            args.topology = self.raw;
            // SAFETY: the topology is destroyed once, here; executables
            // compiled from it do not borrow it.
            let err = unsafe { destroy(&mut args) };
            // Nothing useful can be done with a failure to free.
            let _ = self.plugin.take_error(err);
        }
    }
}

/// The serialized `xla.CompileOptionsProto` passed to every compile.
///
/// Only `executable_build_options` is set, with `num_replicas = 1` and
/// `num_partitions = 1`: a kernel runs on one device, and these are what XLA
/// assumes for an unsharded program. `device_ordinal` is -1 ("any device"),
/// as there is no device to name when compiling ahead of time; on a TPU
/// host, XLA's default assignment then places the program on device 0, the
/// one a kernel runs on. Everything else keeps XLA's defaults: no argument
/// layouts (the module's own row-major layouts apply), no SPMD partitioning,
/// default debug options.
/// The `mhlo.num_partitions` of a module's first line (1 when absent).
pub fn module_partitions(stablehlo: &str) -> u32 {
    let first = stablehlo.lines().next().unwrap_or("");
    first
        .split("mhlo.num_partitions = ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

pub(super) fn compile_options() -> Vec<u8> {
    CompileOptionsProto {
        executable_build_options: Some(ExecutableBuildOptionsProto {
            device_ordinal: -1,
            num_replicas: 1,
            num_partitions: 1,
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// Compile options of a whole program: SPMD partitioning is on when the
/// program has more than one partition, as JAX sets it for a sharded
/// computation, and done by Shardy when `shardy`.
fn program_options(replicas: u32, partitions: u32, shardy: bool) -> Vec<u8> {
    CompileOptionsProto {
        executable_build_options: Some(ExecutableBuildOptionsProto {
            device_ordinal: -1,
            num_replicas: i64::from(replicas.max(1)),
            num_partitions: i64::from(partitions.max(1)),
            use_spmd_partitioning: partitions > 1,
            use_shardy_partitioner: shardy,
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// A compiled, unloaded executable.
pub struct Executable {
    pub(super) plugin: &'static Plugin,
    pub(super) raw: *mut PJRT_Executable,
    pub(super) target: TpuTarget,
}

// SAFETY: PJRT objects may be used from any thread (the C API's contract);
// pk never shares one between threads without `&`/`&mut` discipline.
unsafe impl Send for Executable {}
// SAFETY: as above.
unsafe impl Send for Topology {}

impl Executable {
    pub(super) fn error(&self, operation: &'static str, message: String) -> PjrtError {
        PjrtError::Executable {
            target: self.target.to_string(),
            operation,
            message,
        }
    }

    /// The executable in libtpu's serialized form.
    pub fn serialize(&self) -> Result<Vec<u8>, PjrtError> {
        let serialize = api_fn!(self.plugin, PJRT_Executable_Serialize)?;
        let mut args = pjrt_sys::PJRT_Executable_Serialize_Args::new();
        args.executable = self.raw;
        // SAFETY: `self.raw` is live; the struct is unchanged since 0.54.
        let err = unsafe { serialize(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(self.error("serialize", e.message));
        }
        // SAFETY: the bytes live until the deleter runs, just after the copy.
        let bytes = unsafe {
            raw_slice(
                args.serialized_bytes.cast::<u8>(),
                args.serialized_bytes_size,
            )
            .to_vec()
        };
        if let Some(delete) = args.serialized_executable_deleter {
            // SAFETY: called once, on the object the plugin handed out.
            unsafe { delete(args.serialized_executable) };
        }
        Ok(bytes)
    }

    /// Size of the generated TPU code in bytes.
    pub fn generated_code_bytes(&self) -> Result<u64, PjrtError> {
        let size = api_fn!(self.plugin, PJRT_Executable_SizeOfGeneratedCodeInBytes)?;
        let mut args = pjrt_sys::PJRT_Executable_SizeOfGeneratedCodeInBytes_Args::new();
        args.executable = self.raw;
        // SAFETY: `self.raw` is live; the struct is unchanged since 0.54.
        let err = unsafe { size(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(self.error("reading the code size", e.message));
        }
        Ok(non_negative(args.size_in_bytes))
    }

    /// The compiler's memory accounting.
    ///
    /// The args struct grew after API 0.54: with pjrt-sys's 104-byte struct
    /// libtpu 0.0.51 refuses the call ("Unexpected
    /// PJRT_Executable_GetCompiledMemoryStats_Args size: expected 112, got
    /// 104"), so pk passes the 0.116 layout with `struct_size` 112
    /// ([`abi::CompiledMemoryStatsArgs`]), which libtpu accepts for
    /// compile-only executables.
    pub fn memory_stats(&self) -> Result<MemoryStats, PjrtError> {
        let stats = api_fn!(self.plugin, PJRT_Executable_GetCompiledMemoryStats)?;
        let mut args = abi::CompiledMemoryStatsArgs::new(self.raw);
        // SAFETY: `args` has the layout of the plugin's struct (see `abi`)
        // and is larger than the `struct_size` it declares, so the plugin
        // writes only inside it.
        let err = unsafe { stats(ptr::addr_of_mut!(args).cast()) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(self.error("reading memory stats", e.message));
        }
        let a = &args;
        Ok(MemoryStats {
            generated_code_bytes: non_negative(a.generated_code_size_in_bytes),
            argument_bytes: non_negative(a.argument_size_in_bytes),
            output_bytes: non_negative(a.output_size_in_bytes),
            alias_bytes: non_negative(a.alias_size_in_bytes),
            temp_bytes: non_negative(a.temp_size_in_bytes),
            host_generated_code_bytes: non_negative(a.host_generated_code_size_in_bytes),
            host_argument_bytes: non_negative(a.host_argument_size_in_bytes),
            host_output_bytes: non_negative(a.host_output_size_in_bytes),
            host_alias_bytes: non_negative(a.host_alias_size_in_bytes),
            host_temp_bytes: non_negative(a.host_temp_size_in_bytes),
            peak_memory_bytes: non_negative(a.peak_memory_in_bytes),
        })
    }

    /// The compiler's cost analysis: numeric properties as `f64`, sorted by
    /// name; string and list properties are left out.
    pub fn cost_analysis(&self) -> Result<Vec<(String, f64)>, PjrtError> {
        let analyse = api_fn!(self.plugin, PJRT_Executable_GetCostAnalysis)?;
        let mut args = pjrt_sys::PJRT_Executable_GetCostAnalysis_Args::new();
        args.executable = self.raw;
        // SAFETY: `self.raw` is live; the struct is unchanged since 0.54.
        let err = unsafe { analyse(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(self.error("reading the cost analysis", e.message));
        }
        // SAFETY: the properties live as long as the executable.
        let properties = unsafe { raw_slice(args.properties, args.num_properties) };
        let mut numeric: Vec<(String, f64)> = properties
            .iter()
            .filter_map(|p| Some((named_value(p).0, numeric_value(p)?)))
            .collect();
        // libtpu lists the properties in a different order on every run;
        // sorting keeps what pk records reproducible.
        numeric.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(numeric)
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        if let Ok(destroy) = api_fn!(self.plugin, PJRT_Executable_Destroy) {
            let mut args = pjrt_sys::PJRT_Executable_Destroy_Args::new();
            args.executable = self.raw;
            // SAFETY: the executable is destroyed once, here.
            let err = unsafe { destroy(&mut args) };
            // Nothing useful can be done with a failure to free.
            let _ = self.plugin.take_error(err);
        }
    }
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
