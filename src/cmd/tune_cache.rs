//! The tuning cache as the commands use it: the key of a request, the
//! settings a `pkc tune` must share with an entry to be answered by it,
//! and `--tuned` of `pkc build` and `pkc run` (docs/tuning.md, "The
//! cache").
//!
//! invariant: an entry is used only through [`find`], which reads it
//! through `cache::lookup` (checked against the request's key and tuned
//! parameters) and reports a damaged one as the coded warning PK6008, so a
//! damaged entry is never used and never silently taken for a miss.
//! invariant: `--tuned` applies only the tuned parameters of an entry, and
//! never one given with `-p`.

use super::tune::{kernel_params, space_of, Args, Eval, TuneError};
use super::ui::{print_diagnostic, status};
use pk_lang::ir;
use pk_runtime::pjrt::{TpuTarget, LIBTPU_VERSION};
use pk_runtime::tune::cache::{self, Entry, Key, Lookup, Settings};
use pk_runtime::tune::report::param_json;
use pk_runtime::tune::space::{Config, Space};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Whether a parameter is tuned in `space`.
fn tuned(space: &Space, name: &str) -> bool {
    space.axes.iter().any(|a| a.name == name)
}

/// The values of the parameters of `params` that `space` does not tune,
/// as resolved, in declaration order: what the key of a request fixes.
pub(super) fn fixed_values(params: &[ir::Param], space: &Space) -> Vec<(String, String)> {
    params
        .iter()
        .filter(|p| !tuned(space, &p.name))
        .map(|p| (p.name.clone(), p.value.to_string()))
        .collect()
}

/// The same values as JSON of their own types, for the report.
pub(super) fn fixed_json(
    params: &[ir::Param],
    space: &Space,
) -> BTreeMap<String, serde_json::Value> {
    params
        .iter()
        .filter(|p| !tuned(space, &p.name))
        .map(|p| (p.name.clone(), param_json(&p.value)))
        .collect()
}

/// The cache key of a tuning of kernel `name` of the source `text` (whose
/// parameters, as resolved, are `params`) for `target` with `eval`.
pub(super) fn key(
    text: &str,
    name: &str,
    params: &[ir::Param],
    space: &Space,
    target: TpuTarget,
    eval: Eval,
) -> Key {
    Key {
        format: cache::FORMAT,
        source_sha256: cache::source_hash(text),
        kernel: name.to_string(),
        fixed: fixed_values(params, space),
        target: target.name().to_string(),
        evaluator: eval.name().to_string(),
        libtpu: LIBTPU_VERSION.to_string(),
        pk: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// The entry for `key` in `dir` with its path, when there is one. A
/// damaged one is reported as PK6008 with `then` (what happens instead) as
/// its help, and is not used: `Err`.
pub(super) fn find(
    dir: &Path,
    key: &Key,
    space: &Space,
    then: &str,
) -> Result<Option<(Entry, PathBuf)>, ()> {
    let tuned: Vec<(String, Vec<i64>)> = space
        .axes
        .iter()
        .map(|a| (a.name.clone(), a.candidates.clone()))
        .collect();
    let path = dir.join(key.file_name());
    match cache::lookup(dir, key, &tuned) {
        Lookup::Miss => Ok(None),
        Lookup::Hit(e) => Ok(Some((*e, path))),
        Lookup::Damaged(reason) => {
            print_diagnostic(&TuneError::DamagedEntry {
                path: path.display().to_string(),
                reason,
                help: then.to_string(),
            });
            Err(())
        }
    }
}

/// How `a` tunes, beyond the key: libtpu or not, the `--in` arrays (by the
/// sha256 of their files) and the limit of a CPU run.
pub(super) fn settings(a: &Args) -> Settings {
    Settings {
        aot: !a.no_aot,
        inputs: a
            .inputs
            .iter()
            .map(|(n, p)| {
                let hash = cache::file_sha256_hex(p);
                (n.clone(), hash)
            })
            .collect(),
        timeout_seconds: match a.eval {
            Eval::Cpu => a.timeout().0.map(|d| d.as_secs_f64()),
            _ => None,
        },
        screen: a.screen(),
    }
}

/// Whether `entry` answers a `pkc tune` with `settings` that tries
/// `configs`: the same settings, and the same configurations in the same
/// order (the same space, `--budget` and `--seed`).
pub(super) fn answers(entry: &Entry, settings: &Settings, configs: &[Config]) -> bool {
    let r = &entry.report;
    entry.settings == *settings
        && r.points.len() == configs.len()
        && r.points
            .iter()
            .zip(configs)
            .all(|(p, c)| r.config(&p.params).as_ref() == Some(c))
}

/// `--tuned` of `pkc build` and `pkc run`: the `-p` values with the cached
/// best configuration of `file`'s kernel for `target` added (parameters
/// given with `-p` stay as given), from `cache_dir` (`--tuned-cache`) or
/// the default cache. Says which configuration it uses, or that there is
/// none. An entry timed on a TPU is preferred to one timed on the CPU
/// reference, and that to the model's; a damaged one is skipped with the
/// warning PK6008.
pub fn tuned_params(
    session: &pk_lang::Session,
    kernel: Option<&str>,
    params: &[(String, String)],
    target: TpuTarget,
    cache_dir: Option<&Path>,
) -> Result<Vec<(String, String)>, u8> {
    let text = &session.sources().get(pk_lang::span::FileId(0)).text;
    let (name, kparams) = kernel_params(session, kernel, params, target)?;
    let space = space_of(&kparams, params);
    let mut damaged = false;
    let found = cache::dir(cache_dir).and_then(|dir| {
        [Eval::Tpu, Eval::Cpu, Eval::Schedule, Eval::Model]
            .into_iter()
            .find_map(|e| {
                let key = key(text, &name, &kparams, &space, target, e);
                find(
                    &dir,
                    &key,
                    &space,
                    "it is not used: the next entry (tpu, cpu, schedule, model) or the defaults are; `pkc tune` with the same -p values replaces it",
                )
                .unwrap_or_else(|()| {
                    damaged = true;
                    None
                })
            })
    });
    let mut out = params.to_vec();
    match found {
        Some((entry, path)) => {
            let shown: Vec<String> = entry.best.iter().map(|(n, v)| format!("{n}={v}")).collect();
            status(&format!(
                "using the tuned configuration of `{name}` for {target} ({}): {} (from {})",
                entry.key.evaluator,
                shown.join(" "),
                path.display()
            ));
            for (n, v) in entry.best {
                if !out.iter().any(|(m, _)| *m == n) {
                    out.push((n, v.to_string()));
                }
            }
        }
        None => status(&format!(
            "no {}tuning cache entry for `{name}` on {target} with these parameters and shapes; using the defaults (run `pkc tune` first)",
            if damaged { "usable " } else { "" }
        )),
    }
    Ok(out)
}
