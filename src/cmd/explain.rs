//! `pkc explain CODE`: the long form of a diagnostic code.

use super::common::{EXIT_OK, EXIT_USAGE};
use clap::Args as ClapArgs;
use pk_lang::diag::Explanation;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// A diagnostic code such as PK0301; `--list` prints every code.
    #[arg(value_name = "CODE", required_unless_present = "list")]
    pub code: Option<String>,
    /// List every code with its title.
    #[arg(long)]
    pub list: bool,
}

/// Every explanation pk knows, across its crates.
pub fn all() -> Vec<&'static Explanation> {
    let mut all = pk_lang::diag::codes::ALL.to_vec();
    all.extend(pk_runtime::cpu::EXPLANATIONS.iter());
    all.extend(pk_runtime::pjrt::EXPLANATIONS.iter());
    all.extend(pk_lowering::mosaic::EXPLANATIONS.iter());
    all.extend(pk_runtime::package::EXPLANATIONS.iter());
    all.extend(pk_runtime::bind::EXPLANATIONS.iter());
    all.extend(pk_runtime::meta::splash::EXPLANATIONS.iter());
    all.extend(pk_runtime::meta::gmm::EXPLANATIONS.iter());
    all.extend(pk_runtime::ops::EXPLANATIONS.iter());
    all.extend(super::usage::EXPLANATIONS.iter());
    all.extend(pk_runtime::tune::EXPLANATIONS.iter());
    // Codes are zero-padded, so text order is numeric order.
    all.sort_by_key(|e| e.code);
    all
}

pub fn run(a: Args) -> u8 {
    let table = all();
    if a.list {
        for e in &table {
            println!("{}  {}", e.code, e.title);
        }
        return EXIT_OK;
    }
    let code = a.code.unwrap_or_default().trim().to_ascii_uppercase();
    let digits = code.strip_prefix("PK").unwrap_or(&code);
    // `301`, `0301` and `PK301` all name PK0301.
    let code =
        if !digits.is_empty() && digits.len() <= 4 && digits.bytes().all(|b| b.is_ascii_digit()) {
            format!("PK{digits:0>4}")
        } else {
            code.clone()
        };
    match table.iter().find(|e| e.code == code) {
        Some(e) => {
            print!("{}", e.render());
            EXIT_OK
        }
        None => {
            eprintln!("error: unknown diagnostic code `{code}`");
            eprintln!("help: `pkc explain --list` prints every code");
            EXIT_USAGE
        }
    }
}
