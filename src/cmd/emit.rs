//! `pkc emit FORM FILE`: print tokens, the AST or the Tile IR.

use super::common::{report, KernelArgs, EXIT_ERRORS, EXIT_OK};
use clap::{Args as ClapArgs, ValueEnum};
use pk_lang::span::SourceMap;
use std::path::PathBuf;

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The token stream, one token per line with its position.
    Tokens,
    /// The syntax tree.
    Ast,
    /// The typed, specialised Tile IR.
    Ir,
}

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// What to print.
    pub form: Form,
    /// The .pk file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub kernel: KernelArgs,
}

pub fn run(a: Args) -> u8 {
    let text = match pk_lang::read_source(&a.file) {
        Ok(t) => t,
        Err(f) => return report(&f),
    };
    match a.form {
        Form::Tokens => {
            let name = a.file.display().to_string();
            let mut sources = SourceMap::new();
            let id = sources.add(name.clone(), text.as_str());
            let (toks, errs) = pk_lang::lexer::lex(&text);
            for (l, t, _) in &toks {
                let (line, col) = sources.get(id).line_col(*l as u32);
                println!("{line}:{col} {t:?}");
            }
            if !errs.is_empty() {
                let (_, diags) = pk_lang::parse::parse(id, &text);
                return report(&pk_lang::Failure {
                    diags,
                    sources: sources.into(),
                });
            }
            EXIT_OK
        }
        Form::Ast => {
            let mut sources = SourceMap::new();
            let id = sources.add(a.file.display().to_string(), text.as_str());
            let (m, diags) = pk_lang::parse::parse(id, &text);
            if !diags.is_empty() {
                return report(&pk_lang::Failure {
                    diags,
                    sources: sources.into(),
                });
            }
            println!("{m:#?}");
            EXIT_OK
        }
        Form::Ir => match pk_lang::compile_file(&a.file, &a.kernel.options(true)) {
            Ok(m) => {
                print!("{}", pk_lang::ir::print::module(&m));
                EXIT_OK
            }
            Err(f) => {
                report(&f);
                EXIT_ERRORS
            }
        },
    }
}
