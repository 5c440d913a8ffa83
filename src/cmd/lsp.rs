//! `pkc lsp`: the language server, over stdio.
//!
//! Built on rust-analyzer's `lsp-server` (the message loop and the JSON-RPC
//! framing) and `lsp-types` (the protocol's types): the same pair
//! rust-analyzer itself runs on, synchronous, with no async runtime to
//! carry. All language knowledge is in `pk_lang::analysis`; this file turns
//! positions into offsets and answers into protocol types.
//!
//! The main loop never analyses. An edit stores the text and, once the
//! document has been quiet for [`DEBOUNCE`], sends it to the analysis
//! thread; the result comes back as an event, and diagnostics are
//! published for it. Requests are answered from the analysis of the
//! document's current version; one that arrives before it is ready waits
//! in `pending` (where `$/cancelRequest` finds it) and is answered when the
//! analysis arrives. An analysis of a version that was edited meanwhile is
//! dropped: its answers would point at the wrong text.

mod convert;
mod handlers;

use clap::Args as ClapArgs;
use crossbeam_channel::{select, unbounded, Receiver, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::{self as lsp, Uri};
use pk_lang::analysis::{Analysis, Workspace};
use pk_lang::Session;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a document must be quiet after an edit before it is analysed:
/// typing a word analyses once, not once per key.
pub const DEBOUNCE: Duration = Duration::from_millis(30);

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Speak LSP over stdin/stdout (the only transport; accepted for
    /// clients that pass it).
    #[arg(long)]
    pub stdio: bool,
}

pub fn run(_a: Args) -> u8 {
    let (conn, io) = Connection::stdio();
    let code = match serve(&conn) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pkc lsp: {e}");
            1
        }
    };
    drop(conn);
    let _ = io.join();
    code
}

/// One open document.
struct Doc {
    text: String,
    version: i32,
    /// When the text last changed and has not been sent for analysis.
    dirty: Option<Instant>,
    analysis: Option<Arc<Analysis>>,
    /// The version `analysis` is of.
    analysed: i32,
}

/// A request waiting for the analysis of its document's current version.
struct Pending {
    req: Request,
    uri: Uri,
}

/// The server's state on the main loop.
pub struct Server<'c> {
    conn: &'c Connection,
    docs: HashMap<Uri, Doc>,
    pending: Vec<Pending>,
    jobs: Sender<Job>,
    workspaces: HashMap<PathBuf, Workspace>,
}

/// Work for the analysis thread.
enum Job {
    /// Analyse this version of a document.
    Analyse {
        uri: Uri,
        version: i32,
        text: String,
        workspace: Workspace,
        /// Read the document's `use`d files from the disk again first
        /// (one was saved).
        reload: bool,
    },
    /// The document was closed: forget its session.
    Close(Uri),
}

struct Done {
    uri: Uri,
    version: i32,
    analysis: Arc<Analysis>,
}

fn serve(conn: &Connection) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let caps = capabilities();
    // pk needs nothing from the client's side of the handshake.
    conn.initialize(serde_json::to_value(caps)?)?;
    let (jobs, job_rx) = unbounded::<Job>();
    let (done_tx, done_rx) = unbounded::<Done>();
    let worker = std::thread::Builder::new()
        .name("pk-analysis".into())
        .spawn(move || analyse_jobs(job_rx, done_tx))?;
    let mut s = Server {
        conn,
        docs: HashMap::new(),
        pending: Vec::new(),
        jobs,
        workspaces: HashMap::new(),
    };
    let result = s.main_loop(&done_rx);
    drop(s);
    let _ = worker.join();
    result
}

/// The analysis thread: keeps a [`Session`] per open document, so that an
/// edit parses and resolves only what changed, and analyses the newest
/// version of each document it is sent.
fn analyse_jobs(rx: Receiver<Job>, tx: Sender<Done>) {
    // By the URI's text (`Uri` caches parts of itself in cells).
    let mut sessions: HashMap<String, Session> = HashMap::new();
    while let Ok(first) = rx.recv() {
        // Only the newest text of a document is worth analysing.
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        let mut newest: Vec<(Uri, i32, String, Workspace, bool)> = Vec::new();
        for j in batch {
            match j {
                Job::Close(uri) => {
                    sessions.remove(uri.as_str());
                    newest.retain(|n| n.0 != uri);
                }
                Job::Analyse {
                    uri,
                    version,
                    text,
                    workspace,
                    reload,
                } => match newest.iter_mut().find(|n| n.0 == uri) {
                    Some(n) if n.1 <= version => {
                        let reload = reload || n.4;
                        *n = (uri, version, text, workspace, reload);
                    }
                    Some(_) => {}
                    None => newest.push((uri, version, text, workspace, reload)),
                },
            }
        }
        for (uri, version, text, workspace, reload) in newest {
            let session = match sessions.get_mut(uri.as_str()) {
                Some(s) => {
                    if reload {
                        s.reload();
                    }
                    s.edit(&text);
                    s
                }
                None => {
                    let (name, dir) = convert::file_of(&uri);
                    sessions
                        .entry(uri.as_str().to_string())
                        .or_insert_with(|| Session::from_text(&name, &text, dir))
                }
            };
            let analysis = Analysis::of(session, &workspace);
            let done = Done {
                uri,
                version,
                analysis: Arc::new(analysis),
            };
            if tx.send(done).is_err() {
                return;
            }
        }
    }
}

impl Server<'_> {
    fn main_loop(
        &mut self,
        done: &Receiver<Done>,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let incoming = self.conn.receiver.clone();
        loop {
            let timeout = self.next_deadline();
            select! {
                recv(incoming) -> msg => {
                    let Ok(msg) = msg else { return Ok(()) };
                    match msg {
                        Message::Request(req) => {
                            if self.conn.handle_shutdown(&req)? {
                                return Ok(());
                            }
                            self.request(req);
                        }
                        Message::Notification(n) => self.notification(n),
                        Message::Response(_) => {}
                    }
                }
                recv(done) -> d => {
                    if let Ok(d) = d {
                        self.analysed(d);
                    }
                }
                default(timeout) => {}
            }
            self.flush_dirty();
        }
    }

    /// How long the loop may sleep before a dirty document is due.
    fn next_deadline(&self) -> Duration {
        self.docs
            .values()
            .filter_map(|d| d.dirty)
            .map(|t| DEBOUNCE.saturating_sub(t.elapsed()))
            .min()
            .unwrap_or(Duration::from_secs(3600))
    }

    /// Sends every document quiet for [`DEBOUNCE`] to the analysis thread.
    fn flush_dirty(&mut self) {
        let due: Vec<Uri> = self
            .docs
            .iter()
            .filter(|(_, d)| d.dirty.is_some_and(|t| t.elapsed() >= DEBOUNCE))
            .map(|(u, _)| u.clone())
            .collect();
        for uri in due {
            self.send_job(&uri, false);
        }
    }

    fn send_job(&mut self, uri: &Uri, reload: bool) {
        let workspace = self.workspace_of(uri);
        let Some(doc) = self.docs.get_mut(uri) else {
            return;
        };
        doc.dirty = None;
        let _ = self.jobs.send(Job::Analyse {
            uri: uri.clone(),
            version: doc.version,
            text: doc.text.clone(),
            workspace,
            reload,
        });
    }

    /// The workspace of a document: its `pk.toml`, read once per
    /// directory (again when a `pk.toml` is saved).
    fn workspace_of(&mut self, uri: &Uri) -> Workspace {
        let (_, dir) = convert::file_of(uri);
        let Some(dir) = dir else {
            return Workspace::default();
        };
        if let Some(w) = self.workspaces.get(&dir) {
            return w.clone();
        }
        let w = match Workspace::find(&dir) {
            Ok(w) => w,
            Err(d) => {
                self.show_message(
                    lsp::MessageType::WARNING,
                    &format!("{}: {}", d.code.code, d.message),
                );
                Workspace::default()
            }
        };
        self.workspaces.insert(dir, w.clone());
        w
    }

    fn show_message(&self, typ: lsp::MessageType, message: &str) {
        self.notify::<lsp::notification::ShowMessage>(lsp::ShowMessageParams {
            typ,
            message: message.to_string(),
        });
    }

    fn notify<N: lsp::notification::Notification>(&self, params: N::Params) {
        let n = Notification::new(N::METHOD.to_string(), params);
        let _ = self.conn.sender.send(Message::Notification(n));
    }

    fn analysed(&mut self, d: Done) {
        let Some(doc) = self.docs.get_mut(&d.uri) else {
            return;
        };
        if d.version != doc.version {
            return;
        }
        doc.analysis = Some(d.analysis.clone());
        doc.analysed = d.version;
        let diags = convert::diagnostics(&d.analysis, &d.uri);
        self.notify::<lsp::notification::PublishDiagnostics>(lsp::PublishDiagnosticsParams {
            uri: d.uri.clone(),
            diagnostics: diags,
            version: Some(d.version),
        });
        let waiting: Vec<Pending> = std::mem::take(&mut self.pending);
        for p in waiting {
            if p.uri == d.uri {
                self.answer(p.req, &d.analysis);
            } else {
                self.pending.push(p);
            }
        }
    }

    fn notification(&mut self, n: Notification) {
        use lsp::notification::*;
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                if let Ok(p) =
                    n.extract::<lsp::DidOpenTextDocumentParams>(DidOpenTextDocument::METHOD)
                {
                    let uri = p.text_document.uri;
                    self.docs.insert(
                        uri.clone(),
                        Doc {
                            text: p.text_document.text,
                            version: p.text_document.version,
                            dirty: None,
                            analysis: None,
                            analysed: i32::MIN,
                        },
                    );
                    // Opening is not typing: analyse at once.
                    self.send_job(&uri, false);
                }
            }
            DidChangeTextDocument::METHOD => {
                if let Ok(p) =
                    n.extract::<lsp::DidChangeTextDocumentParams>(DidChangeTextDocument::METHOD)
                {
                    if let Some(doc) = self.docs.get_mut(&p.text_document.uri) {
                        for c in p.content_changes {
                            convert::apply_change(&mut doc.text, c);
                        }
                        doc.version = p.text_document.version;
                        doc.dirty = Some(Instant::now());
                    }
                }
            }
            DidCloseTextDocument::METHOD => {
                if let Ok(p) =
                    n.extract::<lsp::DidCloseTextDocumentParams>(DidCloseTextDocument::METHOD)
                {
                    self.docs.remove(&p.text_document.uri);
                    let _ = self.jobs.send(Job::Close(p.text_document.uri.clone()));
                    self.notify::<PublishDiagnostics>(lsp::PublishDiagnosticsParams {
                        uri: p.text_document.uri,
                        diagnostics: Vec::new(),
                        version: None,
                    });
                }
            }
            DidSaveTextDocument::METHOD => {
                if let Ok(p) =
                    n.extract::<lsp::DidSaveTextDocumentParams>(DidSaveTextDocument::METHOD)
                {
                    // A saved `pk.toml` changes what is checked; a saved
                    // `.pk` file may be `use`d by the other documents.
                    let saved = p.text_document.uri;
                    let toml = saved
                        .as_str()
                        .ends_with(pk_lang::analysis::workspace::FILE_NAME);
                    if toml {
                        self.workspaces.clear();
                    }
                    if toml || saved.as_str().ends_with(".pk") {
                        let uris: Vec<Uri> =
                            self.docs.keys().filter(|u| **u != saved).cloned().collect();
                        for u in uris {
                            self.send_job(&u, true);
                        }
                    }
                }
            }
            Cancel::METHOD => {
                if let Ok(p) = n.extract::<lsp::CancelParams>(Cancel::METHOD) {
                    let id: RequestId = match p.id {
                        lsp::NumberOrString::Number(i) => i.into(),
                        lsp::NumberOrString::String(s) => s.into(),
                    };
                    if let Some(i) = self.pending.iter().position(|q| q.req.id == id) {
                        let q = self.pending.remove(i);
                        self.reply_error(q.req.id, ErrorCode::RequestCanceled, "canceled");
                    }
                }
            }
            _ => {}
        }
    }

    fn request(&mut self, req: Request) {
        let uri = convert::request_uri(&req);
        let Some(uri) = uri else {
            return self.reply_error(req.id, ErrorCode::MethodNotFound, "unknown request");
        };
        let Some(doc) = self.docs.get(&uri) else {
            return self.reply(req.id, serde_json::Value::Null);
        };
        match &doc.analysis {
            Some(a) if doc.analysed == doc.version => {
                let a = a.clone();
                self.answer(req, &a);
            }
            _ => {
                // Analysed when the debounce ends; answered then.
                self.pending.push(Pending { req, uri });
            }
        }
    }

    fn answer(&self, req: Request, a: &Analysis) {
        let id = req.id.clone();
        // A bug in a handler must cost one answer, not the session.
        let out =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handlers::handle(req, a)));
        match out {
            Ok(Ok(v)) => self.reply(id, v),
            Ok(Err(m)) => self.reply_error(id, ErrorCode::MethodNotFound, &m),
            Err(_) => self.reply_error(id, ErrorCode::InternalError, "internal error in pkc lsp"),
        }
    }

    fn reply(&self, id: RequestId, v: serde_json::Value) {
        let _ = self
            .conn
            .sender
            .send(Message::Response(Response::new_ok(id, v)));
    }

    fn reply_error(&self, id: RequestId, code: ErrorCode, m: &str) {
        let _ = self.conn.sender.send(Message::Response(Response::new_err(
            id,
            code as i32,
            m.to_string(),
        )));
    }
}

fn capabilities() -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        position_encoding: Some(lsp::PositionEncodingKind::UTF16),
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
            lsp::TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
                ..Default::default()
            },
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec![":".into(), ".".into()]),
            ..Default::default()
        }),
        signature_help_provider: Some(lsp::SignatureHelpOptions {
            trigger_characters: Some(vec!["(".into(), ",".into()]),
            ..Default::default()
        }),
        inlay_hint_provider: Some(lsp::OneOf::Left(true)),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Simple(true)),
        semantic_tokens_provider: Some(
            lsp::SemanticTokensServerCapabilities::SemanticTokensOptions(
                lsp::SemanticTokensOptions {
                    legend: convert::legend(),
                    full: Some(lsp::SemanticTokensFullOptions::Bool(true)),
                    range: None,
                    ..Default::default()
                },
            ),
        ),
        ..Default::default()
    }
}
