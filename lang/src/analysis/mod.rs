//! What an editor asks of a `.pk` file: its diagnostics for the targets
//! and parameter sets of the workspace, what any expression is, where a
//! name is declared and used, what can be typed at a position.
//!
//! A [`Session`] parses and resolves the text (after an edit, only the
//! files that changed); [`Analysis::of`] indexes its names ([`index`]),
//! then checks every kernel once per target and parameter set with the
//! checker recording the type of each expression at its span
//! ([`crate::check::Checker::types`]); the queries below only read the
//! result. The language server (`pkc lsp`) is a thin layer over them.
//!
//! Invariants:
//! 1. No query panics, whatever the text: the parser recovers from every
//!    syntax error and the queries take offsets past the end as the end.
//! 2. Recording types does not change a diagnostic: the diagnostics here
//!    are the ones `pkc check` reports for the same target and parameters.

pub mod complete;
pub mod index;
pub mod workspace;

use crate::ast;
use crate::check;
use crate::diag::{codes, Diag, Explanation};
use crate::ir::{self, ParamValue};
use crate::resolve::{ModId, Program};
use crate::session::Session;
use crate::span::{FileId, SourceMap, Span};
use crate::target::Target;
use index::{DefKind, Index};
use std::path::PathBuf;
use std::sync::Arc;
pub use workspace::Workspace;

/// One diagnostic of the file and the checks (`v5e`, `v6e M=1024`) that
/// report it; empty when every check does.
#[derive(Debug, Clone)]
pub struct Found {
    pub diag: Diag,
    pub contexts: Vec<String>,
}

/// A kernel as one check specialised it.
#[derive(Debug, Clone)]
pub struct Checked {
    pub target: Target,
    /// The parameter set, as `-p` pairs.
    pub params: Vec<(String, String)>,
    pub kernel: ir::Kernel,
}

/// The analysis of one version of one file.
pub struct Analysis {
    pub sources: Arc<SourceMap>,
    pub root: FileId,
    pub program: Program,
    pub index: Index,
    pub diags: Vec<Found>,
    /// What each expression of the root file is, from the first check
    /// (sorted by start, then by length).
    pub types: Vec<(Span, String)>,
    pub kernels: Vec<Checked>,
    pub workspace: Workspace,
}

impl Analysis {
    /// Analyses `text`, the file `name` (whose `use`d siblings are read
    /// from `dir`), for the targets and parameter sets of `ws`: a
    /// [`Session`] opened for this one analysis.
    pub fn run(name: &str, text: &str, dir: Option<PathBuf>, ws: &Workspace) -> Analysis {
        Analysis::of(&Session::from_text(name, text, dir), ws)
    }

    /// Analyses the current text of `session` for the targets and
    /// parameter sets of `ws`. Parsing and resolving are the session's:
    /// after [`Session::edit`] only what changed was parsed and resolved
    /// again, and the analysis only checks and indexes.
    pub fn of(session: &Session, ws: &Workspace) -> Analysis {
        crate::session::on_compiler_stack(|| analyse(session, ws))
    }

    pub fn text(&self) -> &str {
        &self.sources.get(self.root).text
    }

    /// The root file's text from `span`, when it is in the root file.
    pub fn snippet(&self, span: Span) -> Option<&str> {
        if span.file != self.root {
            return None;
        }
        self.sources
            .get(span.file)
            .text
            .get(span.start as usize..span.end as usize)
    }

    /// The innermost recorded type at `offset`.
    pub fn type_at(&self, offset: u32) -> Option<(Span, &str)> {
        self.types
            .iter()
            .filter(|(s, _)| s.start <= offset && offset <= s.end)
            .min_by_key(|(s, _)| s.len())
            .map(|(s, t)| (*s, t.as_str()))
    }

    /// The type recorded for exactly `span`.
    pub fn type_of(&self, span: Span) -> Option<&str> {
        self.types
            .iter()
            .find(|(s, _)| *s == span)
            .map(|(_, t)| t.as_str())
    }

    /// Markdown for the hover at `offset`, with the span it describes.
    pub fn hover(&self, offset: u32) -> Option<(Span, String)> {
        let mut parts = Vec::new();
        let mut at: Option<Span> = None;
        if let Some(d) = self.index.def_at(self.root, offset) {
            let def = &self.index.defs[d];
            let span = self
                .index
                .uses
                .iter()
                .find(|(s, i)| *i == d && s.start <= offset && offset <= s.end)
                .map(|(s, _)| *s)
                .unwrap_or(def.name_span);
            at = Some(span);
            parts.push(self.describe_def(d, span));
        } else if let Some((span, name)) = self.builtin_at(offset) {
            at = Some(span);
            parts.push(builtin_doc(&name)?);
        } else if let Some((span, t)) = self.type_at(offset) {
            at = Some(span);
            parts.push(format!("```pk\n{t}\n```"));
        }
        for f in &self.diags {
            let s = f.diag.span;
            if s.file == self.root && s.start <= offset && offset <= s.end {
                parts.push(explain_md(f.diag.code));
                at.get_or_insert(s);
            }
        }
        if parts.is_empty() {
            return None;
        }
        Some((at?, parts.join("\n\n---\n\n")))
    }

    /// The name of a builtin called at `offset`, with its span.
    fn builtin_at(&self, offset: u32) -> Option<(Span, String)> {
        self.index
            .calls
            .iter()
            .find(|(s, n)| s.start <= offset && offset <= s.end && check::is_builtin(n))
            .map(|(s, n)| (*s, n.clone()))
    }

    fn describe_def(&self, d: usize, at: Span) -> String {
        let def = &self.index.defs[d];
        let mut out = String::new();
        let head = self.declaration_text(def);
        out.push_str(&format!("```pk\n{head}\n```\n"));
        out.push_str(&format!("*{}*", def.kind.noun()));
        let ty = self.type_of(at).or_else(|| self.type_of(def.name_span));
        if let Some(t) = ty {
            if !matches!(def.kind, DefKind::Operand | DefKind::Scratch) {
                out.push_str(&format!(": `{t}`"));
            }
        }
        out.push('\n');
        if !def.docs.is_empty() {
            out.push_str(&format!("\n{}\n", def.docs.join("\n")));
        }
        let kernel = def
            .parent
            .map(|p| self.index.defs[p].name.clone())
            .unwrap_or_default();
        match def.kind {
            DefKind::Param => out.push_str(&self.param_values(&kernel, &def.name)),
            DefKind::Operand | DefKind::Scratch | DefKind::Prefetch => {
                out.push_str(&self.ref_table(&kernel, &def.name))
            }
            DefKind::Kernel => out.push_str(&self.kernel_vmem(&def.name)),
            _ => {}
        }
        out
    }

    /// The declaration as written, up to its body.
    fn declaration_text(&self, def: &index::Def) -> String {
        let file = self.sources.get(def.full_span.file);
        let text = file
            .text
            .get(def.full_span.start as usize..def.full_span.end as usize)
            .unwrap_or(&def.name);
        let cut = match def.kind {
            DefKind::Kernel | DefKind::Function => text.find('{').unwrap_or(text.len()),
            _ => text.len(),
        };
        let head = text[..cut].trim_end();
        // Long headers keep their first lines.
        let lines: Vec<&str> = head.lines().collect();
        if lines.len() > 12 {
            format!("{}\n    ...", lines[..12].join("\n"))
        } else {
            head.to_string()
        }
    }

    /// A parameter's value in each check, and where it came from.
    fn param_values(&self, kernel: &str, name: &str) -> String {
        let mut rows = Vec::new();
        for c in self.kernels.iter().filter(|c| c.kernel.name == kernel) {
            let Some(p) = c.kernel.params.iter().find(|p| p.name == name) else {
                continue;
            };
            let origin = if c.params.iter().any(|(n, _)| n == name) {
                match &self.workspace.path {
                    Some(p) => format!("from `{}`", p.display()),
                    None => "set by the workspace".to_string(),
                }
            } else if p.value == ParamValue::Unbound {
                "no value: checked as a symbol".to_string()
            } else {
                "its default".to_string()
            };
            let value = if p.value == ParamValue::Unbound {
                name.to_string()
            } else {
                p.value.to_string()
            };
            let row = format!("- {}: `{name} = {value}` ({origin})", context(c));
            if !rows.contains(&row) {
                rows.push(row);
            }
        }
        if rows.is_empty() {
            return String::new();
        }
        format!("\n{}\n", rows.join("\n"))
    }

    /// A ref's block shape, memory space and VMEM bytes in each check.
    fn ref_table(&self, kernel: &str, name: &str) -> String {
        let mut rows = Vec::new();
        for c in self.kernels.iter().filter(|c| c.kernel.name == kernel) {
            let k = &c.kernel;
            let r = k
                .operands
                .iter()
                .find(|o| o.name == name)
                .map(|o| o.ref_id)
                .or_else(|| k.scratch.iter().find(|s| s.name == name).map(|s| s.ref_id));
            let Some(decl) = r.and_then(|r| k.refs.get(r)) else {
                continue;
            };
            let bytes = match (decl.ty.space, check::rules::padded_bytes(&decl.ty)) {
                (ir::Space::Vmem, Some(b)) => {
                    let doubled = k
                        .operands
                        .iter()
                        .any(|o| o.name == name && o.block.is_some());
                    if doubled {
                        format!(", {} B of VMEM ({} B double-buffered)", b, 2 * b)
                    } else {
                        format!(", {b} B of VMEM")
                    }
                }
                _ => String::new(),
            };
            let row = format!("- {}: `{}`{bytes}", context(c), decl.ty);
            if !rows.contains(&row) {
                rows.push(row);
            }
        }
        if rows.is_empty() {
            return String::new();
        }
        format!("\nblock in the kernel:\n{}\n", rows.join("\n"))
    }

    fn kernel_vmem(&self, kernel: &str) -> String {
        let rows: Vec<String> = self
            .kernels
            .iter()
            .filter(|c| c.kernel.name == kernel)
            .map(|c| {
                let est = check::rules::vmem_estimate(&c.kernel, c.target);
                format!(
                    "- {}: VMEM estimate {est} B of {} B",
                    context(c),
                    c.target.vmem_bytes()
                )
            })
            .collect();
        if rows.is_empty() {
            return String::new();
        }
        format!("\n{}\n", rows.join("\n"))
    }

    /// Where the name at `offset` is declared.
    pub fn definition(&self, offset: u32) -> Option<Span> {
        let d = self.index.def_at(self.root, offset)?;
        Some(self.index.defs[d].name_span)
    }

    /// The declaration of the name at `offset` (in whichever file it is)
    /// and every use of it in this file.
    pub fn references(&self, offset: u32, with_decl: bool) -> Vec<Span> {
        let Some(d) = self.index.def_at(self.root, offset) else {
            return Vec::new();
        };
        let mut out: Vec<Span> = Vec::new();
        let decl = self.index.defs[d].name_span;
        if with_decl {
            out.push(decl);
        }
        for s in self.index.uses_of(d) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// The `let`s without a written type, each with the type of its value:
    /// where an editor shows an inlay hint.
    pub fn let_hints(&self) -> Vec<(Span, String)> {
        let mut out = Vec::new();
        for def in &self.index.defs {
            if def.kind != DefKind::Local || def.name_span.file != self.root {
                continue;
            }
            let Some(full) = self.snippet(def.full_span) else {
                continue;
            };
            let typed = full
                .split_once('=')
                .is_some_and(|(lhs, _)| lhs.contains(':'));
            if typed || !full.starts_with("let") {
                continue;
            }
            if let Some(t) = self.type_of(def.name_span) {
                if !t.starts_with('(') {
                    out.push((def.name_span, t.to_string()));
                }
            }
        }
        out
    }
}

impl Analysis {
    /// The edit that fixes diagnostic `d` of the root file when its fix is
    /// mechanical: a title and the text that replaces `d.span`. An unknown
    /// name spelt like one in scope (an item, a local, a builtin) takes
    /// that name; a literal block size off the (8, 128) tiling is rounded
    /// up to the multiple the message names.
    pub fn quick_fix(&self, d: &Diag) -> Option<(String, String)> {
        let help = d.help.as_deref().unwrap_or("");
        if let Some(rest) = help.strip_prefix("a name with a similar spelling exists: `") {
            let name = rest.strip_suffix('`')?;
            return Some((format!("replace with `{name}`"), name.to_string()));
        }
        if d.code.code == codes::UNKNOWN_NAME.code {
            let name = self.similar_name(d.span)?;
            return Some((format!("replace with `{name}`"), name));
        }
        let m = d.message.split("not a multiple of ").nth(1)?;
        let multiple: u64 = m
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?;
        let written: u64 = self.snippet(d.span)?.trim().parse().ok()?;
        if multiple == 0 {
            return None;
        }
        let rounded = written.div_ceil(multiple).max(1) * multiple;
        Some((
            format!("round the block size up to {rounded}"),
            rounded.to_string(),
        ))
    }

    /// The name visible at `span` (of the root file) nearest in spelling
    /// to the one written there: at most one edit in four letters away.
    pub fn similar_name(&self, span: Span) -> Option<String> {
        let written = self.snippet(span)?;
        if written.is_empty() || !written.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let mut names: Vec<String> = self
            .index
            .in_scope(span.start)
            .into_iter()
            .map(|d| d.name.clone())
            .collect();
        if let Some(root) = self.program.modules.first() {
            names.extend(root.names.keys().cloned());
        }
        names.extend(check::builtins_table().iter().map(|b| b.name.to_string()));
        let limit = (written.chars().count() / 4).max(1);
        names
            .into_iter()
            .filter(|n| n != written)
            .map(|n| (edit_distance(written, &n), n))
            .filter(|(d, _)| *d <= limit)
            .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)))
            .map(|(_, n)| n)
    }
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// How a check is named to the user: `v5e` or `v5e M=1024`.
pub fn context(c: &Checked) -> String {
    let mut s = c.target.name().to_string();
    for (n, v) in &c.params {
        s.push_str(&format!(" {n}={v}"));
    }
    s
}

/// A code's explanation as markdown.
pub fn explain_md(e: &Explanation) -> String {
    format!(
        "**{}** ({})\n\n{}\n\n{}\n\n```pk\n{}\n```",
        e.code, e.title, e.what, e.why, e.example
    )
}

/// The language reference, for the docs of builtins.
const LANGUAGE_MD: &str = include_str!("../../../docs/language.md");

/// A builtin's signature and its line of the language reference.
pub fn builtin_doc(name: &str) -> Option<String> {
    let b = check::builtins_table().iter().find(|b| b.name == name)?;
    let mut out = format!("```pk\n{}{}\n```\n*builtin*", b.name, b.usage);
    if let Some(row) = reference_row(name) {
        out.push_str(&format!("\n\n{row}"));
    }
    Some(out)
}

/// The meaning column of `name`'s row in the language reference's
/// builtin tables (`| name | signature | meaning | example |`).
pub fn reference_row(name: &str) -> Option<String> {
    let key = format!("| `{name}` |");
    let line = LANGUAGE_MD.lines().find(|l| l.starts_with(&key))?;
    let cells: Vec<&str> = line
        .split(" | ")
        .map(|c| c.trim_matches(|ch| ch == '|' || ch == ' '))
        .collect();
    match cells.as_slice() {
        [_, sig, meaning, ex, ..] => Some(format!("{sig}: {meaning} (e.g. {ex})")),
        [_, sig, meaning] => Some(format!("{sig}: {meaning}")),
        _ => None,
    }
}

fn analyse(session: &Session, ws: &Workspace) -> Analysis {
    let mut sources = session.sources().clone();
    let root = FileId(0);
    let program = session.program().clone();
    let load_diags = session.diagnostics().to_vec();
    let mut diags: Vec<Found> = Vec::new();
    let loaded = !program.modules.is_empty();
    let stop = load_diags.iter().any(|d| d.is_error());
    for d in load_diags {
        diags.push(Found {
            diag: d,
            contexts: Vec::new(),
        });
    }
    let index = if loaded {
        index::build(&program)
    } else {
        Index::default()
    };
    let mut types = Vec::new();
    let mut kernels = Vec::new();
    let first = ws.targets.first().zip(ws.params.first());
    if let (true, Some((&target, params))) = (loaded && stop, first) {
        // `pkc check` stops at these errors, and so do the diagnostics;
        // but the checker still tells what the other expressions are, so
        // that hover and inlay hints keep working while a name is fixed.
        let (_, ks, ts) = check_all(&program, &mut sources, target, params, true);
        types = ts;
        kernels = ks
            .into_iter()
            .map(|kernel| Checked {
                target,
                params: params.clone(),
                kernel,
            })
            .collect();
    }
    if loaded && !stop {
        let checks: Vec<(Target, &Vec<(String, String)>)> = ws
            .targets
            .iter()
            .flat_map(|t| ws.params.iter().map(move |p| (*t, p)))
            .collect();
        let many = checks.len() > 1;
        let mut all: Vec<(Diag, String)> = Vec::new();
        for (i, (target, params)) in checks.iter().enumerate() {
            let (ds, ks, ts) = check_all(&program, &mut sources, *target, params, i == 0);
            if i == 0 {
                types = ts;
            }
            for k in ks {
                kernels.push(Checked {
                    target: *target,
                    params: params.to_vec(),
                    kernel: k,
                });
            }
            let mut cx = target.name().to_string();
            for (n, v) in params.iter() {
                cx.push_str(&format!(" {n}={v}"));
            }
            all.extend(ds.into_iter().map(|d| (d, cx.clone())));
        }
        for (d, cx) in all {
            match diags.iter_mut().find(|f| {
                f.diag.code.code == d.code.code
                    && f.diag.span == d.span
                    && f.diag.message == d.message
            }) {
                Some(f) => {
                    if !f.contexts.contains(&cx) {
                        f.contexts.push(cx)
                    }
                }
                None => diags.push(Found {
                    diag: d,
                    contexts: vec![cx],
                }),
            }
        }
        // A diagnostic every check reports needs no context.
        for f in &mut diags {
            if !many || f.contexts.len() == checks.len() {
                f.contexts.clear();
            }
        }
    }
    types.retain(|(s, _)| s.file == root);
    types.sort_by_key(|(s, _)| (s.start, s.len()));
    types.dedup_by(|a, b| a.0 == b.0);
    Analysis {
        sources: Arc::new(sources),
        root,
        program,
        index,
        diags,
        types,
        kernels,
        workspace: ws.clone(),
    }
}

type Checks = (Vec<Diag>, Vec<ir::Kernel>, Vec<(Span, String)>);

/// Checks every kernel of the root for one target and parameter set; each
/// kernel takes the values of the parameters it declares.
fn check_all(
    program: &Program,
    sources: &mut SourceMap,
    target: Target,
    params: &[(String, String)],
    record: bool,
) -> Checks {
    let mut diags = Vec::new();
    let mut exprs = Vec::new();
    for (n, v) in params {
        let f = sources.add(format!("-p {n}"), v.clone());
        match crate::parse::parse_expr(f, v) {
            Ok(e) => exprs.push((
                n.clone(),
                check::Expr2 {
                    expr: e,
                    text: v.clone(),
                },
            )),
            Err(_) => diags.push(
                Diag::new(
                    &codes::BAD_WORKSPACE,
                    format!("cannot read the value of parameter `{n} = {v}` of the workspace"),
                    Span::default(),
                )
                .help("values are integers, integer expressions or dtype names"),
            ),
        }
    }
    let mut ck = check::Checker::new(program, target);
    if record {
        ck.types = Some(Vec::new());
    }
    let mut kernels = Vec::new();
    for (_, decl) in program.root_kernels() {
        let spec = check::Spec {
            target,
            params: params
                .iter()
                .filter(|(n, _)| declares(decl, n))
                .cloned()
                .collect(),
            param_origins: Vec::new(),
            specialise: false,
        };
        let mine: Vec<(String, check::Expr2)> = exprs
            .iter()
            .filter(|(n, _)| declares(decl, n))
            .cloned()
            .collect();
        if let Some(k) = check::check_kernel(&mut ck, ModId(0), decl, &spec, &mine) {
            kernels.push(k);
        }
    }
    diags.extend(std::mem::take(&mut ck.diags));
    let types = ck.types.take().unwrap_or_default();
    (diags, kernels, types)
}

fn declares(decl: &ast::KernelDecl, name: &str) -> bool {
    decl.params.iter().any(|p| p.name.name == name)
}
