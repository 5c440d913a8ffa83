//! `CpuKernel::run_in_place`: a run on memory the caller owns (what the
//! Python package's XLA FFI handler does with XLA's buffers) computes what
//! `run` computes, writes outputs in place and leaves inputs untouched.

use pk_runtime::cpu::{CpuKernel, HostArray, RunOptions};

fn build_source(text: &str, params: &[(&str, &str)]) -> CpuKernel {
    let opts = pk_lang::Options {
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        specialise: true,
        ..Default::default()
    };
    let m = pk_lang::compile_source("k.pk", text, &opts)
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    let w = pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default()).unwrap();
    CpuKernel::from_lowered(&w, false).unwrap()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn matmul_in_place_equals_run_and_the_hand_computed_product() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/matmul.pk"),
    )
    .unwrap();
    let (m, n, kk) = (32usize, 256usize, 384usize);
    let k = build_source(
        &text,
        &[
            ("M", "32"),
            ("N", "256"),
            ("K", "384"),
            ("bm", "16"),
            ("bn", "128"),
            ("bk", "128"),
            ("T", "f32"),
        ],
    );
    let a: Vec<f32> = (0..m * kk).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..kk * n).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
    let (ab, bb) = (f32_bytes(&a), f32_bytes(&b));
    let mut c = vec![0xAAu8; m * n * 4];
    k.run_in_place(&[&ab, &bb], &mut [&mut c], &RunOptions::default())
        .unwrap();
    let got = f32s(&c);
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..kk).map(|p| a[i * kk + p] * b[p * n + j]).sum();
            assert_eq!(got[i * n + j], want, "{i} {j}");
        }
    }
    let run = k
        .run(
            vec![
                HostArray::from_f32(&[m, kk], &a),
                HostArray::from_f32(&[kk, n], &b),
            ],
            &RunOptions::default(),
        )
        .unwrap();
    assert_eq!(run[0].data, c, "run and run_in_place differ");
    assert_eq!(ab, f32_bytes(&a), "the input was written");
}

const DOUBLE: &str = "kernel double<N = 256>(\n    x: f32[8, N] block [8, 128] at (0, j),\n) -> y: f32[8, N] block [8, 128] at (0, j) aliases x\ngrid (j in N / 128 parallel)\n{\n    y[..] = x[..] * 2.0;\n}\n";

#[test]
fn an_aliased_output_is_written_to_the_callers_output_and_the_input_kept() {
    let k = build_source(DOUBLE, &[]);
    let x: Vec<f32> = (0..8 * 256).map(|i| i as f32).collect();
    let xb = f32_bytes(&x);
    let mut y = vec![0u8; xb.len()];
    k.run_in_place(&[&xb], &mut [&mut y], &RunOptions::default())
        .unwrap();
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(f32s(&y), want);
    assert_eq!(xb, f32_bytes(&x));
}

#[test]
fn buffers_of_the_wrong_size_are_an_error() {
    let k = build_source(DOUBLE, &[]);
    let xb = vec![0u8; 8 * 256 * 4];
    let mut short = vec![0u8; 16];
    let e = k
        .run_in_place(&[&xb], &mut [&mut short], &RunOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("holds 16 bytes"), "{e}");
    let e = k
        .run_in_place(
            &[&xb[..8]],
            &mut [&mut vec![0u8; 8 * 256 * 4]],
            &RunOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("holds 8 bytes"), "{e}");
    let e = k
        .run_in_place(&[&xb], &mut [], &RunOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("0 output buffers"), "{e}");
}
