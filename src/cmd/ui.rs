//! How `pkc` talks to people and to programs: the global flags
//! (`--color`, `-q`, `-v`, `--message-format`), diagnostics as text or as
//! JSON lines, and progress bars for work that takes a while.
//!
//! The flags are read once, in `main`, into a process-wide [`Ui`]; every
//! command consults it through [`ui`] instead of threading it through.

use clap::{Args as ClapArgs, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};
use pk_lang::diag::{Diag, RenderStyle, Severity};
use pk_lang::span::SourceMap;
use serde_json::{json, Value};
use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour when stderr is a terminal (NO_COLOR turns it off, and wins
    /// over CLICOLOR_FORCE, which turns it on).
    Auto,
    Always,
    Never,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFormat {
    /// Rendered diagnostics on stderr.
    Human,
    /// One JSON object per line on stdout: diagnostics, `pkc test`'s
    /// comparisons and `pkc build`'s packages.
    Json,
}

/// Flags every subcommand takes.
#[derive(ClapArgs, Debug, Clone)]
pub struct GlobalArgs {
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value = "auto", global = true)]
    pub color: ColorChoice,
    /// Print errors only: no status lines, warnings or progress.
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more: libtpu's own messages, timings of each stage.
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
    /// How diagnostics and results are printed.
    #[arg(long, value_enum, default_value = "human", global = true)]
    pub message_format: MessageFormat,
    /// Print at most N diagnostics of a file, then a count of the rest
    /// (0: no limit).
    #[arg(long, value_name = "N", default_value_t = pk_lang::diag::DEFAULT_MAX_SHOWN, global = true)]
    pub max_errors: usize,
    /// Print every diagnostic (the same as --max-errors 0).
    #[arg(long, global = true, conflicts_with = "max_errors")]
    pub all_errors: bool,
}

/// The settings the global flags give.
#[derive(Debug, Clone, Copy)]
pub struct Ui {
    pub color: bool,
    pub quiet: bool,
    pub verbose: bool,
    pub json: bool,
    /// The most diagnostics printed at once (`None`: all).
    pub max_errors: Option<usize>,
}

static UI: OnceLock<Ui> = OnceLock::new();

/// Whether colour is on for `choice`, given the environment's conventions
/// (`NO_COLOR` set and not empty turns it off, whatever else is set, as
/// no-color.org asks; otherwise `CLICOLOR_FORCE` set and not `0` forces
/// it) and whether stderr is a terminal. Only `--color` overrides
/// `NO_COLOR`.
pub fn color_wanted(choice: ColorChoice, env: impl Fn(&str) -> Option<String>, tty: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                false
            } else if env("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
                true
            } else {
                tty
            }
        }
    }
}

/// Records the global flags; called once by `main`.
pub fn init(g: &GlobalArgs) {
    let color = color_wanted(
        g.color,
        |k| std::env::var(k).ok(),
        std::io::stderr().is_terminal(),
    );
    let _ = UI.set(Ui {
        color,
        quiet: g.quiet,
        verbose: g.verbose,
        json: g.message_format == MessageFormat::Json,
        max_errors: if g.all_errors || g.max_errors == 0 {
            None
        } else {
            Some(g.max_errors)
        },
    });
}

/// The settings of this process (the defaults when `main` set none, as in
/// unit tests).
pub fn ui() -> Ui {
    *UI.get_or_init(|| Ui {
        color: color_wanted(
            ColorChoice::Auto,
            |k| std::env::var(k).ok(),
            std::io::stderr().is_terminal(),
        ),
        quiet: false,
        verbose: false,
        json: false,
        max_errors: Some(pk_lang::diag::DEFAULT_MAX_SHOWN),
    })
}

/// The style of rendered diagnostics.
pub fn style() -> RenderStyle {
    if ui().color {
        RenderStyle::Color
    } else {
        RenderStyle::Plain
    }
}

/// A status line on stderr (`ok for v5e`, `wrote ...`), unless `-q` or
/// JSON output.
pub fn status(line: &str) {
    let u = ui();
    if !u.quiet && !u.json {
        eprintln!("{line}");
    }
}

/// One JSON object on a line of stdout; a closed pipe is not an error.
pub fn json_line(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
}

/// How to see the diagnostics a cap left out.
const ALL_ERRORS_HINT: &str = "--all-errors shows every one";

/// Prints front-end diagnostics (as text on stderr, or JSON lines): the
/// first `--max-errors`, then a count of the rest (as the text line
/// `... N more errors not shown`, or the JSON object `{"type":
/// "omitted", "errors", "warnings"}`). Warnings are left out under `-q`.
pub fn print_diags(diags: &[Diag], sources: &SourceMap) {
    let u = ui();
    let kept: Vec<&Diag> = diags.iter().filter(|d| d.is_error() || !u.quiet).collect();
    if kept.is_empty() {
        return;
    }
    if u.json {
        let shown = u.max_errors.map_or(kept.len(), |m| m.min(kept.len()));
        for d in &kept[..shown] {
            json_line(&diag_json(d, sources));
        }
        let rest = &kept[shown..];
        if !rest.is_empty() {
            let errors = rest.iter().filter(|d| d.is_error()).count();
            json_line(&json!({
                "type": "omitted",
                "errors": errors,
                "warnings": rest.len() - errors,
                "help": ALL_ERRORS_HINT,
            }));
        }
    } else {
        let kept: Vec<Diag> = kept.into_iter().cloned().collect();
        eprint!(
            "{}",
            pk_lang::diag::render_capped(&kept, sources, style(), u.max_errors, ALL_ERRORS_HINT)
        );
    }
}

/// Prints any other diagnostic (the CPU reference's, libtpu's, a
/// package's), as text through miette or as a JSON line.
pub fn print_diagnostic(e: &dyn Diagnostic) {
    if ui().json {
        json_line(&miette_json(e));
        return;
    }
    let theme = if ui().color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    // miette panics on some sources (a label past column 65,535 of a
    // line); the message, code and help are then printed plainly.
    let drawn = quietly(|| {
        let mut out = String::new();
        GraphicalReportHandler::new_themed(theme)
            .render_report(&mut out, e)
            .ok()
            .map(|()| out)
    });
    let out = match drawn {
        Some(Some(out)) => out,
        _ => {
            let code = e.code().map(|c| format!("[{c}]")).unwrap_or_default();
            let help = e
                .help()
                .map(|h| format!("  help: {h}\n"))
                .unwrap_or_default();
            format!("error{code}: {e}\n{help}")
        }
    };
    eprint!("{out}");
}

/// Runs `f`, turning a panic into `None` without the panic's message
/// (the caller prints something plainer instead).
fn quietly<T>(f: impl FnOnce() -> T) -> Option<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    std::panic::set_hook(hook);
    r
}

/// A front-end diagnostic as JSON: code, severity, message, the primary
/// location, every label (1-based lines and columns), help and notes.
pub fn diag_json(d: &Diag, sources: &SourceMap) -> Value {
    let at = |span: pk_lang::span::Span| {
        let (file, line, column) = sources.location(span);
        let end = span.end.max(span.start);
        let (end_line, end_column) = sources.get(span.file).line_col(end);
        (file, line, column, end_line, end_column)
    };
    let label = |span, text: Option<&str>, primary: bool| {
        let (file, line, column, end_line, end_column) = at(span);
        json!({
            "file": file, "line": line, "column": column,
            "end_line": end_line, "end_column": end_column,
            "text": text, "primary": primary,
        })
    };
    let (file, line, column, _, _) = at(d.span);
    let mut labels = vec![label(d.span, d.label.as_deref(), true)];
    labels.extend(
        d.secondary
            .iter()
            .map(|(s, t)| label(*s, Some(t.as_str()), false)),
    );
    json!({
        "type": "diagnostic",
        "code": d.code.code,
        "severity": match d.severity { Severity::Error => "error", Severity::Warning => "warning" },
        "message": d.message,
        "file": file, "line": line, "column": column,
        "labels": labels,
        "help": d.help,
        "notes": d.notes,
    })
}

/// Any miette diagnostic as JSON, in the shape of [`diag_json`]: labels
/// are located through the diagnostic's own source, when it has one.
pub fn miette_json(e: &dyn Diagnostic) -> Value {
    let mut labels = Vec::new();
    if let (Some(src), Some(ls)) = (e.source_code(), e.labels()) {
        for l in ls {
            if let Ok(c) = src.read_span(l.inner(), 0, 0) {
                labels.push(json!({
                    "file": c.name(),
                    "line": c.line() + 1,
                    "column": c.column() + 1,
                    "text": l.label(),
                    "primary": l.primary() || labels.is_empty(),
                }));
            }
        }
    }
    let first = labels.first().cloned().unwrap_or(Value::Null);
    json!({
        "type": "diagnostic",
        "code": e.code().map(|c| c.to_string()),
        "severity": match e.severity() {
            Some(miette::Severity::Warning) => "warning",
            Some(miette::Severity::Advice) => "advice",
            _ => "error",
        },
        "message": e.to_string(),
        "file": first.get("file").cloned().unwrap_or(Value::Null),
        "line": first.get("line").cloned().unwrap_or(Value::Null),
        "column": first.get("column").cloned().unwrap_or(Value::Null),
        "labels": labels,
        "help": e.help().map(|h| h.to_string()),
        "notes": Vec::<String>::new(),
    })
}

/// A progress bar on stderr for `len` steps, drawn only on a terminal and
/// never under `-q` or JSON output.
pub fn progress(len: u64, what: &str) -> ProgressBar {
    let u = ui();
    if u.quiet || u.json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(s) =
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed}, ETA {eta})")
    {
        bar.set_style(s.progress_chars("=> "));
    }
    bar.set_prefix(what.to_string());
    bar
}

/// A spinner that appears when the work it watches has run for a second
/// (quick commands stay quiet); it is cleared when the guard is dropped.
pub struct Spinner {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub fn spinner(message: String) -> Spinner {
    let u = ui();
    if u.quiet || u.json || !std::io::stderr().is_terminal() {
        return Spinner {
            stop: None,
            thread: None,
        };
    }
    let (tx, rx) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        if rx.recv_timeout(Duration::from_secs(1)) != Err(mpsc::RecvTimeoutError::Timeout) {
            return;
        }
        let bar = ProgressBar::new_spinner();
        bar.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(s) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(s);
        }
        bar.set_message(message);
        while rx.recv_timeout(Duration::from_millis(100)) == Err(mpsc::RecvTimeoutError::Timeout) {
            bar.tick();
        }
        bar.finish_and_clear();
    });
    Spinner {
        stop: Some(tx),
        thread: Some(thread),
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_the_flag_then_the_environment_then_the_terminal() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(color_wanted(
            ColorChoice::Always,
            env(&[("NO_COLOR", "1")]),
            false
        ));
        assert!(!color_wanted(
            ColorChoice::Never,
            env(&[("CLICOLOR_FORCE", "1")]),
            true
        ));
        assert!(color_wanted(ColorChoice::Auto, env(&[]), true));
        assert!(!color_wanted(ColorChoice::Auto, env(&[]), false));
        assert!(!color_wanted(
            ColorChoice::Auto,
            env(&[("NO_COLOR", "1")]),
            true
        ));
        assert!(color_wanted(
            ColorChoice::Auto,
            env(&[("CLICOLOR_FORCE", "1")]),
            false
        ));
        assert!(!color_wanted(
            ColorChoice::Auto,
            env(&[("CLICOLOR_FORCE", "0")]),
            false
        ));
        // NO_COLOR wins over CLICOLOR_FORCE (no-color.org), on a terminal
        // or not.
        assert!(!color_wanted(
            ColorChoice::Auto,
            env(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]),
            true
        ));
        assert!(!color_wanted(
            ColorChoice::Auto,
            env(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]),
            false
        ));
        // An empty NO_COLOR does not count, as its convention says.
        assert!(color_wanted(
            ColorChoice::Auto,
            env(&[("NO_COLOR", "")]),
            true
        ));
    }
}
