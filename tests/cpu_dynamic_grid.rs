//! Dynamic grid extents on the CPU reference (tests/cpu/dynamic_grid.pk):
//! a run takes exactly the prefetch element's number of steps, which the
//! kernel counts, and a value outside `0..=bound` is PK1035.

mod cpu_support;

use cpu_support::{root, threads, try_build_kernel};
use pk_lang::ir::DType;
use pk_runtime::cpu::{CpuKernel, Error, HostArray};

fn kernel(name: &str) -> CpuKernel {
    try_build_kernel(
        &root().join("tests/cpu/dynamic_grid.pk"),
        Some(name),
        &[],
        true,
    )
    .expect("builds")
}

fn rows(n: usize) -> (Vec<f32>, HostArray) {
    let v: Vec<f32> = (0..n * 128).map(|i| (i % 251) as f32).collect();
    let a = HostArray::from_f32(&[n, 128], &v);
    (v, a)
}

/// `steps` with `n[1] = count` (and a decoy in `n[0]`): outputs and error.
fn run_steps(count: i64) -> Result<Vec<HostArray>, Error> {
    let (_, x) = rows(64);
    let n = HostArray::from_ints(DType::I32, &[2], &[7, count]);
    kernel("steps").run(vec![n, x], &threads(1))
}

#[test]
fn a_dynamic_axis_runs_exactly_the_prefetched_number_of_steps() {
    let (x, _) = rows(64);
    for count in [1usize, 3, 8] {
        let out = run_steps(count as i64).expect("runs");
        let (y, c) = (out[0].to_f32(), out[1].to_f64());
        // Two steps of `j` per step of `t`; the last step adds 1000 times
        // `num_programs(0)`, which is the run-time count, not the bound 8.
        let steps = 2 * count as i64;
        assert_eq!(c[0], (steps + 1000 * count as i64) as f64, "count={count}");
        assert!(c[128..].iter().all(|&v| v == steps as f64), "count={count}");
        // Blocks past the last step were never written: poison (NaN).
        for (i, v) in y.iter().enumerate() {
            if i < count * 8 * 128 {
                assert_eq!(*v, 2.0 * x[i], "count={count} element {i}");
            } else {
                assert!(v.is_nan(), "count={count} element {i} is {v}");
            }
        }
    }
}

#[test]
fn zero_steps_write_nothing() {
    let out = run_steps(0).expect("runs");
    assert!(out[0].to_f32().iter().all(|v| v.is_nan()));
}

#[test]
fn a_count_outside_the_bound_is_pk1035() {
    for count in [9, -1] {
        let e = run_steps(count).expect_err("the bound is 8");
        assert!(matches!(e, Error::DynamicExtent { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains(&format!("reads {count} steps")) && text.contains("0..=8"),
            "{text}"
        );
    }
}

#[test]
fn a_dynamic_parallel_axis_splits_into_that_many_units() {
    let (x, xa) = rows(48);
    let n = HostArray::from_ints(DType::I32, &[1], &[4]);
    for t in [1, 2] {
        let y = kernel("rows")
            .run(vec![n.clone(), xa.clone()], &threads(t))
            .expect("runs")[0]
            .to_f32();
        for (i, v) in y.iter().enumerate() {
            if i < 4 * 8 * 128 {
                assert_eq!(*v, x[i] + 1.0, "threads={t} element {i}");
            } else {
                assert!(v.is_nan(), "threads={t} element {i} is {v}");
            }
        }
    }
}

/// In an index map, `num_programs` on a dynamic axis is the run-time count:
/// step `t` of 4 reads block `3 - t`.
#[test]
fn num_programs_in_an_index_map_is_the_run_time_count() {
    let (x, xa) = rows(48);
    let n = HostArray::from_ints(DType::I32, &[1], &[4]);
    let y = kernel("reverse")
        .run(vec![n, xa], &threads(1))
        .expect("runs")[0]
        .to_f32();
    for t in 0..4 {
        for e in 0..8 * 128 {
            assert_eq!(y[t * 1024 + e], x[(3 - t) * 1024 + e], "block {t}");
        }
    }
    assert!(y[4 * 1024..].iter().all(|v| v.is_nan()));
}

/// `num_programs` in an index map of a static grid is the extent (it used
/// to evaluate to nothing there, and the map to block 0).
#[test]
fn num_programs_in_a_static_index_map_is_the_extent() {
    let (x, xa) = rows(48);
    let y = kernel("reverse_static")
        .run(vec![xa], &threads(1))
        .expect("runs")[0]
        .to_f32();
    for t in 0..6 {
        for e in 0..8 * 128 {
            assert_eq!(y[t * 1024 + e], x[(5 - t) * 1024 + e], "block {t}");
        }
    }
}
