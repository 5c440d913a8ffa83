//! What can be typed at a position (completion), the signature of the call
//! around it, and a classification of every token for highlighting.
//!
//! These read the text around the cursor as well as the analysis: while a
//! name is being typed the parser has nothing to attach it to.

use super::index::DefKind;
use super::Analysis;
use crate::ast::Item;
use crate::check;
use crate::ir::DType;
use crate::lexer::{self, Tok};
use crate::resolve::{ItemRef, ModId};

/// What a completion item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Builtin,
    Function,
    Kernel,
    Const,
    Module,
    Dtype,
    Keyword,
    Variable,
    Param,
}

/// One completion.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub label: String,
    pub kind: ItemKind,
    /// A signature or a type.
    pub detail: String,
}

const KEYWORDS: &[&str] = &[
    "kernel",
    "fn",
    "use",
    "const",
    "let",
    "mut",
    "if",
    "else",
    "for",
    "in",
    "while",
    "grid",
    "block",
    "at",
    "scratch",
    "prefetch",
    "parallel",
    "arbitrary",
    "vmem",
    "smem",
    "any",
    "where",
    "assert",
    "print",
    "buffered",
    "unroll",
    "step",
    "true",
    "false",
];

impl Analysis {
    /// The completions at byte `offset`.
    pub fn complete(&self, offset: u32) -> Vec<Completion> {
        let text = self.text();
        let offset = (offset as usize).min(text.len());
        let before = &text[..floor_char(text, offset)];
        let word_start = before
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
            .last()
            .map_or(before.len(), |(i, _)| i);
        let head = &before[..word_start];
        if let Some(path) = head.strip_suffix("::") {
            return self.module_items(path);
        }
        let mut out = Vec::new();
        for d in self.index.in_scope(offset as u32) {
            if out.iter().any(|c: &Completion| c.label == d.name) {
                continue;
            }
            let kind = match d.kind {
                DefKind::Param => ItemKind::Param,
                DefKind::Function => ItemKind::Function,
                _ => ItemKind::Variable,
            };
            let detail = self
                .type_of(d.name_span)
                .map(str::to_string)
                .unwrap_or_else(|| d.kind.noun().to_string());
            out.push(Completion {
                label: d.name.clone(),
                kind,
                detail,
            });
        }
        if let Some(root) = self.program.modules.first() {
            for (name, (r, _)) in &root.names {
                out.push(item_completion(name, *r));
            }
        }
        for b in check::builtins_table() {
            out.push(Completion {
                label: b.name.to_string(),
                kind: ItemKind::Builtin,
                detail: format!("{}{}", b.name, b.usage),
            });
        }
        for d in DType::ALL {
            out.push(Completion {
                label: d.to_string(),
                kind: ItemKind::Dtype,
                detail: "dtype".to_string(),
            });
        }
        for k in KEYWORDS {
            out.push(Completion {
                label: k.to_string(),
                kind: ItemKind::Keyword,
                detail: "keyword".to_string(),
            });
        }
        out
    }

    /// The items of the module named by `path` (`std::nn`, `nn`), or the
    /// standard library's modules after `std`.
    fn module_items(&self, path: &str) -> Vec<Completion> {
        let path = path
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .next()
            .unwrap_or("");
        if path == "std" {
            return crate::resolve::STD_MODULES
                .iter()
                .map(|(n, _)| Completion {
                    label: n.to_string(),
                    kind: ItemKind::Module,
                    detail: format!("std::{n}"),
                })
                .collect();
        }
        let Some(root) = self.program.modules.first() else {
            return Vec::new();
        };
        let mut m = None;
        if let Some((ItemRef::Module(id), _)) = root.names.get(path) {
            m = Some(*id);
        }
        if m.is_none() {
            // `std::nn` used by its whole path: find the module by name.
            m = self
                .program
                .modules
                .iter()
                .position(|mi| mi.name == path)
                .map(ModId);
        }
        let Some(m) = m else {
            return Vec::new();
        };
        let module = self.program.module(m);
        let mut out: Vec<Completion> = module
            .names
            .iter()
            .filter(|(_, (r, _))| !matches!(r, ItemRef::Module(_)))
            .map(|(n, (r, _))| {
                let mut c = item_completion(n, *r);
                if let ItemRef::Fn(fm, i) = r {
                    if let Some(f) = self.program.fn_decl(*fm, *i) {
                        c.detail = fn_signature(self, f);
                    }
                }
                c
            })
            .collect();
        out.sort_by(|a, b| a.label.cmp(&b.label));
        out
    }

    /// The signature of the call whose argument list holds `offset`, the
    /// parameter labels, and the index of the argument being typed.
    pub fn signature(&self, offset: u32) -> Option<(String, Vec<String>, usize)> {
        let text = self.text();
        let offset = floor_char(text, (offset as usize).min(text.len()));
        let bytes = text.as_bytes();
        let (mut depth, mut commas) = (0i32, 0usize);
        let mut i = offset;
        while i > 0 {
            i -= 1;
            match bytes[i] {
                b')' | b']' => depth += 1,
                b'(' | b'[' if depth > 0 => depth -= 1,
                b'[' => return None,
                b'(' => break,
                b',' if depth == 0 => commas += 1,
                b'{' | b'}' | b';' => return None,
                _ => {}
            }
            if i == 0 {
                return None;
            }
        }
        let name_end = i;
        let name_start = text[..name_end]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_' || *c == ':')
            .last()
            .map(|(j, _)| j)?;
        let name = &text[name_start..name_end];
        let last = name.rsplit("::").next().unwrap_or(name);
        if let Some(b) = check::builtins_table().iter().find(|b| b.name == name) {
            let params = split_params(b.usage.trim_start_matches('(').trim_end_matches(')'));
            return Some((format!("{}{}", b.name, b.usage), params, commas));
        }
        let segs: Vec<crate::ast::Ident> = name
            .split("::")
            .map(|s| crate::ast::Ident {
                name: s.to_string(),
                span: Default::default(),
            })
            .collect();
        let f = match self
            .program
            .modules
            .first()
            .and(self.program.lookup(ModId(0), &segs))
        {
            Some(ItemRef::Fn(m, i)) => self.program.fn_decl(m, i),
            _ => self.local_fn(last),
        }?;
        let params = f
            .params
            .iter()
            .filter_map(|p| self.source_of(p.span))
            .collect();
        Some((fn_signature(self, f), params, commas))
    }

    fn local_fn(&self, name: &str) -> Option<&crate::ast::FnDecl> {
        let root = self.program.modules.first()?;
        root.ast.items.iter().find_map(|it| match it {
            Item::Fn(f) if f.name.name == name => Some(f),
            _ => None,
        })
    }

    fn source_of(&self, span: crate::span::Span) -> Option<String> {
        let f = self.sources.get(span.file);
        f.text
            .get(span.start as usize..span.end as usize)
            .map(str::to_string)
    }

    /// Every token of the root file with its class, in order: byte range,
    /// class. Names take the class of their declaration.
    pub fn tokens(&self) -> Vec<(u32, u32, TokenClass)> {
        let (toks, _) = lexer::lex(self.text());
        let mut out = Vec::new();
        for (s, t, e) in toks {
            let class = match &t {
                Tok::Int(_) | Tok::Float(_) => TokenClass::Number,
                Tok::Str(_) => TokenClass::String,
                Tok::DocComment(_) | Tok::ModuleDoc(_) | Tok::Comment => TokenClass::Comment,
                Tok::Ident(name) => match self.index.def_at(self.root, s as u32) {
                    Some(d) => match self.index.defs[d].kind {
                        DefKind::Function | DefKind::Kernel => TokenClass::Function,
                        DefKind::Param | DefKind::Generic => TokenClass::Parameter,
                        DefKind::Module => TokenClass::Namespace,
                        DefKind::Const => TokenClass::Constant,
                        _ => TokenClass::Variable,
                    },
                    None if DType::from_name(name).is_some() => TokenClass::Type,
                    None if check::is_builtin(name) => TokenClass::Function,
                    None => continue,
                },
                other => {
                    let w = other.text();
                    if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic() || c == '_') {
                        TokenClass::Keyword
                    } else {
                        continue;
                    }
                }
            };
            out.push((s as u32, e as u32, class));
        }
        out
    }
}

/// Token classes, in the order of the server's legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenClass {
    Keyword,
    Number,
    String,
    Comment,
    Function,
    Parameter,
    Variable,
    Type,
    Namespace,
    Constant,
}

impl TokenClass {
    pub const ALL: [TokenClass; 10] = [
        TokenClass::Keyword,
        TokenClass::Number,
        TokenClass::String,
        TokenClass::Comment,
        TokenClass::Function,
        TokenClass::Parameter,
        TokenClass::Variable,
        TokenClass::Type,
        TokenClass::Namespace,
        TokenClass::Constant,
    ];
}

fn item_completion(name: &str, r: ItemRef) -> Completion {
    let (kind, detail) = match r {
        ItemRef::Const(..) => (ItemKind::Const, "constant"),
        ItemRef::Fn(..) => (ItemKind::Function, "function"),
        ItemRef::Kernel(..) => (ItemKind::Kernel, "kernel"),
        ItemRef::Module(..) => (ItemKind::Module, "module"),
    };
    Completion {
        label: name.to_string(),
        kind,
        detail: detail.to_string(),
    }
}

/// `name(x: T[R, ..], axis = -1) -> T[R, ..]` as written.
fn fn_signature(a: &Analysis, f: &crate::ast::FnDecl) -> String {
    let params: Vec<String> = f
        .params
        .iter()
        .filter_map(|p| a.source_of(p.span))
        .collect();
    let ret = f
        .ret
        .as_ref()
        .map(|r| {
            let ts: Vec<String> = r
                .types()
                .iter()
                .filter_map(|t| a.source_of(t.span))
                .collect();
            if ts.len() == 1 {
                format!(" -> {}", ts[0])
            } else {
                format!(" -> ({})", ts.join(", "))
            }
        })
        .unwrap_or_default();
    format!("{}({}){ret}", f.name.name, params.join(", "))
}

/// The parameters of a builtin's usage line, split at top-level commas.
fn split_params(usage: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut cur) = (0, String::new());
    for c in usage.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}
