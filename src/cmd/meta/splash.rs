//! `pkc meta splash`: the mask info of `kernels/splash.pk`.

use crate::cmd::common::{EXIT_ERRORS, EXIT_OK, EXIT_USAGE};
use crate::cmd::cpu::{outln, report_cpu};
use crate::cmd::output::{commit, Output};
use crate::cmd::ui::{json_line, print_diagnostic, ui};
use clap::Args as ClapArgs;
use pk_runtime::cpu::npy;
use pk_runtime::meta::splash::{self, Mask, SplashError};
use std::path::{Path, PathBuf};

#[derive(ClapArgs, Debug)]
pub struct SplashArgs {
    /// The mask: `causal`, `full`, `local:LEFT,RIGHT` (a sliding window),
    /// `chunked:SIZE`, or a .npy file holding a [S_q, S_kv] bool mask.
    #[arg(long, value_name = "MASK")]
    pub mask: String,
    /// Query length (taken from a dense mask's shape when omitted).
    #[arg(long, value_name = "N")]
    pub sq: Option<usize>,
    /// Key/value length [default: the query length, or a dense mask's].
    #[arg(long, value_name = "N")]
    pub skv: Option<usize>,
    /// Queries per block (the kernels' `bq`).
    #[arg(long, value_name = "B")]
    pub bq: usize,
    /// Keys per block (the kernels' `bk`).
    #[arg(long, value_name = "B")]
    pub bkv: usize,
    /// Shrink the grid to the live blocks of each row (and column): the
    /// arrays get `NKS` (and `NQS`) columns, the most live blocks of any
    /// row (column), which the kernels then take as `-p NKS=.. -p NQS=..`.
    #[arg(long)]
    pub shrink: bool,
    /// The directory to write into (created if missing).
    #[arg(long, short = 'o', value_name = "DIR", default_value = ".")]
    pub out_dir: PathBuf,
}

/// Whether a `--mask` value names a file rather than a mask by name.
fn is_file_mask(spec: &str) -> bool {
    spec.ends_with(".npy") || spec.contains('/')
}

pub fn run(a: SplashArgs) -> u8 {
    let mask = if is_file_mask(&a.mask) {
        // The header is checked before the data is read.
        let r = match npy::open(Path::new(&a.mask)) {
            Ok(r) => r,
            Err(e) => return report_cpu(&e),
        };
        if let Err(e) = Mask::check_npy(&a.mask, r.header.ty, &r.header.shape) {
            return report(&e);
        }
        match r.read() {
            Ok(arr) => Mask::from_npy(&a.mask, &arr),
            Err(e) => return report_cpu(&e),
        }
    } else {
        Mask::parse(&a.mask)
    };
    let mask = match mask {
        Ok(m) => m,
        Err(e) => return report(&e),
    };
    let (sq, skv) = match (mask.shape(), a.sq, a.skv) {
        (Some((r, c)), sq, skv) => (sq.unwrap_or(r), skv.unwrap_or(c)),
        (None, Some(sq), skv) => (sq, skv.unwrap_or(sq)),
        (None, None, _) => {
            print_diagnostic(&SplashError::BadSizes {
                reason: format!(
                    "`--sq` is needed for the mask `{}` (only a dense mask has a shape)",
                    a.mask
                ),
            });
            return EXIT_USAGE;
        }
    };
    let info = match splash::mask_info(&mask, sq, skv, a.bq, a.bkv) {
        Ok(info) if a.shrink => info.shrunk(),
        Ok(info) => info,
        Err(e) => return report(&e),
    };
    if let Err(e) = std::fs::create_dir_all(&a.out_dir) {
        return report_cpu(&pk_runtime::cpu::Error::WriteFailed {
            path: a.out_dir.display().to_string(),
            reason: e.to_string(),
        });
    }
    let arrays = info.arrays();
    let mut outputs = Vec::new();
    for (name, _) in &arrays {
        match Output::prepare(&a.out_dir.join(format!("{name}.npy"))) {
            Ok(o) => outputs.push(o),
            Err(e) => return report_cpu(&e),
        }
    }
    let bytes: Vec<npy::Image> = arrays.iter().map(|(_, a)| npy::image(a)).collect();
    if let Err(e) = commit(outputs, &bytes) {
        return report_cpu(&e);
    }
    let live = info.block_mask.iter().filter(|&&b| b != 0).count();
    let partial = info.block_mask.iter().filter(|&&b| b == 1).count();
    let steps = if a.shrink {
        format!(" -p NKS={} -p NQS={}", info.kv_steps, info.q_steps)
    } else {
        String::new()
    };
    if ui().json {
        json_line(&serde_json::json!({
            "type": "splash_mask_info", "dir": a.out_dir.display().to_string(),
            "nq": info.nq, "nk": info.nk, "live_blocks": live, "partial_blocks": partial,
            "NP": info.num_blocks, "NKS": info.kv_steps, "NQS": info.q_steps,
            "density": info.density(),
            "files": arrays.iter().map(|(n, _)| format!("{n}.npy")).collect::<Vec<_>>(),
        }));
    } else {
        outln(&format!(
            "{}: {} x {} blocks of [{}, {}], {live} live ({:.1}%), {partial} partial; \
             mask_blocks holds {} (-p NP={}{steps})",
            a.out_dir.display(),
            info.nq,
            info.nk,
            a.bq,
            a.bkv,
            100.0 * info.density(),
            info.num_blocks,
            info.num_blocks,
        ));
    }
    EXIT_OK
}

fn report(e: &SplashError) -> u8 {
    print_diagnostic(e);
    EXIT_ERRORS
}
