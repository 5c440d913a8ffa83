"""A terminal screen captured with `tmux capture-pane -e` (ANSI colours)
as an HTML page in a monospace font, for docs/capture/capture.sh."""

import html
import re
import sys

BASE = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5"]
BRIGHT = ["#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]


def colour256(n: int) -> str:
    if n < 8:
        return BASE[n]
    if n < 16:
        return BRIGHT[n - 8]
    if n < 232:
        n -= 16
        r, g, b = n // 36, (n // 6) % 6, n % 6
        f = lambda v: 0 if v == 0 else 55 + 40 * v
        return f"#{f(r):02x}{f(g):02x}{f(b):02x}"
    v = 8 + 10 * (n - 232)
    return f"#{v:02x}{v:02x}{v:02x}"


def main() -> None:
    fg, bg, bold = None, None, False
    out = []
    for line in sys.stdin.read().split("\n"):
        pos = 0
        for m in re.finditer(r"\x1b\[([0-9;]*)m", line):
            text = line[pos : m.start()]
            if text:
                style = f"color:{fg or '#d4d4d4'};background:{bg or 'transparent'};font-weight:{'bold' if bold else 'normal'}"
                out.append(f'<span style="{style}">{html.escape(text)}</span>')
            pos = m.end()
            codes = [int(c) if c else 0 for c in m.group(1).split(";")]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c == 0:
                    fg, bg, bold = None, None, False
                elif c == 1:
                    bold = True
                elif c == 22:
                    bold = False
                elif 30 <= c <= 37:
                    fg = BASE[c - 30]
                elif 90 <= c <= 97:
                    fg = BRIGHT[c - 90]
                elif 40 <= c <= 47:
                    bg = BASE[c - 40]
                elif 100 <= c <= 107:
                    bg = BRIGHT[c - 100]
                elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                    col = colour256(codes[i + 2])
                    fg, bg = (col, bg) if c == 38 else (fg, col)
                    i += 2
                elif c in (38, 48) and i + 4 < len(codes) and codes[i + 1] == 2:
                    col = "#%02x%02x%02x" % tuple(codes[i + 2 : i + 5])
                    fg, bg = (col, bg) if c == 38 else (fg, col)
                    i += 4
                elif c == 39:
                    fg = None
                elif c == 49:
                    bg = None
                i += 1
        text = line[pos:]
        style = f"color:{fg or '#d4d4d4'};background:{bg or 'transparent'}"
        out.append(f'<span style="{style}">{html.escape(text)}</span>\n')
    print(
        '<html><body style="margin:0;background:#1e1e1e"><pre style="margin:12px;'
        'font:15px/1.25 DejaVu Sans Mono,monospace">' + "".join(out) + "</pre></body></html>"
    )


main()
