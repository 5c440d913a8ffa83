//! The workspace file `pk.toml`: the targets and parameter sets that
//! `pkc check` and the language server check a kernel for when the
//! command line does not say.
//!
//! ```toml
//! targets = ["v5e", "v6e"]   # default: v5e, as `pkc check`
//!
//! [[params]]                 # one table per parameter set; default: none
//! M = 1024
//! dtype = "bf16"
//! ```
//!
//! The file is found in the directory of the checked file or the nearest
//! directory above it that has one.

use crate::diag::{codes, Diag};
use crate::span::Span;
use crate::target::Target;
use std::path::{Path, PathBuf};

/// The file name looked for.
pub const FILE_NAME: &str = "pk.toml";

/// What a workspace asks to be checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    /// The `pk.toml` read, if any.
    pub path: Option<PathBuf>,
    /// At least one target.
    pub targets: Vec<Target>,
    /// At least one parameter set (the empty set when the file names none),
    /// each value as `-p` takes it.
    pub params: Vec<Vec<(String, String)>>,
}

impl Default for Workspace {
    /// `pkc check`'s defaults: the default target, no parameters.
    fn default() -> Workspace {
        Workspace {
            path: None,
            targets: vec![Target::default()],
            params: vec![Vec::new()],
        }
    }
}

impl Workspace {
    /// The workspace of a source file: the nearest `pk.toml` at or above
    /// `dir`, or the defaults without one.
    pub fn find(dir: &Path) -> Result<Workspace, Box<Diag>> {
        for d in dir.ancestors() {
            let p = d.join(FILE_NAME);
            if p.is_file() {
                return Workspace::read(&p);
            }
        }
        Ok(Workspace::default())
    }

    /// Reads one `pk.toml`.
    pub fn read(path: &Path) -> Result<Workspace, Box<Diag>> {
        let text =
            std::fs::read_to_string(path).map_err(|e| bad(path, format!("cannot be read: {e}")))?;
        let mut w = Workspace::parse(&text).map_err(|m| bad(path, format!("is not valid: {m}")))?;
        w.path = Some(path.to_path_buf());
        Ok(w)
    }

    /// Parses the text of a `pk.toml`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Workspace, String> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| e.message().to_string())?;
        let mut w = Workspace::default();
        for (key, value) in &table {
            match key.as_str() {
                "targets" => {
                    let list = value
                        .as_array()
                        .ok_or("`targets` must be a list of target names")?;
                    let mut ts = Vec::new();
                    for t in list {
                        let name = t
                            .as_str()
                            .ok_or("`targets` must be a list of target names")?;
                        let t: Target = name.parse().map_err(|e: String| e)?;
                        if !ts.contains(&t) {
                            ts.push(t);
                        }
                    }
                    if ts.is_empty() {
                        return Err("`targets` names no target".into());
                    }
                    w.targets = ts;
                }
                "params" => {
                    let sets = value
                        .as_array()
                        .ok_or("`params` must be tables: `[[params]]` then `NAME = VALUE` lines")?;
                    let mut out = Vec::new();
                    for set in sets {
                        let t = set.as_table().ok_or(
                            "`params` must be tables: `[[params]]` then `NAME = VALUE` lines",
                        )?;
                        let mut one = Vec::new();
                        for (n, v) in t {
                            let v = match v {
                                toml::Value::Integer(i) => i.to_string(),
                                toml::Value::Float(x) => format!("{x:?}"),
                                toml::Value::Boolean(b) => b.to_string(),
                                toml::Value::String(s) => s.clone(),
                                _ => {
                                    return Err(format!(
                                        "parameter `{n}` must be an integer, a float, a bool or a string"
                                    ))
                                }
                            };
                            one.push((n.clone(), v));
                        }
                        out.push(one);
                    }
                    if !out.is_empty() {
                        w.params = out;
                    }
                }
                other => return Err(format!("unknown key `{other}` (keys: targets, params)")),
            }
        }
        Ok(w)
    }
}

fn bad(path: &Path, why: String) -> Box<Diag> {
    Box::new(
        Diag::new(
            &codes::BAD_WORKSPACE,
            format!("`{}` {why}", path.display()),
            Span::default(),
        )
        .help("see docs/editor.md for the format of pk.toml"),
    )
}
