//! Masked stores and views of refs on the CPU reference: the kernels of
//! tests/in/ run with results derived in the test from the kernels'
//! documented meaning.

mod cpu_support;

use cpu_support::{build, threads};
use pk_lang::ir::DType;
use pk_runtime::cpu::HostArray;

/// What `tests/in/masked_store.pk` computes, element by element, for
/// inputs `x`, `y` of `[32, 256]` and lane bound `n`: `(o, p)`.
fn masked_store_reference(x: &[i64], y: &[i64], n: usize) -> (Vec<i64>, Vec<i64>) {
    const C: usize = 256;
    let mut o = y.to_vec();
    for r in 0..32 {
        for c in 0..n.min(C) {
            o[r * C + c] = x[r * C + c];
        }
    }
    let mut p = vec![0; 64 * C];
    for i in 0..2 {
        let (xb, pb) = (16 * i, 32 * i);
        for r in 0..16 {
            for c in 0..C {
                p[(pb + r) * C + c] = y[(xb + r) * C + c];
                p[(pb + 16 + r) * C + c] = y[(xb + r) * C + c];
            }
        }
        // Rows 8i..8i+8 of the block, where the row within them is >= 3.
        for rr in 3..8 {
            for c in 0..C {
                p[(pb + 8 * i + rr) * C + c] = x[(xb + rr) * C + c];
            }
        }
        for c in 0..64 {
            p[(pb + 3) * C + c] = x[(xb + 5) * C + c];
        }
        for c in 0..C {
            p[(pb + 31) * C + c] = x[(xb + 15) * C + c];
        }
    }
    (o, p)
}

fn run_masked_store(dtype: DType, params: &[(&str, &str)], n: usize) {
    let x: Vec<i64> = (0..32 * 256).map(|i| (i % 97) as i64 + 1).collect();
    let y: Vec<i64> = (0..32 * 256).map(|i| -((i % 89) as i64) - 1).collect();
    let k = build("tests/in/masked_store.pk", params);
    let arr = |v: &[i64]| match dtype {
        DType::F32 => {
            HostArray::from_f32(&[32, 256], &v.iter().map(|x| *x as f32).collect::<Vec<_>>())
        }
        _ => HostArray::from_ints(dtype, &[32, 256], v),
    };
    for t in [1, 2] {
        let out = k.run(vec![arr(&x), arr(&y)], &threads(t)).expect("runs");
        let (o, p) = masked_store_reference(&x, &y, n);
        let got = |a: &HostArray| -> Vec<i64> { a.to_f64().iter().map(|v| *v as i64).collect() };
        let (go, gp) = (got(&out[0]), got(&out[1]));
        for (i, (g, w)) in go.iter().zip(&o).enumerate() {
            assert_eq!(g, w, "{dtype} o[{}, {}] on {t} threads", i / 256, i % 256);
        }
        for (i, (g, w)) in gp.iter().zip(&p).enumerate() {
            assert_eq!(g, w, "{dtype} p[{}, {}] on {t} threads", i / 256, i % 256);
        }
    }
}

/// Lanes, rows and one dropped row of masked stores: masked-out elements
/// keep what the ref held (f32, lane bound 100).
#[test]
fn masked_store_keeps_masked_out_elements_f32() {
    run_masked_store(DType::F32, &[], 100);
}

/// The same with i32 elements and a lane bound inside the first vector
/// of four lanes.
#[test]
fn masked_store_keeps_masked_out_elements_i32() {
    run_masked_store(DType::I32, &[("T", "i32"), ("n", "7")], 7);
}

/// `views` of tests/in/ref_views.pk: heads of `k` and `o` reached through
/// `.at[i]`, a helper writing through a view, a view of a view, a view at
/// a position read from SMEM and a masked store through a view.
#[test]
fn ref_views_read_and_write_the_windows_they_stand_for() {
    const H: usize = 16 * 128;
    let k: Vec<f32> = (0..4 * H).map(|i| ((i * 7) % 23) as f32 - 11.0).collect();
    let ids = [0i64, 0, 1, 3];
    let kern = build("tests/in/ref_views.pk", &[]);
    let inputs = vec![
        HostArray::from_f32(&[4, 16, 128], &k),
        HostArray::from_ints(DType::I32, &[4], &ids),
    ];
    let out = kern.run(inputs, &threads(1)).expect("runs");
    let (o, s) = (out[0].to_f32(), out[1].to_f32());
    let at = |h: usize, r: usize, c: usize| h * H + r * 128 + c;
    // `o` after every step: k + 1, with lanes 0..4 of rows 0..8 from `k`.
    let o_final = |h: usize, r: usize, c: usize| {
        if r < 8 && c < 4 {
            k[at(h, r, c)]
        } else {
            k[at(h, r, c)] + 1.0
        }
    };
    for h in 0..4 {
        for r in 0..16 {
            for c in 0..128 {
                assert_eq!(o[at(h, r, c)], o_final(h, r, c), "o[{h}, {r}, {c}]");
            }
        }
        // Step h reads row 3 of head ids[h] before its own masked store:
        // an earlier head is final, head h itself is still k + 1.
        let j = ids[h] as usize;
        for c in 0..128 {
            let row3 = if j < h {
                o_final(j, 3, c)
            } else {
                k[at(j, 3, c)] + 1.0
            };
            for r in 0..8 {
                assert_eq!(s[at(h, r, c)], 2.0 * k[at(h, 8 + r, c)], "s[{h}, {r}, {c}]");
                assert_eq!(s[at(h, 8 + r, c)], row3, "s[{h}, {}, {c}]", 8 + r);
            }
        }
    }
}

/// `paged` of tests/in/ref_views.pk: pages chosen at run time copied by
/// DMA between views (of an HBM ref, a VMEM slot and a semaphore) passed
/// to a helper, in bf16 and f32.
#[test]
fn ref_views_carry_dma_pages() {
    const P: usize = 32 * 128;
    let kv: Vec<f32> = (0..8 * P).map(|i| ((i * 5) % 31) as f32 - 15.0).collect();
    let ids = [5i64, 2, 7, 2];
    for (t, arr) in [
        ("bf16", HostArray::bf16_from_f32(&[8, 32, 128], &kv)),
        ("f32", HostArray::from_f32(&[8, 32, 128], &kv)),
    ] {
        let kern = cpu_support::try_build_kernel(
            &cpu_support::root().join("tests/in/ref_views.pk"),
            Some("paged"),
            &[("T", t)],
            false,
        )
        .expect("builds");
        let inputs = vec![arr, HostArray::from_ints(DType::I32, &[4], &ids)];
        let o = kern.run(inputs, &threads(1)).expect("runs")[0].to_f32();
        for (i, &page) in ids.iter().enumerate() {
            for r in 0..32 {
                for c in 0..128 {
                    let v = kv[page as usize * P + r * 128 + c];
                    let want = if r >= 16 { 2.0 * v } else { v };
                    assert_eq!(o[i * P + r * 128 + c], want, "{t} o[{i}, {r}, {c}]");
                }
            }
        }
    }
}

/// `tests/in/repeat.pk` against `jnp.repeat`'s definition: element `i`
/// of the repeated axis lands at `i * n .. i * n + n`; f32, bf16 and i8.
#[test]
fn repeat_repeats_each_element_along_its_axis() {
    let x: Vec<i64> = (0..32 * 128).map(|i| (i % 61) as i64 - 30).collect();
    let z: Vec<i64> = (0..2 * 16 * 128).map(|i| (i % 53) as i64 - 26).collect();
    for t in ["f32", "bf16", "i8"] {
        let arr = |shape: &[usize], v: &[i64]| {
            let f: Vec<f32> = v.iter().map(|x| *x as f32).collect();
            match t {
                "f32" => HostArray::from_f32(shape, &f),
                "bf16" => HostArray::bf16_from_f32(shape, &f),
                _ => HostArray::from_ints(DType::I8, shape, v),
            }
        };
        let k = build("tests/in/repeat.pk", &[("T", t)]);
        let out = k
            .run(
                vec![arr(&[32, 128], &x), arr(&[2, 16, 128], &z)],
                &threads(1),
            )
            .expect("runs");
        let got: Vec<Vec<i64>> = out
            .iter()
            .map(|a| a.to_f64().iter().map(|v| *v as i64).collect())
            .collect();
        for r in 0..64 {
            for c in 0..128 {
                assert_eq!(got[0][r * 128 + c], x[(r / 2) * 128 + c], "{t} a[{r}, {c}]");
            }
        }
        for r in 0..24 {
            for c in 0..128 {
                assert_eq!(got[1][r * 128 + c], x[(r / 3) * 128 + c], "{t} b[{r}, {c}]");
            }
        }
        for r in 0..32 {
            for c in 0..128 {
                assert_eq!(got[2][r * 128 + c], x[r * 128 + c / 2], "{t} c[{r}, {c}]");
            }
        }
        for p in 0..2 {
            for r in 0..32 {
                for c in 0..128 {
                    let want = z[p * 16 * 128 + (r / 2) * 128 + c];
                    assert_eq!(got[3][(p * 32 + r) * 128 + c], want, "{t} d[{p}, {r}, {c}]");
                }
            }
        }
    }
}

/// `tests/in/strided.pk`: rows `stride` apart read and written, at
/// constant and run-time starts and through a view.
#[test]
fn strided_windows_take_every_stride_th_row() {
    const C: usize = 128;
    let x: Vec<f32> = (0..64 * C).map(|i| ((i * 3) % 41) as f32 - 20.0).collect();
    let w: Vec<f32> = (0..2 * 16 * C)
        .map(|i| ((i * 5) % 37) as f32 - 18.0)
        .collect();
    let first: Vec<f32> = (0..32 * C).map(|i| ((i * 11) % 43) as f32 - 21.0).collect();
    let k = build("tests/in/strided.pk", &[]);
    let inputs = vec![
        HostArray::from_f32(&[64, 128], &x),
        HostArray::from_f32(&[2, 16, 128], &w),
        HostArray::from_f32(&[32, 128], &first),
    ];
    for t in [1, 2] {
        let out = k.run(inputs.clone(), &threads(t)).expect("runs");
        let (e, o, y, z) = (
            out[0].to_f32(),
            out[1].to_f32(),
            out[2].to_f32(),
            out[3].to_f32(),
        );
        for i in 0..2 {
            for r in 0..16 {
                for c in 0..C {
                    let row = |k: usize| x[(32 * i + k) * C + c];
                    assert_eq!(
                        e[(16 * i + r) * C + c],
                        row(2 * r),
                        "e[{}, {c}]",
                        16 * i + r
                    );
                    assert_eq!(
                        o[(16 * i + r) * C + c],
                        row(2 * r + 1),
                        "o[{}, {c}]",
                        16 * i + r
                    );
                }
            }
            for r in 0..32 {
                for c in 0..C {
                    let want = if r % 4 == 0 {
                        2.0 * first[(5 * i + 1 + 3 * (r / 4)) * C + c]
                    } else {
                        x[(32 * i + r) * C + c]
                    };
                    assert_eq!(y[(32 * i + r) * C + c], want, "y[{}, {c}]", 32 * i + r);
                }
            }
        }
        for r in 0..8 {
            for c in 0..C {
                assert_eq!(z[r * C + c], w[(16 + 2 * r) * C + c], "z[{r}, {c}]");
            }
        }
    }
}
