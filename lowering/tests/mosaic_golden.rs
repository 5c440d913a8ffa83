//! Golden files of the stable Mosaic form: `kernels/NAME.pk`,
//! `tests/in/NAME.pk` and `lowering/tests/mosaic_ops/NAME.pk`, at their
//! defaults, -> `tests/out/mosaic/NAME.mlir` (every kernel of the file, as
//! the TPU compiler receives it). `PK_BLESS=1` re-records them; any
//! difference fails.

mod mosaic_support;

use mosaic_support::{compile, golden, inputs, lower_all, relative, root, stem};

#[test]
fn mosaic_golden_files_match() {
    let mut failures = Vec::new();
    for path in inputs() {
        let module = compile(&path, &[]);
        let mut text = String::new();
        for (kernel, lowered) in lower_all(&module) {
            text.push_str(&format!("// kernel {}\n", kernel.name));
            text.push_str(&relative(&lowered.text));
        }
        let out = root().join(format!("tests/out/mosaic/{}.mlir", stem(&path)));
        if let Err(e) = golden(&out, &text) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn serialized_modules_have_the_stable_form() {
    for path in inputs() {
        let module = compile(&path, &[]);
        for (kernel, lowered) in lower_all(&module) {
            let name = format!("{}/{}", stem(&path), kernel.name);
            let mut lines = lowered.text.lines();
            assert_eq!(
                lines.next(),
                Some("module attributes {stable_mosaic.version = 11 : i64} {"),
                "{name}"
            );
            // Every operation is generic, versioned, has no properties, and
            // ends with its .pk location.
            for line in lines.filter(|l| l.trim_start().starts_with(['%', '"'])) {
                let op = line.split('"').nth(1).unwrap_or("");
                assert!(op.starts_with("stable_mosaic."), "{name}: {line}");
                assert!(!line.contains("<{"), "{name}: properties in {line}");
            }
            assert_eq!(
                lowered.text.matches("\"stable_mosaic.").count(),
                lowered.text.matches(" loc(\"").count(),
                "{name}: an operation without a location"
            );
            // Memory spaces are the tpu dialect's, never build-time integers.
            for t in lowered.text.split("memref<").skip(1) {
                assert!(t.contains("#tpu.memory_space<"), "{name}: memref<{t}");
            }
            assert!(
                lowered
                    .pretty
                    .contains(&format!("func.func @{}(", kernel.name)),
                "{name}"
            );
            assert_eq!(lowered.kernel_name, kernel.name);
            assert_eq!(lowered.version, pk_lowering::mosaic::VERSION);
        }
    }
}
