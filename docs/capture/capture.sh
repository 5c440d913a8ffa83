#!/usr/bin/env bash
# Prints the screen of Neovim (TUI, in tmux) with `pkc lsp` attached to a
# kernel: its diagnostic and the hover on a `let`, as the README shows it.
# Needs nvim and tmux; PKC names the pkc to use.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pkc="${PKC:-$here/../../target/debug/pkc}"
work="$(mktemp -d)"
trap 'tmux kill-session -t pkcap 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/k.pk" <<'PK'
kernel k<M = 256, bm = 128>(
    x: f32[M, 256] block [bm, 256] at (i, 0),
) -> y: f32[M, 256] block [bm, 256] at (i, 0)
grid (i in M / bm parallel)
{
    let v = x[..];
    let w = exp(v);
    y[..] = w + vv;
}
PK
cd "$work"
tmux new-session -d -s pkcap -x 90 -y 22 \
    "PKC=$pkc nvim --clean -n -c 'set nomore' -c 'luafile $here/capture.lua' k.pk"
sleep "${CAPTURE_WAIT:-8}"
tmux capture-pane -t pkcap -p | sed -e 's/[[:space:]]*$//'
