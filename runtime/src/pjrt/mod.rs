//! pk's bridge to libtpu, the TPU PJRT plugin, through the PJRT C API
//! (pjrt-sys).
//!
//! What it is for: compiling a kernel's StableHLO module ahead of time for
//! every TPU generation on a machine without a TPU, and recording what the
//! real compiler says about it (code size, memory, cost, or its error); and,
//! on a TPU host, running the kernel ([`Client::run`], see `execute`).
//!
//! ```no_run
//! use pk_runtime::pjrt::{Plugin, TpuTarget};
//! # fn main() -> Result<(), pk_runtime::pjrt::PjrtError> {
//! # let stablehlo_text = "";
//! let plugin = Plugin::load(None)?; // PK_LIBTPU, else pk's cache
//! for &target in TpuTarget::all() {
//!     let kernel = plugin.compile(target, stablehlo_text)?;
//!     println!("{target}: {} bytes of TPU code", kernel.generated_code_bytes);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! pjrt-sys binds PJRT C API 0.54 while libtpu 0.0.51 implements 0.116. The
//! API only appends fields and functions, so 0.54 calls stay valid, but
//! structs that grew must be passed in the plugin's layout; `abi` holds those
//! and says which calls are affected. All `unsafe` code is in small
//! functions next to the call it makes, each with the reason it is sound.

mod abi;
mod buffer;
mod capture;
mod client;
mod compile;
mod error;
mod execute;
mod libtpu_file;
mod log;
mod plugin;
mod target;

pub use buffer::{buffer_type, type_name, DeviceBuffer};
pub use capture::Captured;
pub use client::Client;
pub use compile::{module_partitions, CompiledKernel, Executable, MemoryStats, Topology};
pub use error::{source_locations, LibtpuOrigin, PjrtError, EXPLANATIONS, SETUP_COMMAND};
pub use execute::LoadedExecutable;
pub use libtpu_file::LIBTPU_SHA256;
pub use plugin::{cache_libtpu_path, locate_libtpu, ApiVersion, Plugin, LIBTPU_VERSION};
pub use target::{parse_target, TpuTarget, MAX_MESH_DEVICES};
