//! The tuning space: the cartesian product of the candidates of the
//! parameters being tuned, in a fixed order, and seeded sampling of it.
//!
//! invariant: [`Space::config`] enumerates configurations in row-major
//! order of the parameters as declared, so configuration `i` is the same
//! for the same kernel and `-p` values on every machine.

/// Spaces of up to this many configurations are filtered by their
/// constraints whole before a sample is drawn. Each is a check of the
/// kernel's parameters and `where` clauses (about 45 us of CPU in a debug
/// build), so the filter stays within seconds.
pub const ENUMERATED: u64 = 1 << 16;

/// Batches a space larger than [`ENUMERATED`] is drawn in at most.
pub const DRAWS: usize = 64;

/// One parameter being tuned and its candidates (sorted, no repeats).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    pub candidates: Vec<i64>,
    /// The value used when nothing is tuned, when known.
    pub default: Option<i64>,
}

/// A configuration: one value per axis, in axis order.
pub type Config = Vec<i64>;

#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub axes: Vec<Axis>,
}

impl Space {
    /// How many configurations the space holds (saturating).
    pub fn size(&self) -> u64 {
        self.axes
            .iter()
            .fold(1u64, |n, a| n.saturating_mul(a.candidates.len() as u64))
    }

    /// Configuration number `i` (row-major over the axes).
    pub fn config(&self, mut i: u64) -> Config {
        let mut out = vec![0; self.axes.len()];
        for (slot, a) in out.iter_mut().zip(&self.axes).rev() {
            let n = a.candidates.len() as u64;
            *slot = a.candidates[(i % n) as usize];
            i /= n;
        }
        out
    }

    /// The default configuration, when every tuned parameter has a default
    /// among its candidates.
    pub fn default_config(&self) -> Option<Config> {
        self.axes.iter().map(|a| a.default).collect()
    }

    /// The configurations to evaluate: all of them when there are at most
    /// `budget`, else `budget` distinct ones drawn with `seed` (always
    /// including the default, so the report can compare with it).
    pub fn choose(&self, budget: u64, seed: u64) -> Vec<Config> {
        self.choose_legal(budget, seed, |cs| vec![true; cs.len()])
    }

    /// As [`Space::choose`], over the configurations `legal` accepts (the
    /// kernel's `where` constraints): the space is filtered before the
    /// sample is drawn, so a sample of `budget` holds `budget` legal
    /// configurations, or every legal one when there are fewer. `legal`
    /// answers a batch of configurations at once, one answer each.
    ///
    /// Spaces of up to [`ENUMERATED`] configurations are filtered whole;
    /// larger ones are sampled by drawing configurations and keeping the
    /// legal ones, a bounded number of times.
    ///
    /// invariant: with every configuration legal, the sample is the one
    /// [`Space::choose`] has always drawn for the same seed.
    pub fn choose_legal(
        &self,
        budget: u64,
        seed: u64,
        mut legal: impl FnMut(&[Config]) -> Vec<bool>,
    ) -> Vec<Config> {
        let size = self.size();
        if size <= ENUMERATED {
            let all: Vec<Config> = (0..size).map(|i| self.config(i)).collect();
            let ok = legal(&all);
            let kept: Vec<Config> = all
                .into_iter()
                .zip(ok)
                .filter_map(|(c, ok)| ok.then_some(c))
                .collect();
            return self.sample(&kept, budget, seed);
        }
        self.sample_large(budget, seed, &mut legal)
    }

    /// `budget` distinct configurations of `pool` (all of them when it
    /// holds no more), the default first when it is in `pool`.
    fn sample(&self, pool: &[Config], budget: u64, seed: u64) -> Vec<Config> {
        let n = pool.len() as u64;
        if n <= budget {
            return pool.to_vec();
        }
        let mut rng = SplitMix(seed);
        let mut picked: Vec<u64> = Vec::new();
        let mut out: Vec<Config> = Vec::new();
        if let Some(d) = self.default_config().filter(|d| pool.contains(d)) {
            out.push(d);
        }
        // Rejection sampling terminates quickly: budget < n.
        while (out.len() as u64) < budget {
            let i = rng.next_u64() % n;
            let c = &pool[i as usize];
            if !picked.contains(&i) && !out.contains(c) {
                picked.push(i);
                out.push(c.clone());
            }
        }
        out
    }

    /// A sample of a space too large to filter whole: configurations are
    /// drawn in batches and the legal ones kept, until `budget` are held
    /// or [`DRAWS`] batches have been drawn (a space whose legal part is
    /// too thin to find by drawing then yields fewer).
    fn sample_large(
        &self,
        budget: u64,
        seed: u64,
        legal: &mut impl FnMut(&[Config]) -> Vec<bool>,
    ) -> Vec<Config> {
        let size = self.size();
        let mut rng = SplitMix(seed);
        let mut seen: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut out: Vec<Config> = Vec::new();
        if let Some(d) = self.default_config() {
            if legal(std::slice::from_ref(&d)).first() == Some(&true) {
                out.push(d);
            }
        }
        for _ in 0..DRAWS {
            if out.len() as u64 >= budget {
                break;
            }
            let want = (budget - out.len() as u64).max(1) as usize;
            let mut batch: Vec<Config> = Vec::new();
            // Distinct, unseen indices; the space is larger than the
            // budget, so these are found quickly.
            for _ in 0..want.saturating_mul(4) {
                if batch.len() >= want * 2 {
                    break;
                }
                let i = rng.next_u64() % size;
                if seen.insert(i) {
                    let c = self.config(i);
                    if !out.contains(&c) {
                        batch.push(c);
                    }
                }
            }
            let ok = legal(&batch);
            for (c, ok) in batch.into_iter().zip(ok) {
                if ok && (out.len() as u64) < budget {
                    out.push(c);
                }
            }
        }
        out
    }

    /// `bm=256 bn=512` for configuration `c`.
    pub fn describe(&self, c: &[i64]) -> String {
        self.axes
            .iter()
            .zip(c)
            .map(|(a, v)| format!("{}={v}", a.name))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `-p` pairs for configuration `c`.
    pub fn params(&self, c: &[i64]) -> Vec<(String, String)> {
        self.axes
            .iter()
            .zip(c)
            .map(|(a, v)| (a.name.clone(), v.to_string()))
            .collect()
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a small generator whose
/// sequence depends only on the seed, so `--seed` makes a search
/// repeatable everywhere.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
