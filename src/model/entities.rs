//! [`Entities`]: the map of one kind of entity in a [`State`](super::State),
//! cheap to clone and able to say which entries changed since a clone.
//!
//! A tick applies its op to a copy of the state it read and writes the files
//! that differ (`tx::plan_tick`). With a plain `BTreeMap` that copy cloned
//! every live todo and the comparison visited every one of them: at 10,000
//! todos a third of a tick, and a second copy of the whole state in memory.
//! Here the entries live in a shared base; a clone shares it and records its
//! own writes (and removals) in a small overlay, so cloning costs the size of
//! the overlay, a clone and its original hold one copy of every untouched
//! entity, and [`Entities::changed`] visits only the keys either side wrote.
//!
//! Reads see the overlay over the base, in key order, exactly as the map they
//! stand for. The only way to change an entry is through [`Entities::insert`],
//! [`Entities::remove`] or [`Entities::get_mut`] (no `values_mut`, no
//! `entry`), so no write can bypass the overlay. While nothing else shares the
//! base, writes go straight into it (decoding 10,000 files fills the base,
//! not the overlay). A clone of a map whose overlay has grown past
//! [`FOLD_AT`] entries folds it into a fresh base, so a long run of ticks in
//! one process (sync's replay, `verify`) does not carry a growing overlay.

use std::borrow::Borrow;
use std::collections::{BTreeMap, btree_map};
use std::fmt;
use std::iter::Peekable;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A clone of a map with more changed entries than this starts from a
/// folded base instead of copying the overlay.
pub const FOLD_AT: usize = 256;

/// A map of entities by id with copy-on-write sharing (see the module docs).
pub struct Entities<K, V> {
    /// Each value boxed: a B-tree node then holds 11 keys and pointers
    /// rather than 11 whole entities (a todo is over 500 bytes), and nodes
    /// filled one insert at a time are half empty.
    base: Arc<BTreeMap<K, Box<V>>>,
    /// Entries written since the base was shared: the new value, or `None`
    /// for a removal. Never holds a removal of a key the base lacks.
    over: BTreeMap<K, Option<V>>,
    len: usize,
    /// Set when the map holds only part of its entries ([`Entities::partial`]).
    part: Option<Arc<Part>>,
}

/// What a partial map ([`Entities::partial`]) knows of the entries it
/// lacks, and whether a read could have needed one.
pub struct Part {
    /// Whether every key whose hex part starts with this prefix is held.
    holds_prefix: Box<dyn Fn(&str) -> bool + Send + Sync>,
    /// Set by any read that could have needed an entry the map lacks: a
    /// walk of every entry, or a key not found.
    short: AtomicBool,
}

impl<K, V> Default for Entities<K, V> {
    fn default() -> Self {
        Entities {
            base: Arc::new(BTreeMap::new()),
            over: BTreeMap::new(),
            len: 0,
            part: None,
        }
    }
}

impl<K: Ord + Clone, V: Clone> Clone for Entities<K, V> {
    fn clone(&self) -> Self {
        if self.over.len() > FOLD_AT && self.part.is_none() {
            return self.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        }
        Entities {
            base: Arc::clone(&self.base),
            over: self.over.clone(),
            len: self.len,
            part: self.part.clone(),
        }
    }
}

impl<K: Ord, V> Entities<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let got = match self.over.get(key) {
            Some(v) => v.as_ref(),
            None => self.base.get(key).map(|v| &**v),
        };
        if got.is_none() {
            // A partial map may lack the entry, not the state.
            self.fell_short();
        }
        got
    }

    /// Marks a partial map's reads as untrustworthy (see [`Part`]).
    fn fell_short(&self) {
        if let Some(p) = &self.part {
            p.short.store(true, Ordering::Relaxed);
        }
    }

    /// A map that holds only some of the state's entries, `len` of them in
    /// all (the state cache's head and a few of its shards, for a tick
    /// that touches a few todos, `crate::cache::read_part`). Every read
    /// that could need an entry it lacks (a walk of every entry, a key not
    /// found) marks it ([`Entities::fell_short_of_whole`]); the caller then reads the
    /// whole state and does it again. `holds_prefix` says whether every
    /// key whose hex part starts with a prefix is held (then resolving
    /// that prefix needs no other entry).
    pub fn partial(
        base: BTreeMap<K, Box<V>>,
        len: usize,
        holds_prefix: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        Entities {
            base: Arc::new(base),
            over: BTreeMap::new(),
            len,
            part: Some(Arc::new(Part {
                holds_prefix: Box::new(holds_prefix),
                short: AtomicBool::new(false),
            })),
        }
    }

    /// Whether this map holds only some of the entries.
    pub fn is_partial(&self) -> bool {
        self.part.is_some()
    }

    /// Whether a read of this partial map (or of any clone of it) could
    /// have needed an entry it lacks: then whatever was decided from it
    /// must be decided again from the whole state.
    pub fn fell_short_of_whole(&self) -> bool {
        self.part
            .as_ref()
            .is_some_and(|p| p.short.load(Ordering::Relaxed))
    }

    /// Whether every key whose hex part starts with `prefix` is held: always
    /// for a whole map.
    pub fn holds_prefix(&self, prefix: &str) -> bool {
        self.part.as_ref().is_none_or(|p| (p.holds_prefix)(prefix))
    }

    /// The entries held, in key order, without marking a partial map: for
    /// a caller that needs only entries it knows are held (a partial todo
    /// map holds every claimed todo, `crate::cache`), or only a prefix
    /// [`Entities::holds_prefix`] said is held.
    pub fn iter_held(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        let mut all = Iter {
            base: self.base.iter().peekable(),
            over: self.over.iter().peekable(),
            left: usize::MAX,
        };
        std::iter::from_fn(move || all.next())
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.get(key).is_some()
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        self.fell_short();
        Iter {
            base: self.base.iter().peekable(),
            over: self.over.iter().peekable(),
            left: self.len,
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator + Clone {
        self.ordered().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator + Clone {
        self.ordered().map(|(_, v)| v)
    }

    /// [`Entities::iter`] as a double-ended iterator: straight from the
    /// base when there is no overlay (the common case), else collected.
    fn ordered(&self) -> Ordered<'_, K, V> {
        self.fell_short();
        if self.over.is_empty() {
            Ordered::Base(self.base.iter())
        } else {
            Ordered::Merged(self.iter().collect::<Vec<_>>().into_iter())
        }
    }

    /// The keys whose entries may differ between `self` and `other`, in
    /// key order: when both share a base only the keys either overlay
    /// wrote (then the cost is the size of the overlays), else every key
    /// of either map. The caller compares the entries.
    pub fn changed<'a>(&'a self, other: &'a Self) -> Vec<&'a K> {
        if Arc::ptr_eq(&self.base, &other.base) {
            let mut keys: Vec<&K> = self.over.keys().chain(other.over.keys()).collect();
            keys.sort();
            keys.dedup();
            keys
        } else {
            self.fell_short();
            other.fell_short();
            let mut keys: Vec<&K> = self.keys().chain(other.keys()).collect();
            keys.sort();
            keys.dedup();
            keys
        }
    }
}

impl<K: Ord + Clone, V: Clone> Entities<K, V> {
    /// Whether nothing but this map holds the base (then it is written in
    /// place).
    fn base_mut(&mut self) -> Option<&mut BTreeMap<K, Box<V>>> {
        Arc::get_mut(&mut self.base)
    }

    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        let in_over = self.over.contains_key(&key);
        let old = match self.base_mut() {
            Some(base) if !in_over => base.insert(key, Box::new(value)).map(|v| *v),
            _ => match self.over.insert(key.clone(), Some(value)) {
                Some(old) => old,
                None => self.base.get(&key).map(|v| V::clone(v)),
            },
        };
        if old.is_none() {
            // A partial map may lack the entry replaced.
            self.fell_short();
            self.len += 1;
        }
        old
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let old = if let Some(slot) = self.over.get_mut(key) {
            let old = slot.take();
            if !self.base.contains_key(key) {
                // Added since the base was shared: no removal to record.
                self.over.remove(key);
            }
            old
        } else if let Some(base) = self.base_mut() {
            base.remove(key).map(|v| *v)
        } else {
            let (k, v) = self.base.get_key_value(key)?;
            let (k, v) = (k.clone(), V::clone(v));
            self.over.insert(k, None);
            Some(v)
        };
        match old {
            Some(_) => self.len -= 1,
            None => self.fell_short(),
        }
        old
    }

    /// The entry to change: copied into the overlay first when the base is
    /// shared.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        if !self.over.contains_key(key) {
            if Arc::get_mut(&mut self.base).is_some() {
                let part = self.part.clone();
                let got = Arc::get_mut(&mut self.base)
                    .expect("checked above")
                    .get_mut(key)
                    .map(|v| &mut **v);
                if got.is_none()
                    && let Some(p) = part
                {
                    p.short.store(true, Ordering::Relaxed);
                }
                return got;
            }
            let Some((k, v)) = self.base.get_key_value(key) else {
                self.fell_short();
                return None;
            };
            let (k, v) = (k.clone(), V::clone(v));
            self.over.insert(k, Some(v));
        }
        let got = self.over.get_mut(key).and_then(Option::as_mut);
        if got.is_none()
            && let Some(p) = &self.part
        {
            p.short.store(true, Ordering::Relaxed);
        }
        got
    }

    /// The entry of `key`, inserted from `make` when there is none (the
    /// `entry(key).or_insert_with(make)` of a map).
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        if !self.contains_key(&key) {
            self.insert(key.clone(), make());
        }
        self.get_mut(&key).expect("inserted above")
    }

    pub fn clear(&mut self) {
        self.fell_short();
        *self = Entities {
            part: self.part.take(),
            ..Self::default()
        };
    }

    /// Folds the overlay into the base when nothing else shares the base
    /// any more (the state a tick was applied to has been dropped), so the
    /// next clone copies no overlay and [`Entities::changed`] visits only
    /// what the next tick writes. Costs the size of the overlay; reads see
    /// the same entries before and after. A chain walk (`verify`) calls it
    /// once per tick on the state it carries forward.
    pub fn settle(&mut self) {
        if self.over.is_empty() {
            return;
        }
        let Some(base) = Arc::get_mut(&mut self.base) else {
            return;
        };
        for (k, v) in std::mem::take(&mut self.over) {
            match v {
                Some(v) => {
                    base.insert(k, Box::new(v));
                }
                None => {
                    base.remove(&k);
                }
            }
        }
    }
}

/// The entries of an [`Entities`] in key order: the overlay over the base.
pub struct Iter<'a, K, V> {
    base: Peekable<btree_map::Iter<'a, K, Box<V>>>,
    over: Peekable<btree_map::Iter<'a, K, Option<V>>>,
    /// Entries left (at most: [`Entities::iter_held`] starts from the
    /// largest count).
    left: usize,
}

impl<'a, K: Ord, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let from_over = match (self.base.peek(), self.over.peek()) {
                (None, None) => return None,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((b, _)), Some((o, _))) => match (*b).cmp(*o) {
                    std::cmp::Ordering::Less => false,
                    std::cmp::Ordering::Greater => true,
                    std::cmp::Ordering::Equal => {
                        // The overlay's entry replaces the base's.
                        self.base.next();
                        true
                    }
                },
            };
            if from_over {
                let (k, v) = self.over.next().expect("peeked");
                if let Some(v) = v {
                    self.left = self.left.saturating_sub(1);
                    return Some((k, v));
                }
            } else {
                self.left = self.left.saturating_sub(1);
                return self.base.next().map(|(k, v)| (k, &**v));
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<K: Ord, V> ExactSizeIterator for Iter<'_, K, V> {}

/// A double-ended walk of the entries (see [`Entities::ordered`]).
enum Ordered<'a, K, V> {
    Base(btree_map::Iter<'a, K, Box<V>>),
    Merged(std::vec::IntoIter<(&'a K, &'a V)>),
}

impl<K, V> Clone for Ordered<'_, K, V> {
    fn clone(&self) -> Self {
        match self {
            Ordered::Base(i) => Ordered::Base(i.clone()),
            Ordered::Merged(i) => Ordered::Merged(i.clone()),
        }
    }
}

impl<'a, K, V> Iterator for Ordered<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Ordered::Base(i) => i.next().map(|(k, v)| (k, &**v)),
            Ordered::Merged(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Ordered::Base(i) => i.size_hint(),
            Ordered::Merged(i) => i.size_hint(),
        }
    }
}

impl<K, V> DoubleEndedIterator for Ordered<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Ordered::Base(i) => i.next_back().map(|(k, v)| (k, &**v)),
            Ordered::Merged(i) => i.next_back(),
        }
    }
}

impl<K, V> ExactSizeIterator for Ordered<'_, K, V> {}

impl<'a, K: Ord, V> IntoIterator for &'a Entities<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<K: Ord + Clone, V: Clone> FromIterator<(K, V)> for Entities<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        BTreeMap::from_iter(iter).into()
    }
}

impl<K: Ord, V> From<BTreeMap<K, V>> for Entities<K, V> {
    fn from(map: BTreeMap<K, V>) -> Self {
        Entities {
            len: map.len(),
            base: Arc::new(map.into_iter().map(|(k, v)| (k, Box::new(v))).collect()),
            over: BTreeMap::new(),
            part: None,
        }
    }
}

impl<K: Ord, V> Entities<K, V> {
    /// A map whose entries are already boxed (the state cache's shards,
    /// `crate::cache`), taken as the base without copying them.
    pub fn from_boxed(base: BTreeMap<K, Box<V>>) -> Self {
        Entities {
            len: base.len(),
            base: Arc::new(base),
            over: BTreeMap::new(),
            part: None,
        }
    }
}

impl<K, V, Q> std::ops::Index<&Q> for Entities<K, V>
where
    K: Ord + Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry for this key")
    }
}

impl<K: Ord, V: PartialEq> PartialEq for Entities<K, V> {
    fn eq(&self, other: &Self) -> bool {
        if self.len != other.len {
            return false;
        }
        if Arc::ptr_eq(&self.base, &other.base) {
            return self
                .changed(other)
                .into_iter()
                .all(|k| self.get(k) == other.get(k));
        }
        self.iter().eq(other.iter())
    }
}

impl<K: fmt::Debug + Ord, V: fmt::Debug> fmt::Debug for Entities<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Ord + Serialize, V: Serialize> Serialize for Entities<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de, K: Ord + Deserialize<'de>, V: Deserialize<'de>> Deserialize<'de> for Entities<K, V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let base = BTreeMap::<K, Box<V>>::deserialize(d)?;
        Ok(Entities {
            len: base.len(),
            base: Arc::new(base),
            over: BTreeMap::new(),
            part: None,
        })
    }
}

#[cfg(test)]
mod tests;
