//! Exact descriptive statistics from all samples.
//!
//! Percentiles use linear interpolation between the two closest ranks, the method of
//! numpy's default `np.percentile` (Hyndman and Fan's type 7), which vLLM's
//! `bench serve`, the reference article's script and most benchmark scripts use:
//! for sorted samples `x[0..n]` and `p` in `[0, 100]`, let `h = (n − 1)·p/100`; the
//! percentile is `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`. The standard deviation is
//! the population one (numpy's default, `ddof = 0`).
//!
//! No histogram, no sketch: LLM benchmarks have thousands of samples, not billions,
//! and a sketch's error would be one more thing to explain.

use serde::{Deserialize, Serialize};

/// The summary of one metric over a set of samples, in the samples' unit.
///
/// A figure another tool did not report (an imported summary: vLLM prints the
/// percentiles it was asked for) is NaN: written as `null` in JSON, read back as
/// NaN, and shown as a dash.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// How many samples.
    pub n: u64,
    /// Their mean.
    #[serde(deserialize_with = "nan_if_null")]
    pub mean: f64,
    /// Their standard deviation (population).
    #[serde(deserialize_with = "nan_if_null")]
    pub std: f64,
    /// The smallest.
    #[serde(deserialize_with = "nan_if_null")]
    pub min: f64,
    /// The largest.
    #[serde(deserialize_with = "nan_if_null")]
    pub max: f64,
    /// The median.
    #[serde(deserialize_with = "nan_if_null")]
    pub p50: f64,
    /// The 90th percentile.
    #[serde(deserialize_with = "nan_if_null")]
    pub p90: f64,
    /// The 95th percentile.
    #[serde(deserialize_with = "nan_if_null")]
    pub p95: f64,
    /// The 99th percentile.
    #[serde(deserialize_with = "nan_if_null")]
    pub p99: f64,
}

/// A figure, or NaN where JSON says `null` (what serde_json writes for NaN).
fn nan_if_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

impl Distribution {
    /// Describes `samples` (in any order); `None` when there are none. NaNs are ignored.
    pub fn of(samples: &[f64]) -> Option<Distribution> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        if sorted.is_empty() {
            return None;
        }
        sort_floats(&mut sorted);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let var = sorted.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        Some(Distribution {
            n: n as u64,
            mean,
            std: var.sqrt(),
            min: sorted[0],
            max: sorted[n - 1],
            p50: percentile_sorted(&sorted, 50.0),
            p90: percentile_sorted(&sorted, 90.0),
            p95: percentile_sorted(&sorted, 95.0),
            p99: percentile_sorted(&sorted, 99.0),
        })
    }

    /// The same distribution with every value multiplied by `factor` (unit change).
    pub fn scaled(self, factor: f64) -> Distribution {
        Distribution {
            n: self.n,
            mean: self.mean * factor,
            std: self.std * factor,
            min: self.min * factor,
            max: self.max * factor,
            p50: self.p50 * factor,
            p90: self.p90 * factor,
            p95: self.p95 * factor,
            p99: self.p99 * factor,
        }
    }
}

/// The key of `x` whose unsigned order is `f64::total_cmp`'s (negative values
/// flipped whole, the sign bit of the others set), and back.
fn float_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

fn key_float(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

// Why the sorting helpers below: each `sort_by` closure and each element type adds
// its own copy of the standard library's sort (3–5 KB of WebAssembly each). The page
// sorts through two copies only: `[u64]::sort_unstable`, for numbers, and the small
// merge sort of `order_with`, for everything else.

/// Sorts `values` ascending in `f64::total_cmp`'s order.
pub(crate) fn sort_floats(values: &mut [f64]) {
    let mut keys: Vec<u64> = values.iter().map(|&x| float_key(x)).collect();
    sort_numbers(&mut keys);
    for (value, key) in values.iter_mut().zip(keys) {
        *value = key_float(key);
    }
}

/// Sorts `values` ascending.
pub(crate) fn sort_numbers(values: &mut [u64]) {
    values.sort_unstable();
}

/// `values` ascending, each once.
pub(crate) fn sorted_unique(values: impl IntoIterator<Item = u32>) -> Vec<u32> {
    let mut wide: Vec<u64> = values.into_iter().map(u64::from).collect();
    sort_numbers(&mut wide);
    wide.dedup();
    wide.into_iter().map(|v| v as u32).collect()
}

/// The positions `0..n` ordered by `cmp`, equal ones in their given order (a stable
/// merge sort, bottom up).
pub(crate) fn order_with(n: usize, cmp: &dyn Fn(usize, usize) -> std::cmp::Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut merged = vec![0; n];
    let mut width = 1;
    while width < n {
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut a, mut b) = (start, mid);
            for slot in &mut merged[start..end] {
                // The left run wins ties: stability.
                let take_left = b == end || (a < mid && cmp(order[a], order[b]).is_le());
                if take_left {
                    *slot = order[a];
                    a += 1;
                } else {
                    *slot = order[b];
                    b += 1;
                }
            }
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    order
}

/// The positions of `keys` in ascending order (`f64::total_cmp`), equal keys in
/// their given order. Descending: pass the keys negated.
pub fn order_by(keys: &[f64]) -> Vec<usize> {
    order_with(keys.len(), &|a, b| keys[a].total_cmp(&keys[b]))
}

/// `items` in the order [`order_by`] or [`order_with`] gave.
pub fn reorder<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.iter().filter_map(|&i| slots[i].take()).collect()
}

/// The same percentile as [`percentile_sorted`] from samples in any order, which it
/// reorders: O(n) selection instead of a sort, for figures asked for again and again
/// while a level runs.
pub(crate) fn percentile_select(samples: &mut [f64], p: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let h = (samples.len() - 1) as f64 * (p.clamp(0.0, 100.0) / 100.0);
    let lo = h.floor() as usize;
    let (_, &mut at_lo, above) = samples.select_nth_unstable_by(lo, f64::total_cmp);
    let at_hi = above
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .unwrap_or(at_lo);
    Some(at_lo + (h - lo as f64) * (at_hi - at_lo))
}

/// The `p`-th percentile (0–100) of sorted, non-empty samples, by linear interpolation.
pub(crate) fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    assert!(!sorted.is_empty(), "percentile of no samples");
    let h = (sorted.len() - 1) as f64 * (p.clamp(0.0, 100.0) / 100.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The least-squares slope of `y` over `x` through `points` (`(x, y)`); `None`
/// for fewer than two points or when every `x` is the same. Centred sums, so
/// large offsets (thousands of tokens, seconds) lose no precision.
pub(crate) fn slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), &(x, y)| (sx + x / n, sy + y / n));
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(sxy, sxx), &(x, y)| {
        (sxy + (x - mx) * (y - my), sxx + (x - mx) * (x - mx))
    });
    (sxx > 0.0).then(|| sxy / sxx).filter(|s| s.is_finite())
}

#[cfg(test)]
mod tests {

    #[test]
    fn slope_of_a_line_with_noise_and_of_nothing() {
        use super::slope;
        // y = 3 + 0.25 x, around x = 10,000 (input tokens), with ±1 noise that cancels.
        let points: Vec<(f64, f64)> = (0..100)
            .map(|i| {
                let x = 10_000.0 + f64::from(i) * 10.0;
                let noise = if i % 2 == 0 { 1.0 } else { -1.0 };
                (x, 3.0 + 0.25 * x + noise)
            })
            .collect();
        let s = slope(&points).unwrap();
        assert!((s - 0.25).abs() < 1e-3, "{s}");
        assert_eq!(slope(&[(1.0, 2.0)]), None);
        assert_eq!(slope(&[(5.0, 1.0), (5.0, 9.0)]), None, "no spread in x");
        assert_eq!(slope(&[]), None);
    }

    /// A spread of values: negatives, both zeros, infinities, subnormals, repeats.
    fn awkward_floats() -> Vec<f64> {
        let mut values: Vec<f64> = (0..500u64)
            .map(|i| ((i * 7919) % 211) as f64 / 7.0 - 15.0)
            .collect();
        values.extend([
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE / 4.0,
        ]);
        values.extend([-f64::MIN_POSITIVE / 4.0, f64::MAX, f64::MIN, 1e-300, -1e300]);
        values
    }

    #[test]
    fn sort_floats_is_total_cmp_order_bit_for_bit() {
        let mut ours = awkward_floats();
        let mut std = ours.clone();
        sort_floats(&mut ours);
        std.sort_by(f64::total_cmp);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&ours), bits(&std));
        let mut none: Vec<f64> = Vec::new();
        sort_floats(&mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn order_with_is_a_stable_sort_at_every_length() {
        // Lengths around the merge widths (1, 2, 4, …): odd tails are where a
        // bottom-up merge sort goes wrong.
        for n in 0..70usize {
            let keys: Vec<u32> = (0..n as u32).map(|i| (i * 37 + 11) % 7).collect();
            let order = order_with(n, &|a, b| keys[a].cmp(&keys[b]));
            let mut expected: Vec<usize> = (0..n).collect();
            expected.sort_by_key(|&i| keys[i]);
            assert_eq!(order, expected, "n = {n}");
        }
    }

    #[test]
    fn sorted_unique_sorts_and_drops_repeats() {
        assert_eq!(sorted_unique([16, 1, 4, 4, 2, 8, 1]), vec![1, 2, 4, 8, 16]);
        assert_eq!(sorted_unique([u32::MAX, 0]), vec![0, u32::MAX]);
        assert!(sorted_unique([]).is_empty());
    }

    #[test]
    fn order_by_sorts_like_a_stable_sort() {
        let keys = [3.0, 1.0, 2.0, 1.0, f64::INFINITY, -0.5];
        assert_eq!(order_by(&keys), vec![5, 1, 3, 2, 0, 4]);
        // Descending, equal keys still in their given order.
        let negated: Vec<f64> = keys.iter().map(|k| -k).collect();
        assert_eq!(order_by(&negated), vec![4, 0, 2, 1, 3, 5]);
        let items = vec!["a", "b", "c", "d", "e", "f"];
        assert_eq!(
            reorder(items, &order_by(&keys)),
            ["f", "b", "d", "c", "a", "e"]
        );
        assert!(order_by(&[]).is_empty());
    }

    #[test]
    fn a_missing_figure_travels_as_null_and_comes_back_as_nan() {
        let mut d = Distribution::of(&[1.0, 2.0, 3.0]).unwrap();
        d.p95 = f64::NAN;
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains(r#""p95":null"#), "{json}");
        let back: Distribution = serde_json::from_str(&json).unwrap();
        assert!(back.p95.is_nan());
        assert_eq!(back.p50, 2.0);
    }

    use super::*;

    #[test]
    fn selection_gives_the_sorted_percentiles() {
        let samples: Vec<f64> = (0..997u64)
            .map(|i| ((i * 7919) % 1009) as f64 / 3.0)
            .collect();
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        for p in [0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0] {
            let mut scratch = samples.clone();
            assert_eq!(
                percentile_select(&mut scratch, p),
                Some(percentile_sorted(&sorted, p)),
                "p{p}"
            );
        }
        assert_eq!(percentile_select(&mut [], 50.0), None);
        assert_eq!(percentile_select(&mut [4.0], 95.0), Some(4.0));
    }

    #[test]
    fn matches_numpy_linear_percentiles() {
        // np.percentile([1,2,3,4,5,6,7,8,9,10], [50,90,95,99])
        //   -> [5.5, 9.1, 9.55, 9.91]
        let samples: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let d = Distribution::of(&samples).unwrap();
        assert_eq!(d.n, 10);
        assert_eq!(d.p50, 5.5);
        assert!((d.p90 - 9.1).abs() < 1e-12);
        assert!((d.p95 - 9.55).abs() < 1e-12);
        assert!((d.p99 - 9.91).abs() < 1e-12);
        assert_eq!(d.mean, 5.5);
        // np.std(range(1, 11)) = 2.8722813232690143
        assert!((d.std - 2.872_281_323_269_014_3).abs() < 1e-12);
        assert_eq!((d.min, d.max), (1.0, 10.0));
    }

    #[test]
    fn single_sample_and_empty() {
        let d = Distribution::of(&[42.0]).unwrap();
        assert_eq!((d.p50, d.p99, d.std), (42.0, 42.0, 0.0));
        assert_eq!(Distribution::of(&[]), None);
        assert_eq!(Distribution::of(&[f64::NAN]), None);
    }

    #[test]
    fn eight_samples_like_the_article() {
        // np.percentile([420, 400, 380, 450, 500, 515, 410, 430], 95) = 509.75
        let d =
            Distribution::of(&[420.0, 400.0, 380.0, 450.0, 500.0, 515.0, 410.0, 430.0]).unwrap();
        assert!((d.p95 - 509.75).abs() < 1e-9);
        assert_eq!(d.p50, 425.0);
    }
}
