//! Parsing: source text -> [`ast::Module`], with every lexing and syntax
//! error turned into a coded [`Diag`]. The parser recovers at statement
//! boundaries, so one run reports several syntax errors.

use crate::ast::*;
use crate::diag::{codes, Diag};
use crate::lexer::{self, LexError, Tok};
use crate::span::{FileId, Span};
use lalrpop_util::{lalrpop_mod, ErrorRecovery, ParseError};

lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, unused)]
    grammar
);

/// Inputs deeper than this many open brackets are rejected before parsing,
/// so that no later recursive pass can overflow the stack.
pub const MAX_NESTING: usize = 200;

/// Errors raised by grammar actions.
#[derive(Debug, Clone, PartialEq)]
pub enum GrammarError {
    BadParamKind(Span),
    /// Candidates that are neither a list, a range nor `pow2(lo, hi)`.
    BadCandidates(Span),
    /// A clause keyword that is not one (`wher bk > 0`).
    BadClause(Span),
    /// A scratch kind that is not one (`buf: vmme f32[8, 128]`).
    BadScratchKind(Span),
}

type Action<T> = Result<T, ParseError<usize, Tok, GrammarError>>;

/// A list `[128, 256]` or `pow2(lo, hi)` after `in`, which the grammar
/// reads as an expression.
pub(crate) fn candidates_expr(call: Expr, span: Span) -> Action<Candidates> {
    if let ExprKind::List(items) = &call.kind {
        return Ok(Candidates::List(items.clone(), span));
    }
    if let ExprKind::Call(path, args) = &call.kind {
        let named = path.segments.len() == 1 && path.segments[0].name == "pow2";
        if named && args.len() == 2 && args.iter().all(|a| a.name.is_none()) {
            return Ok(Candidates::Pow2 {
                lo: args[0].value.clone(),
                hi: args[1].value.clone(),
                span,
            });
        }
    }
    Err(ParseError::User {
        error: GrammarError::BadCandidates(span),
    })
}

/// `where COND` as a kernel clause; any other word there is an error.
pub(crate) fn where_clause(kw: String, cond: Expr, span: Span) -> Action<Clause> {
    if kw == "where" {
        Ok(Clause::Where(cond, span))
    } else {
        let start = span.start as usize;
        Err(ParseError::User {
            error: GrammarError::BadClause(Span::new(span.file, start, start + kw.len())),
        })
    }
}

/// The diagnostics of the lexer's errors in `text`.
fn lex_diags(file: FileId, text: &str, lex_errors: &[lexer::LexErrorAt]) -> Vec<Diag> {
    lex_errors
        .iter()
        .map(|e| {
            let span = Span::new(file, e.start, e.end);
            match e.kind {
                LexError::UnterminatedComment => Diag::new(&codes::UNTERMINATED_COMMENT, "unterminated block comment", span)
                    .label("this comment is never closed")
                    .help("close it with `*/` (block comments nest, so every `/*` needs its own `*/`)"),
                LexError::IntTooLarge => Diag::new(&codes::NUMBER_OUT_OF_RANGE, "integer literal is too large", span)
                    .label("does not fit in 64 bits")
                    .help("integer literals must be below 2^64; TPU integers are at most 32 bits"),
                LexError::BadFloat => Diag::new(&codes::NUMBER_OUT_OF_RANGE, "malformed number", span)
                    .label("not a valid number"),
                LexError::FloatTooLarge => Diag::new(&codes::NUMBER_OUT_OF_RANGE, "float literal is too large", span)
                    .label("past the largest 64-bit float: it would be infinity")
                    .help("write `inf` where infinity is meant"),
                LexError::Invalid => {
                    let bad = text.get(e.start..e.end).unwrap_or("");
                    let shown: String = bad.chars().take(16).flat_map(char::escape_default).collect();
                    Diag::new(&codes::INVALID_CHARACTER, format!("unexpected character{} `{shown}`", if bad.chars().count() > 1 { "s" } else { "" }), span)
                        .label("not part of any token")
                        .help("pk source is ASCII identifiers, numbers and operators; remove or quote-free this text")
                }
            }
        })
        .collect()
}

/// Parses one file. Returns the module (possibly partial) and every
/// diagnostic found; an empty diagnostic list means the parse succeeded.
pub fn parse(file: FileId, text: &str) -> (Module, Vec<Diag>) {
    let (toks, lex_errors) = lexer::lex(text);
    let mut diags: Vec<Diag> = lex_diags(file, text, &lex_errors);

    if let Some(span) = too_deep(file, &toks) {
        diags.push(
            Diag::new(
                &codes::NESTING_TOO_DEEP,
                format!("nesting deeper than {MAX_NESTING} levels"),
                span,
            )
            .label("this bracket opens one level too many")
            .help("split the expression into `let` bindings"),
        );
        return (Module::default(), diags);
    }

    let mut recovered: Vec<ErrorRecovery<usize, Tok, GrammarError>> = Vec::new();
    let parser = grammar::ModuleParser::new();
    let result = parser.parse(
        file,
        &mut recovered,
        toks.into_iter().map(Ok::<_, GrammarError>),
    );
    // A syntax error on the line of a bad character follows from it (`a @ b`
    // reads as `a b`): only the character is reported.
    let newlines: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
    let lex_lines: std::collections::HashSet<usize> = lex_errors
        .iter()
        .filter(|e| e.kind == LexError::Invalid)
        .map(|e| line_of(&newlines, e.start))
        .collect();
    // An unterminated comment runs to the end of the file, so the end of
    // file comes too early: that follows from it as well.
    let open_comment = lex_errors
        .iter()
        .any(|e| e.kind == LexError::UnterminatedComment);
    let is_follow_on = |d: &Diag| {
        lex_lines.contains(&line_of(&newlines, d.span.start as usize))
            || (open_comment && d.code.code == codes::UNEXPECTED_EOF.code)
    };
    // Recovery skips tokens up to the next `;`. When the skipped tokens open
    // a block (`for h in 0..4 unroll {`), the `}` that closed it now closes
    // the enclosing one, and the parser stumbles over a `}` further on: that
    // error follows from the first one, so it is not reported.
    let mut unclosed = 0usize;
    let cascade = |unclosed: &mut usize, e: &ParseError<usize, Tok, GrammarError>| {
        let at_close = matches!(
            e,
            ParseError::UnrecognizedToken {
                token: (_, Tok::RBrace, _),
                ..
            } | ParseError::ExtraToken {
                token: (_, Tok::RBrace, _)
            }
        );
        if at_close && *unclosed > 0 {
            *unclosed -= 1;
            return true;
        }
        false
    };
    for r in recovered {
        let follows = cascade(&mut unclosed, &r.error);
        let d = parse_error(file, text, r.error);
        if !follows && !is_follow_on(&d) {
            diags.push(d);
        }
        for (_, t, _) in &r.dropped_tokens {
            match t {
                Tok::LBrace => unclosed += 1,
                Tok::RBrace => unclosed = unclosed.saturating_sub(1),
                _ => {}
            }
        }
    }
    match result {
        Err(e) => {
            let follows = cascade(&mut unclosed, &e);
            let d = parse_error(file, text, e);
            if (!follows && !is_follow_on(&d)) || diags.is_empty() {
                diags.push(d);
            }
            (Module::default(), diags)
        }
        Ok(m) => match crate::depth::too_deep(&m) {
            Some(span) => {
                diags.push(deep_tree(span));
                (Module::default(), diags)
            }
            None => (m, diags),
        },
    }
}

/// The 0-based line of byte offset `at`, given the offsets of every `\n`.
fn line_of(newlines: &[usize], at: usize) -> usize {
    newlines.partition_point(|&n| n < at)
}

/// Parses a standalone expression (used for `-p NAME=EXPR` values and tests).
pub fn parse_expr(file: FileId, text: &str) -> Result<Expr, Vec<Diag>> {
    let (toks, lex_errors) = lexer::lex(text);
    if !lex_errors.is_empty() {
        return Err(lex_diags(file, text, &lex_errors));
    }
    if let Some(span) = too_deep(file, &toks) {
        return Err(vec![Diag::new(
            &codes::NESTING_TOO_DEEP,
            "expression nested too deeply",
            span,
        )]);
    }
    let mut recovered = Vec::new();
    grammar::ExprParser::new()
        .parse(
            file,
            &mut recovered,
            toks.into_iter().map(Ok::<_, GrammarError>),
        )
        .map_err(|e| vec![parse_error(file, text, e)])
        .and_then(|e| match crate::depth::expr_too_deep(&e) {
            Some(span) => Err(vec![deep_tree(span)]),
            None => Ok(e),
        })
}

/// PK0006 for a tree nested deeper than [`crate::depth::MAX_TREE_DEPTH`]
/// without brackets (long operator, cast, index or `else if` chains).
fn deep_tree(span: Span) -> Diag {
    Diag::new(
        &codes::NESTING_TOO_DEEP,
        format!(
            "expression nested deeper than {} levels",
            crate::depth::MAX_TREE_DEPTH
        ),
        span,
    )
    .label("this part is too deep")
    .help("split long chains of operators, casts, indexes or `else if`s into `let` bindings")
}

fn too_deep(file: FileId, toks: &[lexer::Spanned]) -> Option<Span> {
    let mut depth = 0usize;
    for (l, t, r) in toks {
        match t {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(Span::new(file, *l, *r));
                }
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => depth = depth.saturating_sub(1),
            // Unary operators nest without brackets.
            Tok::Minus | Tok::Bang => {}
            _ => {}
        }
    }
    // Long chains of prefix operators also nest: count the longest run.
    let mut run = 0usize;
    for (l, t, r) in toks {
        if matches!(t, Tok::Minus | Tok::Bang) {
            run += 1;
            if run > MAX_NESTING {
                return Some(Span::new(file, *l, *r));
            }
        } else {
            run = 0;
        }
    }
    None
}

fn parse_error(file: FileId, text: &str, e: ParseError<usize, Tok, GrammarError>) -> Diag {
    match e {
        ParseError::InvalidToken { location } => Diag::new(
            &codes::INVALID_CHARACTER,
            "invalid token",
            Span::new(file, location, location + 1),
        ),
        ParseError::UnrecognizedEof { location, expected } => {
            let at = location.min(text.len());
            Diag::new(
                &codes::UNEXPECTED_EOF,
                "unexpected end of file",
                Span::new(file, at, at),
            )
            .label(format!("expected {}", expected_list(&expected)))
            .help("the file ends in the middle of a declaration; check for a missing `}` or `)`")
        }
        ParseError::UnrecognizedToken {
            token: (l, t, r),
            expected,
        } => {
            let mut d = Diag::new(
                &codes::UNEXPECTED_TOKEN,
                format!("unexpected {}", t.describe()),
                Span::new(file, l, r),
            )
            .label(format!("expected {}", expected_list(&expected)));
            if let Some(h) = hint_for(&t, &expected) {
                d = d.help(h);
            }
            d
        }
        ParseError::ExtraToken { token: (l, t, r) } => Diag::new(
            &codes::UNEXPECTED_TOKEN,
            format!("unexpected {}", t.describe()),
            Span::new(file, l, r),
        )
        .label("expected the end of the file"),
        ParseError::User {
            error: GrammarError::BadParamKind(span),
        } => Diag::new(
            &codes::UNEXPECTED_TOKEN,
            "a kernel parameter is an `int`, a `float`, a `bool` or a `dtype`",
            span,
        )
        .label("unknown parameter kind")
        .help("write `bm: int = 128` (or just `bm = 128`), `scale: float = 0.125`, `causal: bool = true` or `T: dtype = bf16`"),
        ParseError::User {
            error: GrammarError::BadScratchKind(span),
        } => Diag::new(
            &codes::UNEXPECTED_TOKEN,
            "a scratch buffer is in `vmem` or `smem`, or is a semaphore",
            span,
        )
        .label("unknown scratch kind")
        .help("write `acc: vmem f32[8, 128]`, `n: smem i32[1]`, `d: dma_sem[2]`, `s: sem[2]` or `b: barrier_sem`"),
        ParseError::User {
            error: GrammarError::BadCandidates(span),
        } => Diag::new(
            &codes::UNEXPECTED_TOKEN,
            "a tunable parameter's candidates are a list, a range or `pow2(lo, hi)`",
            span,
        )
        .label("not a set of candidates")
        .help("write `bm = 256 in [128, 256, 512]`, `bm = 256 in 128..=1024 step 128` or `bm = 256 in pow2(128, 1024)`"),
        ParseError::User {
            error: GrammarError::BadClause(span),
        } => Diag::new(
            &codes::UNEXPECTED_TOKEN,
            "expected a kernel clause or the kernel body",
            span,
        )
        .label("not a clause")
        .help("clauses are `grid (...)`, `prefetch (...)`, `scratch (...)`, `vmem_limit N`, `assert(...)` and `where COND`"),
    }
}

fn hint_for(t: &Tok, expected: &[String]) -> Option<String> {
    let wants = |s: &str| expected.iter().any(|e| e == s);
    if wants("\";\"") && !wants("\"}\"") {
        return Some("statements end with `;`".into());
    }
    if let Tok::Ident(name) = t {
        if name == "return" {
            return Some("a function returns the value of its last expression; write it without `;` at the end of the body".into());
        }
    }
    if matches!(t, Tok::Kernel | Tok::Fn) {
        return Some("the previous declaration is not closed; check its braces".into());
    }
    None
}

fn expected_list(expected: &[String]) -> String {
    let mut names: Vec<String> = expected
        .iter()
        .map(|e| match e.as_str() {
            "Ident" => "a name".to_string(),
            "Int" => "an integer".to_string(),
            "Float" => "a number".to_string(),
            "Doc" => "a doc comment".to_string(),
            "ModDoc" => "a module doc comment".to_string(),
            other => format!("`{}`", other.trim_matches('"')),
        })
        .filter(|s| s != "a doc comment" && s != "a module doc comment")
        .collect();
    names.sort();
    names.dedup();
    match names.len() {
        0 => "something else".into(),
        1 => names.remove(0),
        n if n > 8 => format!("one of {} (and {} more)", names[..8].join(", "), n - 8),
        _ => format!("one of {}", names.join(", ")),
    }
}

/// Builds a binary expression node (used by the grammar).
pub(crate) fn bin(op: BinOp, a: Expr, b: Expr, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
        span,
    }
}

/// A block whose last statement is an `if` without `;` and that has no tail
/// takes that `if` as its value, as in Rust.
pub(crate) fn finish_block(mut stmts: Vec<Stmt>, tail: Option<Expr>, span: Span) -> Block {
    let mut tail = tail.map(Box::new);
    if tail.is_none() {
        if let Some(Stmt::Expr(e)) = stmts.last() {
            if matches!(e.kind, ExprKind::If(..)) {
                if let Some(Stmt::Expr(e)) = stmts.pop() {
                    tail = Some(Box::new(e));
                }
            }
        }
    }
    Block { stmts, tail, span }
}
