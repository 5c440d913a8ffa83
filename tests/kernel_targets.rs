//! Kernels that need a TPU generation's MXU inputs or dtypes: they check
//! clean on the generations that have them, and on the others fail with
//! the coded diagnostic that says why, never silently. The fp8 kernel of
//! kernels/qmatmul.pk also checks on TPU7x, whose MXU has fp8 but not int8.

mod common;

use common::{code, codes_in as codes, pkc, stderr, GENERATION_SPECIFIC};

#[test]
fn generation_specific_kernels_check_where_they_run_and_fail_coded_elsewhere() {
    for (file, targets) in GENERATION_SPECIFIC {
        let path = format!("kernels/{file}");
        for t in pk_lang::Target::ALL {
            let name = t.name().to_string();
            let o = pkc(&["check", "-t", &name, &path]);
            if targets.contains(&name.as_str()) {
                assert_eq!(code(&o), 0, "{path} on {name}: {}", stderr(&o));
                assert!(codes(&stderr(&o)).is_empty(), "{}", stderr(&o));
            } else {
                assert_eq!(code(&o), 1, "{path} on {name}: {}", stderr(&o));
                assert!(!codes(&stderr(&o)).is_empty(), "{}", stderr(&o));
            }
        }
    }
}

#[test]
fn qmatmul_says_which_generation_lacks_int8_and_fp8() {
    let o = pkc(&["check", "-t", "v4", "kernels/qmatmul.pk"]);
    assert_eq!(codes(&stderr(&o)), ["PK0305", "PK0312"], "{}", stderr(&o));
    assert!(stderr(&o).contains("the v4 MXU does not take `i8` inputs"));
    let o = pkc(&["check", "-t", "tpu7x", "kernels/qmatmul.pk"]);
    assert_eq!(codes(&stderr(&o)), ["PK0305"], "{}", stderr(&o));
    let o = pkc(&[
        "check",
        "-t",
        "tpu7x",
        "-k",
        "qmatmul_fp8",
        "kernels/qmatmul.pk",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}
