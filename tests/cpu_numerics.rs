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
