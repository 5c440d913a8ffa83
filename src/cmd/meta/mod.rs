//! `pkc meta KIND ...`: the host-side metadata of library kernels, the
//! arrays a kernel reads as scalar prefetch, written as `.npy` files named
//! after the kernel's operands so that `pkc run --in NAME=DIR/NAME.npy`
//! takes them as they are.
//!
//! Every file of one call is written together (src/cmd/output.rs): each to
//! a temporary file beside its destination, renamed into place only when
//! all are complete, so an interrupted or failed call leaves the directory
//! as it was.

mod gmm;
mod splash;

use clap::{Args as ClapArgs, Subcommand};

#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Subcommand, Debug)]
pub enum What {
    /// The tile metadata of `kernels/gmm.pk` (`gmm`, `tgmm`) from group sizes.
    Gmm(gmm::GmmArgs),
    /// The mask info of kernels/splash.pk: block_mask, data_next, mask_next,
    /// their dkv_* forms and mask_blocks.
    Splash(splash::SplashArgs),
}

pub fn run(a: Args) -> u8 {
    match a.what {
        What::Gmm(g) => gmm::run(g),
        What::Splash(s) => splash::run(s),
    }
}
