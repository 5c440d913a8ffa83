//! Between the protocol's terms and pk's: UTF-16 positions and byte
//! offsets, `file://` URIs and paths, pk diagnostics and LSP ones.

use lsp_server::Request;
use lsp_types::{self as lsp, Uri};
use pk_lang::analysis::complete::TokenClass;
use pk_lang::analysis::Analysis;
use pk_lang::diag::Severity;
use pk_lang::span::Span;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The LSP position (line, UTF-16 column) of byte `offset` in `text`.
pub fn position(text: &str, offset: usize) -> lsp::Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col: usize = before[line_start..].chars().map(char::len_utf16).sum();
    lsp::Position::new(line as u32, col as u32)
}

/// The byte offset of an LSP position in `text` (clamped to its line and
/// to the text).
pub fn offset(text: &str, p: lsp::Position) -> usize {
    let mut start = 0;
    for _ in 0..p.line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let mut units = 0u32;
    for (i, c) in text[start..line_end].char_indices() {
        if units >= p.character {
            return start + i;
        }
        units += c.len_utf16() as u32;
    }
    line_end
}

pub fn range(text: &str, s: Span) -> lsp::Range {
    lsp::Range::new(
        position(text, s.start as usize),
        position(text, s.end as usize),
    )
}

/// The text of the file a span is in, and its URI.
pub fn location(a: &Analysis, s: Span, root_uri: &Uri) -> Option<lsp::Location> {
    let file = a.sources.get(s.file);
    let uri = if s.file == a.root {
        root_uri.clone()
    } else {
        uri_of(&file_path(&file.name, &file.text)?)?
    };
    Some(lsp::Location::new(uri, range(&file.text, s)))
}

/// Where a module's file is on disk: its own path, or for the standard
/// library (compiled into pk) a copy written under the cache directory.
fn file_path(name: &str, text: &str) -> Option<PathBuf> {
    if let Some(rest) = name.strip_prefix("std/") {
        let dir = cache_dir()
            .join(format!("std-{}", env!("CARGO_PKG_VERSION")))
            .join(hash(text));
        let p = dir.join(rest);
        if !p.is_file() {
            write_atomic(&p, text)?;
        }
        return Some(p);
    }
    let p = PathBuf::from(name);
    p.is_absolute().then_some(p)
}

fn hash(text: &str) -> String {
    // FNV-1a: a folder per text, so an edited std never shows stale lines.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("{h:016x}")
}

pub fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("pk")
}

/// Writes a file whole or not at all (temp file, then rename).
pub fn write_atomic(p: &Path, text: &str) -> Option<()> {
    let dir = p.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).ok()?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).ok()?;
    tmp.persist(p).ok()?;
    Some(())
}

/// The file name a document is shown under in diagnostics and the
/// directory its `use`d siblings are read from.
pub fn file_of(uri: &Uri) -> (String, Option<PathBuf>) {
    match path_of(uri) {
        Some(p) => (
            p.to_string_lossy().to_string(),
            p.parent().map(Path::to_path_buf),
        ),
        None => (uri.as_str().to_string(), None),
    }
}

pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}

pub fn uri_of(p: &Path) -> Option<Uri> {
    let mut s = String::from("file://");
    for b in p.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    Uri::from_str(&s).ok()
}

/// The document a request is about.
pub fn request_uri(req: &Request) -> Option<Uri> {
    let v = req.params.get("textDocument")?.get("uri")?.clone();
    serde_json::from_value(v).ok()
}

/// Applies one change event to a document's text.
pub fn apply_change(text: &mut String, c: lsp::TextDocumentContentChangeEvent) {
    match c.range {
        None => *text = c.text,
        Some(r) => {
            let a = offset(text, r.start);
            let b = offset(text, r.end).max(a);
            text.replace_range(a..b, &c.text);
        }
    }
}

/// The explanation of a code as a file an editor can open: written once
/// under the cache directory (the same text `pkc explain` prints).
pub fn explanation_uri(code: &str) -> Option<Uri> {
    let e = crate::cmd::explain::all()
        .into_iter()
        .find(|e| e.code == code)?;
    let p = cache_dir()
        .join(format!("explain-{}", env!("CARGO_PKG_VERSION")))
        .join(format!("{code}.txt"));
    if !p.is_file() {
        write_atomic(&p, &format!("pkc explain {code}\n\n{}", e.render()))?;
    }
    uri_of(&p)
}

/// The diagnostics of an analysis, in the protocol's terms.
pub fn diagnostics(a: &Analysis, uri: &Uri) -> Vec<lsp::Diagnostic> {
    let text = a.text();
    let mut out = Vec::new();
    for f in &a.diags {
        let d = &f.diag;
        let span = if d.span.file == a.root {
            d.span
        } else {
            Span::new(a.root, 0, 0)
        };
        let mut message = d.message.clone();
        if d.span.file != a.root {
            let (file, line, col) = a.sources.location(d.span);
            message = format!("{file}:{line}:{col}: {message}");
        }
        if let Some(l) = &d.label {
            message.push_str(&format!(" ({l})"));
        }
        if let Some(h) = &d.help {
            message.push_str(&format!("\nhelp: {h}"));
        }
        for n in &d.notes {
            message.push_str(&format!("\nnote: {n}"));
        }
        if !f.contexts.is_empty() {
            message.push_str(&format!("\nfor: {}", f.contexts.join("; ")));
        }
        let related: Vec<lsp::DiagnosticRelatedInformation> = d
            .secondary
            .iter()
            .filter(|(s, _)| s.file == a.root)
            .map(|(s, m)| lsp::DiagnosticRelatedInformation {
                location: lsp::Location::new(uri.clone(), range(text, *s)),
                message: m.clone(),
            })
            .collect();
        out.push(lsp::Diagnostic {
            range: range(text, span),
            severity: Some(match d.severity {
                Severity::Error => lsp::DiagnosticSeverity::ERROR,
                Severity::Warning => lsp::DiagnosticSeverity::WARNING,
            }),
            code: Some(lsp::NumberOrString::String(d.code.code.to_string())),
            code_description: explanation_uri(d.code.code)
                .map(|href| lsp::CodeDescription { href }),
            source: Some("pk".into()),
            message,
            related_information: (!related.is_empty()).then_some(related),
            tags: None,
            data: None,
        });
    }
    out
}

pub fn legend() -> lsp::SemanticTokensLegend {
    let t = |c: TokenClass| match c {
        TokenClass::Keyword => lsp::SemanticTokenType::KEYWORD,
        TokenClass::Number => lsp::SemanticTokenType::NUMBER,
        TokenClass::String => lsp::SemanticTokenType::STRING,
        TokenClass::Comment => lsp::SemanticTokenType::COMMENT,
        TokenClass::Function => lsp::SemanticTokenType::FUNCTION,
        TokenClass::Parameter => lsp::SemanticTokenType::PARAMETER,
        TokenClass::Variable => lsp::SemanticTokenType::VARIABLE,
        TokenClass::Type => lsp::SemanticTokenType::TYPE,
        TokenClass::Namespace => lsp::SemanticTokenType::NAMESPACE,
        TokenClass::Constant => lsp::SemanticTokenType::new("enumMember"),
    };
    lsp::SemanticTokensLegend {
        token_types: TokenClass::ALL.iter().map(|c| t(*c)).collect(),
        token_modifiers: Vec::new(),
    }
}
