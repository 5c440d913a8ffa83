//! One module per `pkc` subcommand. Each exposes `Args` (clap) and
//! `run(Args) -> u8` returning the process exit code: 0 success, 1 errors
//! in the input, 2 usage errors.

pub mod aot;
pub mod bench;
pub mod build;
pub mod check;
pub mod common;
pub mod completions;
pub mod cpu;
pub mod device;
pub mod emit;
pub mod explain;
pub mod fmt;
#[cfg(unix)]
pub mod interrupt;
pub mod lsp;
pub mod meta;
pub mod output;
pub mod profile;
pub mod run;
pub mod test;
pub mod tune;
pub mod tune_cache;
pub mod tune_cpu;
pub mod tune_inputs;
pub mod tune_plot;
pub mod tune_ray;
pub mod tune_report;
pub mod tune_sweep;
pub mod tune_tpu;
pub mod ui;
pub mod usage;
pub mod verify;
