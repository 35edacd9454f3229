//! A map kept as a vector sorted by key, for the few keys a run groups by (levels,
//! passes, error kinds, seconds of the run).
//!
//! Why not `BTreeMap`: each key and value type compiles its own copy of the B-tree
//! (insertion, search, iteration, dropping: 3–5 KB of WebAssembly each), and the page
//! downloads every copy on a first visit. This one is a binary search and a
//! `Vec::insert`; with keys arriving mostly in order (levels, seconds) inserting at the
//! end is the usual case.

/// Entries sorted by key, each key once.
#[derive(Clone, Debug, PartialEq)]
pub struct VecMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord, V> VecMap<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `key`, made by `make` when the key is new.
    pub fn entry_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let at = match self.entries.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(at) => at,
            Err(at) => {
                self.entries.insert(at, (key, make()));
                at
            }
        };
        &mut self.entries[at].1
    }

    /// The value of `key`, the default when the key is new.
    pub fn entry_or_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        self.entry_or_insert_with(key, V::default)
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        let at = self.entries.binary_search_by(|(k, _)| k.cmp(key)).ok()?;
        Some(&self.entries[at].1)
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values in key order, the map consumed.
    pub fn into_values(self) -> impl Iterator<Item = V> {
        self.entries.into_iter().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_sorted_and_unique_whatever_the_order_they_come_in() {
        let mut map: VecMap<u32, u32> = VecMap::new();
        for key in [8, 1, 4, 8, 16, 2, 1, 32, 4] {
            *map.entry_or_default(key) += 1;
        }
        let entries: Vec<(u32, u32)> = map.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(entries, [(1, 2), (2, 1), (4, 2), (8, 2), (16, 1), (32, 1)]);
        assert_eq!(map.len(), 6);
        assert_eq!(map.get(&4), Some(&2));
        assert_eq!(map.get(&5), None);
        assert_eq!(
            map.keys().copied().collect::<Vec<_>>(),
            [1, 2, 4, 8, 16, 32]
        );
        assert_eq!(map.into_values().sum::<u32>(), 9);
    }

    #[test]
    fn make_runs_only_for_a_new_key() {
        let mut map: VecMap<(u32, u32), String> = VecMap::new();
        map.entry_or_insert_with((2, 0), || "first".into());
        map.entry_or_insert_with((2, 0), || unreachable!("the key is there"));
        map.entry_or_insert_with((1, 5), || "second".into());
        assert_eq!(map.values().collect::<Vec<_>>(), ["second", "first"]);
        assert!(!map.is_empty());
        assert!(VecMap::<u8, u8>::new().is_empty());
    }
}
