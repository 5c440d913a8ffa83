//! `pkc completions SHELL`: a completion script for bash, zsh, fish,
//! elvish or PowerShell, on stdout.

use super::common::EXIT_OK;
use clap::Args as ClapArgs;
use clap_complete::Shell;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(a: Args, cli: &mut clap::Command) -> u8 {
    clap_complete::generate(a.shell, cli, "pkc", &mut std::io::stdout());
    EXIT_OK
}
