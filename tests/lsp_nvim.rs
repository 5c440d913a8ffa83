//! `pkc lsp` in a real editor: headless Neovim (Debian's package) opens a
//! kernel with its built-in LSP client and reads back diagnostics, hover
//! and go to definition (tests/lsp/nvim.lua). Skipped, saying so, where
//! `nvim` is not installed.

mod common;

use common::{root, TempDir};
use std::process::Command;

const SRC: &str = "kernel k<M = 256, bm = 128>(
    x: f32[M, 256] block [bm, 256] at (i, 0),
) -> y: f32[M, 256] block [bm, 256] at (i, 0)
grid (i in M / bm parallel)
{
    let v = x[..];
    let w = exp(v);
    y[..] = w + vv;
}
";

#[test]
fn neovim_reads_diagnostics_hover_and_definition() {
    if Command::new("nvim").arg("--version").output().is_err() {
        eprintln!("SKIPPED: nvim is not installed (apt-get install neovim)");
        return;
    }
    let dir = TempDir::new("nvim");
    let file = dir.file("k.pk", SRC.as_bytes());
    let out = dir.path().join("out.txt");
    let status = Command::new("nvim")
        .args(["--headless", "--clean", "-n", "-u", "NONE", "-c"])
        .arg(format!(
            "luafile {}",
            root().join("tests/lsp/nvim.lua").display()
        ))
        .env("PK_FILE", &file)
        .env("PK_OUT", &out)
        .env("PKC", env!("CARGO_BIN_EXE_pkc"))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .status()
        .expect("nvim runs");
    assert!(status.success(), "nvim exited with {status}");
    let got = std::fs::read_to_string(&out).expect("nvim wrote its findings");
    let lines: Vec<&str> = got.lines().collect();
    // `vv` on line 7 (0-based), column 16: not declared anywhere.
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("diagnostic"))
            .collect::<Vec<_>>(),
        vec![&"diagnostic 7:16 PK0101 unknown name `vv` (not found in this scope)"],
        "{got}"
    );
    // `v` is `x[..]`: a bm x 256 = 128 x 256 block of f32.
    assert!(lines.contains(&"hover *local*: `f32[128, 256]`"), "{got}");
    // `exp(v)` names the `v` of line 5, columns 8 to 9.
    assert!(lines.contains(&"definition 5:8-5:9"), "{got}");
}
