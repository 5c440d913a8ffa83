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

/// A tile repeated along its last axis and read by elementwise ops is read
/// in place: element `(i, j)` of `tile(x, [1, n])` is `x[i, j mod W]`, for a
/// width `W` of 12 lanes (48 bytes) and of 128, and for a stored repeat.
#[test]
fn lane_repeats_read_in_place() {
    use pk_runtime::cpu::HostArray;
    let k = cpu_support::build("tests/cpu/lane_repeat.pk", &[]);
    let vals = |n: usize, seed: f32| -> Vec<f32> {
        (0..n)
            .map(|i| ((i as f32 * 0.37 + seed).sin() * 3.0).round() / 4.0)
            .collect()
    };
    let (x, y, w, z) = (
        vals(96, 0.1),
        vals(288, 0.7),
        vals(1024, 1.3),
        vals(3072, 2.9),
    );
    let out = k
        .run(
            vec![
                HostArray::from_f32(&[8, 12], &x),
                HostArray::from_f32(&[8, 36], &y),
                HostArray::from_f32(&[8, 128], &w),
                HostArray::from_f32(&[8, 384], &z),
            ],
            &threads(1),
        )
        .expect("runs");
    let (a, b, r) = (out[0].to_f32(), out[1].to_f32(), out[2].to_f32());
    for i in 0..8 {
        for j in 0..36 {
            let xv = x[i * 12 + j % 12];
            // Quarters: every value and product here is exact in f32.
            assert_eq!(a[i * 36 + j], y[i * 36 + j] - 2.0 * xv, "a[{i}, {j}]");
            assert_eq!(r[i * 36 + j], xv + 1.0, "r[{i}, {j}]");
        }
        for j in 0..384 {
            let want = f64::from(z[i * 384 + j] - w[i * 128 + j % 128]).exp();
            let got = f64::from(b[i * 384 + j]);
            assert!(
                (got - want).abs() <= 1e-6 * want,
                "b[{i}, {j}] = {got}, want {want}"
            );
        }
    }
}

/// A repeat read only by elementwise ops that end in a store takes no
/// memory of its own: `exp(z - tile(w, [1, 3]))` needs the temporaries of
/// `exp(z - u)` and not the 12 KiB (8 x 384 f32) of a stored repeat.
#[test]
fn a_lane_repeat_read_by_elementwise_ops_takes_no_temporary() {
    let temps = |kernel: &str| {
        let opts = pk_lang::Options {
            kernel: Some(kernel.to_string()),
            specialise: true,
            ..Default::default()
        };
        let m = pk_lang::compile_file(&root().join("tests/cpu/lane_repeat_wide.pk"), &opts)
            .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
        pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default())
            .expect("lowers")
            .manifest
            .layout
            .temps_bytes
    };
    assert_eq!(temps("lane_repeat_wide"), temps("no_repeat"));
}

/// Flash attention at its default blocks (512 queries by 512 keys) keeps
/// no repeated copy of the row maximum across the key block's lanes
/// (`nn::lanes(m_new, bk)`, 1 MiB of f32): the scores read it in place.
#[test]
fn flash_reads_its_row_statistics_in_place() {
    let opts = pk_lang::Options {
        kernel: Some("flash_attention".to_string()),
        params: [("T", "f32"), ("residuals", "false")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        specialise: true,
        ..Default::default()
    };
    let m = pk_lang::compile_file(&root().join("kernels/flash.pk"), &opts)
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    let w =
        pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default()).expect("lowers");
    let wat = pk_lowering::wasm::to_wat(&w.bytes).expect("prints");
    // Storing the repeat would copy `m_new`'s rows (512 bytes) four times
    // over; what copies remain move whole 512 x 128 f32 blocks.
    let lines: Vec<&str> = wat.lines().map(str::trim).collect();
    for (i, l) in lines.iter().enumerate() {
        if *l == "memory.copy" {
            assert_eq!(lines[i - 1], "i32.const 262144", "copy at line {i}");
        }
    }
}
