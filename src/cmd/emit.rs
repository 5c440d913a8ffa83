//! `pkc emit FORM FILE`: print tokens, the AST, the Tile IR, the Mosaic
//! module or the StableHLO module.

use super::common::{report, KernelArgs, EXIT_ERRORS, EXIT_OK};
use clap::{Args as ClapArgs, ValueEnum};
use pk_lang::span::SourceMap;
use pk_runtime::package::build::{self, Built};
use pk_runtime::pjrt::TpuTarget;
use std::path::{Path, PathBuf};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The token stream, one token per line with its position.
    Tokens,
    /// The syntax tree.
    Ast,
    /// The typed, specialised Tile IR.
    Ir,
    /// The Mosaic module of each kernel as MLIR text that MLIR's tools
    /// parse (`mlir-opt --allow-unregistered-dialect`): upstream operations
    /// in their own syntax, tpu operations generic, memory spaces as
    /// build-time integers (a comment line gives their names), each
    /// operation with its `loc("FILE":LINE:COL)`.
    Mosaic,
    /// The StableHLO module of each kernel (its `tpu_custom_call` carries
    /// the serialized stable Mosaic), exactly as `pkc build` packages it.
    Stablehlo,
    /// The CPU reference's WebAssembly module of each kernel, as text.
    Wat,
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
    if let Err(code) = a.kernel.validate() {
        return code;
    }
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
        Form::Mosaic => emit_mosaic(&a),
        Form::Stablehlo => emit_stablehlo(&a),
        Form::Wat => super::cpu::emit_wat(&a.file, &a.kernel),
    }
}

fn emit_mosaic(a: &Args) -> u8 {
    let module = match pk_lang::compile_file(&a.file, &a.kernel.options(true)) {
        Ok(m) => m,
        Err(f) => return report(&f).max(EXIT_ERRORS),
    };
    let opts = pk_lowering::mosaic::Options::default();
    let mut texts = Vec::new();
    for k in &module.kernels {
        match pk_lowering::mosaic::lower(&module, k, &opts) {
            Ok(m) => texts.push((k.name.clone(), m.pretty)),
            Err(e) => {
                let d = build::mosaic_diagnostic(&e, k, &module.sources);
                return report(&pk_lang::Failure {
                    diags: vec![*d],
                    sources: module.sources.clone(),
                });
            }
        }
    }
    print_modules(&texts);
    EXIT_OK
}

fn emit_stablehlo(a: &Args) -> u8 {
    match build_stablehlo(&a.file, &a.kernel) {
        Ok((_, b)) => {
            let texts: Vec<(String, String)> = b
                .kernels
                .into_iter()
                .map(|k| (k.kernel.name, k.package.stablehlo().to_string()))
                .collect();
            print_modules(&texts);
            EXIT_OK
        }
        Err(code) => code,
    }
}

/// Builds the StableHLO module of each kernel of `file` (or of the one
/// selected) for the target of `--target`, exactly as `pkc build` packages
/// it; on failure, prints the diagnostics and returns the exit code.
pub fn build_stablehlo(file: &Path, k: &KernelArgs) -> Result<(TpuTarget, Built), u8> {
    let session = pk_lang::Session::open(file).map_err(|f| report(&f).max(EXIT_ERRORS))?;
    build_stablehlo_of(&session, k)
}

/// [`build_stablehlo`] of a file already open.
pub fn build_stablehlo_of(
    session: &pk_lang::Session,
    k: &KernelArgs,
) -> Result<(TpuTarget, Built), u8> {
    let target = k.target();
    let opts = build::BuildOptions {
        targets: vec![target],
        params: k.params.clone(),
        kernel: k.kernel.clone(),
        cpu_reference: false,
        ..Default::default()
    };
    match build::build_session(session, &opts) {
        Ok(b) => Ok((target, b)),
        Err(f) => Err(report(&f).max(EXIT_ERRORS)),
    }
}

/// Prints one module per kernel; several are separated by a comment line
/// naming the kernel.
fn print_modules(texts: &[(String, String)]) {
    for (name, text) in texts {
        if texts.len() > 1 {
            println!("// kernel {name}");
        }
        print!("{text}");
    }
}
