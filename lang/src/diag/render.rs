//! Rendering [`Diag`]s as text through miette's graphical handler.
//!
//! Invariants:
//! 1. Rendering never panics and never fails: whatever miette cannot draw
//!    (or panics on) falls back to a plain `error[CODE]: message` line with
//!    its location.
//! 2. The cost of one diagnostic does not grow with the size of its file:
//!    miette sees an [`Excerpt`] (the lines from the first label to the
//!    last, and a few around them), never the whole text.
//! 3. No line miette draws is longer than [`MAX_LINE`] bytes: a longer one
//!    is cut to a window around its labels, marked with `…` where text was
//!    left out, while line and column numbers stay those of the file.

use super::{Diag, Severity};
use crate::span::{SourceFile, SourceMap};
use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceCode, SourceSpan, SpanContents,
};
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
    source: Excerpt,
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
    let drawn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        render_graphical(diag, sources, style)
    }));
    match drawn {
        Ok(Some(text)) => text,
        _ => render_plain(diag, sources),
    }
}

/// The fallback: one line with the code, message and location, then the
/// help and notes.
fn render_plain(diag: &Diag, sources: &SourceMap) -> String {
    let (name, line, col) = sources.location(diag.span);
    let mut out = format!(
        "error[{}]: {}\n  --> {name}:{line}:{col}\n",
        diag.code.code, diag.message
    );
    if diag.severity == Severity::Warning {
        out = out.replacen("error[", "warning[", 1);
    }
    if let Some(h) = &diag.help {
        out.push_str(&format!("  help: {h}\n"));
    }
    for n in &diag.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}

/// Lines of context drawn above and below the labels (miette's default).
const CONTEXT: usize = 1;

fn render_graphical(diag: &Diag, sources: &SourceMap, style: RenderStyle) -> Option<String> {
    let file = sources.get(diag.span.file);
    let mut spans = vec![diag.span];
    let mut notes = Vec::new();
    for (span, text) in &diag.secondary {
        if span.file == diag.span.file {
            spans.push(*span);
        } else {
            let (name, line, col) = sources.location(*span);
            notes.push(format!("{text} ({name}:{line}:{col})"));
        }
    }
    let excerpt = Excerpt::new(file, &spans);
    let mut labels = vec![LabeledSpan::new_primary_with_span(
        diag.label.clone(),
        excerpt.span(diag.span.start, diag.span.end),
    )];
    for (span, text) in &diag.secondary {
        if span.file == diag.span.file {
            labels.push(LabeledSpan::new_with_span(
                Some(text.clone()),
                excerpt.span(span.start, span.end),
            ));
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
        source: excerpt,
        labels,
        help,
    };
    let theme = match style {
        RenderStyle::Plain => GraphicalTheme::unicode_nocolor(),
        RenderStyle::Color => GraphicalTheme::unicode(),
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false)
        .with_context_lines(CONTEXT);
    let mut out = String::new();
    handler.render_report(&mut out, &report).ok()?;
    Some(out)
}

/// Lines longer than this many bytes are shortened around their labels.
pub const MAX_LINE: usize = 160;

/// Bytes kept before the first label on a shortened line.
const LEAD: usize = 48;

/// The part of a file one diagnostic shows: whole lines from a little
/// before its first label to a little after its last, long lines cut.
struct Excerpt {
    name: String,
    text: String,
    /// The 0-based file line of the excerpt's first line.
    first_line: usize,
    lines: Vec<ExcerptLine>,
}

/// One line of an [`Excerpt`].
struct ExcerptLine {
    /// Where it starts in the excerpt.
    at: usize,
    /// The file bytes `[from, to)` it shows (a whole line unless cut).
    from: usize,
    to: usize,
    /// Where the file line starts.
    line_start: usize,
    /// The bytes of the `…` written before the kept text (0 or 3).
    marker: usize,
}

impl Excerpt {
    fn new(file: &SourceFile, spans: &[crate::span::Span]) -> Excerpt {
        let text: &str = &file.text;
        let len = text.len();
        let clamp = |o: u32| (o as usize).min(len);
        let lo = spans.iter().map(|s| clamp(s.start)).min().unwrap_or(0);
        let hi = spans
            .iter()
            .map(|s| clamp(s.end.max(s.start)))
            .max()
            .unwrap_or(0);
        let (lo_line, _) = file.line_col(lo as u32);
        let (hi_line, _) = file.line_col(hi as u32);
        let first = (lo_line as usize - 1).saturating_sub(CONTEXT);
        let last = (hi_line as usize - 1 + CONTEXT).min(file.line_count() - 1);
        let mut out = String::new();
        let mut lines = Vec::new();
        for l in first..=last {
            let (start, end) = file.line_bounds(l);
            // Label points on this line pick the window of a long one.
            let anchor = spans
                .iter()
                .map(|s| clamp(s.start))
                .filter(|&o| o >= start && o <= end)
                .min()
                .unwrap_or(start);
            let (from, to) = if end - start <= MAX_LINE {
                (start, end)
            } else {
                let from = floor_char(text, anchor.saturating_sub(LEAD).max(start));
                let to = floor_char(text, (from + MAX_LINE).min(end));
                (from, to)
            };
            let marker = if from > start { "…" } else { "" };
            lines.push(ExcerptLine {
                at: out.len(),
                from,
                to,
                line_start: start,
                marker: marker.len(),
            });
            out.push_str(marker);
            out.push_str(&text[from..to]);
            if to < end {
                out.push('…');
            }
            // Every line keeps its line break, as in the file, so that an
            // empty context line at the end is drawn as it was.
            if l + 1 < file.line_count() {
                out.push('\n');
            }
        }
        Excerpt {
            name: file.name.clone(),
            text: out,
            first_line: first,
            lines,
        }
    }

    /// The excerpt offset of file offset `o` (clamped into the kept text
    /// of its line, or to the excerpt's ends).
    fn offset(&self, o: usize) -> usize {
        let i = self
            .lines
            .partition_point(|l| l.line_start <= o)
            .saturating_sub(1);
        let Some(l) = self.lines.get(i) else {
            return 0;
        };
        if o < l.line_start {
            return l.at;
        }
        l.at + l.marker + o.clamp(l.from, l.to) - l.from
    }

    /// The excerpt span of the file bytes `[start, end)`.
    fn span(&self, start: u32, end: u32) -> SourceSpan {
        let a = self.offset(start as usize);
        let b = self.offset(end.max(start) as usize).max(a);
        SourceSpan::from((a, b - a))
    }

    /// Bytes of the file line left out before the window of the excerpt
    /// line holding excerpt offset `at`, less the `…` standing for them
    /// (miette counts columns in bytes).
    fn column_shift(&self, at: usize) -> isize {
        let i = self.lines.partition_point(|l| l.at <= at).saturating_sub(1);
        match self.lines.get(i) {
            Some(l) => (l.from - l.line_start) as isize - l.marker as isize,
            None => 0,
        }
    }
}

/// The largest char boundary of `text` at or below `i`.
fn floor_char(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner =
            self.text
                .as_str()
                .read_span(span, context_lines_before, context_lines_after)?;
        let column = if context_lines_before == 0 {
            (inner.column() as isize + self.column_shift(span.offset())).max(0) as usize
        } else {
            inner.column()
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            column,
            // miette counts lines from the start of the text here (and
            // merges snippets by it), so the lines above the excerpt count.
            inner.line_count() + self.first_line,
        )))
    }
}

/// How many diagnostics are drawn by default before the rest are only
/// counted (as compilers do: clang stops at 20 errors, gcc takes
/// `-fmax-errors`): a file that is not pk at all gives thousands, and
/// nobody reads past the first screens.
pub const DEFAULT_MAX_SHOWN: usize = 50;

/// What a capped list of diagnostics leaves out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Omitted {
    pub errors: usize,
    pub warnings: usize,
}

impl Omitted {
    /// The diagnostics of `diags` past the first `max` (`None`: none).
    pub fn of(diags: &[Diag], max: Option<usize>) -> Omitted {
        let rest = max.map_or(&[][..], |m| &diags[m.min(diags.len())..]);
        let errors = rest.iter().filter(|d| d.is_error()).count();
        Omitted {
            errors,
            warnings: rest.len() - errors,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.errors == 0 && self.warnings == 0
    }

    /// `1 more error and 2 more warnings not shown`.
    pub fn describe(&self) -> String {
        let count =
            |n: usize, what: &str| format!("{n} more {what}{}", if n == 1 { "" } else { "s" });
        let parts: Vec<String> = [(self.errors, "error"), (self.warnings, "warning")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|&(n, w)| count(n, w))
            .collect();
        format!("{} not shown", parts.join(" and "))
    }
}

/// Renders the first `max` diagnostics (all for `None`), separated by
/// blank lines, then a line counting the rest, if any, with `hint` saying
/// how to see them. Time and output grow with the diagnostics drawn, not
/// with those left out.
pub fn render_capped(
    diags: &[Diag],
    sources: &SourceMap,
    style: RenderStyle,
    max: Option<usize>,
    hint: &str,
) -> String {
    let shown = max.map_or(diags.len(), |m| m.min(diags.len()));
    let mut out = render_all(&diags[..shown], sources, style);
    let omitted = Omitted::of(diags, max);
    if !omitted.is_empty() {
        out.push_str(&format!("\n... {} ({hint})\n", omitted.describe()));
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
