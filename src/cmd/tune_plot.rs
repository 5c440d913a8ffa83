//! `pkc tune --plot FILE.svg`: the space of every target drawn as the
//! evaluator's time against configuration, with plotters' SVG backend.
//!
//! One panel per target. Every configuration tried is one circle at its
//! position in the order tried: filled for a ranked one at its time (log
//! scale), hollow on the bottom edge for one the checker pruned (red) or
//! libtpu refused (orange). The best configuration is also marked with a
//! triangle and the default with a square, so that the circles alone count
//! the configurations.

use super::tune::{Eval, PointStatus, TargetResult};
use plotters::prelude::*;

/// Panel size, pixels.
const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 380;

/// Up to this many configurations are named under the axis.
const NAMED: usize = 8;

const RANKED: RGBColor = RGBColor(31, 119, 180);
const PRUNED: RGBColor = RGBColor(214, 39, 40);
const REFUSED: RGBColor = RGBColor(255, 127, 14);
const BEST: RGBColor = RGBColor(44, 160, 44);
const DEFAULT: RGBColor = RGBColor(23, 23, 23);

/// The SVG document of `results`.
pub fn svg(kernel: &str, eval: Eval, results: &[TargetResult]) -> Result<String, String> {
    let mut out = String::new();
    {
        let height = PANEL_HEIGHT * results.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let panels = root.split_evenly((results.len().max(1), 1));
        for (area, r) in panels.iter().zip(results) {
            panel(area, kernel, eval, r).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn panel(
    area: &Area<'_>,
    kernel: &str,
    eval: Eval,
    r: &TargetResult,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let us: Vec<f64> = r
        .points
        .iter()
        .filter_map(|p| match p.status {
            PointStatus::Ranked(s) => Some(s * 1e6),
            _ => None,
        })
        .collect();
    let (lo, hi) = match (
        us.iter().copied().reduce(f64::min),
        us.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) if lo > 0.0 => (lo / 2.0, hi * 2.0),
        _ => (1.0, 10.0),
    };
    let n = r.points.len().max(1) as f64;
    let what = if eval == Eval::Model {
        "predicted time (us)"
    } else {
        "measured time (us)"
    };
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{kernel} on {}: {} configurations ({} ranked by {})",
                r.target,
                r.points.len(),
                us.len(),
                eval.name()
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(-0.5f64..n - 0.5, (lo..hi).log_scale())?;
    // Few configurations are named on the axis; many are numbered.
    let names: Vec<String> = r
        .points
        .iter()
        .map(|p| r.space.describe(&p.config))
        .collect();
    let label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 || i as usize >= names.len() {
            String::new()
        } else if names.len() <= NAMED {
            names[i as usize].clone()
        } else {
            format!("{i}")
        }
    };
    chart
        .configure_mesh()
        .x_labels(names.len().min(NAMED * 2))
        .x_label_formatter(&label)
        .disable_x_mesh()
        .y_labels(8)
        .y_label_formatter(&|y| format!("{y:.3}"))
        .light_line_style(WHITE.mix(0.0))
        .x_desc(
            "configuration, in the order tried (filled: ranked; hollow at the bottom: red pruned by the checker, orange refused by libtpu; triangle: best; square: default)",
        )
        .y_desc(what)
        .label_style(("sans-serif", 12))
        .draw()?;
    let marks = r.points.iter().enumerate().map(|(i, p)| {
        let (y, style) = match &p.status {
            PointStatus::Ranked(s) => (s * 1e6, RANKED.filled()),
            PointStatus::Pruned(_) => (lo, PRUNED.stroke_width(2)),
            PointStatus::Refused(_) | PointStatus::Unranked => (lo, REFUSED.stroke_width(2)),
        };
        Circle::new((i as f64, y), 4, style)
    });
    chart.draw_series(marks)?;
    let at = |c: &pk_runtime::tune::space::Config| {
        r.points
            .iter()
            .enumerate()
            .find_map(|(i, p)| match p.status {
                PointStatus::Ranked(s) if &p.config == c => Some((i as f64, s * 1e6)),
                _ => None,
            })
    };
    if let Some(xy) = r.ranked.first().and_then(|b| at(&b.config)) {
        chart.draw_series(std::iter::once(TriangleMarker::new(
            xy,
            9,
            BEST.stroke_width(2),
        )))?;
    }
    if let Some(xy) = r.default.as_ref().and_then(at) {
        chart.draw_series(std::iter::once(
            EmptyElement::at(xy) + Rectangle::new([(-7, -7), (7, 7)], DEFAULT.stroke_width(2)),
        ))?;
    }
    Ok(())
}
