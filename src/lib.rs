//! The `pk` package: the `pkc` command-line driver. The compiler itself is
//! in the workspace crates `pk-lang`, `pk-lowering` and `pk-runtime`.
