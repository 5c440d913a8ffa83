//! `pkc meta splash`: the mask info it writes equals the independent numpy
//! construction of tests/gen/splash.py (block-level any/all of the dense
//! mask), it drives kernels/splash.pk to the numpy float64 reference, and
//! bad input gets a coded diagnostic and leaves the directory as it was.

mod common;

use common::{code, pkc, stderr, stdout, TempDir};
use pk_runtime::cpu::npy;

const ARRAYS: [&str; 7] = [
    "data_next",
    "mask_next",
    "block_mask",
    "dkv_data_next",
    "dkv_mask_next",
    "dkv_block_mask",
    "mask_blocks",
];

/// Asserts that every array in `dir` equals the fixture of the same name
/// in `fixtures` (dtype, shape and contents).
fn assert_same_arrays(dir: &std::path::Path, fixtures: &std::path::Path, names: &[&str]) {
    for name in names {
        let got = npy::read(&dir.join(format!("{name}.npy"))).expect("pkc wrote it");
        let want = npy::read(&fixtures.join(format!("{name}.npy"))).expect("fixture");
        assert_eq!(
            (got.ty, &got.shape),
            (want.ty, &want.shape),
            "{}: {name}",
            fixtures.display()
        );
        assert!(
            got.data == want.data,
            "{}: {name} differs",
            fixtures.display()
        );
    }
}

#[test]
fn mask_info_equals_the_numpy_construction() {
    let root = common::root();
    let data = root.join("tests/data/splash_meta");
    let dense = data.join("dense_s96_sk256_bq32_bk128/mask.npy");
    let dense = dense.to_str().unwrap();
    let configs: [(&str, &[&str]); 6] = [
        (
            "causal_s256_bq32_bk128",
            &[
                "--mask", "causal", "--sq", "256", "--bq", "32", "--bkv", "128",
            ],
        ),
        (
            "local_l40_r8_s200_sk300_bq32_bk128",
            &[
                "--mask",
                "local:40,8",
                "--sq",
                "200",
                "--skv",
                "300",
                "--bq",
                "32",
                "--bkv",
                "128",
            ],
        ),
        (
            "chunked_c48_s256_bq64_bk128",
            &[
                "--mask",
                "chunked:48",
                "--sq",
                "256",
                "--bq",
                "64",
                "--bkv",
                "128",
            ],
        ),
        (
            "full_s100_sk130_bq32_bk128",
            &[
                "--mask", "full", "--sq", "100", "--skv", "130", "--bq", "32", "--bkv", "128",
            ],
        ),
        (
            "dense_s96_sk256_bq32_bk128",
            &["--mask", dense, "--bq", "32", "--bkv", "128"],
        ),
        (
            "local_l40_r8_s256_sk300_bq32_bk128_shrunk",
            &[
                "--mask",
                "local:40,8",
                "--sq",
                "256",
                "--skv",
                "300",
                "--bq",
                "32",
                "--bkv",
                "128",
                "--shrink",
            ],
        ),
    ];
    for (name, args) in configs {
        let out = TempDir::new("meta");
        let mut cmd = vec!["meta", "splash", "-o", out.arg()];
        cmd.extend_from_slice(args);
        let o = pkc(&cmd);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        assert_same_arrays(out.path(), &data.join(name), &ARRAYS);
    }
}

/// The builder's arrays, fed to the forward kernel, give the numpy
/// float64 masked attention of a fixture (whose inputs were built by numpy).
#[test]
fn builder_output_drives_the_kernel_to_the_reference() {
    let root = common::root();
    let case = root.join("tests/data/splash_f32_causal_gqa_h2kh1_s256d16_bq32bk128");
    let out = TempDir::new("meta-run");
    let o = pkc(&[
        "meta",
        "splash",
        "--mask",
        "causal",
        "--sq",
        "256",
        "--bq",
        "32",
        "--bkv",
        "128",
        "-o",
        out.arg(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("-p NP=4"), "{}", stdout(&o));
    let meta = |n: &str| format!("{n}={}", out.path().join(format!("{n}.npy")).display());
    let data = |n: &str, f: &str| format!("{n}={}", case.join(f).display());
    let (dn, mn, bm, mb) = (
        meta("data_next"),
        meta("mask_next"),
        meta("block_mask"),
        meta("mask_blocks"),
    );
    let (q, k, v) = (data("q", "q.npy"), data("k", "k.npy"), data("v", "v.npy"));
    let (eo, el) = (data("o", "o_expected.npy"), data("lse", "lse_expected.npy"));
    let o = pkc(&[
        "test",
        "kernels/splash.pk",
        "-k",
        "splash_attention",
        "-p",
        "H=2",
        "-p",
        "KH=1",
        "-p",
        "S=256",
        "-p",
        "SK=256",
        "-p",
        "D=16",
        "-p",
        "bq=32",
        "-p",
        "bk=128",
        "-p",
        "NP=4",
        "-p",
        "T=f32",
        "-p",
        "sm_scale=0.25",
        "--in",
        &dn,
        "--in",
        &mn,
        "--in",
        &bm,
        "--in",
        &mb,
        "--in",
        &q,
        "--in",
        &k,
        "--in",
        &v,
        "--expect",
        &eo,
        "--expect",
        &el,
        "--rtol",
        "1e-5",
        "--atol",
        "1e-5",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn bad_masks_and_sizes_have_codes_and_write_nothing() {
    let dir = TempDir::new("meta-bad");
    let keep = dir.file("block_mask.npy", b"older contents");
    let floats = dir.file(
        "f.npy",
        &npy::to_bytes(&pk_runtime::cpu::HostArray::new(
            pk_lang::ir::DType::F32,
            vec![2, 2],
            vec![0; 16],
        )),
    );
    let floats = floats.to_str().unwrap();
    let cases: [(&[&str], i32, &str); 6] = [
        (&["--mask", "window:4", "--sq", "8"], 1, "PK5101"),
        (&["--mask", "causal", "--sq", "0"], 1, "PK5102"),
        (&["--mask", "chunked:0", "--sq", "8"], 1, "PK5102"),
        (
            &["--mask", "local:0,0", "--sq", "8", "--skv", "4"],
            1,
            "PK5103",
        ),
        (&["--mask", floats], 1, "PK5104"),
        (&["--mask", "causal"], 2, "PK5102"),
    ];
    for (args, want, c) in cases {
        let mut cmd = vec!["meta", "splash", "--bq", "2", "--bkv", "2", "-o", dir.arg()];
        cmd.extend_from_slice(args);
        let o = pkc(&cmd);
        assert_eq!(code(&o), want, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(c), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("help"), "{args:?}: {}", stderr(&o));
    }
    // A destination that cannot be written (a directory in the way) fails
    // before any file changes.
    std::fs::create_dir(dir.path().join("mask_blocks.npy")).unwrap();
    let o = pkc(&[
        "meta",
        "splash",
        "--mask",
        "causal",
        "--sq",
        "4",
        "--bq",
        "2",
        "--bkv",
        "2",
        "-o",
        dir.arg(),
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(std::fs::read(&keep).unwrap(), b"older contents");
    assert_eq!(
        dir.entries(),
        vec!["block_mask.npy", "f.npy", "mask_blocks.npy"]
    );
}

#[test]
fn every_splash_code_is_explained() {
    for c in ["PK5101", "PK5102", "PK5103", "PK5104", "PK5105"] {
        let o = pkc(&["explain", c]);
        assert_eq!(code(&o), 0, "{c}");
        assert!(stdout(&o).contains("What"), "{c}: {}", stdout(&o));
    }
}

/// A mask info that cannot fit in memory is refused at once, with a code,
/// before anything is allocated (`--sq 4194304` in blocks of 8 is a grid
/// of 2^38 blocks), and nothing is written.
#[test]
fn mask_info_past_memory_is_refused_at_once() {
    let dir = TempDir::new("meta-huge");
    let t = std::time::Instant::now();
    let o = pkc(&[
        "meta",
        "splash",
        "--mask",
        "causal",
        "--sq",
        "4194304",
        "--bq",
        "8",
        "--bkv",
        "8",
        "-o",
        dir.arg(),
    ]);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("PK5105"), "{err}");
    assert!(
        err.contains("the mask info of 524288 x 524288 blocks needs"),
        "{err}"
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}

/// The builder's time follows the mask info it writes: a causal mask of
/// 131072 x 131072 (17 billion entries) in blocks of 128 is a grid of
/// 1024 x 1024 blocks, built in seconds. The arrays are checked against
/// their values worked out by hand: below the diagonal every block is
/// full, on it partial (all the same lower triangle), above it empty; a
/// skipped step fetches the next row's first block (column 0), and by
/// columns, block (j, i) fetches query block max(i, j).
#[test]
fn a_large_causal_mask_info_is_built_in_time_proportional_to_it() {
    let dir = TempDir::new("meta-large");
    let t = std::time::Instant::now();
    let o = pkc(&[
        "meta",
        "splash",
        "--mask",
        "causal",
        "--sq",
        "131072",
        "--bq",
        "128",
        "--bkv",
        "128",
        "-o",
        dir.arg(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t.elapsed()
    );
    let n = 1024usize;
    let ints = |name: &str| -> Vec<i32> {
        let a = npy::read(&dir.path().join(format!("{name}.npy"))).expect(name);
        assert_eq!(a.shape, vec![n, n], "{name}");
        a.data
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let block_mask = ints("block_mask");
    let data_next = ints("data_next");
    let mask_next = ints("mask_next");
    let dkv_block_mask = ints("dkv_block_mask");
    let dkv_data_next = ints("dkv_data_next");
    for i in 0..n {
        for j in 0..n {
            let kind = match j.cmp(&i) {
                std::cmp::Ordering::Less => 2,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Greater => 0,
            };
            assert_eq!(block_mask[i * n + j], kind, "({i}, {j})");
            assert_eq!(dkv_block_mask[j * n + i], kind, "({j}, {i})");
            let next = if j <= i { j } else { 0 };
            assert_eq!(data_next[i * n + j] as usize, next, "({i}, {j})");
            assert_eq!(dkv_data_next[j * n + i] as usize, i.max(j), "({j}, {i})");
        }
    }
    assert!(mask_next.iter().all(|&m| m == 0));
    let blocks = npy::read(&dir.path().join("mask_blocks.npy")).expect("mask_blocks");
    assert_eq!(blocks.shape, vec![1, 128, 128]);
    for (e, &b) in blocks.data.iter().enumerate() {
        assert_eq!(b, u8::from(e % 128 <= e / 128), "entry {e}");
    }
}
