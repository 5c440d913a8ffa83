//! The lexer: source text to [`Tok`]ens with byte spans (logos).
//!
//! Comments are skipped here except doc comments (`///` on items and
//! parameters, `//!` for the module), which the parser attaches to the next
//! declaration. A doc comment that precedes nothing documentable is dropped,
//! as an ordinary comment would be. Block comments nest.

use logos::{Lexer as LogosLexer, Logos};

/// Why a piece of input is not a token.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LexError {
    #[default]
    Invalid,
    UnterminatedComment,
    IntTooLarge,
    BadFloat,
    /// A float literal past the largest 64-bit float, which would read as
    /// infinity.
    FloatTooLarge,
}

fn block_comment(lex: &mut LogosLexer<Tok>) -> Result<logos::Skip, LexError> {
    // `/*` has been consumed; find the matching `*/`, counting nested pairs.
    let rest = lex.remainder().as_bytes();
    let mut depth = 1usize;
    let mut i = 0usize;
    while i < rest.len() {
        if rest[i] == b'/' && rest.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if rest[i] == b'*' && rest.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                lex.bump(i);
                return Ok(logos::Skip);
            }
        } else {
            i += 1;
        }
    }
    lex.bump(rest.len());
    Err(LexError::UnterminatedComment)
}

fn parse_int(lex: &mut LogosLexer<Tok>) -> Result<u64, LexError> {
    let s: String = lex.slice().chars().filter(|c| *c != '_').collect();
    let r = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if let Some(bin) = s.strip_prefix("0b") {
        u64::from_str_radix(bin, 2)
    } else {
        s.parse::<u64>()
    };
    r.map_err(|_| LexError::IntTooLarge)
}

fn parse_float(lex: &mut LogosLexer<Tok>) -> Result<f64, LexError> {
    let s: String = lex.slice().chars().filter(|c| *c != '_').collect();
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(LexError::FloatTooLarge),
        Err(_) => Err(LexError::BadFloat),
    }
}

/// A string literal's text without its quotes; `\"`, `\\` and `\n` are
/// the escapes.
fn string_text(lex: &mut LogosLexer<Tok>) -> String {
    let s = lex.slice();
    let mut out = String::new();
    let mut chars = s[1..s.len() - 1].chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

fn doc_text(lex: &mut LogosLexer<Tok>) -> String {
    let s = &lex.slice()[3..];
    s.strip_prefix(' ').unwrap_or(s).trim_end().to_string()
}

#[derive(Logos, Debug, Clone, PartialEq)]
#[logos(error = LexError)]
#[logos(skip r"[ \t\r\n\f]+")]
pub enum Tok {
    #[regex(r"//[^/!\n][^\n]*", logos::skip, allow_greedy = true)]
    #[regex(r"//", logos::skip)]
    #[regex(r"////[^\n]*", logos::skip, allow_greedy = true)]
    #[token("/*", block_comment)]
    Comment,

    #[regex(r"///([^/\n][^\n]*)?", doc_text, allow_greedy = true)]
    DocComment(String),
    #[regex(r"//![^\n]*", doc_text, allow_greedy = true)]
    ModuleDoc(String),

    #[regex(r"[0-9][0-9_]*", parse_int, priority = 3)]
    #[regex(r"0[xX][0-9a-fA-F_]+", parse_int)]
    #[regex(r"0b[01_]+", parse_int)]
    Int(u64),
    #[regex(r"[0-9][0-9_]*\.[0-9][0-9_]*([eE][+-]?[0-9]+)?", parse_float)]
    #[regex(r"[0-9][0-9_]*[eE][+-]?[0-9]+", parse_float)]
    Float(f64),

    #[regex(r"[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string(), priority = 2)]
    Ident(String),

    // Keywords.
    #[token("kernel")]
    Kernel,
    #[token("fn")]
    Fn,
    #[token("use")]
    Use,
    #[token("const")]
    Const,
    #[token("let")]
    Let,
    #[token("mut")]
    Mut,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("step")]
    Step,
    #[token("unroll")]
    Unroll,
    #[token("assert")]
    Assert,
    #[token("print")]
    Print,
    /// A string literal; only assertion messages take one.
    #[regex(r#""([^"\\\n]|\\.)*""#, string_text)]
    Str(String),
    #[token("while")]
    While,
    #[token("grid")]
    Grid,
    #[token("scratch")]
    Scratch,
    #[token("prefetch")]
    Prefetch,
    #[token("block")]
    Block,
    #[token("at")]
    At,
    #[token("aliases")]
    Aliases,
    #[token("buffered")]
    Buffered,
    #[token("parallel")]
    Parallel,
    #[token("arbitrary")]
    Arbitrary,
    #[token("vmem")]
    Vmem,
    #[token("smem")]
    Smem,
    #[token("any")]
    Any,
    #[token("dma_sem")]
    DmaSem,
    #[token("barrier_sem")]
    BarrierSem,
    #[token("mesh")]
    Mesh,
    #[token("collective_id")]
    CollectiveId,
    #[token("dtype")]
    Dtype,
    #[token("vmem_limit")]
    VmemLimit,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[token("as")]
    As,
    #[token("none")]
    None,
    #[token("is")]
    Is,
    #[token("not")]
    Not,

    // Punctuation.
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token("::")]
    ColonColon,
    #[token("..")]
    DotDot,
    #[token(".")]
    Dot,
    /// `..=`, only in a tunable parameter's inclusive range.
    #[token("..=")]
    DotDotEq,
    #[token("->")]
    Arrow,
    #[token("=")]
    Eq,
    #[token("==")]
    EqEq,
    #[token("!=")]
    Ne,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("!")]
    Bang,
    #[token("?")]
    Question,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("&")]
    Amp,
    #[token("|")]
    Pipe,
    #[token("^")]
    Caret,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("+=")]
    PlusEq,
    #[token("-=")]
    MinusEq,
    #[token("*=")]
    StarEq,
    #[token("/=")]
    SlashEq,
    #[token("_", priority = 3)]
    Underscore,
}

impl Tok {
    /// How the token is written, for "expected ..." messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("identifier `{s}`"),
            Tok::Int(v) => format!("integer `{v}`"),
            Tok::Float(v) => format!("number `{v}`"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::DocComment(_) => "doc comment".into(),
            Tok::ModuleDoc(_) => "module doc comment".into(),
            Tok::Comment => "comment".into(),
            other => format!("`{}`", other.text()),
        }
    }

    /// The fixed spelling of keyword and punctuation tokens.
    pub fn text(&self) -> &'static str {
        match self {
            Tok::Kernel => "kernel",
            Tok::Fn => "fn",
            Tok::Use => "use",
            Tok::Const => "const",
            Tok::Let => "let",
            Tok::Mut => "mut",
            Tok::If => "if",
            Tok::Else => "else",
            Tok::For => "for",
            Tok::In => "in",
            Tok::Step => "step",
            Tok::Unroll => "unroll",
            Tok::While => "while",
            Tok::Assert => "assert",
            Tok::Print => "print",
            Tok::Grid => "grid",
            Tok::Scratch => "scratch",
            Tok::Prefetch => "prefetch",
            Tok::Block => "block",
            Tok::At => "at",
            Tok::Aliases => "aliases",
            Tok::Buffered => "buffered",
            Tok::Parallel => "parallel",
            Tok::Arbitrary => "arbitrary",
            Tok::Vmem => "vmem",
            Tok::Smem => "smem",
            Tok::Any => "any",
            Tok::DmaSem => "dma_sem",
            Tok::BarrierSem => "barrier_sem",
            Tok::Mesh => "mesh",
            Tok::CollectiveId => "collective_id",
            Tok::Dtype => "dtype",
            Tok::VmemLimit => "vmem_limit",
            Tok::True => "true",
            Tok::False => "false",
            Tok::As => "as",
            Tok::None => "none",
            Tok::Is => "is",
            Tok::Not => "not",
            Tok::Question => "?",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Colon => ":",
            Tok::ColonColon => "::",
            Tok::DotDot => "..",
            Tok::Dot => ".",
            Tok::DotDotEq => "..=",
            Tok::Arrow => "->",
            Tok::Eq => "=",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Bang => "!",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Amp => "&",
            Tok::Pipe => "|",
            Tok::Caret => "^",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::PlusEq => "+=",
            Tok::MinusEq => "-=",
            Tok::StarEq => "*=",
            Tok::SlashEq => "/=",
            Tok::Underscore => "_",
            Tok::Ident(_) | Tok::Int(_) | Tok::Float(_) | Tok::Str(_) => "",
            Tok::DocComment(_) | Tok::ModuleDoc(_) | Tok::Comment => "",
        }
    }
}

/// A token with its byte range.
pub type Spanned = (usize, Tok, usize);

/// A lexing error with its byte range.
#[derive(Debug, Clone, PartialEq)]
pub struct LexErrorAt {
    pub kind: LexError,
    pub start: usize,
    pub end: usize,
}

/// Lexes `text` completely. Lexing never stops at an error: bad characters
/// are reported and skipped so the parser can still report what follows.
pub fn lex(text: &str) -> (Vec<Spanned>, Vec<LexErrorAt>) {
    let mut toks = Vec::new();
    let mut errs: Vec<LexErrorAt> = Vec::new();
    let mut lexer = Tok::lexer(text);
    while let Some(r) = lexer.next() {
        let sp = lexer.span();
        match r {
            Ok(t) => toks.push((sp.start, t, sp.end)),
            Err(kind) => {
                // A malformed number still stands where a number was: the
                // parser goes on without a follow-on error.
                match kind {
                    LexError::IntTooLarge => toks.push((sp.start, Tok::Int(u64::MAX), sp.end)),
                    LexError::BadFloat | LexError::FloatTooLarge => {
                        toks.push((sp.start, Tok::Float(0.0), sp.end))
                    }
                    _ => {}
                }
                // Merge runs of adjacent invalid characters into one error.
                if let Some(last) = errs.last_mut() {
                    if last.kind == LexError::Invalid
                        && kind == LexError::Invalid
                        && last.end == sp.start
                    {
                        last.end = sp.end;
                        continue;
                    }
                }
                errs.push(LexErrorAt {
                    kind,
                    start: sp.start,
                    end: sp.end,
                })
            }
        }
    }
    (attach_docs(toks), errs)
}

/// Keeps a doc comment only where the grammar accepts one: before `kernel`,
/// `fn`, `const`, a `name:` declaration, or any parameter in a kernel's
/// `<...>` list (`M = 1024`, `bm`). Elsewhere it is an ordinary comment.
/// Module docs are kept only before the first other token.
fn attach_docs(toks: Vec<Spanned>) -> Vec<Spanned> {
    let mut out = Vec::with_capacity(toks.len());
    let mut seen_code = false;
    // Inside `kernel NAME < ... >`: parameter defaults are sums, with no
    // `<` or `>` of their own, so the first `>` ends the list.
    let mut in_params = false;
    for i in 0..toks.len() {
        match &toks[i].1 {
            Tok::Lt
                if i >= 2
                    && matches!(
                        (&toks[i - 2].1, &toks[i - 1].1),
                        (Tok::Kernel, Tok::Ident(_))
                    ) =>
            {
                in_params = true
            }
            Tok::Gt => in_params = false,
            _ => {}
        }
        let keep = match &toks[i].1 {
            Tok::ModuleDoc(_) => !seen_code,
            Tok::DocComment(_) => {
                let mut j = i + 1;
                while j < toks.len() && matches!(toks[j].1, Tok::DocComment(_)) {
                    j += 1;
                }
                match toks.get(j).map(|t| &t.1) {
                    Some(Tok::Kernel | Tok::Fn | Tok::Const) => true,
                    Some(Tok::Ident(_)) => {
                        in_params || matches!(toks.get(j + 1).map(|t| &t.1), Some(Tok::Colon))
                    }
                    _ => false,
                }
            }
            _ => {
                seen_code = true;
                true
            }
        };
        if keep {
            if matches!(toks[i].1, Tok::DocComment(_)) {
                seen_code = true;
            }
            out.push(toks[i].clone());
        }
    }
    out
}
