//! pk's front end: `.pk` source to typed, verified Tile IR.
//!
//! The pipeline, one module per stage:
//!
//! ```text
//! source --lexer--> tokens --parse--> ast --resolve--> program --check--> ir::Module
//! ```
//!
//! [`compile`] runs it for one kernel specialisation; [`check_file`] checks
//! every kernel of a file.

pub mod ast;
pub mod diag;
pub mod ir;
pub mod lexer;
pub mod parse;
pub mod span;
pub mod target;
