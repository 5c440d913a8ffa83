//! Numerics of the CPU reference against numpy: every case of
//! tests/data/cases.json (written by tests/gen_expected.py) runs on 1 and 2
//! threads, must match the expected outputs within the case's tolerances,
//! and must give the same bits on both thread counts.

mod cpu_support;

use cpu_support::{assert_close, read, root, threads, try_build_kernel};
use pk_runtime::cpu::npy;

#[test]
fn numpy_cases() {
    let text = std::fs::read_to_string(root().join("tests/data/cases.json")).expect("cases.json");
    let cases: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let cases = cases.as_array().expect("a list of cases");
    assert!(cases.len() >= 10);
    for c in cases {
        let name = c["name"].as_str().unwrap_or_default();
        let params: Vec<(String, String)> = c["params"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), str::to_string),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let params: Vec<(&str, &str)> = params
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        // `entry` names the kernel of a file that defines several.
        let k = try_build_kernel(
            &root().join(c["kernel"].as_str().unwrap_or_default()),
            c["entry"].as_str(),
            &params,
            false,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let inputs: Vec<_> = k
            .inputs()
            .map(|(_, o)| {
                let p = c["inputs"][o.name.as_str()].as_str().unwrap_or_default();
                read(&k, &o.name, &root().join(p))
            })
            .collect();
        let one = k
            .run(inputs.clone(), &threads(1))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let two = k
            .run(inputs, &threads(2))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (rtol, atol) = (
            c["rtol"].as_f64().unwrap_or(0.0),
            c["atol"].as_f64().unwrap_or(0.0),
        );
        for (j, (oi, o)) in k.outputs().enumerate() {
            let p = c["expected"][o.name.as_str()].as_str().unwrap_or_default();
            let want = npy::values(
                &npy::read(&root().join(p)).expect("expected array"),
                k.dtype(oi),
            );
            assert_close(
                &format!("{name}.{}", o.name),
                &one[j].to_f64(),
                &want,
                rtol,
                atol,
            );
            assert_eq!(one[j].data, two[j].data, "{name}: 1 and 2 threads differ");
        }
    }
}

/// Cross-entropy at its default blocks, 256 rows by 2048 f32 columns
/// (2 MiB, more than a core's L2 cache), runs in strips of rows: the
/// temporaries of a grid step take a small part of one block, where whole
/// block temporaries took several blocks. (The numbers of the strips are
/// the `*_strips` cases of `numpy_cases`.)
#[test]
fn large_row_local_blocks_run_in_strips() {
    const BLOCK: u32 = 256 * 2048 * 4;
    for kernel in ["xent", "xent_bwd"] {
        let opts = pk_lang::Options {
            kernel: Some(kernel.to_string()),
            params: [("N", "512"), ("V", "4096"), ("T", "f32")]
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            specialise: true,
            ..Default::default()
        };
        let m = pk_lang::compile_file(&root().join("kernels/xent.pk"), &opts)
            .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
        let w = pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default())
            .expect("lowers");
        let temps = w.manifest.layout.temps_bytes;
        assert!(
            temps <= BLOCK / 4,
            "{kernel}: {temps} bytes of temporaries for a block of {BLOCK}"
        );
    }
}
