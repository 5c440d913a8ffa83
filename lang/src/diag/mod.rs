//! Diagnostics: every user-facing error of pk is a [`Diagnostic`] with a stable
//! code (`PK0123`), a message, a primary span with labels, and help text.
//!
//! Each code also has an [`Explanation`] (What / Why / Example) that
//! `pkc explain CODE` prints. Crates register their explanations in a static
//! table; the CLI consults every table.
//!
//! Code ranges: `PK0xxx` front end, `PK1xxx` CPU reference runtime and `.npy`
//! I/O, `PK2xxx` Mosaic / StableHLO / PJRT / libtpu, `PK3xxx` kernel packages,
//! `PK4xxx` command line.

/// The long form of one diagnostic code, printed by `pkc explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Explanation {
    /// The stable code, e.g. `PK0101`.
    pub code: &'static str,
    /// A short name for the rule, e.g. `unknown-name`.
    pub title: &'static str,
    /// What triggers the diagnostic.
    pub what: &'static str,
    /// Why pk rejects it (the TPU or language rule behind it).
    pub why: &'static str,
    /// A small example of the mistake and its fix.
    pub example: &'static str,
}

impl Explanation {
    /// Renders the explanation as `pkc explain` prints it.
    pub fn render(&self) -> String {
        format!(
            "{} ({})\n\nWhat\n  {}\n\nWhy\n  {}\n\nExample\n{}\n",
            self.code,
            self.title,
            self.what,
            self.why,
            indent(self.example)
        )
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("  {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub mod codes;
mod render;

pub use render::{render, render_all, render_capped, Omitted, RenderStyle, DEFAULT_MAX_SHOWN};

use crate::span::Span;

/// One diagnostic: a code, a message, a primary span with its label,
/// secondary labels, help and notes.
#[derive(Debug, Clone, PartialEq)]
pub struct Diag {
    pub code: &'static Explanation,
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    pub label: Option<String>,
    pub secondary: Vec<(Span, String)>,
    pub help: Option<String>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

impl Diag {
    pub fn new(code: &'static Explanation, message: impl Into<String>, span: Span) -> Diag {
        Diag {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            label: None,
            secondary: Vec::new(),
            help: None,
            notes: Vec::new(),
        }
    }

    pub fn warning(mut self) -> Diag {
        self.severity = Severity::Warning;
        self
    }

    pub fn label(mut self, text: impl Into<String>) -> Diag {
        self.label = Some(text.into());
        self
    }

    pub fn with(mut self, span: Span, text: impl Into<String>) -> Diag {
        self.secondary.push((span, text.into()));
        self
    }

    pub fn help(mut self, text: impl Into<String>) -> Diag {
        self.help = Some(text.into());
        self
    }

    pub fn note(mut self, text: impl Into<String>) -> Diag {
        self.notes.push(text.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Looks up the explanation of a code among the front end's codes.
pub fn explain(code: &str) -> Option<&'static Explanation> {
    let code = code.trim().to_ascii_uppercase();
    codes::ALL.iter().copied().find(|e| e.code == code)
}
