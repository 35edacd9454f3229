//! A map kept as a vector sorted by key, for the few keys a run groups by (levels,
//! passes, error kinds, seconds of the run).
//!
//! Why not `BTreeMap`: each key and value type compiles its own copy of the B-tree
//! (insertion, search, iteration, dropping: 3–5 KB of WebAssembly each), and the page
//! downloads every copy on a first visit. This one is a binary search and a
//! `Vec::insert`; with keys arriving mostly in order (levels, seconds) inserting at the
//! end is the usual case.
//!
//! In JSON it is an object, written in key order: the same text as a `BTreeMap`'s.

use std::{fmt, marker::PhantomData, ops::Index};

use serde::{
    de::{MapAccess, Visitor},
    Deserialize, Deserializer, Serialize, Serializer,
};

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
    /// An empty map.
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

    /// Sets the value of `key`, giving back the one it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.entries.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            Err(at) => {
                self.entries.insert(at, (key, value));
                None
            }
        }
    }

    /// The value of `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
    {
        let at = self
            .entries
            .binary_search_by(|(k, _)| k.borrow().cmp(key))
            .ok()?;
        Some(&self.entries[at].1)
    }

    /// The value of `key`, to change.
    pub fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: std::borrow::Borrow<Q>,
    {
        let at = self
            .entries
            .binary_search_by(|(k, _)| k.borrow().cmp(key))
            .ok()?;
        Some(&mut self.entries[at].1)
    }

    /// Removes every entry, keeping the room.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values, in their keys' order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values in key order, the map consumed.
    pub fn into_values(self) -> impl Iterator<Item = V> {
        self.entries.into_iter().map(|(_, v)| v)
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<K: Ord + std::borrow::Borrow<Q>, Q: Ord + ?Sized, V> Index<&Q> for VecMap<K, V> {
    type Output = V;

    /// The value of `key`; panics when it is not there, as `BTreeMap`'s does.
    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry for this key")
    }
}

impl<'a, K: Ord, V> IntoIterator for &'a VecMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for VecMap<K, V> {
    /// Later values of a repeated key replace earlier ones.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = VecMap::new();
        for (k, v) in entries {
            map.insert(k, v);
        }
        map
    }
}

impl<K: Serialize, V: Serialize> Serialize for VecMap<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.entries.iter().map(|(k, v)| (k, v)))
    }
}

impl<'de, K: Deserialize<'de> + Ord, V: Deserialize<'de>> Deserialize<'de> for VecMap<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<K, V>(PhantomData<(K, V)>);
        impl<'de, K: Deserialize<'de> + Ord, V: Deserialize<'de>> Visitor<'de> for Entries<K, V> {
            type Value = VecMap<K, V>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut map = VecMap::new();
                while let Some((k, v)) = access.next_entry()? {
                    map.insert(k, v);
                }
                Ok(map)
            }
        }
        deserializer.deserialize_map(Entries(PhantomData))
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

    #[test]
    fn json_is_a_btreemaps_text_both_ways() {
        use std::collections::BTreeMap;
        let pairs = [("http/1.1", 3u64), ("h2", 5), ("h3", 0)];
        let ours: VecMap<String, u64> = pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
        let theirs: BTreeMap<String, u64> = pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
        let json = serde_json::to_string(&ours).unwrap();
        assert_eq!(json, serde_json::to_string(&theirs).unwrap());
        assert_eq!(
            serde_json::from_str::<VecMap<String, u64>>(&json).unwrap(),
            ours
        );
        assert_eq!(ours["h2"], 5);
        assert_eq!(
            serde_json::to_string(&VecMap::<u8, u8>::new()).unwrap(),
            "{}"
        );
        assert!(serde_json::from_str::<VecMap<String, u64>>("[1]").is_err());
    }

    #[test]
    fn insert_replaces_and_says_what_it_replaced() {
        let mut map: VecMap<&str, u32> = VecMap::new();
        assert_eq!(map.insert("b", 1), None);
        assert_eq!(map.insert("a", 2), None);
        assert_eq!(map.insert("b", 3), Some(1));
        *map.get_mut("a").unwrap() += 10;
        assert_eq!(map.iter().collect::<Vec<_>>(), [(&"a", &12), (&"b", &3)]);
        map.clear();
        assert!(map.is_empty());
    }
}
