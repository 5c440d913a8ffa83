//! `pkc meta gmm`: the tile metadata of `kernels/gmm.pk` (`gmm`, `tgmm`)
//! from group sizes: `group_offsets.npy`, `group_ids.npy`, `m_tile_ids.npy`
//! and `num_tiles.npy` (int32), written together through `output::commit`:
//! either all of them are replaced or none is.

use crate::cmd::common::{EXIT_ERRORS, EXIT_OK};
use crate::cmd::cpu::report_cpu;
use crate::cmd::output::{self, Output};
use crate::cmd::ui;
use clap::Args as ClapArgs;
use pk_lang::ir::DType;
use pk_runtime::cpu::{npy, Error, HostArray};
use pk_runtime::meta::gmm;
use std::path::PathBuf;

#[derive(ClapArgs, Debug)]
pub struct GmmArgs {
    /// The size of every group, a 1-D int32 or int64 .npy file.
    #[arg(long, value_name = "FILE.npy")]
    pub group_sizes: PathBuf,
    /// Rows of `lhs`: the sum of the group sizes.
    #[arg(long, value_name = "M")]
    pub m: i64,
    /// Rows per tile, the kernel's `tm`.
    #[arg(long, value_name = "TM")]
    pub tm: i64,
    /// Give every empty group one visit, as `tgmm` needs to zero its block.
    #[arg(long)]
    pub visit_empty: bool,
    /// The directory to write into (created if missing).
    #[arg(short = 'o', long = "out-dir", value_name = "DIR", default_value = ".")]
    pub out_dir: PathBuf,
}

pub fn run(a: GmmArgs) -> u8 {
    let sizes = match npy::read(&a.group_sizes) {
        Ok(arr) => gmm::sizes_from_npy(&arr),
        Err(e) => return report_cpu(&e),
    };
    let md = match sizes.and_then(|s| gmm::gmm_metadata(&s, a.m, a.tm, a.visit_empty)) {
        Ok(md) => md,
        Err(e) => {
            ui::print_diagnostic(&e);
            return EXIT_ERRORS;
        }
    };
    if let Err(e) = std::fs::create_dir_all(&a.out_dir) {
        return report_cpu(&Error::WriteFailed {
            path: a.out_dir.display().to_string(),
            reason: e.to_string(),
        });
    }
    let arrays = md.arrays();
    let mut sinks = Vec::with_capacity(arrays.len());
    let mut images = Vec::with_capacity(arrays.len());
    for (name, values) in &arrays {
        match Output::prepare(&a.out_dir.join(format!("{name}.npy"))) {
            Ok(s) => sinks.push(s),
            Err(e) => return report_cpu(&e),
        }
        let ints: Vec<i64> = values.iter().map(|&v| v as i64).collect();
        images.push(npy::to_bytes(&HostArray::from_ints(
            DType::I32,
            &[ints.len()],
            &ints,
        )));
    }
    if let Err(e) = output::commit(sinks, &images) {
        return report_cpu(&e);
    }
    ui::status(&format!(
        "wrote the gmm metadata to {}: {} of at most {} tile visits",
        a.out_dir.display(),
        md.num_tiles,
        md.group_ids.len()
    ));
    EXIT_OK
}
