//! `pkc meta gmm`: the tile metadata of kernels/gmm.pk from a file of group
//! sizes, checked against the tables tests/gen/gmm.py computes in numpy and
//! used as written by `pkc test` on a numpy fixture; bad sizes are coded
//! errors that leave the output directory as it was.

mod common;

use common::{code, pkc, stderr, TempDir};
use std::path::Path;

/// A 1-D `.npy` file of `descr` (`<i8`, `<i4`, `<f4`) elements.
fn write_npy(path: &Path, descr: &str, elems: &[u8], len: usize) {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(elems);
    std::fs::write(path, bytes).unwrap();
}

fn write_i64(path: &Path, v: &[i64]) {
    let elems: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    write_npy(path, "<i8", &elems, v.len());
}

/// The case of tests/data/cases.json that `pkc meta` output is tried on:
/// group sizes [20, 0, 9, 5, 62], 96 rows in tiles of 32.
const CASE: &str = "tests/data/gmm_f32_shared3_empty_k32_n128";

#[test]
fn writes_the_numpy_tables_and_gmm_runs_on_them() {
    let dir = TempDir::new("meta_gmm");
    let sizes = dir.path().join("sizes.npy");
    write_i64(&sizes, &[20, 0, 9, 5, 62]);
    let out = dir.path().join("md");
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let o = pkc(&[
        "meta",
        "gmm",
        "--group-sizes",
        &s(&sizes),
        "--m",
        "96",
        "--tm",
        "32",
        "-o",
        &s(&out),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let root = common::root();
    for name in ["group_offsets", "group_ids", "m_tile_ids", "num_tiles"] {
        let written = std::fs::read(out.join(format!("{name}.npy"))).unwrap();
        let numpy = std::fs::read(root.join(CASE).join(format!("{name}.npy"))).unwrap();
        // Headers may differ in padding; the int32 data ends both files.
        let header = |b: &[u8]| 10 + u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!(
            written[header(&written)..],
            numpy[header(&numpy)..],
            "{name}"
        );
    }
    // The kernel reads the written tables and matches numpy's product.
    let p = |k: &str| format!("{k}={}", s(&out.join(format!("{k}.npy"))));
    let o = pkc(&[
        "test",
        "kernels/gmm.pk",
        "-k",
        "gmm",
        "-p",
        "M=96",
        "-p",
        "K=32",
        "-p",
        "N=128",
        "-p",
        "G=5",
        "-p",
        "tm=32",
        "-p",
        "tk=32",
        "-p",
        "tn=128",
        "-p",
        "T=f32",
        "-p",
        "O=f32",
        "--in",
        &p("group_offsets"),
        "--in",
        &p("group_ids"),
        "--in",
        &p("m_tile_ids"),
        "--in",
        &p("num_tiles"),
        "--in",
        &format!("lhs={CASE}/lhs.npy"),
        "--in",
        &format!("rhs={CASE}/rhs.npy"),
        "--expect",
        &format!("out={CASE}/out_expected.npy"),
        "--rtol",
        "1e-5",
        "--atol",
        "1e-4",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn visit_empty_writes_the_tables_tgmm_reads() {
    let dir = TempDir::new("meta_tgmm");
    let sizes = dir.path().join("sizes.npy");
    write_i64(&sizes, &[20, 0, 9, 5, 62]);
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let o = pkc(&[
        "meta",
        "gmm",
        "--group-sizes",
        &s(&sizes),
        "--m",
        "96",
        "--tm",
        "32",
        "--visit-empty",
        "-o",
        &s(dir.path()),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let case = common::root().join("tests/data/tgmm_f32_shared3_empty_k24_n128");
    let header = |b: &[u8]| 10 + u16::from_le_bytes([b[8], b[9]]) as usize;
    for name in ["group_offsets", "group_ids", "m_tile_ids", "num_tiles"] {
        let written = std::fs::read(dir.path().join(format!("{name}.npy"))).unwrap();
        let numpy = std::fs::read(case.join(format!("{name}.npy"))).unwrap();
        assert_eq!(
            written[header(&written)..],
            numpy[header(&numpy)..],
            "{name}"
        );
    }
}

#[test]
fn bad_group_sizes_are_coded_and_write_nothing() {
    let dir = TempDir::new("meta_gmm_bad");
    let out = dir.path().join("md");
    std::fs::create_dir(&out).unwrap();
    let kept = out.join("group_ids.npy");
    std::fs::write(&kept, b"an older file").unwrap();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let sizes = dir.path().join("sizes.npy");
    let floats: Vec<u8> = [4.0f32, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let cases: [(&dyn Fn(), &str, &str); 4] = [
        (&|| write_i64(&sizes, &[4, -1, 5]), "8", "PK5202"),
        (&|| write_i64(&sizes, &[20, 70]), "100", "PK5203"),
        (&|| write_npy(&sizes, "<f4", &floats, 2), "8", "PK5201"),
        (&|| write_i64(&sizes, &[8]), "8", "PK5204"),
    ];
    for (i, (write, m, want)) in cases.iter().enumerate() {
        write();
        let tm = if i == 3 { "0" } else { "8" };
        let o = pkc(&[
            "meta",
            "gmm",
            "--group-sizes",
            &s(&sizes),
            "--m",
            m,
            "--tm",
            tm,
            "-o",
            &s(&out),
        ]);
        assert_eq!(code(&o), 1, "{want}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{want}: {}", stderr(&o));
        assert!(stderr(&o).contains("help:"), "{want}: {}", stderr(&o));
        assert_eq!(std::fs::read(&kept).unwrap(), b"an older file");
        assert!(!out.join("num_tiles.npy").exists());
    }
    let o = pkc(&["explain", "PK5203"]);
    assert_eq!(code(&o), 0);
    assert!(common::stdout(&o).contains("gmm-group-sizes-sum"));
}
