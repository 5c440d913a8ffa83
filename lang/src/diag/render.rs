//! Rendering [`Diag`]s as text through miette's graphical handler.

use super::{Diag, Severity};
use crate::span::SourceMap;
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource};
use std::fmt;

/// How diagnostics are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderStyle {
    /// Unicode box drawing, no colour: stable text for files and tests.
    Plain,
    /// Unicode with ANSI colours, for terminals.
    Color,
}

/// The miette view of one [`Diag`], with its source attached.
struct Report<'a> {
    diag: &'a Diag,
    source: NamedSource<String>,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diag.message)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diag.message)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.diag.code.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diag.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }
}

/// Renders one diagnostic against the files it points into.
pub fn render(diag: &Diag, sources: &SourceMap, style: RenderStyle) -> String {
    let file = sources.get(diag.span.file);
    let mut labels = vec![LabeledSpan::new_primary_with_span(
        diag.label.clone(),
        diag.span,
    )];
    let mut notes = Vec::new();
    for (span, text) in &diag.secondary {
        if span.file == diag.span.file {
            labels.push(LabeledSpan::new_with_span(Some(text.clone()), *span));
        } else {
            let (name, line, col) = sources.location(*span);
            notes.push(format!("{text} ({name}:{line}:{col})"));
        }
    }
    notes.extend(diag.notes.iter().cloned());
    let mut help = diag.help.clone();
    if !notes.is_empty() {
        let joined = notes
            .iter()
            .map(|n| format!("note: {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        help = Some(match help {
            Some(h) => format!("{h}\n{joined}"),
            None => joined,
        });
    }
    let report = Report {
        diag,
        source: NamedSource::new(file.name.clone(), file.text.to_string()),
        labels,
        help,
    };
    let theme = match style {
        RenderStyle::Plain => GraphicalTheme::unicode_nocolor(),
        RenderStyle::Color => GraphicalTheme::unicode(),
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false);
    let mut out = String::new();
    if handler.render_report(&mut out, &report).is_err() {
        out = format!("error[{}]: {}\n", diag.code.code, diag.message);
    }
    out
}

/// Renders several diagnostics, separated by blank lines.
pub fn render_all(diags: &[Diag], sources: &SourceMap, style: RenderStyle) -> String {
    diags
        .iter()
        .map(|d| render(d, sources, style))
        .collect::<Vec<_>>()
        .join("\n")
}
