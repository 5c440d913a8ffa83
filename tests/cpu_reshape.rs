//! Reshaped and bitcast views of refs on the CPU reference: the kernels of
//! tests/in/ref_reshape.pk, with results derived here from the documented
//! meaning of the views (row-major reshapes; bitcasts between widths pack
//! rows `p*r + j` of the narrow side into bits `j*w..` of word row `r`, as
//! on the TPU and in Pallas' definition of `bitcast`), on one and two
//! threads and with the uninitialised-read checks on.

mod cpu_support;

use cpu_support::{root, threads, try_build_kernel};
use pk_lang::ir::DType;
use pk_runtime::cpu::{CpuKernel, HostArray};

const FILE: &str = "tests/in/ref_reshape.pk";

fn kernel(name: &str, check_uninit: bool) -> CpuKernel {
    try_build_kernel(&root().join(FILE), Some(name), &[], check_uninit)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `name` on `inputs` on 1 and 2 threads, with and without the
/// uninitialised-read checks, and returns the outputs of every run.
fn runs(name: &str, inputs: &[HostArray]) -> Vec<Vec<HostArray>> {
    let mut all = Vec::new();
    for check in [false, true] {
        let k = kernel(name, check);
        for t in [1, 2] {
            all.push(
                k.run(inputs.to_vec(), &threads(t))
                    .unwrap_or_else(|e| panic!("{name} (check_uninit {check}, {t} threads): {e}")),
            );
        }
    }
    all
}

fn words(a: &HostArray) -> Vec<u32> {
    a.data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn halves(a: &HostArray) -> Vec<u16> {
    a.data
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// A reshape merges the leading dimensions of `x` and splits those of
/// `y`: step `i` writes twice rows `16i..16i+16`, so `y = 2x` row for row.
#[test]
fn reshape_views_read_and_write_row_major() {
    let x: Vec<f32> = (0..4 * 16 * 128)
        .map(|i| (i % 251) as f32 - 100.0)
        .collect();
    let input = HostArray::from_f32(&[4, 16, 128], &x);
    for out in runs("merged", &[input]) {
        let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        assert_eq!(out[0].to_f32(), want);
    }
}

/// bf16 pairs as words: word `[r, c]` is `p[2r, c]` in its low half and
/// `p[2r + 1, c]` in its high half; the strided load takes word rows
/// `0, 2, .., 14`; a same-width bitcast keeps the f32 bits (1.0 is
/// 0x3F80_0000, -2.0 is 0xC000_0000); the writes through `q`'s word view
/// restore `p` exactly.
#[test]
fn bitcasts_pack_bf16_rows_into_words() {
    let p: Vec<f32> = (0..32 * 128)
        .map(|i| ((i * 7) % 509) as f32 / 8.0 - 30.0)
        .collect();
    let pin = HostArray::bf16_from_f32(&[32, 128], &p);
    let pb = halves(&pin);
    let x: Vec<f32> = (0..8 * 128)
        .map(|i| if i % 2 == 0 { 1.0 } else { -2.0 })
        .collect();
    let xin = HostArray::from_f32(&[8, 128], &x);
    let mut want_w = vec![0u32; 16 * 128];
    for r in 0..16 {
        for c in 0..128 {
            want_w[r * 128 + c] =
                u32::from(pb[2 * r * 128 + c]) | u32::from(pb[(2 * r + 1) * 128 + c]) << 16;
        }
    }
    let want_e: Vec<u32> = (0..8 * 128)
        .map(|i| want_w[(i / 128) * 2 * 128 + i % 128])
        .collect();
    let want_f: Vec<u32> = (0..8 * 128)
        .map(|i| if i % 2 == 0 { 0x3F80_0000 } else { 0xC000_0000 })
        .collect();
    for out in runs("packed", &[pin.clone(), xin.clone()]) {
        assert_eq!(out[0].dtype, DType::I32);
        assert_eq!(words(&out[0]), want_w, "w");
        assert_eq!(words(&out[1]), want_e, "e");
        assert_eq!(words(&out[2]), want_f, "f");
        assert_eq!(halves(&out[3]), pb, "q");
    }
}

/// int8 rows four to a word: byte `j` of word `[r, c]` is `a[4r + j, c]`;
/// an i8 view of the words gives the bytes back, rows 0..32 of `a`.
#[test]
fn bitcasts_pack_int8_rows_into_words_and_back() {
    let a: Vec<i64> = (0..64 * 128).map(|i| (i * 37 % 256) as i64 - 128).collect();
    let ain = HostArray::from_ints(DType::I8, &[64, 128], &a);
    let mut want_b = vec![0u32; 16 * 128];
    for r in 0..16 {
        for c in 0..128 {
            for j in 0..4 {
                want_b[r * 128 + c] |= u32::from(a[(4 * r + j) * 128 + c] as u8) << (8 * j);
            }
        }
    }
    for out in runs("bytes", std::slice::from_ref(&ain)) {
        assert_eq!(words(&out[0]), want_b, "b");
        let c: Vec<i64> = out[1].to_f64().iter().map(|v| *v as i64).collect();
        assert_eq!(c, a[..32 * 128].to_vec(), "c");
    }
}

/// DMAs through reshaped views of an HBM array and a VMEM buffer: output
/// `i` is page `ids[i]` of `kv`.
#[test]
fn dmas_copy_through_reshaped_views() {
    let kv: Vec<f32> = (0..8 * 32 * 128).map(|i| (i % 233) as f32 - 99.0).collect();
    let kvin = HostArray::bf16_from_f32(&[8, 32, 128], &kv);
    let ids = [5i64, 0, 7, 5];
    let idsin = HostArray::from_ints(DType::I32, &[4], &ids);
    let page = 32 * 128;
    for out in runs("pages", &[kvin.clone(), idsin.clone()]) {
        let got = out[0].to_f32();
        for (i, &id) in ids.iter().enumerate() {
            let id = id as usize;
            assert_eq!(
                got[i * page..(i + 1) * page],
                kv[id * page..(id + 1) * page],
                "page {i}"
            );
        }
    }
}

/// A window of a bitcast view outside its sizes is an out-of-bounds
/// error at run time, like any window.
#[test]
fn packed_view_windows_are_bounds_checked() {
    let src = "kernel k(p: bf16[32, 128], n: i32[1] in smem) -> w: i32[8, 128]
{
    w[..] = p.bitcast(i32)[ds(multiple_of(n[0], 8), 8), :];
}";
    let dir = tempfile_dir();
    let path = dir.join("k.pk");
    std::fs::write(&path, src).unwrap();
    let k = try_build_kernel(&path, None, &[], false).unwrap_or_else(|e| panic!("{e}"));
    let p = HostArray::bf16_from_f32(&[32, 128], &vec![1.0; 32 * 128]);
    let ok = k.run(
        vec![p.clone(), HostArray::from_ints(DType::I32, &[1], &[8])],
        &threads(1),
    );
    assert!(ok.is_ok(), "{:?}", ok.err().map(|e| e.to_string()));
    let err = k
        .run(
            vec![p, HostArray::from_ints(DType::I32, &[1], &[16])],
            &threads(1),
        )
        .expect_err("rows 16..24 of 16");
    assert!(
        err.to_string()
            .contains("out-of-bounds load of `p.bitcast(i32)`"),
        "{err}"
    );
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pk-reshape-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
