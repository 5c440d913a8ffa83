//! The language server's latency on `kernels/flash.pk`, end to end: this
//! bench starts `pkc lsp`, opens the kernel, and times (a) an edit until
//! the diagnostics of the new version arrive (the 30 ms debounce
//! included), (b) a hover and (c) a go to definition on the analysed
//! text. It also times the analysis alone in process. Medians over
//! `PK_LSP_ROUNDS` rounds (default 20). Goals: diagnostics <= 100 ms,
//! hover and definition <= 20 ms.
//!
//!     cargo bench -j2 --bench lsp

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

struct Client {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: i64,
}

impl Client {
    fn send(&mut self, v: Value) {
        let body = v.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len())
            .expect("write to pkc lsp");
        self.stdin.flush().expect("flush");
    }

    fn recv(&mut self) -> Value {
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("read from pkc lsp");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                len = n.parse().expect("a length");
            }
        }
        let mut buf = vec![0; len];
        self.stdout.read_exact(&mut buf).expect("a message body");
        serde_json::from_slice(&buf).expect("JSON")
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self.recv();
            if m.get("id") == Some(&json!(id)) {
                return m;
            }
        }
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Waits for the diagnostics of `version`.
    fn diagnostics(&mut self, version: i64) -> Value {
        loop {
            let m = self.recv();
            if m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["version"] == json!(version)
            {
                return m;
            }
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("kernels/flash.pk");
    let text = std::fs::read_to_string(&path).expect("kernels/flash.pk");
    let rounds: usize = std::env::var("PK_LSP_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);

    // The analysis alone, as the server runs it after an edit: the
    // document's session takes the new text (only the root file is parsed
    // and resolved again; `use`d modules are kept), then it is checked and
    // indexed. And the same from nothing: a new session per text.
    let ws = pk_lang::analysis::Workspace::default();
    let name = path.to_string_lossy().to_string();
    let dir = path.parent().map(|p| p.to_path_buf());
    let mut session = pk_lang::Session::from_text(&name, &text, dir.clone());
    let (mut analyse, mut cold) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let edited = if r % 2 == 0 {
            format!(" {text}")
        } else {
            text.clone()
        };
        let t = Instant::now();
        session.edit(&edited);
        let a = pk_lang::analysis::Analysis::of(&session, &ws);
        analyse.push(t.elapsed());
        assert!(
            a.diags.iter().all(|d| !d.diag.is_error()),
            "flash.pk checks"
        );
        let t = Instant::now();
        let a = pk_lang::analysis::Analysis::run(&name, &edited, dir.clone(), &ws);
        cold.push(t.elapsed());
        assert!(
            a.diags.iter().all(|d| !d.diag.is_error()),
            "flash.pk checks"
        );
    }

    let mut child = Command::new(env!("CARGO_BIN_EXE_pkc"))
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("pkc lsp starts");
    let mut c = Client {
        stdin: child.stdin.take().expect("stdin"),
        stdout: BufReader::new(child.stdout.take().expect("stdout")),
        next: 0,
    };
    c.request("initialize", json!({"capabilities": {}}));
    c.notify("initialized", json!({}));
    let uri = format!("file://{}", path.display());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "pk", "version": 1, "text": text}}),
    );
    c.diagnostics(1);
    // A name used in the body, for hover and definition: the first
    // immutable `let` (`let rows = ...`).
    let (line, col) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| {
            let c = l.find("let ")?;
            (!l[c..].starts_with("let mut ")).then_some((i, c + 4))
        })
        .expect("flash.pk has a let");
    let (mut diag, mut hover, mut def) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let version = 2 + r as i64;
        // Type a space at the end of the first line and take it back on
        // the next round: the text alternates, as when typing.
        let change = if r % 2 == 0 {
            json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": " "})
        } else {
            json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "text": ""})
        };
        let t = Instant::now();
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}),
        );
        c.diagnostics(version);
        diag.push(t.elapsed());
        let pos =
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": col}});
        let t = Instant::now();
        let h = c.request("textDocument/hover", pos.clone());
        hover.push(t.elapsed());
        assert!(h["result"].is_object(), "a hover: {h}");
        let t = Instant::now();
        let d = c.request("textDocument/definition", pos);
        def.push(t.elapsed());
        assert!(d["result"].is_object(), "a definition: {d}");
    }
    c.request("shutdown", Value::Null);
    c.notify("exit", Value::Null);
    let _ = child.wait();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("pkc lsp on kernels/flash.pk, medians of {rounds} rounds:");
    println!(
        "  analysis after an edit (session kept)     {:7.2} ms",
        ms(median(analyse))
    );
    println!(
        "  analysis from a new session               {:7.2} ms",
        ms(median(cold))
    );
    println!(
        "  edit -> diagnostics (30 ms debounce incl.) {:7.2} ms  (goal <= 100)",
        ms(median(diag))
    );
    println!(
        "  hover                                     {:7.2} ms  (goal <= 20)",
        ms(median(hover))
    );
    println!(
        "  definition                                {:7.2} ms  (goal <= 20)",
        ms(median(def))
    );
}
