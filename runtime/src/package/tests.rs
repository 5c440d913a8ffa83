//! Failure injection into the atomic writer: whatever step fails, the
//! destination keeps what it held and no temporary directory remains.

use super::build::{build_file, BuildOptions};
use super::write::{write_with, Stage};
use super::*;
use std::io;

fn kernel_package(params: &[(&str, &str)]) -> NewPackage {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/add.pk");
    let opts = BuildOptions {
        params: params
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        ..BuildOptions::default()
    };
    match build_file(&path, &opts) {
        Ok(mut b) => b.kernels.remove(0).package,
        Err(f) => panic!(
            "add.pk does not build: {}",
            f.render(pk_lang::diag::RenderStyle::Plain)
        ),
    }
}

fn scratch(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("pk-package-{tag}-"))
        .tempdir()
        .expect("create a temp dir")
}

/// Names in `dir` other than `keep`: leftovers of a write.
fn leftovers(dir: &Path, keep: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list the parent")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n != keep)
        .collect();
    names.sort();
    names
}

fn fail_at(target: Stage<'static>) -> impl FnMut(Stage<'_>) -> io::Result<()> {
    move |stage| {
        if stage == target {
            Err(io::Error::other("injected failure"))
        } else {
            Ok(())
        }
    }
}

fn stages() -> Vec<Stage<'static>> {
    vec![
        Stage::Wrote(STABLEHLO),
        Stage::Wrote(MANIFEST),
        Stage::Complete,
        Stage::Replacing,
    ]
}

#[test]
fn a_failed_replace_leaves_the_old_package_and_no_temp_dir() {
    let old = kernel_package(&[]);
    let new = kernel_package(&[("M", "2048")]);
    for stage in stages() {
        let root = scratch("replace");
        let dest = root.path().join("add");
        old.write(&dest).expect("write the old package");
        let before = Package::open(&dest).expect("the old package opens");
        let err = write_with(&new, &dest, &mut fail_at(stage)).expect_err("injected failure");
        assert!(
            matches!(err, PackageError::Write { .. }),
            "{stage:?}: {err:?}"
        );
        let after = Package::open(&dest).expect("the old package still opens");
        assert_eq!(after.manifest(), before.manifest(), "{stage:?}");
        assert_eq!(
            leftovers(root.path(), "add"),
            Vec::<String>::new(),
            "{stage:?}"
        );
    }
}

#[test]
fn a_failed_first_write_leaves_nothing() {
    let new = kernel_package(&[]);
    for stage in stages() {
        let root = scratch("fresh");
        let dest = root.path().join("add");
        // With nothing to replace, `Replacing` never happens and the write
        // succeeds; every other stage fails it.
        match write_with(&new, &dest, &mut fail_at(stage)) {
            Ok(_) => assert_eq!(stage, Stage::Replacing),
            Err(e) => {
                assert!(matches!(e, PackageError::Write { .. }), "{e:?}");
                assert!(!dest.exists(), "{stage:?}");
            }
        }
        let expected: Vec<String> = if dest.exists() {
            vec!["add".to_string()]
        } else {
            vec![]
        };
        assert_eq!(leftovers(root.path(), ""), expected, "{stage:?}");
    }
}

#[test]
fn a_successful_replace_removes_the_old_files() {
    let root = scratch("swap");
    let dest = root.path().join("add");
    let mut old = kernel_package(&[]);
    old.cpu_reference = None;
    fs::create_dir_all(&dest).expect("create the destination");
    old.write(&dest).expect("an empty directory is replaceable");
    let new = kernel_package(&[("M", "2048")]);
    let written = new.write(&dest).expect("replace the old package");
    let opened = Package::open(&dest).expect("the new package opens");
    assert_eq!(opened.manifest(), written.manifest());
    assert_eq!(opened.stablehlo(), new.stablehlo());
    assert!(opened.cpu_reference().is_some());
    assert_eq!(leftovers(root.path(), "add"), Vec::<String>::new());
}
