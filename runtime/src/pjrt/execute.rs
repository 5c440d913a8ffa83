//! Running a kernel on the host's TPU: its StableHLO module compiled by the
//! client into a loaded executable, the inputs copied to the executable's
//! device, one execution, and the outputs copied back.
//!
//! ```no_run
//! use pk_lang::ir::DType;
//! use pk_runtime::cpu::HostArray;
//! use pk_runtime::pjrt::{Client, Plugin, TpuTarget};
//! # fn main() -> Result<(), pk_runtime::pjrt::PjrtError> {
//! # let stablehlo_text = "";
//! let client = Client::new(Plugin::load(None)?)?; // fails without a TPU
//! let x = HostArray::from_f32(&[8, 128], &[1.0; 8 * 128]);
//! let outputs = client.run(
//!     TpuTarget::V5e,
//!     stablehlo_text,
//!     &[("x", &x)],
//!     &[("y", DType::F32, &[8, 128])],
//! )?;
//! # Ok(())
//! # }
//! ```

use std::ffi::c_char;
use std::ptr;

use pjrt_sys::{PJRT_Buffer, PJRT_Device, PJRT_Event, PJRT_LoadedExecutable};
use pk_lang::ir::DType;

use super::abi;
use super::buffer::{failed, refused, DeviceBuffer, Events};
use super::client::Client;
use super::compile::{compile_failed, compile_options, mlir_program, no_executable, Executable};
use super::error::PjrtError;
use super::plugin::{api_fn, raw_slice};
use super::target::TpuTarget;
use crate::cpu::HostArray;

/// A kernel compiled for the client's TPU and loaded onto it, freed when
/// dropped.
pub struct LoadedExecutable<'c> {
    client: &'c Client,
    raw: *mut PJRT_LoadedExecutable,
    /// The generation the StableHLO module was built for, for messages.
    target: TpuTarget,
    /// The one device the executable runs on, where its inputs must be.
    device: *mut PJRT_Device,
    num_outputs: usize,
}

impl Client {
    /// Compiles `stablehlo` (an MLIR text module built for `target`) for
    /// this host's TPU, with the compile options of ahead-of-time builds:
    /// one replica, one partition, so it runs on device 0.
    pub fn compile(
        &self,
        target: TpuTarget,
        stablehlo: &str,
    ) -> Result<LoadedExecutable<'_>, PjrtError> {
        let compile = api_fn!(self.plugin, PJRT_Client_Compile)?;
        let program = mlir_program(stablehlo);
        let options = compile_options();
        let mut args = pjrt_sys::PJRT_Client_Compile_Args::new();
        args.client = self.raw;
        args.program = &program;
        args.compile_options = options.as_ptr().cast::<c_char>();
        args.compile_options_size = options.len();
        // SAFETY: every pointer in `args` (program text, format, options,
        // client) outlives the call; the structs are unchanged since 0.54
        // (libtpu 0.0.51 expects the same 56 bytes).
        let err = unsafe { compile(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(compile_failed(target, e));
        }
        if args.executable.is_null() {
            return Err(no_executable(target));
        }
        let mut loaded = LoadedExecutable {
            client: self,
            raw: args.executable,
            target,
            device: ptr::null_mut(),
            num_outputs: 0,
        };
        loaded.device = loaded.query_device()?;
        loaded.num_outputs = loaded.query_num_outputs()?;
        Ok(loaded)
    }

    /// Runs the kernel `stablehlo` (built for `target`) once: compiles it,
    /// copies `inputs` (named for messages, in the module's parameter
    /// order) to the device, executes, and returns the outputs, checked
    /// against `outputs` (name, dtype, shape; in the module's result order).
    pub fn run(
        &self,
        target: TpuTarget,
        stablehlo: &str,
        inputs: &[(&str, &HostArray)],
        outputs: &[(&str, DType, &[usize])],
    ) -> Result<Vec<HostArray>, PjrtError> {
        let exe = self.compile(target, stablehlo)?;
        if exe.num_outputs() != outputs.len() {
            return Err(exe.error(
                "reading its outputs",
                format!(
                    "the program returns {} arrays, the kernel has {} outputs",
                    exe.num_outputs(),
                    outputs.len()
                ),
            ));
        }
        let buffers = inputs
            .iter()
            .map(|&(name, array)| exe.upload(name, array))
            .collect::<Result<Vec<_>, _>>()?;
        let arguments: Vec<&DeviceBuffer<'_>> = buffers.iter().collect();
        let results = exe.execute(&arguments)?;
        let mut out = Vec::with_capacity(results.len());
        for (buffer, &(name, dtype, shape)) in results.iter().zip(outputs) {
            let array = buffer.to_host(name, dtype)?;
            if array.shape != shape {
                return Err(refused(
                    format!("copy output `{name}` back"),
                    format!(
                        "it has shape {:?}, the kernel declares {shape:?}",
                        array.shape
                    ),
                ));
            }
            out.push(array);
        }
        Ok(out)
    }
}

impl<'c> LoadedExecutable<'c> {
    /// The number of arrays one execution returns.
    pub fn num_outputs(&self) -> usize {
        self.num_outputs
    }

    fn error(&self, operation: &'static str, message: String) -> PjrtError {
        PjrtError::Executable {
            target: self.target.to_string(),
            operation,
            message,
        }
    }

    /// Copies `array` (the input called `name`) to the executable's device.
    pub fn upload(&self, name: &str, array: &HostArray) -> Result<DeviceBuffer<'c>, PjrtError> {
        DeviceBuffer::upload(self.client, self.device, name, array)
    }

    /// Executes once on the executable's device with `arguments` (uploaded
    /// by [`Self::upload`], in parameter order), waits until the execution
    /// is complete, and returns the outputs, still on the device.
    pub fn execute(
        &self,
        arguments: &[&DeviceBuffer<'c>],
    ) -> Result<Vec<DeviceBuffer<'c>>, PjrtError> {
        let plugin = self.client.plugin;
        let execute = api_fn!(plugin, PJRT_LoadedExecutable_Execute)?;
        let events = Events::new(plugin)?;
        let operation = || "execute the kernel".to_string();
        let mut options = abi::ExecuteOptions::new();
        let argument_list: Vec<*mut PJRT_Buffer> = arguments.iter().map(|b| b.raw).collect();
        let argument_lists: [*const *mut PJRT_Buffer; 1] = [argument_list.as_ptr()];
        let mut output_list: Vec<*mut PJRT_Buffer> = vec![ptr::null_mut(); self.num_outputs];
        let output_lists: [*mut *mut PJRT_Buffer; 1] = [output_list.as_mut_ptr()];
        let mut complete: [*mut PJRT_Event; 1] = [ptr::null_mut()];
        let mut args = pjrt_sys::PJRT_LoadedExecutable_Execute_Args::new();
        args.executable = self.raw;
        args.options = ptr::addr_of_mut!(options).cast();
        args.argument_lists = argument_lists.as_ptr();
        args.num_devices = 1;
        args.num_args = argument_list.len();
        args.output_lists = output_lists.as_ptr();
        args.device_complete_events = complete.as_mut_ptr();
        // No execute_device: the executable runs on the one device it was
        // compiled for, where `upload` put the arguments.
        // SAFETY: the argument list holds live buffers of this client; the
        // output list has room for the `num_outputs` buffers the executable
        // returns per device, for one device; `options` has the plugin's
        // (0.116) layout and declares its size (see `abi`); the outer struct
        // is unchanged since 0.54 (libtpu 0.0.51 expects its 80 bytes). All
        // of them outlive the call.
        let err = unsafe { execute(&mut args) };
        if let Some(e) = plugin.take_error(err) {
            return Err(failed(operation(), e));
        }
        let done = events.own(complete[0]);
        let outputs: Vec<DeviceBuffer<'c>> = output_list
            .into_iter()
            .map(|raw| DeviceBuffer::own(self.client, raw))
            .collect();
        if let Some(e) = done.wait() {
            return Err(failed(operation(), e));
        }
        if let Some(i) = outputs.iter().position(|b| b.raw.is_null()) {
            return Err(self.error(
                "returning its outputs",
                format!("libtpu returned no buffer for output {i}"),
            ));
        }
        Ok(outputs)
    }

    /// The device XLA placed the executable on: exactly one, as it was
    /// compiled for one replica and one partition.
    fn query_device(&self) -> Result<*mut PJRT_Device, PjrtError> {
        let f = api_fn!(self.client.plugin, PJRT_LoadedExecutable_AddressableDevices)?;
        let mut args = pjrt_sys::PJRT_LoadedExecutable_AddressableDevices_Args::new();
        args.executable = self.raw;
        // SAFETY: `self.raw` is live; the struct is unchanged since 0.54
        // (libtpu 0.0.51 expects the same 40 bytes).
        let err = unsafe { f(&mut args) };
        if let Some(e) = self.client.plugin.take_error(err) {
            return Err(self.error("finding its device", e.message));
        }
        // SAFETY: the list lives as long as the executable.
        let devices = unsafe { raw_slice(args.addressable_devices, args.num_addressable_devices) };
        match devices {
            [device] if !device.is_null() => Ok(*device),
            _ => Err(self.error(
                "finding its device",
                format!("libtpu placed it on {} devices, not one", devices.len()),
            )),
        }
    }

    /// The number of outputs per device, from the executable behind the
    /// loaded one.
    fn query_num_outputs(&self) -> Result<usize, PjrtError> {
        let plugin = self.client.plugin;
        let get = api_fn!(plugin, PJRT_LoadedExecutable_GetExecutable)?;
        let count = api_fn!(plugin, PJRT_Executable_NumOutputs)?;
        let mut args = pjrt_sys::PJRT_LoadedExecutable_GetExecutable_Args::new();
        args.loaded_executable = self.raw;
        // SAFETY: `self.raw` is live; the struct is unchanged since 0.54.
        let err = unsafe { get(&mut args) };
        if let Some(e) = plugin.take_error(err) {
            return Err(self.error("reading its outputs", e.message));
        }
        if args.executable.is_null() {
            return Err(self.error(
                "reading its outputs",
                "libtpu returned no executable".into(),
            ));
        }
        // Owned from here on: dropping it calls PJRT_Executable_Destroy, as
        // the API requires of the caller.
        let executable = Executable {
            plugin,
            raw: args.executable,
            target: self.target,
        };
        let mut count_args = pjrt_sys::PJRT_Executable_NumOutputs_Args::new();
        count_args.executable = executable.raw;
        // SAFETY: `executable.raw` is live until `executable` drops, after
        // the call; the struct is unchanged since 0.54.
        let err = unsafe { count(&mut count_args) };
        if let Some(e) = plugin.take_error(err) {
            return Err(executable.error("reading its outputs", e.message));
        }
        Ok(count_args.num_outputs)
    }
}

impl Drop for LoadedExecutable<'_> {
    fn drop(&mut self) {
        if let Ok(destroy) = api_fn!(self.client.plugin, PJRT_LoadedExecutable_Destroy) {
            let mut args = pjrt_sys::PJRT_LoadedExecutable_Destroy_Args::new();
            args.executable = self.raw;
            // SAFETY: the executable is destroyed once, here; every execution
            // was waited for, and libtpu frees it after any still running.
            let err = unsafe { destroy(&mut args) };
            // Nothing useful can be done with a failure to free.
            let _ = self.client.plugin.take_error(err);
        }
    }
}
