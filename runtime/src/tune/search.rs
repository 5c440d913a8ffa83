//! Successive halving (Jamieson and Talwalkar, 2016) over configurations
//! whose evaluation is noisy and gets better with more effort (repeats of a
//! timed run): every survivor is evaluated with the current number of
//! repeats, the better half is kept, and the repeats double, until one
//! remains or the repeats reach `max_repeats`.
//!
//! A deterministic evaluator (the model) needs one round; the search then
//! ranks every configuration once.
//!
//! invariant: every configuration ends either ranked (with its last time)
//! or failed (with the reason of its last evaluation), never both, never
//! neither.

/// The outcome of a search: configurations are indices into its input.
#[derive(Debug, Clone, PartialEq)]
pub struct Halving<E> {
    /// The configurations that were timed, with their last time, best
    /// first: the survivors of the last round, then those dropped by
    /// earlier rounds by their last time.
    pub ranked: Vec<(usize, f64)>,
    /// The configurations whose last evaluation failed, in index order,
    /// with why.
    pub failed: Vec<(usize, E)>,
}

/// Ranks `n` configurations. `eval(i, repeats)` returns seconds, or why
/// configuration `i` could not be evaluated (it is then dropped).
pub fn successive_halving<E>(
    n: usize,
    deterministic: bool,
    max_repeats: u32,
    mut eval: impl FnMut(usize, u32) -> Result<f64, E>,
) -> Halving<E> {
    let mut alive: Vec<usize> = (0..n).collect();
    let mut last: Vec<Option<f64>> = vec![None; n];
    let mut failed: Vec<(usize, E)> = Vec::new();
    let mut repeats = 1u32;
    loop {
        for &i in &alive {
            match eval(i, repeats) {
                Ok(t) => last[i] = Some(t),
                Err(e) => {
                    last[i] = None;
                    failed.push((i, e));
                }
            }
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
    let mut rest: Vec<usize> = (0..n)
        .filter(|i| last[*i].is_some() && !alive.contains(i))
        .collect();
    rest.sort_by(|&a, &b| {
        last[a]
            .unwrap_or(f64::INFINITY)
            .total_cmp(&last[b].unwrap_or(f64::INFINITY))
    });
    failed.sort_by_key(|(i, _)| *i);
    Halving {
        ranked: alive
            .into_iter()
            .chain(rest)
            .filter_map(|i| last[i].map(|t| (i, t)))
            .collect(),
        failed,
    }
}
