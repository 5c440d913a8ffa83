//! `pkc tune --plot FILE.svg`: each target's space as people read it, one
//! small panel per tuned parameter: every configuration tried is a mark at
//! that parameter's value (a log2 axis when every candidate is a power of
//! two) and at its time (a log axis with ticks in 1-2-5 steps of µs, ms or
//! s, shared by the panels of a target), with a line through the fastest
//! time at each value. Configurations that were not ranked sit in a strip
//! along the bottom of the frame: red pruned by the checker, orange refused
//! by libtpu, grey timed out or not timed. The best configuration is marked
//! with a labelled triangle and the default with a labelled square.
//!
//! The SVG is written here rather than with a plotting crate: the marks
//! carry their meaning as classes and data attributes (`panel`,
//! `plot-area`, `marker best`, `data-param`), which the tests and other
//! tools read back, and the ticks follow the 1-2-5 rule at any range.
//!
//! invariant: every mark, marker and marker label lies inside its panel's
//! plot area (`rect.plot-area`); labels flip to the other side of their
//! marker rather than leave it.
//! invariant: the plot is drawn from the reports alone, so a report read
//! from the cache draws as the run that made it.

use pk_runtime::tune::report::{Params, Report, Status};
use std::fmt::Write;

/// A panel's plot area, pixels.
const PLOT_W: f64 = 260.0;
const PLOT_H: f64 = 200.0;
/// Room around a plot area: left for the time ticks and label, below for
/// the value ticks and the parameter's name.
const LEFT: f64 = 70.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 46.0;
/// Panels per row.
const COLUMNS: usize = 3;
/// A target's title and legend above its panels.
const HEADER: f64 = 52.0;
/// The strip of configurations that were not ranked, at the bottom of
/// the plot area; and the room kept above and below the ranked marks
/// (markers and their labels stay inside).
const STRIP: f64 = 16.0;
const PAD: f64 = 24.0;
const FONT: f64 = 11.0;

const RANKED: &str = "#1f77b4";
const PRUNED: &str = "#d62728";
const REFUSED: &str = "#ff7f0e";
const NOT_TIMED: &str = "#7f7f7f";
const SCREENED: &str = "#9467bd";
const BEST: &str = "#2ca02c";
const DEFAULT: &str = "#171717";

/// The SVG document of `reports` (one section per target, in order).
pub fn svg(reports: &[Report]) -> Result<String, String> {
    let panels = LEFT
        + COLUMNS.min(reports.iter().map(|r| r.axes.len()).max().unwrap_or(1)) as f64
            * (PLOT_W + LEFT + RIGHT)
        - LEFT
        + 8.0;
    // Wide enough for the panels, the titles and the legend.
    let width = reports
        .iter()
        .map(|r| 16.0 + text_width(&title(r), 15.0))
        .fold(panels.max(legend_width()), f64::max);
    let mut body = String::new();
    let mut y = 8.0;
    for r in reports {
        y = target(&mut body, r, y).map_err(|e| e.to_string())?;
    }
    let mut out = String::new();
    let w = width.max(480.0).ceil();
    let h = (y + 8.0).ceil();
    write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="{FONT}">
<rect class="background" x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>
{body}</svg>
"##
    )
    .map_err(|e| e.to_string())?;
    Ok(out)
}

/// Text as SVG character data.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The width of `text` at `size`, estimated (no font is loaded): about
/// 0.6 em per character in a sans-serif face.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// One target's section, starting at `y`; returns where the next starts.
fn target(out: &mut String, r: &Report, y: f64) -> Result<f64, std::fmt::Error> {
    writeln!(
        out,
        r#"<g class="target" data-target="{}">"#,
        esc(&r.target)
    )?;
    writeln!(
        out,
        r#"<text class="title" x="8" y="{}" font-size="15" font-weight="bold">{}</text>"#,
        y + 16.0,
        esc(&title(r))
    )?;
    legend(out, 8.0, y + 38.0)?;
    let times = Scale::time(r.points.iter().filter_map(|p| match p.status {
        Status::Ranked { seconds, .. } => Some(seconds),
        _ => None,
    }));
    for (i, axis) in r.axes.iter().enumerate() {
        let frame = Frame {
            x: LEFT + (i % COLUMNS) as f64 * (PLOT_W + LEFT + RIGHT),
            y: y + HEADER + TOP + (i / COLUMNS) as f64 * (PLOT_H + TOP + BOTTOM),
            w: PLOT_W,
            h: PLOT_H,
        };
        panel(
            out,
            r,
            &axis.name,
            &Scale::values(&axis.candidates),
            &times,
            &frame,
        )?;
    }
    writeln!(out, "</g>")?;
    let rows = r.axes.len().div_ceil(COLUMNS).max(1);
    Ok(y + HEADER + rows as f64 * (PLOT_H + TOP + BOTTOM) + 12.0)
}

/// The panel of the tuned parameter `param` in `frame`: its axes, every
/// configuration, the line of the fastest time at each value, and the
/// best and default markers.
fn panel(
    out: &mut String,
    r: &Report,
    param: &str,
    xs: &Scale,
    times: &Scale,
    frame: &Frame,
) -> std::fmt::Result {
    writeln!(
        out,
        r#"<g class="panel" data-target="{}" data-param="{}">"#,
        esc(&r.target),
        esc(param)
    )?;
    writeln!(
        out,
        r##"<rect class="plot-area" x="{}" y="{}" width="{}" height="{}" fill="#fafafa" stroke="#444444"/>"##,
        frame.x, frame.y, frame.w, frame.h
    )?;
    let what = if r.evaluator == "model" || r.evaluator == "schedule" {
        "predicted"
    } else {
        "measured"
    };
    axes(out, frame, xs, times, param, what)?;
    let at = |p: &Params| p.get(param).map(|&v| frame.px(xs.pos(v as f64)));
    let ty = |t: f64| frame.ranked_y(times.pos(t));
    // The fastest time at each value of this parameter, as a line.
    let mut envelope: Vec<(i64, f64)> = Vec::new();
    for p in &r.points {
        if let (Status::Ranked { seconds, .. }, Some(&v)) = (&p.status, p.params.get(param)) {
            match envelope.iter_mut().find(|(w, _)| *w == v) {
                Some(e) => e.1 = e.1.min(*seconds),
                None => envelope.push((v, *seconds)),
            }
        }
    }
    envelope.sort_by_key(|e| e.0);
    if envelope.len() > 1 {
        let pts: Vec<String> = envelope
            .iter()
            .map(|(v, t)| format!("{:.1},{:.1}", frame.px(xs.pos(*v as f64)), ty(*t)))
            .collect();
        writeln!(
            out,
            r#"<polyline class="fastest" points="{}" fill="none" stroke="{RANKED}" stroke-width="1.5" stroke-opacity="0.6"/>"#,
            pts.join(" ")
        )?;
    }
    for p in &r.points {
        let Some(x) = at(&p.params) else { continue };
        let (class, y, style) = match &p.status {
            Status::Ranked { seconds, .. } => (
                "point ranked",
                ty(*seconds),
                format!(r#"fill="{RANKED}" fill-opacity="0.55" stroke="{RANKED}""#),
            ),
            Status::Pruned { .. } => ("point pruned", frame.strip_y(), hollow(PRUNED)),
            Status::Refused { .. } => ("point refused", frame.strip_y(), hollow(REFUSED)),
            Status::TimedOut { .. } | Status::Failed { .. } => {
                ("point not-timed", frame.strip_y(), hollow(NOT_TIMED))
            }
            Status::Screened { .. } => ("point screened", frame.strip_y(), hollow(SCREENED)),
        };
        writeln!(
            out,
            r#"<circle class="{class}" cx="{x:.1}" cy="{y:.1}" r="3.5" {style}><title>{}</title></circle>"#,
            esc(&r.describe(&p.params))
        )?;
    }
    // The default is marked where it is: among the ranked, or in the
    // strip when it was not ranked.
    match (&r.default, r.default_params()) {
        (Some(d), _) => {
            if let Some(x) = at(&d.params) {
                marker(out, frame, "default", x, ty(d.seconds), Side::Left)?;
            }
        }
        (None, Some(d)) if r.points.iter().any(|p| p.params == d) => {
            if let Some(x) = at(&d) {
                marker(out, frame, "default", x, frame.strip_y(), Side::Left)?;
            }
        }
        _ => {}
    }
    if let Some(b) = r.best.first() {
        if let Some(x) = at(&b.params) {
            marker(out, frame, "best", x, ty(b.seconds), Side::Right)?;
        }
    }
    writeln!(out, "</g>")
}

/// A target's title.
fn title(r: &Report) -> String {
    let ranked = r
        .points
        .iter()
        .filter(|p| matches!(p.status, Status::Ranked { .. }))
        .count();
    let what = if r.evaluator == "model" || r.evaluator == "schedule" {
        "predicted"
    } else {
        "measured"
    };
    format!(
        "{} on {}: {} configurations tried, {ranked} ranked ({what} time per call)",
        r.kernel,
        r.target,
        r.points.len()
    )
}

/// The legend's labels.
const LEGEND: [&str; 7] = [
    "ranked",
    "pruned by the checker",
    "refused by libtpu",
    "timed out or not timed",
    "not compiled (--screen)",
    "best",
    "default",
];

fn legend_width() -> f64 {
    22.0 + LEGEND
        .iter()
        .map(|l| 26.0 + text_width(l, FONT))
        .sum::<f64>()
}

fn hollow(color: &str) -> String {
    format!(r#"fill="none" stroke="{color}" stroke-width="1.5""#)
}

/// The key to the marks, on one line.
fn legend(out: &mut String, x: f64, y: f64) -> std::fmt::Result {
    let items: [(&str, String); 7] = [
        (
            LEGEND[0],
            format!(
                r#"<circle cx="{{x}}" cy="{{y}}" r="3.5" fill="{RANKED}" fill-opacity="0.55" stroke="{RANKED}"/>"#
            ),
        ),
        (
            LEGEND[1],
            format!(
                r#"<circle cx="{{x}}" cy="{{y}}" r="3.5" {}/>"#,
                hollow(PRUNED)
            ),
        ),
        (
            LEGEND[2],
            format!(
                r#"<circle cx="{{x}}" cy="{{y}}" r="3.5" {}/>"#,
                hollow(REFUSED)
            ),
        ),
        (
            LEGEND[3],
            format!(
                r#"<circle cx="{{x}}" cy="{{y}}" r="3.5" {}/>"#,
                hollow(NOT_TIMED)
            ),
        ),
        (
            LEGEND[4],
            format!(
                r#"<circle cx="{{x}}" cy="{{y}}" r="3.5" {}/>"#,
                hollow(SCREENED)
            ),
        ),
        (LEGEND[5], triangle_at("{x}", "{y}")),
        (LEGEND[6], square_at("{x}", "{y}")),
    ];
    writeln!(out, r#"<g class="legend">"#)?;
    let mut cx = x + 6.0;
    for (label, mark) in items {
        let mark = mark
            .replace("{x}", &format!("{cx:.1}"))
            .replace("{y}", &format!("{:.1}", y - 4.0));
        writeln!(
            out,
            r#"{mark}<text x="{:.1}" y="{y:.1}">{label}</text>"#,
            cx + 8.0
        )?;
        cx += 8.0 + text_width(label, FONT) + 18.0;
    }
    writeln!(out, "</g>")
}

fn triangle_at(x: &str, y: &str) -> String {
    format!(
        r#"<path d="M {x} {y} m 0 -6 l 6 10 l -12 0 z" fill="none" stroke="{BEST}" stroke-width="2"/>"#
    )
}

fn square_at(x: &str, y: &str) -> String {
    format!(
        r#"<path d="M {x} {y} m -5 -5 h 10 v 10 h -10 z" fill="none" stroke="{DEFAULT}" stroke-width="2"/>"#
    )
}

/// Which side of its marker a label prefers.
#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

/// A labelled marker at `(x, y)`, its label inside the frame.
fn marker(out: &mut String, f: &Frame, what: &str, x: f64, y: f64, side: Side) -> std::fmt::Result {
    let (shape, color) = if what == "best" {
        (triangle_at(&format!("{x:.1}"), &format!("{y:.1}")), BEST)
    } else {
        (square_at(&format!("{x:.1}"), &format!("{y:.1}")), DEFAULT)
    };
    let w = text_width(what, FONT);
    let fits_right = x + 9.0 + w <= f.x + f.w - 2.0;
    let fits_left = x - 9.0 - w >= f.x + 2.0;
    let right = match side {
        Side::Right => fits_right || !fits_left,
        Side::Left => !fits_left && fits_right,
    };
    let lx = if right { x + 9.0 } else { x - 9.0 - w };
    // The best is the lowest ranked mark, and its label goes under it,
    // above the strip; the default's goes above its marker. Either flips
    // when there is no room on its side.
    let above_fits = y - 8.0 - FONT >= f.y + 2.0;
    let below_fits = y + 8.0 + FONT <= f.y + f.h - STRIP - 2.0;
    let below = if what == "best" {
        below_fits || !above_fits
    } else {
        !above_fits && below_fits
    };
    let ly = if below { y + 8.0 + FONT } else { y - 8.0 };
    writeln!(
        out,
        r#"<g class="marker {what}" data-x="{x:.1}" data-y="{y:.1}">{shape}<text class="marker-label" x="{lx:.1}" y="{ly:.1}" fill="{color}" font-weight="bold" data-width="{w:.1}">{what}</text></g>"#
    )
}

/// A plot area, pixels.
struct Frame {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Frame {
    /// `pos` in 0..=1 across the area, inside a margin for the markers.
    fn px(&self, pos: f64) -> f64 {
        self.x + PAD + pos * (self.w - 2.0 * PAD)
    }

    /// A ranked time's `pos` in 0..=1 (fastest 0) up the area, above the
    /// strip and inside a margin for the markers and their labels.
    fn ranked_y(&self, pos: f64) -> f64 {
        let bottom = self.y + self.h - STRIP - PAD;
        let top = self.y + PAD;
        bottom - pos * (bottom - top)
    }

    /// The strip of configurations that were not ranked.
    fn strip_y(&self) -> f64 {
        self.y + self.h - STRIP / 2.0
    }
}

/// A scale from data to 0..=1, with its ticks and their labels.
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<(f64, String)>,
    /// The unit of the labels, for the axis title.
    unit: &'static str,
}

impl Scale {
    fn pos(&self, v: f64) -> f64 {
        let (v, lo, hi) = if self.log {
            (v.ln(), self.lo.ln(), self.hi.ln())
        } else {
            (v, self.lo, self.hi)
        };
        if hi > lo {
            ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
        } else {
            0.5
        }
    }

    /// A parameter's candidates: a log2 axis when every one is a power of
    /// two, else a linear one; a tick at each candidate (at most 12, else
    /// evenly picked ones).
    fn values(candidates: &[i64]) -> Scale {
        let lo = candidates.iter().copied().min().unwrap_or(0) as f64;
        let hi = candidates.iter().copied().max().unwrap_or(0) as f64;
        let log = candidates.len() > 1 && candidates.iter().all(|&c| c > 0 && c.count_ones() == 1);
        let every = candidates.len().div_ceil(12).max(1);
        let ticks = candidates
            .iter()
            .enumerate()
            .filter(|(i, _)| i % every == 0 || *i + 1 == candidates.len())
            .map(|(_, &c)| (c as f64, c.to_string()))
            .collect();
        Scale {
            lo,
            hi,
            log,
            ticks,
            unit: if log { "log2 scale" } else { "" },
        }
    }

    /// Times in seconds: a log axis over their range, labelled in the unit
    /// that reads best (µs, ms or s) at 1-2-5 steps.
    fn time(times: impl Iterator<Item = f64>) -> Scale {
        let (mut lo, mut hi) = times
            .filter(|t| t.is_finite() && *t > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(l, h), t| (l.min(t), h.max(t)));
        if !lo.is_finite() {
            (lo, hi) = (1e-6, 1e-5);
        }
        if hi / lo < 1.2 {
            let mid = (lo * hi).sqrt();
            (lo, hi) = (mid / 1.1, mid * 1.1);
        }
        let (scale, unit) = if hi < 1e-3 {
            (1e6, "µs")
        } else if hi < 1.0 {
            (1e3, "ms")
        } else {
            (1.0, "s")
        };
        // The range is widened to the ticks around it, so that both ends
        // of the axis are labelled.
        let (lo_u, hi_u, ticks) = ticks_125(lo * scale, hi * scale);
        Scale {
            lo: lo_u / scale,
            hi: hi_u / scale,
            log: true,
            ticks: ticks.into_iter().map(|v| (v / scale, label(v))).collect(),
            unit,
        }
    }
}

/// The largest of `mantissas` times a power of ten at or below `v`
/// (`up`: the smallest at or above).
fn snap(v: f64, mantissas: &[f64], up: bool) -> f64 {
    let e = v.log10().floor() as i32;
    let mut all: Vec<f64> = (e - 1..=e + 1)
        .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
        .collect();
    all.sort_by(f64::total_cmp);
    let found = if up {
        all.into_iter().find(|x| *x >= v * (1.0 - 1e-9))
    } else {
        all.into_iter().rev().find(|x| *x <= v * (1.0 + 1e-9))
    };
    found.unwrap_or(v)
}

/// Ticks for a log axis over `[lo, hi]` (`0 < lo < hi`), and the range
/// widened to the ticks at its ends. Over a factor of 2.5 or more: the
/// numbers 1, 2 and 5 times a power of ten (only the powers of ten when
/// that makes more than 10 ticks). Over less: multiples of a step of 1, 2
/// or 5 times a power of ten, 3 to 6 of them, which a narrow log axis
/// spaces almost evenly.
pub fn ticks_125(lo: f64, hi: f64) -> (f64, f64, Vec<f64>) {
    let within = |lo: f64, hi: f64, mantissas: &[f64]| -> Vec<f64> {
        let mut out = Vec::new();
        let mut e = lo.log10().floor() as i32 - 1;
        while 10f64.powi(e) <= hi * (1.0 + 1e-9) {
            for m in mantissas {
                let v = m * 10f64.powi(e);
                if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                    out.push(v);
                }
            }
            e += 1;
        }
        out
    };
    if hi / lo >= 2.5 {
        for mantissas in [&[1.0, 2.0, 5.0][..], &[1.0][..]] {
            let (a, b) = (snap(lo, mantissas, false), snap(hi, mantissas, true));
            let t = within(a, b, mantissas);
            if t.len() <= 10 || mantissas.len() == 1 {
                return (a, b, t);
            }
        }
    }
    let span = hi - lo;
    let e0 = span.log10().floor() as i32;
    for e in e0 - 2..=e0 + 1 {
        for m in [1.0, 2.0, 5.0] {
            let step = m * 10f64.powi(e);
            let first = (lo / step).floor();
            let last = (hi / step).ceil();
            let n = last - first + 1.0;
            if first > 0.0 && (3.0..=6.0).contains(&n) {
                let t = (first as i64..=last as i64)
                    .map(|k| k as f64 * step)
                    .collect();
                return (first * step, last * step, t);
            }
        }
    }
    (lo, hi, within(lo, hi, &[1.0, 2.0, 5.0]))
}

/// A tick value as short text: `2`, `0.5`, `150`, `1.25`.
fn label(v: f64) -> String {
    let s = format!("{:.3}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// The frame's axes: ticks, their labels and the axis titles.
fn axes(
    out: &mut String,
    f: &Frame,
    xs: &Scale,
    ys: &Scale,
    param: &str,
    what: &str,
) -> std::fmt::Result {
    writeln!(out, r#"<g class="x-axis">"#)?;
    for (v, text) in &xs.ticks {
        let x = f.px(xs.pos(*v));
        let bottom = f.y + f.h;
        writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{bottom}" x2="{x:.1}" y2="{:.1}" stroke="#444444"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{text}</text>"##,
            bottom + 4.0,
            bottom + 15.0
        )?;
    }
    let title = if xs.unit.is_empty() {
        param.to_string()
    } else {
        format!("{param} ({})", xs.unit)
    };
    writeln!(
        out,
        r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">{}</text>"#,
        f.x + f.w / 2.0,
        f.y + f.h + 34.0,
        esc(&title)
    )?;
    writeln!(out, "</g>")?;
    writeln!(out, r#"<g class="y-axis">"#)?;
    for (v, text) in &ys.ticks {
        let y = f.ranked_y(ys.pos(*v));
        writeln!(
            out,
            r##"<line x1="{}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#dddddd"/><line x1="{:.1}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#444444"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{text}</text>"##,
            f.x,
            f.x + f.w,
            f.x - 4.0,
            f.x,
            f.x - 6.0,
            y + 4.0
        )?;
    }
    // The strip of configurations that were not ranked, set off by a line.
    let sy = f.y + f.h - STRIP;
    writeln!(
        out,
        r##"<line x1="{}" y1="{sy}" x2="{:.1}" y2="{sy}" stroke="#bbbbbb" stroke-dasharray="3 3"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end" fill="#777777">not ranked</text>"##,
        f.x,
        f.x + f.w,
        f.x - 6.0,
        f.strip_y() + 4.0
    )?;
    let cx = f.x - 52.0;
    let cy = f.y + (f.h - STRIP) / 2.0;
    writeln!(
        out,
        r#"<text class="axis-label" x="{cx:.1}" y="{cy:.1}" text-anchor="middle" font-size="12" transform="rotate(-90 {cx:.1} {cy:.1})">{what} time ({}, log scale)</text>"#,
        ys.unit
    )?;
    writeln!(out, "</g>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() < 1e-9 * y.abs().max(1.0))
    }

    #[test]
    fn ticks_step_by_one_two_five_and_bound_the_axis() {
        // Three decades: 1, 2 and 5 of each, the ends widened to ticks.
        let (lo, hi, t) = ticks_125(1.3, 900.0);
        assert_eq!((lo, hi), (1.0, 1000.0));
        assert!(
            close(
                &t,
                &[1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
            ),
            "{t:?}"
        );
        // 4 to 15.8 us: 2 to 20.
        let (lo, hi, t) = ticks_125(3.98, 15.8);
        assert_eq!((lo, hi), (2.0, 20.0));
        assert!(close(&t, &[2.0, 5.0, 10.0, 20.0]), "{t:?}");
        // A narrow range: a linear step of 10 (74.6 to 116.2 us).
        let (lo, hi, t) = ticks_125(74.6, 116.2);
        assert_eq!((lo, hi), (70.0, 120.0));
        assert!(close(&t, &[70.0, 80.0, 90.0, 100.0, 110.0, 120.0]), "{t:?}");
        // Many decades: powers of ten only.
        let (lo, hi, t) = ticks_125(1.5, 2e6);
        assert_eq!((lo, hi), (1.0, 1e7));
        assert!(
            close(&t, &[1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7]),
            "{t:?}"
        );
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(label(2.0), "2");
        assert_eq!(label(0.5), "0.5");
        assert_eq!(label(150.0), "150");
    }
}
