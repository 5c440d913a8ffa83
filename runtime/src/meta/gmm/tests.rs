//! The builder against hand-derived tables and against the tables that
//! tests/gen/gmm.py computes in numpy by walking the groups one by one.

use super::*;
use crate::cpu::npy;
use std::path::PathBuf;

/// Sizes with a tile of 32 rows shared by three groups (0, 2, 3), an empty
/// group (1), a group smaller than a tile (3) and a ragged last tile.
const SHARED: [i64; 5] = [20, 0, 9, 5, 56];

#[test]
fn shared_tile_by_hand() {
    // Rows 0..20 are group 0 (tile 0), 20..29 group 2 (tile 0), 29..34
    // group 3 (tiles 0 and 1), 34..90 group 4 (tiles 1 and 2): six visits
    // of a bound of cdiv(90, 32) + 5 - 1 = 7, the last repeated.
    let md = gmm_metadata(&SHARED, 90, 32, false).unwrap();
    assert_eq!(md.group_offsets, [0, 20, 20, 29, 34, 90]);
    assert_eq!(md.group_ids, [0, 2, 3, 3, 4, 4, 4]);
    assert_eq!(md.m_tile_ids, [0, 0, 0, 1, 1, 2, 2]);
    assert_eq!(md.num_tiles, 6);
    // Visiting the empty group adds its visit of tile 0, where its offset
    // (row 20) falls.
    let md = gmm_metadata(&SHARED, 90, 32, true).unwrap();
    assert_eq!(md.group_ids, [0, 1, 2, 3, 3, 4, 4]);
    assert_eq!(md.m_tile_ids, [0, 0, 0, 0, 1, 1, 2]);
    assert_eq!(md.num_tiles, 7);
}

#[test]
fn empty_groups_on_boundaries_by_hand() {
    // 64 rows in tiles of 32: group 0 empty at row 0, group 1 rows 0..32,
    // group 2 empty at row 32 (a boundary), group 3 rows 32..64, group 4
    // empty at row 64, past the last tile.
    let sizes = [0, 32, 0, 32, 0];
    let md = gmm_metadata(&sizes, 64, 32, false).unwrap();
    assert_eq!(md.group_ids, [1, 3, 3, 3, 3, 3]);
    assert_eq!(md.m_tile_ids, [0, 1, 1, 1, 1, 1]);
    assert_eq!(md.num_tiles, 2);
    let md = gmm_metadata(&sizes, 64, 32, true).unwrap();
    assert_eq!(md.group_ids, [0, 1, 2, 3, 4, 4]);
    assert_eq!(md.m_tile_ids, [0, 0, 1, 1, 1, 1]);
    assert_eq!(md.num_tiles, 5);
}

#[test]
fn bad_sizes_are_coded_errors() {
    assert_eq!(
        gmm_metadata(&[4, -1, 5], 8, 8, false),
        Err(MetaError::NegativeSize { group: 1, size: -1 })
    );
    assert_eq!(
        gmm_metadata(&[20, 70], 100, 32, false),
        Err(MetaError::SumMismatch { sum: 90, m: 100 })
    );
    // Sizes whose sum overflows i64 are still a plain mismatch.
    assert!(matches!(
        gmm_metadata(&[i64::MAX, i64::MAX], 8, 8, false),
        Err(MetaError::SumMismatch { .. })
    ));
    for (sizes, m, tm) in [(&[8i64][..], 8, 0), (&[][..], 0, 8), (&[0][..], 0, 8)] {
        let e = gmm_metadata(sizes, m, tm, false).unwrap_err();
        assert!(matches!(e, MetaError::BadTiling { .. }), "{e:?}");
    }
    let codes: Vec<&str> = EXPLANATIONS.iter().map(|e| e.code).collect();
    assert_eq!(codes, ["PK5201", "PK5202", "PK5203", "PK5204"]);
}

fn read_i32(path: &std::path::Path) -> Vec<i32> {
    let a = npy::read(path).unwrap();
    assert_eq!(a.ty, npy::NpyType::I4, "{}", path.display());
    a.data
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn matches_the_numpy_walk_of_every_fixture() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/data/cases.json")).unwrap())
            .unwrap();
    let mut seen = 0;
    for case in cases.as_array().unwrap() {
        if case["kernel"] != "kernels/gmm.pk" {
            continue;
        }
        let name = case["name"].as_str().unwrap();
        let input = |k: &str| read_i32(&root.join(case["inputs"][k].as_str().unwrap()));
        let offsets = input("group_offsets");
        let sizes: Vec<i64> = offsets.windows(2).map(|w| (w[1] - w[0]) as i64).collect();
        let m = case["params"]["M"].as_i64().unwrap();
        let tm = case["params"]["tm"].as_i64().unwrap();
        // `tgmm` writes a block for every group, so it visits empty ones.
        let visit_empty = case["entry"] == "tgmm";
        let md = gmm_metadata(&sizes, m, tm, visit_empty).unwrap();
        assert_eq!(md.group_offsets, offsets, "{name}");
        assert_eq!(md.group_ids, input("group_ids"), "{name}");
        assert_eq!(md.m_tile_ids, input("m_tile_ids"), "{name}");
        assert_eq!(vec![md.num_tiles], input("num_tiles"), "{name}");
        seen += 1;
    }
    assert!(seen >= 6, "only {seen} gmm cases found");
}

#[test]
fn sizes_are_read_from_int32_and_int64_files_only() {
    let i64s: Vec<u8> = [3i64, 0, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
    let a = npy::NpyArray {
        ty: npy::NpyType::I8,
        shape: vec![3],
        data: i64s,
    };
    assert_eq!(sizes_from_npy(&a).unwrap(), [3, 0, 5]);
    let i32s: Vec<u8> = [7i32, -2].iter().flat_map(|v| v.to_le_bytes()).collect();
    let a = npy::NpyArray {
        ty: npy::NpyType::I4,
        shape: vec![2],
        data: i32s,
    };
    assert_eq!(sizes_from_npy(&a).unwrap(), [7, -2]);
    let f32s: Vec<u8> = [1.0f32].iter().flat_map(|v| v.to_le_bytes()).collect();
    let a = npy::NpyArray {
        ty: npy::NpyType::F4,
        shape: vec![1],
        data: f32s,
    };
    assert!(matches!(
        sizes_from_npy(&a),
        Err(MetaError::SizesDtype { .. })
    ));
    let a = npy::NpyArray {
        ty: npy::NpyType::I4,
        shape: vec![1, 1],
        data: vec![0; 4],
    };
    assert!(matches!(
        sizes_from_npy(&a),
        Err(MetaError::SizesDtype { .. })
    ));
}
