//! `pkc fmt`: the one canonical layout of `.pk` source.
//!
//! The formatter works on the token stream, not on the AST: every token is
//! written back with its own spelling (`0x10`, `1e-6` and `_` separators
//! stay as written), so only the space between tokens changes, plus a
//! trailing comma in a list that is laid out one item per line (added) or
//! on one line (removed). Comments are collected from the gaps between
//! tokens and written back between the same tokens (a comment at the end of
//! a line may move past the `,` or `;` that follows it).
//!
//! The layout (docs/formatting.md has the rules with examples):
//! - 4 spaces of indentation, lines of at most [`WIDTH`] characters where
//!   a bracket can break;
//! - a bracketed list that does not fit breaks after its opening bracket,
//!   one item per line with a trailing comma, the closing bracket on a line
//!   of its own; the outermost list that does not fit breaks first;
//! - one statement per line; blank lines between statements and items are
//!   kept, at most one in a row;
//! - a kernel's clauses (`grid`, `prefetch`, `scratch`, `vmem_limit`,
//!   `assert`, `where`, `mesh`, `collective_id`) each start a line, and so
//!   does its body's `{`;
//! - an `if` used as a value stays on one line when it fits
//!   (`let x = if c { a } else { b };`); as a statement it always breaks.
//!
//! invariant: [`format_source`] returns text that parses to the same AST
//! (spans aside), keeps every comment, and formats to itself; it checks all
//! three before it returns, so a bug here is reported and never written.

use crate::diag::{codes, Diag};
use crate::lexer::Tok;
use crate::span::{FileId, Span};
use logos::Logos;

/// Line width the formatter fills up to.
pub const WIDTH: usize = 100;
/// Spaces per indentation level.
pub const INDENT: usize = 4;

/// Why a file could not be formatted.
#[derive(Debug)]
pub enum FormatError {
    /// The file does not parse: its parse diagnostics.
    Syntax(Vec<Diag>),
    /// The formatted text would not mean the same (a bug in pk): the file
    /// is left as it is.
    Unstable(Box<Diag>),
}

/// Formats `text` (the source of `file`, for diagnostics).
pub fn format_source(file: FileId, text: &str) -> Result<String, FormatError> {
    let (before, diags) = crate::parse::parse(file, text);
    if !diags.is_empty() {
        return Err(FormatError::Syntax(diags));
    }
    let unstable = |why: &str| {
        FormatError::Unstable(Box::new(
            Diag::new(
                &codes::INTERNAL,
                format!("the formatter could not lay this file out safely: {why}"),
                Span::new(file, 0, 0),
            )
            .help("the file is left as it is; please report it with the file"),
        ))
    };
    let out = layout(text).ok_or_else(|| unstable("its tokens did not nest"))?;
    let (after, diags) = crate::parse::parse(file, &out);
    if !diags.is_empty() {
        return Err(unstable("the formatted text does not parse"));
    }
    if erase_spans(&format!("{before:?}")) != erase_spans(&format!("{after:?}")) {
        return Err(unstable("the formatted text parses to a different program"));
    }
    if comments(text) != comments(&out) {
        return Err(unstable("a comment would change"));
    }
    if layout(&out).as_deref() != Some(out.as_str()) {
        return Err(unstable("formatting it twice gives a different layout"));
    }
    Ok(out)
}

/// An AST dump (`{:?}`) without its spans, which print as `START..END`.
pub fn erase_spans(dump: &str) -> String {
    let b = dump.as_bytes();
    let mut out = String::with_capacity(dump.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            out.push(c as char);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            in_str = c != b'"';
            i += 1;
            continue;
        }
        if c == b'"' {
            in_str = true;
            out.push('"');
            i += 1;
            continue;
        }
        if c.is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if b[j..].starts_with(b"..") {
                let mut k = j + 2;
                let s = k;
                while k < b.len() && b[k].is_ascii_digit() {
                    k += 1;
                }
                if k > s {
                    out.push('@');
                    i = k;
                    continue;
                }
            }
        }
        // Bytes are copied as they are; non-ASCII only occurs in strings.
        out.push(c as char);
        i += 1;
    }
    out
}

/// Every comment of `text` (doc comments too), in order, each line without
/// trailing white space.
pub fn comments(text: &str) -> Vec<String> {
    match pieces(text) {
        Some(ps) => ps
            .into_iter()
            .filter_map(|p| match p {
                Piece::Comment { start, end, .. } => Some(
                    text[start..end]
                        .lines()
                        .map(str::trim_end)
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                Piece::Tok { .. } => None,
            })
            .collect(),
        None => Vec::new(),
    }
}

// ---- Tokens and comments ----------------------------------------------------

enum Piece {
    Tok {
        start: usize,
        tok: Tok,
        end: usize,
    },
    Comment {
        start: usize,
        end: usize,
        line: bool,
        doc: bool,
    },
}

/// Tokens and comments in source order; `None` if the text does not lex.
fn pieces(text: &str) -> Option<Vec<Piece>> {
    let mut out = Vec::new();
    let mut lx = Tok::lexer(text);
    let mut prev = 0;
    while let Some(r) = lx.next() {
        let sp = lx.span();
        gap_comments(text, prev, sp.start, &mut out)?;
        prev = sp.end;
        match r.ok()? {
            Tok::DocComment(_) | Tok::ModuleDoc(_) => out.push(Piece::Comment {
                start: sp.start,
                end: sp.end,
                line: true,
                doc: true,
            }),
            tok => out.push(Piece::Tok {
                start: sp.start,
                tok,
                end: sp.end,
            }),
        }
    }
    gap_comments(text, prev, text.len(), &mut out)?;
    Some(out)
}

/// The ordinary comments in `text[from..to]`, which the lexer skipped.
fn gap_comments(text: &str, from: usize, to: usize, out: &mut Vec<Piece>) -> Option<()> {
    let b = text.as_bytes();
    let mut i = from;
    while i < to {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i..to].starts_with(b"//") {
            let end = text[i..to].find('\n').map_or(to, |n| i + n);
            let end = i + text[i..end].trim_end().len();
            out.push(Piece::Comment {
                start: i,
                end,
                line: true,
                doc: false,
            });
            i = end;
        } else if b[i..to].starts_with(b"/*") {
            let mut depth = 0usize;
            let mut j = i;
            while j < to {
                if b[j..to].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..to].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            if depth != 0 {
                return None;
            }
            out.push(Piece::Comment {
                start: i,
                end: j,
                line: false,
                doc: false,
            });
            i = j;
        } else {
            return None;
        }
    }
    Some(())
}

struct Cmt {
    text: String,
    /// A blank line before it.
    blank: bool,
    /// Runs to the end of its line (`//`, `///`, `//!`) or spans lines.
    line: bool,
    doc: bool,
}

struct Tk<'a> {
    tok: Tok,
    text: &'a str,
    /// Comments on lines of their own before the token.
    lead: Vec<Cmt>,
    /// Comments after the token on its line.
    trail: Vec<Cmt>,
    /// A blank line before the token (after its leading comments).
    blank: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Plain,
    GenOpen,
    GenClose,
    UseOpen,
    UseClose,
    /// The `=` of a named argument in a call (`axis=1`).
    Kwarg,
}

enum Atom {
    Tok(usize),
    Group(Grp),
    Block(Blk),
}

struct Grp {
    open: usize,
    /// Items with the comma that ends each (the last one's only when the
    /// source has a trailing comma).
    items: Vec<(Vec<Atom>, Option<usize>)>,
    close: usize,
}

struct Blk {
    open: usize,
    stmts: Vec<Vec<Atom>>,
    close: usize,
}

impl Atom {
    fn first(&self) -> usize {
        match self {
            Atom::Tok(i) => *i,
            Atom::Group(g) => g.open,
            Atom::Block(b) => b.open,
        }
    }
    fn last(&self) -> usize {
        match self {
            Atom::Tok(i) => *i,
            Atom::Group(g) => g.close,
            Atom::Block(b) => b.close,
        }
    }
}

/// Lays `text` out; `None` if it does not lex or its brackets do not nest.
fn layout(text: &str) -> Option<String> {
    let mut toks: Vec<Tk> = Vec::new();
    let mut pending: Vec<Cmt> = Vec::new();
    let mut trailing_ok = false;
    let mut prev_end = 0;
    for p in pieces(text)? {
        let (start, end) = match &p {
            Piece::Tok { start, end, .. } | Piece::Comment { start, end, .. } => (*start, *end),
        };
        let nl = text[prev_end..start].matches('\n').count();
        prev_end = end;
        match p {
            Piece::Comment { line, doc, .. } => {
                let body = &text[start..end];
                let c = Cmt {
                    text: body
                        .lines()
                        .map(str::trim_end)
                        .collect::<Vec<_>>()
                        .join("\n"),
                    blank: nl >= 2,
                    line: line || body.contains('\n'),
                    doc,
                };
                if nl == 0 && trailing_ok {
                    if let Some(t) = toks.last_mut() {
                        t.trail.push(c);
                    }
                    if line {
                        trailing_ok = false;
                    }
                } else {
                    trailing_ok = false;
                    pending.push(c);
                }
            }
            Piece::Tok { tok, .. } => {
                toks.push(Tk {
                    tok,
                    text: &text[start..end],
                    lead: std::mem::take(&mut pending),
                    trail: Vec::new(),
                    blank: nl >= 2,
                });
                trailing_ok = true;
            }
        }
    }
    let mut b = Builder {
        role: vec![Role::Plain; toks.len()],
        t: toks,
        i: 0,
        bad: false,
        skip_lead: std::cell::Cell::new(usize::MAX),
    };
    let items = b.stmts();
    if b.bad || b.i != b.t.len() {
        return None;
    }
    let mut doc = Vec::new();
    for (k, s) in items.iter().enumerate() {
        if k > 0 {
            doc.push(Doc::Hard);
        }
        if b.t[s[0].first()].lead.is_empty() && b.t[s[0].first()].blank {
            doc.push(Doc::Blank);
        }
        doc.extend(b.seq(s, true));
    }
    for c in &pending {
        if c.blank {
            doc.push(Doc::Blank);
        }
        doc.push(Doc::OwnLine(c.text.clone()));
    }
    let mut p = Printer::default();
    p.print(&Doc::Seq(doc));
    p.newline();
    let mut out = String::with_capacity(p.out.len());
    for line in p.out.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let trimmed = out.trim_start_matches('\n').trim_end_matches('\n');
    Some(if trimmed.is_empty() {
        String::new()
    } else {
        format!("{trimmed}\n")
    })
}

struct Builder<'a> {
    t: Vec<Tk<'a>>,
    role: Vec<Role>,
    i: usize,
    bad: bool,
    /// A token whose leading comments were already written (before the
    /// group that starts with it).
    skip_lead: std::cell::Cell<usize>,
}

impl Builder<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i).map(|t| &t.tok)
    }

    /// Statements up to a `}` (not consumed) or the end.
    fn stmts(&mut self) -> Vec<Vec<Atom>> {
        let mut out = Vec::new();
        while !matches!(self.peek(), None | Some(Tok::RBrace)) && !self.bad {
            out.push(self.stmt());
        }
        out
    }

    /// One statement or item: up to its `;`, or a block that ends it.
    fn stmt(&mut self) -> Vec<Atom> {
        let mut v = Vec::new();
        while !matches!(self.peek(), None | Some(Tok::RBrace)) && !self.bad {
            let semi = self.peek() == Some(&Tok::Semi);
            let a = self.atom();
            let block = matches!(a, Atom::Block(_));
            v.push(a);
            if semi || (block && !matches!(self.peek(), Some(Tok::Else | Tok::Semi))) {
                break;
            }
        }
        v
    }

    fn atom(&mut self) -> Atom {
        let i = self.i;
        match self.t[i].tok {
            Tok::LParen => self.group(Tok::RParen, Role::Plain, Role::Plain),
            Tok::LBracket => self.group(Tok::RBracket, Role::Plain, Role::Plain),
            Tok::LBrace if i > 0 && self.t[i - 1].tok == Tok::ColonColon => {
                self.group(Tok::RBrace, Role::UseOpen, Role::UseClose)
            }
            Tok::LBrace => {
                self.i += 1;
                let stmts = self.stmts();
                if self.peek() != Some(&Tok::RBrace) {
                    self.bad = true;
                }
                let close = self.i;
                self.i += 1;
                Atom::Block(Blk {
                    open: i,
                    stmts,
                    close,
                })
            }
            Tok::Lt
                if i >= 2
                    && matches!(self.t[i - 1].tok, Tok::Ident(_))
                    && matches!(self.t[i - 2].tok, Tok::Kernel | Tok::Fn) =>
            {
                self.group(Tok::Gt, Role::GenOpen, Role::GenClose)
            }
            _ => {
                self.i += 1;
                Atom::Tok(i)
            }
        }
    }

    fn group(&mut self, close: Tok, open_role: Role, close_role: Role) -> Atom {
        let open = self.i;
        self.role[open] = open_role;
        self.i += 1;
        let mut items = Vec::new();
        loop {
            match self.peek() {
                None => {
                    self.bad = true;
                    break;
                }
                Some(t) if *t == close => break,
                _ => {}
            }
            let mut v = Vec::new();
            while let Some(t) = self.peek() {
                if *t == close || *t == Tok::Comma || self.bad {
                    break;
                }
                if matches!(t, Tok::RParen | Tok::RBracket | Tok::RBrace | Tok::Semi) {
                    self.bad = true;
                    break;
                }
                v.push(self.atom());
            }
            if self.bad {
                break;
            }
            // `name=value` in a call's arguments (not a declaration's).
            let call = open_role == Role::Plain
                && self.t[open].tok == Tok::LParen
                && open >= 1
                && matches!(self.t[open - 1].tok, Tok::Ident(_))
                && !(open >= 2 && matches!(self.t[open - 2].tok, Tok::Fn | Tok::Kernel));
            if call && v.len() >= 2 {
                if let (Atom::Tok(n), Atom::Tok(e)) = (&v[0], &v[1]) {
                    if matches!(self.t[*n].tok, Tok::Ident(_)) && self.t[*e].tok == Tok::Eq {
                        self.role[*e] = Role::Kwarg;
                    }
                }
            }
            if self.peek() == Some(&Tok::Comma) {
                items.push((v, Some(self.i)));
                self.i += 1;
            } else {
                items.push((v, None));
            }
        }
        let c = self.i;
        if c < self.role.len() {
            self.role[c] = close_role;
        }
        self.i += 1;
        Atom::Group(Grp {
            open,
            items,
            close: c,
        })
    }

    /// Whether token `a` ends an operand (so a `-` after it is binary).
    fn operand_end(&self, a: usize) -> bool {
        matches!(
            self.t[a].tok,
            Tok::Ident(_)
                | Tok::Int(_)
                | Tok::Float(_)
                | Tok::Str(_)
                | Tok::True
                | Tok::False
                | Tok::None
                | Tok::RParen
                | Tok::RBracket
        )
    }

    /// Whether a space separates tokens `a` and `b` on one line.
    fn space(&self, a: usize, b: usize) -> bool {
        let (ta, tb) = (&self.t[a].tok, &self.t[b].tok);
        let (ra, rb) = (self.role[a], self.role[b]);
        if matches!(ta, Tok::LParen | Tok::LBracket) || matches!(ra, Role::GenOpen | Role::UseOpen)
        {
            return false;
        }
        if matches!(
            tb,
            Tok::RParen | Tok::RBracket | Tok::Comma | Tok::Semi | Tok::Colon | Tok::Question
        ) || matches!(rb, Role::GenClose | Role::UseClose | Role::GenOpen)
        {
            return false;
        }
        if ra == Role::Kwarg || rb == Role::Kwarg {
            return false;
        }
        let tight = |t: &Tok| matches!(t, Tok::ColonColon | Tok::Dot | Tok::DotDot | Tok::DotDotEq);
        if tight(ta) || tight(tb) {
            return false;
        }
        if matches!(ta, Tok::Minus | Tok::Bang) && (a == 0 || !self.operand_end(a - 1)) {
            return false;
        }
        match tb {
            Tok::LParen => {
                !(matches!(ta, Tok::Ident(_) | Tok::Assert | Tok::Buffered) || ra == Role::GenClose)
            }
            Tok::LBracket => {
                let method_at = *ta == Tok::At && a > 0 && self.t[a - 1].tok == Tok::Dot;
                !(matches!(
                    ta,
                    Tok::Ident(_) | Tok::RParen | Tok::RBracket | Tok::DmaSem
                ) || method_at)
            }
            _ => true,
        }
    }

    /// A token with its comments; `text` replaces its spelling.
    fn tok(&self, i: usize, out: &mut Vec<Doc>, text: Option<Doc>, lead: bool, trail: bool) {
        let t = &self.t[i];
        if lead && self.skip_lead.get() != i {
            for c in &t.lead {
                if c.blank {
                    out.push(Doc::Blank);
                }
                out.push(Doc::OwnLine(c.text.clone()));
            }
            if !t.lead.is_empty() && t.blank {
                out.push(Doc::Blank);
            }
        }
        out.push(text.unwrap_or_else(|| Doc::Text(t.text.to_string())));
        if trail {
            self.trail(i, out);
        }
    }

    fn trail(&self, i: usize, out: &mut Vec<Doc>) {
        for c in &self.t[i].trail {
            if c.doc {
                out.push(Doc::EndLine(c.text.clone()));
            } else if c.line {
                out.push(Doc::Suffix(c.text.clone()));
            } else {
                out.extend([Doc::Space, Doc::Text(c.text.clone())]);
            }
        }
    }

    /// The atoms of a statement (`stmt`) or of a list item.
    fn seq(&self, atoms: &[Atom], stmt: bool) -> Vec<Doc> {
        let n = atoms.len();
        let tok_is =
            |k: usize, t: Tok| matches!(atoms.get(k), Some(Atom::Tok(i)) if self.t[*i].tok == t);
        let kernel = stmt && tok_is(0, Tok::Kernel);
        let inputs = atoms
            .iter()
            .position(|a| matches!(a, Atom::Group(g) if self.t[g.open].tok == Tok::LParen))
            .filter(|_| kernel);
        let clause_start = |k: usize| -> bool {
            if inputs.is_none_or(|p| k <= p) {
                return false;
            }
            match &atoms[k] {
                Atom::Block(_) => true,
                Atom::Tok(i) => match &self.t[*i].tok {
                    Tok::Grid
                    | Tok::Prefetch
                    | Tok::Scratch
                    | Tok::VmemLimit
                    | Tok::Assert
                    | Tok::Mesh
                    | Tok::CollectiveId => true,
                    Tok::Ident(w) => w == "where" && self.operand_end(atoms[k - 1].last()),
                    _ => false,
                },
                Atom::Group(_) => false,
            }
        };
        // An operand declaration (`x: T[..] block [..] at (..)`) breaks
        // before `block` and `at` when it does not fit: the list item that
        // holds one, or a kernel's single output after `->`.
        let arrow = inputs.and_then(|p| (p + 1..n).find(|&k| tok_is(k, Tok::Arrow)));
        let operand: Option<(usize, usize)> = if !stmt {
            Some((0, n))
        } else {
            arrow
                .filter(|&a| !matches!(atoms.get(a + 1), Some(Atom::Group(_))))
                .map(|a| (a + 1, (a + 1..n).find(|&k| clause_start(k)).unwrap_or(n)))
        };
        let block_at = operand.and_then(|(a, b)| (a..b).find(|&k| tok_is(k, Tok::Block)));
        let sep = |k: usize| -> Option<Doc> {
            if clause_start(k) {
                Some(Doc::Hard)
            } else if block_at.is_some_and(|kb| k > kb && tok_is(k, Tok::At))
                && operand.is_some_and(|(_, e)| k < e)
            {
                Some(Doc::Line)
            } else if self.space(atoms[k - 1].last(), atoms[k].first()) {
                Some(Doc::Space)
            } else {
                None
            }
        };
        let opts = |k: usize| -> Opts {
            let mut o = Opts::default();
            if kernel {
                let generics = matches!(atoms.get(2), Some(Atom::Group(g)) if self.role[g.open] == Role::GenOpen);
                if k == 2 && generics {
                    o.lead = true;
                } else if Some(k) == inputs {
                    o = Opts {
                        strict: true,
                        lead: true,
                        follow: generics,
                    };
                } else if arrow.is_some_and(|a| k == a + 1) {
                    o = Opts {
                        strict: true,
                        lead: false,
                        follow: true,
                    };
                }
            }
            o
        };
        // The docs of atoms `from..to` with the separators between them.
        let emit = |from: usize, to: usize| -> Vec<Doc> {
            let mut out = Vec::new();
            let mut k = from;
            while k < to {
                if k > from {
                    out.extend(sep(k));
                }
                let is_if = tok_is(k, Tok::If) && !(k > 0 && tok_is(k - 1, Tok::Else));
                if is_if {
                    if let Some(end) = self.chain_end(atoms, k).filter(|&e| {
                        e < to && (!(stmt && k == 0) || (k..e).any(|m| tok_is(m, Tok::Else)))
                    }) {
                        let mut g = Vec::new();
                        for (m, a) in atoms.iter().enumerate().take(end + 1).skip(k) {
                            if m > k {
                                g.extend(sep(m));
                            }
                            g.extend(self.atom_doc(a, true, Opts::default()));
                        }
                        out.push(group(g, Opts::default()));
                        k = end + 1;
                        continue;
                    }
                }
                out.extend(self.atom_doc(&atoms[k], false, opts(k)));
                k += 1;
            }
            out
        };
        match (operand, block_at) {
            (Some((a, b)), Some(kb)) => {
                let mut out = emit(0, a);
                if a > 0 {
                    out.extend(sep(a));
                }
                // The declaration's doc comments stand before it, outside
                // its group.
                let first = atoms[a].first();
                let mut lead = Vec::new();
                self.tok(first, &mut lead, None, true, false);
                lead.pop();
                out.extend(lead);
                self.skip_lead.set(first);
                let mut g = emit(a, kb);
                let mut rest = vec![Doc::Line];
                rest.extend(emit(kb, b));
                g.push(Doc::Indent(rest));
                out.push(group(g, Opts::default()));
                if b < n {
                    out.extend(sep(b));
                    out.extend(emit(b, n));
                }
                out
            }
            _ => emit(0, n),
        }
    }

    /// The last atom of the `if ... else ...` chain that starts at `k`.
    fn chain_end(&self, atoms: &[Atom], k: usize) -> Option<usize> {
        let is_tok =
            |m: usize, t: Tok| matches!(atoms.get(m), Some(Atom::Tok(i)) if self.t[*i].tok == t);
        let mut j = k + 1;
        loop {
            let b = (j..atoms.len()).find(|&m| matches!(atoms[m], Atom::Block(_)))?;
            if !is_tok(b + 1, Tok::Else) {
                return Some(b);
            }
            if is_tok(b + 2, Tok::If) {
                j = b + 3;
            } else if matches!(atoms.get(b + 2), Some(Atom::Block(_))) {
                return Some(b + 2);
            } else {
                return Some(b);
            }
        }
    }

    fn atom_doc(&self, a: &Atom, soft: bool, opts: Opts) -> Vec<Doc> {
        let mut out = Vec::new();
        match a {
            Atom::Tok(i) => self.tok(*i, &mut out, None, true, true),
            Atom::Group(g) => {
                let mut d = Vec::new();
                self.group_doc(g, &mut d);
                out.push(group(d, opts));
                self.trail(g.close, &mut out);
            }
            Atom::Block(b) => self.block_doc(b, soft, &mut out),
        }
        out
    }

    fn group_doc(&self, g: &Grp, out: &mut Vec<Doc>) {
        let open = &self.t[g.open].tok;
        // Whether a trailing comma may be added or removed: not in
        // `assert(c, "m")`, nor in `(x,)` (a one-element tuple) or `(x)`.
        let call_like = *open != Tok::LParen
            || (g.open > 0
                && (matches!(
                    self.t[g.open - 1].tok,
                    Tok::Ident(_)
                        | Tok::Grid
                        | Tok::Prefetch
                        | Tok::Scratch
                        | Tok::At
                        | Tok::Let
                        | Tok::Arrow
                ) || self.role[g.open - 1] == Role::GenClose));
        let is_assert = g.open > 0 && self.t[g.open - 1].tok == Tok::Assert;
        let flexible = !is_assert && (call_like || g.items.len() >= 2);
        self.tok(g.open, out, None, true, true);
        let mut inner = vec![Doc::Soft];
        let n = g.items.len();
        for (k, (atoms, comma)) in g.items.iter().enumerate() {
            if k > 0 {
                inner.push(Doc::Line);
            }
            inner.extend(self.seq(atoms, false));
            let last = k + 1 == n;
            match comma {
                Some(c) if last && flexible => {
                    self.tok(*c, &mut inner, Some(Doc::IfBreak(",")), true, true)
                }
                Some(c) => self.tok(*c, &mut inner, None, true, true),
                None if last && flexible => inner.push(Doc::IfBreak(",")),
                None => {}
            }
        }
        for c in &self.t[g.close].lead {
            if c.blank {
                inner.push(Doc::Blank);
            }
            inner.push(Doc::OwnLine(c.text.clone()));
        }
        out.push(Doc::Indent(inner));
        out.push(Doc::Soft);
        self.tok(g.close, out, None, false, false);
    }

    fn block_doc(&self, b: &Blk, soft: bool, out: &mut Vec<Doc>) {
        self.tok(b.open, out, None, true, true);
        let close = &self.t[b.close];
        if b.stmts.is_empty() && close.lead.is_empty() {
            self.tok(b.close, out, None, false, true);
            return;
        }
        let soft = soft
            && b.stmts.len() == 1
            && !matches!(b.stmts[0].last(), Some(Atom::Tok(i)) if self.t[*i].tok == Tok::Semi);
        let brk = || if soft { Doc::Line } else { Doc::Hard };
        let mut inner = vec![brk()];
        for (k, s) in b.stmts.iter().enumerate() {
            if k > 0 {
                inner.push(Doc::Hard);
                let first = &self.t[s[0].first()];
                if first.lead.is_empty() && first.blank {
                    inner.push(Doc::Blank);
                }
            }
            inner.extend(self.seq(s, true));
        }
        for c in &close.lead {
            if c.blank {
                inner.push(Doc::Blank);
            }
            inner.push(Doc::OwnLine(c.text.clone()));
        }
        out.push(Doc::Indent(inner));
        out.push(brk());
        self.tok(b.close, out, None, false, true);
    }
}

// ---- The printer ------------------------------------------------------------

/// A layout document (after Wadler's "prettier printer").
enum Doc {
    Text(String),
    /// One space, unless at the start of a line or before a line break.
    Space,
    /// A space on one line, a line break when its group breaks.
    Line,
    /// Nothing on one line, a line break when its group breaks.
    Soft,
    /// Always a line break.
    Hard,
    /// A blank line here, unless just after an opening bracket.
    Blank,
    /// Text only when the group breaks (a trailing comma).
    IfBreak(&'static str),
    /// A comment on a line of its own.
    OwnLine(String),
    /// A comment at the end of the line, written at the next line break.
    Suffix(String),
    /// A comment that ends the line where it stands.
    EndLine(String),
    /// One line if it fits, else every `Line`/`Soft` in it breaks; the
    /// flag says it must break (it holds a line break).
    Group(Vec<Doc>, bool, Opts),
    Indent(Vec<Doc>),
    Seq(Vec<Doc>),
}

fn forces_break(d: &Doc) -> bool {
    match d {
        Doc::Hard | Doc::OwnLine(_) | Doc::Suffix(_) | Doc::EndLine(_) => true,
        Doc::Text(s) => s.contains('\n'),
        Doc::Group(_, f, _) => *f,
        Doc::Indent(v) | Doc::Seq(v) => v.iter().any(forces_break),
        _ => false,
    }
}

/// How a group decides to break, beyond fitting.
#[derive(Clone, Copy, Default)]
struct Opts {
    /// What follows it up to the next forced line break must fit on the
    /// line as well (a kernel's operand lists).
    strict: bool,
    /// Its decision is recorded for a following group.
    lead: bool,
    /// It breaks when the last `lead` group broke.
    follow: bool,
}

/// Moves the comments that end `v` (nested in its last sequences or
/// indents, not in its groups) into `tail`, last first.
fn trailing_comments(v: &mut Vec<Doc>, tail: &mut Vec<Doc>) {
    loop {
        match v.last_mut() {
            Some(Doc::Suffix(_)) => tail.extend(v.pop()),
            Some(Doc::Seq(inner) | Doc::Indent(inner)) => {
                let before = tail.len();
                trailing_comments(inner, tail);
                if tail.len() == before || !inner.is_empty() {
                    return;
                }
                v.pop();
            }
            _ => return,
        }
    }
}

fn group(mut v: Vec<Doc>, opts: Opts) -> Doc {
    // A comment that ends the group ends the line wherever the group ends,
    // so it does not make the group break: it goes after it (where the
    // enclosing list's comma, added when the list breaks, is written before
    // it), and the same text lays out the same whether or not that comma
    // was there.
    let mut tail = Vec::new();
    trailing_comments(&mut v, &mut tail);
    let forced = v.iter().any(forces_break);
    let g = Doc::Group(v, forced, opts);
    if tail.is_empty() {
        return g;
    }
    tail.push(g);
    tail.reverse();
    Doc::Seq(tail)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Flat,
    Break,
}

#[derive(Default)]
struct Printer {
    out: String,
    col: usize,
    /// Nothing written on the current line yet.
    at_start_init: bool,
    started: bool,
    space: bool,
    need_nl: bool,
    want_blank: bool,
    suffix: Vec<String>,
    lead_broke: bool,
}

impl Printer {
    fn at_start(&self) -> bool {
        !self.started || self.at_start_init
    }

    fn newline(&mut self) {
        for s in std::mem::take(&mut self.suffix) {
            self.out.push(' ');
            self.out.push_str(&s);
        }
        self.out.push('\n');
        self.started = true;
        self.at_start_init = true;
        self.space = false;
        self.need_nl = false;
        if self.want_blank {
            self.want_blank = false;
            self.blank_here();
        }
    }

    fn blank_here(&mut self) {
        let t = self.out.trim_end();
        if !t.is_empty() && !t.ends_with(['{', '(', '[', '<']) && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }

    fn text(&mut self, s: &str, indent: usize) {
        if self.need_nl {
            self.newline();
        }
        if self.at_start() {
            self.out.extend(std::iter::repeat_n(' ', indent));
            self.col = indent;
            self.at_start_init = false;
            self.started = true;
        } else if self.space {
            self.out.push(' ');
            self.col += 1;
        }
        self.space = false;
        self.out.push_str(s);
        match s.rfind('\n') {
            Some(n) => self.col = s[n + 1..].chars().count(),
            None => self.col += s.chars().count(),
        }
    }

    fn print(&mut self, doc: &Doc) {
        let mut stack: Vec<(usize, Mode, &Doc)> = vec![(0, Mode::Break, doc)];
        while let Some((ind, mode, d)) = stack.pop() {
            match d {
                Doc::Text(s) => self.text(s, ind),
                Doc::Space => {
                    if !self.at_start() {
                        self.space = true;
                    }
                }
                Doc::Line | Doc::Soft if mode == Mode::Flat => {
                    if matches!(d, Doc::Line) && !self.at_start() {
                        self.space = true;
                    }
                }
                Doc::Line | Doc::Soft | Doc::Hard => {
                    if !self.at_start() {
                        self.newline();
                    }
                }
                Doc::Blank => {
                    if self.at_start() && !self.need_nl {
                        if self.started {
                            self.blank_here();
                        }
                    } else {
                        self.want_blank = true;
                    }
                }
                Doc::IfBreak(s) => {
                    if mode == Mode::Break {
                        self.text(s, ind)
                    }
                }
                Doc::OwnLine(s) => {
                    if !self.at_start() {
                        self.newline();
                    }
                    self.text(s, ind);
                    self.need_nl = true;
                }
                Doc::Suffix(s) => self.suffix.push(s.clone()),
                Doc::EndLine(s) => {
                    self.space = true;
                    self.text(s, ind);
                    self.need_nl = true;
                }
                Doc::Group(v, forced, o) => {
                    let flat = mode == Mode::Flat
                        || (!(*forced || o.follow && self.lead_broke)
                            && self.fits(ind, d, &stack, o.strict));
                    let m = if flat { Mode::Flat } else { Mode::Break };
                    if o.lead {
                        self.lead_broke = m == Mode::Break;
                    }
                    stack.extend(v.iter().rev().map(|c| (ind, m, c)));
                }
                Doc::Indent(v) => stack.extend(v.iter().rev().map(|c| (ind + INDENT, mode, c))),
                Doc::Seq(v) => stack.extend(v.iter().rev().map(|c| (ind, mode, c))),
            }
        }
    }

    /// Whether `group` fits on the rest of the line laid flat, counting
    /// what follows it up to the next possible line break.
    fn fits(&self, ind: usize, group: &Doc, rest: &[(usize, Mode, &Doc)], strict: bool) -> bool {
        let used = if self.at_start() || self.need_nl {
            ind
        } else {
            self.col + usize::from(self.space)
        };
        let mut w = WIDTH as isize - used as isize;
        let mut todo: Vec<(Mode, &Doc)> = vec![(Mode::Flat, group)];
        let mut rest_i = rest.len();
        loop {
            let (mode, d) = match todo.pop() {
                Some(x) => x,
                None => {
                    if rest_i == 0 {
                        return true;
                    }
                    rest_i -= 1;
                    (rest[rest_i].1, rest[rest_i].2)
                }
            };
            match d {
                Doc::Text(s) => w -= s.chars().count() as isize,
                Doc::Space => w -= 1,
                Doc::Line | Doc::Soft if mode == Mode::Flat => {
                    if matches!(d, Doc::Line) {
                        w -= 1
                    }
                }
                Doc::Line | Doc::Soft | Doc::Hard => return w >= 0,
                Doc::OwnLine(_) | Doc::Suffix(_) | Doc::EndLine(_) => return w >= 0,
                Doc::Blank => {}
                Doc::IfBreak(s) => {
                    if mode == Mode::Break {
                        w -= s.len() as isize
                    }
                }
                Doc::Group(v, forced, _) => {
                    let m = if *forced {
                        Mode::Break
                    } else if strict {
                        Mode::Flat
                    } else {
                        mode
                    };
                    todo.extend(v.iter().rev().map(|c| (m, c)));
                }
                Doc::Indent(v) | Doc::Seq(v) => todo.extend(v.iter().rev().map(|c| (mode, c))),
            }
            if w < 0 {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(s: &str) -> String {
        format_source(FileId::default(), s).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn spans_are_erased_but_not_numbers() {
        assert_eq!(erase_spans("Int(12) 3..14 \"1..2\""), "Int(12) @ \"1..2\"");
    }

    /// A comment after the last operand, which has no comma yet, stays on
    /// the operand's line after the comma the broken list adds, and the
    /// operand's index map does not break for it.
    #[test]
    fn a_comment_after_the_last_operand_follows_the_added_comma() {
        let want = "kernel k<M = 64, N = 256, bm = 16>(
    x: f32[M, N] block [bm, N] at (i, 0), // c
) -> y: f32[M, N]
grid (i in M / bm parallel)
{
    y[..] = x[..];
}
";
        let src = want.replace("(i, 0), // c", "(i, 0)// c");
        assert_eq!(fmt(&src), want);
        assert_eq!(fmt(want), want);
    }

    #[test]
    fn spacing_and_blocks() {
        let src = "fn f(x,y){let z=-x*(y+1);z}\n";
        assert_eq!(
            fmt(src),
            "fn f(x, y) {\n    let z = -x * (y + 1);\n    z\n}\n"
        );
    }

    #[test]
    fn value_if_stays_on_one_line() {
        let src = "fn f(x) { let y = if x > 0 { x } else { 0 - x }; y }";
        assert_eq!(
            fmt(src),
            "fn f(x) {\n    let y = if x > 0 { x } else { 0 - x };\n    y\n}\n"
        );
    }

    #[test]
    fn a_kernels_mesh_and_collective_id_start_their_own_lines() {
        let src = "kernel k<n = 4, cid = 0>(x: f32[8, 128] in any) -> y: f32[8, 128] in any \
                   mesh (d in n) collective_id cid scratch (s: dma_sem) { }\n";
        assert_eq!(
            fmt(src),
            "kernel k<n = 4, cid = 0>(x: f32[8, 128] in any) -> y: f32[8, 128] in any\n\
             mesh (d in n)\n\
             collective_id cid\n\
             scratch (s: dma_sem)\n\
             {}\n"
        );
    }

    #[test]
    fn comments_stay_where_they_are() {
        let src = "// head\n\n/// doc\nfn f(x) { // open\n    x // tail\n    // end\n}\n";
        assert_eq!(fmt(src), src);
    }
}

#[cfg(test)]
mod deep {
    use super::*;

    /// Nesting at pk's limits formats on a test thread's 2 MiB stack.
    #[test]
    fn nesting_at_the_limits_formats() {
        let n = 199;
        let src = format!(
            "fn f(x) {{ {}x{} + {}x }}\n",
            "(".repeat(n),
            ")".repeat(n),
            "-".repeat(n)
        );
        let out = format_source(FileId::default(), &src).expect("formats");
        // One `(` per line, each one level in from the last (past the
        // width, even the innermost `(x)` breaks).
        assert_eq!(out.lines().filter(|l| l.trim() == "(").count(), n);
        assert!(out.contains(&format!("\n{}x\n", " ".repeat(4 * (n + 1)))));
        let chain = format!("fn f(x) {{ x{} }}\n", " + x".repeat(240));
        let out = format_source(FileId::default(), &chain).expect("formats");
        assert!(out.contains("x + x + x"));
    }
}
