//! The tuning cache's files: keys, what an entry must match to be used,
//! and damaged files (the commands' use of it is in tests/cli_tune_cache.rs).

use pk_runtime::tune::cache::{self, Entry, Key, Lookup, Settings, FORMAT};
use pk_runtime::tune::report::{Axis, Report};
use std::path::PathBuf;

fn key(source: &str, m: &str) -> Key {
    Key {
        format: FORMAT,
        source_sha256: cache::source_hash(source),
        kernel: "matmul".into(),
        fixed: vec![("M".into(), m.into()), ("T".into(), "bf16".into())],
        target: "v5e".into(),
        evaluator: "model".into(),
        libtpu: "0.0.51".into(),
        pk: "0.1.0".into(),
    }
}

/// The parameters the requests below tune, with their candidates.
fn tuned() -> Vec<(String, Vec<i64>)> {
    vec![
        ("bm".into(), vec![128, 256, 512]),
        ("bk".into(), vec![128, 256, 512]),
    ]
}

fn entry(k: &Key) -> Entry {
    Entry {
        key: k.clone(),
        settings: Settings {
            aot: false,
            inputs: Vec::new(),
            timeout_seconds: None,
            screen: None,
        },
        best: vec![("bm".into(), 512), ("bk".into(), 256)],
        seconds: 1e-3,
        report: Report {
            kind: "tune".into(),
            kernel: "matmul".into(),
            target: "v5e".into(),
            evaluator: "model".into(),
            axes: vec![Axis {
                name: "bm".into(),
                candidates: vec![128, 256, 512],
                default: Some(256),
            }],
            fixed: Default::default(),
            space: 9,
            tried: 9,
            pruned: Default::default(),
            aot: false,
            ray: None,
            refused: Vec::new(),
            timed_out: Vec::new(),
            failed: Vec::new(),
            ranked: 0,
            best: Vec::new(),
            default: None,
            cache: None,
            points: Vec::new(),
            device: "one TensorCore per chip and device".into(),
            schedule_fallbacks: Vec::new(),
            screen: None,
            screened: 0,
        },
    }
}

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("pk-tune-cache-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn entries_are_keyed_by_everything_they_depend_on_and_written_whole() {
    let dir = Dir::new("keys");
    let k = key("kernel a", "1024");
    let e = entry(&k);
    let path = cache::store(&dir.0, &e).expect("the cache is writable");
    assert_eq!(path, dir.0.join(k.file_name()));
    assert_eq!(
        cache::lookup(&dir.0, &k, &tuned()),
        Lookup::Hit(Box::new(e))
    );
    assert_eq!(
        cache::lookup(&dir.0, &key("kernel b", "1024"), &tuned()),
        Lookup::Miss,
        "a changed source misses"
    );
    assert_eq!(
        cache::lookup(&dir.0, &key("kernel a", "2048"), &tuned()),
        Lookup::Miss,
        "another fixed value misses"
    );
    let mut other = k.clone();
    other.libtpu = "0.0.52".into();
    assert_ne!(other.file_name(), k.file_name(), "another libtpu misses");
    other = k.clone();
    other.format = FORMAT + 1;
    assert_ne!(other.file_name(), k.file_name(), "another format misses");
    let names: Vec<_> = std::fs::read_dir(&dir.0)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(names, vec![path], "no temporary file is left behind");
}

#[test]
fn an_entry_that_does_not_answer_its_key_is_damaged() {
    let dir = Dir::new("damaged");
    let k = key("kernel a", "1024");
    // An entry written for M=2048 under the name of M=1024's key.
    let other = key("kernel a", "2048");
    let stored = cache::store(&dir.0, &entry(&other)).expect("store");
    std::fs::rename(&stored, dir.0.join(k.file_name())).expect("move");
    match cache::lookup(&dir.0, &k, &tuned()) {
        Lookup::Damaged(why) => assert_eq!(
            why,
            "it was written for the fixed parameters `M=2048 T=bf16`, not `M=1024 T=bf16`"
        ),
        other => panic!("{other:?}"),
    }
    // A best configuration that sets a parameter not tuned, leaves one out,
    // or gives one a value that is not a candidate.
    for (best, why) in [
        (
            vec![("bm", 512), ("bk", 256), ("M", 2048)],
            "its best configuration sets `M`, which is not tuned",
        ),
        (
            vec![("bm", 512)],
            "its best configuration does not set `bk`",
        ),
        (
            vec![("bm", 512), ("bk", 100)],
            "its best configuration sets `bk=100`, which is not a candidate",
        ),
    ] {
        let mut e = entry(&k);
        e.best = best.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
        cache::store(&dir.0, &e).expect("store");
        assert_eq!(
            cache::lookup(&dir.0, &k, &tuned()),
            Lookup::Damaged(why.to_string())
        );
    }
    // Bytes that are no entry, and a file that cannot be read as one.
    std::fs::write(dir.0.join(k.file_name()), b"{\"key\": 1").expect("write");
    assert!(matches!(
        cache::lookup(&dir.0, &k, &tuned()),
        Lookup::Damaged(why) if why.starts_with("it is not a tuning cache entry")
    ));
    std::fs::remove_file(dir.0.join(k.file_name())).expect("remove");
    std::fs::create_dir(dir.0.join(k.file_name())).expect("a directory in its place");
    assert!(matches!(
        cache::lookup(&dir.0, &k, &tuned()),
        Lookup::Damaged(why) if why.starts_with("it cannot be read")
    ));
}

#[test]
fn an_unwritable_directory_is_found_before_anything_is_stored() {
    let dir = Dir::new("writable");
    cache::check_writable(&dir.0.join("a/b")).expect("created");
    assert!(dir.0.join("a/b").is_dir());
    assert_eq!(
        std::fs::read_dir(dir.0.join("a/b")).expect("list").count(),
        0,
        "the probe leaves nothing behind"
    );
    std::fs::write(dir.0.join("file"), b"").expect("write");
    assert!(cache::check_writable(&dir.0.join("file/sub")).is_err());
}
