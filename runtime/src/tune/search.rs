//! Successive halving (Jamieson and Talwalkar, 2016) over configurations
//! whose evaluation is noisy and gets better with more effort (repeats of a
//! timed run): every survivor is evaluated with the current number of
//! repeats, the better half is kept, and the repeats double, until one
//! remains or the repeats reach `max_repeats`.
//!
//! A deterministic evaluator (the model) needs one round; the search then
//! ranks every configuration once.

/// The evaluation of each configuration (index into the input) with its
/// last measured time, best first. `eval(i, repeats)` returns seconds, or
/// `None` for a configuration that failed (dropped).
pub fn successive_halving(
    n: usize,
    deterministic: bool,
    max_repeats: u32,
    mut eval: impl FnMut(usize, u32) -> Option<f64>,
) -> Vec<(usize, f64)> {
    let mut alive: Vec<usize> = (0..n).collect();
    let mut last: Vec<Option<f64>> = vec![None; n];
    let mut repeats = 1u32;
    loop {
        for &i in &alive {
            last[i] = eval(i, repeats);
        }
        alive.retain(|&i| last[i].is_some());
        alive.sort_by(|&a, &b| {
            last[a]
                .unwrap_or(f64::INFINITY)
                .total_cmp(&last[b].unwrap_or(f64::INFINITY))
                .then(a.cmp(&b))
        });
        if deterministic || alive.len() <= 1 || repeats >= max_repeats {
            break;
        }
        alive.truncate(alive.len().div_ceil(2));
        repeats *= 2;
    }
    // The survivors first (in their final order), then the configurations
    // dropped by earlier rounds, by their last time.
    let mut rest: Vec<usize> = (0..n)
        .filter(|i| last[*i].is_some() && !alive.contains(i))
        .collect();
    rest.sort_by(|&a, &b| {
        last[a]
            .unwrap_or(f64::INFINITY)
            .total_cmp(&last[b].unwrap_or(f64::INFINITY))
    });
    alive
        .into_iter()
        .chain(rest)
        .filter_map(|i| last[i].map(|t| (i, t)))
        .collect()
}
