use pk_runtime::cpu::{CpuKernel, HostArray, RunOptions};

fn build(file: &str, params: &[(&str, &str)]) -> CpuKernel {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(file);
    let opts = pk_lang::Options {
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        specialise: true,
        ..Default::default()
    };
    let m = pk_lang::Session::open(&path)
        .and_then(|s| s.check(&opts))
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    let w = pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default()).unwrap();
    CpuKernel::from_lowered(&w, false).unwrap()
}

#[test]
fn add_smoke() {
    let k = build(
        "kernels/add.pk",
        &[("M", "16"), ("N", "256"), ("bm", "8"), ("bn", "128")],
    );
    let x: Vec<f32> = (0..16 * 256).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..16 * 256).map(|i| (i * 2) as f32).collect();
    let out = k
        .run(
            vec![
                HostArray::from_f32(&[16, 256], &x),
                HostArray::from_f32(&[16, 256], &y),
            ],
            &RunOptions::default(),
        )
        .unwrap();
    let z = out[0].to_f32();
    for (i, v) in z.iter().enumerate() {
        assert_eq!(*v, (3 * i) as f32);
    }
}

#[test]
fn matmul_smoke() {
    for t in ["f32", "bf16"] {
        let (m, n, kk) = (32usize, 256usize, 384usize);
        let k = build(
            "kernels/matmul.pk",
            &[
                ("M", "32"),
                ("N", "256"),
                ("K", "384"),
                ("bm", "16"),
                ("bn", "128"),
                ("bk", "128"),
                ("T", t),
            ],
        );
        let a: Vec<f32> = (0..m * kk).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let b: Vec<f32> = (0..kk * n).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
        let mk = |s: &[usize], v: &[f32]| {
            if t == "f32" {
                HostArray::from_f32(s, v)
            } else {
                HostArray::bf16_from_f32(s, v)
            }
        };
        let out = k
            .run(
                vec![mk(&[m, kk], &a), mk(&[kk, n], &b)],
                &RunOptions::default(),
            )
            .unwrap();
        let c = out[0].to_f32();
        for i in 0..m {
            for j in 0..n {
                let want: f32 = (0..kk).map(|p| a[i * kk + p] * b[p * n + j]).sum();
                assert_eq!(c[i * n + j], want, "{t} {i} {j}");
            }
        }
    }
}

#[test]
fn softmax_smoke() {
    let (r, c) = (16usize, 256usize);
    let k = build(
        "kernels/softmax.pk",
        &[("R", "16"), ("C", "256"), ("br", "8")],
    );
    let x: Vec<f32> = (0..r * c)
        .map(|i| ((i * 37) % 101) as f32 / 10.0 - 5.0)
        .collect();
    let out = k
        .run(
            vec![HostArray::from_f32(&[r, c], &x)],
            &RunOptions::default(),
        )
        .unwrap();
    let y = out[0].to_f32();
    for i in 0..r {
        let row = &x[i * c..(i + 1) * c];
        let mx = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let s: f64 = row.iter().map(|v| ((v - mx) as f64).exp()).sum();
        for j in 0..c {
            let want = ((row[j] - mx) as f64).exp() / s;
            let got = y[i * c + j] as f64;
            assert!(
                (got - want).abs() <= 1e-6 * want.abs() + 1e-7,
                "{i} {j} {got} {want}"
            );
        }
    }
}
