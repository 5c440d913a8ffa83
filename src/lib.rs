//! The `pk` driver: glue between the CLI and the crates.
