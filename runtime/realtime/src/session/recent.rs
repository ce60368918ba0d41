//! A map that keeps only its most recent entries. What a session learns of each model item
//! (whether the page may see it) matters while events about that item stream, which is within
//! its response; a session that runs for hours must not keep one entry per item it ever saw.

use std::collections::{HashMap, VecDeque};

/// Entries kept by [`Recent`] maps: far more than the items of the responses in flight.
pub(super) const KEEP_RECENT: usize = 1024;

/// A string-keyed map of at most [`KEEP_RECENT`] entries; inserting past that forgets the
/// entry inserted longest ago.
#[derive(Debug, Default)]
pub(super) struct Recent<V> {
    /// Each key's value, and the number of its insertion.
    map: HashMap<String, (u64, V)>,
    /// Insertions, oldest first; an entry inserted again since is skipped when its old
    /// insertion comes up.
    order: VecDeque<(u64, String)>,
    inserted: u64,
}

impl<V> Recent<V> {
    pub(super) fn insert(&mut self, key: String, value: V) {
        self.inserted += 1;
        self.order.push_back((self.inserted, key.clone()));
        self.map.insert(key, (self.inserted, value));
        while self.order.len() > KEEP_RECENT {
            let Some((n, key)) = self.order.pop_front() else {
                break;
            };
            if self.map.get(&key).is_some_and(|(m, _)| *m == n) {
                self.map.remove(&key);
            }
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&V> {
        self.map.get(key).map(|(_, v)| v)
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<V> {
        // Its insertion stays in `order` until it comes up, and is skipped then.
        self.map.remove(key).map(|(_, v)| v)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recent_entries_only() {
        let mut recent = Recent::default();
        for i in 0..3 * KEEP_RECENT {
            recent.insert(format!("k{i}"), i);
        }
        assert_eq!(recent.len(), KEEP_RECENT);
        assert_eq!(recent.get("k0"), None);
        assert_eq!(
            recent.get(&format!("k{}", 3 * KEEP_RECENT - 1)),
            Some(&(3 * KEEP_RECENT - 1))
        );
        assert!(recent.order.len() <= KEEP_RECENT);
    }

    #[test]
    fn an_entry_inserted_again_is_as_recent_as_its_last_insertion() {
        let mut recent = Recent::default();
        recent.insert("kept".to_owned(), 0);
        for i in 0..KEEP_RECENT - 1 {
            recent.insert(format!("k{i}"), i);
        }
        recent.insert("kept".to_owned(), 1);
        for i in 0..KEEP_RECENT / 2 {
            recent.insert(format!("m{i}"), i);
        }
        assert_eq!(recent.get("kept"), Some(&1));
        assert_eq!(recent.remove("kept"), Some(1));
        assert_eq!(recent.get("kept"), None);
    }
}
