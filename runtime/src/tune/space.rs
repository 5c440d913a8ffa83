//! The tuning space: the cartesian product of the candidates of the
//! parameters being tuned, in a fixed order, and seeded sampling of it.
//!
//! invariant: [`Space::config`] enumerates configurations in row-major
//! order of the parameters as declared, so configuration `i` is the same
//! for the same kernel and `-p` values on every machine.

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
        let size = self.size();
        if size <= budget {
            return (0..size).map(|i| self.config(i)).collect();
        }
        let mut rng = SplitMix(seed);
        let mut picked: Vec<u64> = Vec::new();
        let mut out: Vec<Config> = Vec::new();
        if let Some(d) = self.default_config() {
            out.push(d);
        }
        // Rejection sampling terminates quickly: budget < size.
        while (out.len() as u64) < budget {
            let i = rng.next_u64() % size;
            let c = self.config(i);
            if !picked.contains(&i) && !out.contains(&c) {
                picked.push(i);
                out.push(c);
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
