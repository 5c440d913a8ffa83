//! A PJRT client: the handle to the TPU chips attached to this host, needed
//! to load and execute a compiled kernel (compiling needs none). Running a
//! kernel on it is in `execute`.

use pjrt_sys::PJRT_Client;

use super::abi;
use super::error::PjrtError;
use super::plugin::{api_fn, raw_slice, raw_string, tpu_device_present, Plugin};
use super::target::TpuTarget;

/// The TPU devices of this host, opened through libtpu.
pub struct Client {
    pub(super) plugin: &'static Plugin,
    pub(super) raw: *mut PJRT_Client,
    platform_version: String,
    device_count: usize,
}

// SAFETY: a PJRT client may be used from any thread (the C API's contract).
unsafe impl Send for Client {}
// SAFETY: as above; `Client` has no interior mutability of its own.
unsafe impl Sync for Client {}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("platform_version", &self.platform_version)
            .field("device_count", &self.device_count)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Opens the host's TPUs.
    ///
    /// Fails with [`PjrtError::NoTpuDevice`] on a machine without a TPU
    /// (no `/dev/accel*` or `/dev/vfio/<n>` device node): libtpu's own
    /// message is kept, but the reason is that there is nothing to open.
    pub fn new(plugin: &'static Plugin) -> Result<Client, PjrtError> {
        let create = api_fn!(plugin, PJRT_Client_Create)?;
        let mut args = abi::ClientCreateArgs::new();
        // SAFETY: `args` has the plugin's (0.116) layout and declares its own
        // size; no options or key-value callbacks are passed.
        let err = unsafe { create(std::ptr::addr_of_mut!(args).cast()) };
        if let Some(e) = plugin.take_error(err) {
            return Err(if tpu_device_present() {
                PjrtError::ClientCreate { message: e.message }
            } else {
                PjrtError::NoTpuDevice { message: e.message }
            });
        }
        if args.client.is_null() {
            return Err(PjrtError::ClientCreate {
                message: "libtpu returned no client and no error".into(),
            });
        }
        let mut client = Client {
            plugin,
            raw: args.client,
            platform_version: String::new(),
            device_count: 0,
        };
        client.platform_version = client.query_platform_version()?;
        client.device_count = client.query_device_count()?;
        Ok(client)
    }

    /// libtpu's description of the runtime, e.g. its build and version.
    pub fn platform_version(&self) -> &str {
        &self.platform_version
    }

    /// The number of TPU devices (TensorCores) this process can address.
    pub fn device_count(&self) -> usize {
        self.device_count
    }

    /// The device kind libtpu reports for this host's first TPU device, e.g.
    /// `TPU v5 lite`.
    pub fn device_kind(&self) -> Result<String, PjrtError> {
        let list = api_fn!(self.plugin, PJRT_Client_AddressableDevices)?;
        let describe = api_fn!(self.plugin, PJRT_Device_GetDescription)?;
        let kind = api_fn!(self.plugin, PJRT_DeviceDescription_Kind)?;
        let failed = |message: String| PjrtError::ClientCreate { message };
        let mut args = pjrt_sys::PJRT_Client_AddressableDevices_Args::new();
        args.client = self.raw;
        // SAFETY: `self.raw` is a live client; the struct is unchanged
        // since 0.54.
        let err = unsafe { list(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(failed(e.message));
        }
        // SAFETY: the list lives as long as the client.
        let devices = unsafe { raw_slice(args.addressable_devices, args.num_addressable_devices) };
        let Some(&device) = devices.first().filter(|d| !d.is_null()) else {
            return Err(failed("libtpu reports no addressable TPU device".into()));
        };
        let mut d = pjrt_sys::PJRT_Device_GetDescription_Args::new();
        d.device = device;
        // SAFETY: `device` is a live device of the client; its description
        // lives as long as it does.
        let err = unsafe { describe(&mut d) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(failed(e.message));
        }
        let mut k = pjrt_sys::PJRT_DeviceDescription_Kind_Args::new();
        k.device_description = d.device_description;
        // SAFETY: as above; the struct is unchanged since 0.54.
        let err = unsafe { kind(&mut k) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(failed(e.message));
        }
        // SAFETY: the kind string lives as long as the description.
        Ok(unsafe { raw_string(k.device_kind, k.device_kind_size) })
    }

    /// The generation of this host's TPU: the target whose topology libtpu
    /// describes with the device kind of [`Self::device_kind`].
    pub fn target(&self) -> Result<TpuTarget, PjrtError> {
        let kind = self.device_kind()?;
        for &t in TpuTarget::all() {
            if self.plugin.topology(t)?.device_kind()? == kind {
                return Ok(t);
            }
        }
        Err(PjrtError::ClientCreate {
            message: format!(
                "libtpu reports the device kind `{kind}`, which is not the kind of any target pk builds for"
            ),
        })
    }

    fn query_platform_version(&self) -> Result<String, PjrtError> {
        let f = api_fn!(self.plugin, PJRT_Client_PlatformVersion)?;
        let mut args = pjrt_sys::PJRT_Client_PlatformVersion_Args::new();
        args.client = self.raw;
        // SAFETY: `self.raw` is a live client; the struct is unchanged
        // since 0.54.
        let err = unsafe { f(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(PjrtError::ClientCreate { message: e.message });
        }
        // SAFETY: the string lives as long as the client.
        Ok(unsafe { raw_string(args.platform_version, args.platform_version_size) })
    }

    fn query_device_count(&self) -> Result<usize, PjrtError> {
        let f = api_fn!(self.plugin, PJRT_Client_AddressableDevices)?;
        let mut args = pjrt_sys::PJRT_Client_AddressableDevices_Args::new();
        args.client = self.raw;
        // SAFETY: as in `query_platform_version`.
        let err = unsafe { f(&mut args) };
        if let Some(e) = self.plugin.take_error(err) {
            return Err(PjrtError::ClientCreate { message: e.message });
        }
        Ok(args.num_addressable_devices)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Ok(destroy) = api_fn!(self.plugin, PJRT_Client_Destroy) {
            let mut args = pjrt_sys::PJRT_Client_Destroy_Args::new();
            args.client = self.raw;
            // SAFETY: the client is destroyed once, here.
            let err = unsafe { destroy(&mut args) };
            // Nothing useful can be done with a failure to free.
            let _ = self.plugin.take_error(err);
        }
    }
}
