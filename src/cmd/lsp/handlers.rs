//! One function per request: protocol parameters in, `pk_lang::analysis`
//! asked, protocol answer out.

use super::convert::{self, offset, position, range};
use lsp_server::Request;
use lsp_types as lsp;
use pk_lang::analysis::complete::{ItemKind, TokenClass};
use pk_lang::analysis::index::DefKind;
use pk_lang::analysis::Analysis;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Answers `req` from `a`; `Err` for a request the server does not know.
pub fn handle(req: Request, a: &Analysis) -> Result<Value, String> {
    use lsp::request::*;
    let m = req.method.as_str();
    let out = match m {
        HoverRequest::METHOD => to(hover(params(&req)?, a)),
        GotoDefinition::METHOD => to(definition(params(&req)?, a)),
        References::METHOD => to(references(params(&req)?, a)),
        DocumentSymbolRequest::METHOD => to(symbols(params(&req)?, a)),
        Completion::METHOD => to(completion(params(&req)?, a)),
        SignatureHelpRequest::METHOD => to(signature(params(&req)?, a)),
        InlayHintRequest::METHOD => to(inlay_hints(params(&req)?, a)),
        SemanticTokensFullRequest::METHOD => to(semantic_tokens(a)),
        CodeActionRequest::METHOD => to(code_actions(params(&req)?, a)),
        _ => return Err(format!("unknown request `{m}`")),
    };
    Ok(out)
}

fn params<P: DeserializeOwned>(req: &Request) -> Result<P, String> {
    serde_json::from_value(req.params.clone()).map_err(|e| format!("bad parameters: {e}"))
}

fn to<T: serde::Serialize>(v: T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn at(a: &Analysis, p: lsp::Position) -> u32 {
    offset(a.text(), p) as u32
}

fn hover(p: lsp::HoverParams, a: &Analysis) -> Option<lsp::Hover> {
    let o = at(a, p.text_document_position_params.position);
    let (span, md) = a.hover(o)?;
    Some(lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value: md,
        }),
        range: (span.file == a.root).then(|| range(a.text(), span)),
    })
}

fn definition(p: lsp::GotoDefinitionParams, a: &Analysis) -> Option<lsp::GotoDefinitionResponse> {
    let uri = p.text_document_position_params.text_document.uri;
    let o = at(a, p.text_document_position_params.position);
    let s = a.definition(o)?;
    Some(lsp::GotoDefinitionResponse::Scalar(convert::location(
        a, s, &uri,
    )?))
}

fn references(p: lsp::ReferenceParams, a: &Analysis) -> Vec<lsp::Location> {
    let uri = p.text_document_position.text_document.uri;
    let o = at(a, p.text_document_position.position);
    a.references(o, p.context.include_declaration)
        .into_iter()
        .filter_map(|s| convert::location(a, s, &uri))
        .collect()
}

#[allow(deprecated)] // `DocumentSymbol::deprecated` must still be set.
fn symbols(_p: lsp::DocumentSymbolParams, a: &Analysis) -> lsp::DocumentSymbolResponse {
    let text = a.text();
    let defs = &a.index.defs;
    let symbol = |i: usize| -> Option<lsp::DocumentSymbol> {
        let d = &defs[i];
        if d.name_span.file != a.root || d.full_span.file != a.root {
            return None;
        }
        let kind = match d.kind {
            DefKind::Kernel | DefKind::Function => lsp::SymbolKind::FUNCTION,
            DefKind::Const => lsp::SymbolKind::CONSTANT,
            DefKind::Module => lsp::SymbolKind::MODULE,
            DefKind::Param | DefKind::Generic => lsp::SymbolKind::TYPE_PARAMETER,
            DefKind::Operand | DefKind::Prefetch | DefKind::Scratch => lsp::SymbolKind::FIELD,
            DefKind::GridIndex | DefKind::MeshAxis | DefKind::FnParam | DefKind::Local => {
                lsp::SymbolKind::VARIABLE
            }
        };
        let full = d.full_span.to(d.name_span);
        Some(lsp::DocumentSymbol {
            name: d.name.clone(),
            detail: Some(d.kind.noun().to_string()),
            kind,
            tags: None,
            deprecated: None,
            range: range(text, full),
            selection_range: range(text, d.name_span),
            children: None,
        })
    };
    let mut top = Vec::new();
    for (i, d) in defs.iter().enumerate() {
        if d.parent.is_some()
            || !matches!(d.kind, DefKind::Kernel | DefKind::Function | DefKind::Const)
        {
            continue;
        }
        let Some(mut s) = symbol(i) else { continue };
        let children: Vec<lsp::DocumentSymbol> = defs
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.parent == Some(i)
                    && matches!(
                        c.kind,
                        DefKind::Param
                            | DefKind::Operand
                            | DefKind::Prefetch
                            | DefKind::Scratch
                            | DefKind::GridIndex
                            | DefKind::Function
                            | DefKind::FnParam
                    )
            })
            .filter_map(|(j, _)| symbol(j))
            .collect();
        if !children.is_empty() {
            s.children = Some(children);
        }
        top.push(s);
    }
    lsp::DocumentSymbolResponse::Nested(top)
}

fn completion(p: lsp::CompletionParams, a: &Analysis) -> lsp::CompletionResponse {
    let o = at(a, p.text_document_position.position);
    let items = a
        .complete(o)
        .into_iter()
        .map(|c| lsp::CompletionItem {
            label: c.label,
            kind: Some(match c.kind {
                ItemKind::Builtin | ItemKind::Function => lsp::CompletionItemKind::FUNCTION,
                ItemKind::Kernel => lsp::CompletionItemKind::CLASS,
                ItemKind::Const => lsp::CompletionItemKind::CONSTANT,
                ItemKind::Module => lsp::CompletionItemKind::MODULE,
                ItemKind::Dtype => lsp::CompletionItemKind::TYPE_PARAMETER,
                ItemKind::Keyword => lsp::CompletionItemKind::KEYWORD,
                ItemKind::Variable => lsp::CompletionItemKind::VARIABLE,
                ItemKind::Param => lsp::CompletionItemKind::VALUE,
            }),
            detail: Some(c.detail),
            ..Default::default()
        })
        .collect();
    lsp::CompletionResponse::Array(items)
}

fn signature(p: lsp::SignatureHelpParams, a: &Analysis) -> Option<lsp::SignatureHelp> {
    let o = at(a, p.text_document_position_params.position);
    let (label, params, active) = a.signature(o)?;
    let parameters = params
        .into_iter()
        .map(|p| lsp::ParameterInformation {
            label: lsp::ParameterLabel::Simple(p),
            documentation: None,
        })
        .collect();
    let name = label.split('(').next().unwrap_or("");
    let documentation = pk_lang::analysis::reference_row(name).map(lsp::Documentation::String);
    Some(lsp::SignatureHelp {
        signatures: vec![lsp::SignatureInformation {
            label,
            documentation,
            parameters: Some(parameters),
            active_parameter: Some(active as u32),
        }],
        active_signature: Some(0),
        active_parameter: Some(active as u32),
    })
}

fn inlay_hints(p: lsp::InlayHintParams, a: &Analysis) -> Vec<lsp::InlayHint> {
    let text = a.text();
    let (lo, hi) = (offset(text, p.range.start), offset(text, p.range.end));
    a.let_hints()
        .into_iter()
        .filter(|(s, _)| (s.end as usize) >= lo && (s.start as usize) <= hi)
        .map(|(s, t)| lsp::InlayHint {
            position: position(text, s.end as usize),
            label: lsp::InlayHintLabel::String(format!(": {t}")),
            kind: Some(lsp::InlayHintKind::TYPE),
            text_edits: None,
            tooltip: None,
            padding_left: None,
            padding_right: None,
            data: None,
        })
        .collect()
}

fn semantic_tokens(a: &Analysis) -> lsp::SemanticTokensResult {
    let text = a.text();
    let mut data = Vec::new();
    let (mut line, mut col) = (0u32, 0u32);
    for (s, e, class) in a.tokens() {
        let start = position(text, s as usize);
        let end = position(text, e as usize);
        // Tokens that span lines (block comments) are sent line by line by
        // clients that need it; pk sends their first line.
        let len = if end.line == start.line {
            end.character - start.character
        } else {
            let (ls, le) = line_bounds(text, start.line);
            position(text, le).character - position(text, ls).character - start.character
        };
        let dl = start.line - line;
        let dc = if dl == 0 {
            start.character - col
        } else {
            start.character
        };
        let class_index = TokenClass::ALL
            .iter()
            .position(|c| *c == class)
            .unwrap_or(0);
        data.push(lsp::SemanticToken {
            delta_line: dl,
            delta_start: dc,
            length: len,
            token_type: class_index as u32,
            token_modifiers_bitset: 0,
        });
        line = start.line;
        col = start.character;
    }
    lsp::SemanticTokensResult::Tokens(lsp::SemanticTokens {
        result_id: None,
        data,
    })
}

fn line_bounds(text: &str, line: u32) -> (usize, usize) {
    let start = offset(text, lsp::Position::new(line, 0));
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    (start, end)
}

/// Quick fixes for diagnostics whose fix is mechanical
/// ([`Analysis::quick_fix`]): a name spelt like one in scope, a literal
/// block size off the (8, 128) tiling.
// `WorkspaceEdit::changes` is keyed by `Uri`, whose hash is its text (the
// cells it holds cache parsed parts).
#[allow(clippy::mutable_key_type)]
fn code_actions(p: lsp::CodeActionParams, a: &Analysis) -> Vec<lsp::CodeActionOrCommand> {
    let text = a.text();
    let uri = p.text_document.uri;
    let (lo, hi) = (
        offset(text, p.range.start) as u32,
        offset(text, p.range.end) as u32,
    );
    let mut out = Vec::new();
    for f in &a.diags {
        let d = &f.diag;
        if d.span.file != a.root || d.span.end < lo || d.span.start > hi {
            continue;
        }
        let Some((title, new_text)) = a.quick_fix(d) else {
            continue;
        };
        let edit = lsp::TextEdit::new(range(text, d.span), new_text);
        let changes = std::collections::HashMap::from([(uri.clone(), vec![edit])]);
        let diag = convert::diagnostics(a, &uri)
            .into_iter()
            .find(|x| x.range == range(text, d.span));
        out.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title,
            kind: Some(lsp::CodeActionKind::QUICKFIX),
            diagnostics: diag.map(|x| vec![x]),
            edit: Some(lsp::WorkspaceEdit::new(changes)),
            is_preferred: Some(true),
            ..Default::default()
        }));
    }
    out
}
