use std::collections::BTreeMap;

use super::*;

/// splitmix64: a repeatable sequence from a seed (no extra crate).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

type Map = Entities<String, Vec<u32>>;

fn key(n: u64) -> String {
    format!("k{n:03}")
}

/// Everything a reader can see of the map agrees with the plain map.
fn same(got: &Map, want: &BTreeMap<String, Vec<u32>>) {
    assert_eq!(got.len(), want.len());
    assert_eq!(got.is_empty(), want.is_empty());
    assert!(got.iter().eq(want.iter()));
    assert_eq!(got.iter().len(), want.len());
    assert!(got.keys().eq(want.keys()));
    assert!(got.values().rev().eq(want.values().rev()));
    for n in 0..40 {
        assert_eq!(got.get(&key(n)), want.get(&key(n)));
        assert_eq!(got.contains_key(&key(n)), want.contains_key(&key(n)));
    }
    let json = serde_json::to_string(got).unwrap();
    assert_eq!(json, serde_json::to_string(want).unwrap());
    let back: Map = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, got);
}

/// Random inserts, removals and in-place changes on clones of clones, each
/// checked against a plain `BTreeMap` doing the same; and `changed` between
/// every clone and its original names every key whose entry differs.
#[test]
fn every_write_on_a_clone_reads_back_like_a_plain_map_and_is_named_by_changed() {
    for seed in 0..200 {
        let mut rng = Rng(seed);
        let mut plain: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        let mut map = Map::new();
        for _ in 0..rng.below(30) {
            let (k, v) = (key(rng.below(40)), vec![rng.below(5) as u32]);
            plain.insert(k.clone(), v.clone());
            map.insert(k, v);
        }
        same(&map, &plain);
        // A chain of clones, as ticks make them; keep the originals alive
        // (the base stays shared) for some, drop them for others.
        let mut kept = Vec::new();
        for step in 0..rng.below(12) + 1 {
            let before = map.clone();
            let before_plain = plain.clone();
            for _ in 0..rng.below(8) {
                let k = key(rng.below(40));
                match rng.below(4) {
                    0 => {
                        let v = vec![rng.below(5) as u32, step as u32];
                        assert_eq!(map.insert(k.clone(), v.clone()), plain.insert(k, v));
                    }
                    1 => assert_eq!(map.remove(&k), plain.remove(&k)),
                    2 => {
                        let v = rng.below(5) as u32;
                        let got = map.get_mut(&k).map(|e| {
                            e.push(v);
                            e.clone()
                        });
                        let want = plain.get_mut(&k).map(|e| {
                            e.push(v);
                            e.clone()
                        });
                        assert_eq!(got, want);
                    }
                    _ => {
                        // A change put back: equal again, though written.
                        if let Some(e) = map.get_mut(&k) {
                            e.push(9);
                            e.pop();
                        }
                    }
                }
                same(&map, &plain);
                same(&before, &before_plain);
            }
            let changed: Vec<&String> = map.changed(&before);
            let differ: Vec<&String> = plain
                .keys()
                .chain(before_plain.keys())
                .filter(|k| plain.get(*k) != before_plain.get(*k))
                .collect();
            for k in &differ {
                assert!(changed.contains(k), "seed {seed}: {k} differs, not named");
            }
            assert!(changed.windows(2).all(|w| w[0] < w[1]), "sorted, once each");
            assert_eq!(map == before, plain == before_plain);
            if rng.below(2) == 0 {
                kept.push(before);
            }
        }
    }
}

#[test]
fn a_clone_shares_the_base_and_copies_only_what_it_writes() {
    let mut map: Map = (0..100).map(|n| (key(n), vec![n as u32])).collect();
    let before = map.clone();
    assert!(Arc::ptr_eq(&map.base, &before.base));
    map.get_mut(&key(7)).unwrap().push(1);
    map.remove(&key(8));
    map.insert(key(200), vec![]);
    assert_eq!(map.over.len(), 3);
    assert_eq!(map.changed(&before), vec![&key(7), &key(8), &key(200)]);
    // With nothing else holding the base, writes go to it directly.
    drop(before);
    map.get_mut(&key(9)).unwrap().push(1);
    assert_eq!(map.over.len(), 3);
}

#[test]
fn a_clone_of_a_large_overlay_folds_it_into_a_fresh_base() {
    let mut map: Map = (0..1000).map(|n| (key(n), vec![])).collect();
    let _hold = map.clone();
    for n in 0..=FOLD_AT as u64 {
        map.get_mut(&key(n)).unwrap().push(1);
    }
    let folded = map.clone();
    assert!(folded.over.is_empty());
    assert_eq!(folded, map);
    assert_eq!(folded.len(), 1000);
}

/// A chain of ticks as `verify` walks it: clone, write, drop the parent,
/// settle. Every step reads as the plain map, a settled map holds no
/// overlay (the next clone's `changed` names only its own writes), and a
/// map whose base is still shared is left as it is.
#[test]
fn settling_after_the_parent_is_dropped_folds_the_overlay_and_changes_nothing_seen() {
    let mut rng = Rng(7);
    let mut want: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut current = Map::new();
    for step in 0..300u32 {
        let mut next = current.clone();
        let mut wrote = std::collections::BTreeSet::new();
        for _ in 0..rng.below(4) + 1 {
            let k = key(rng.below(40));
            if rng.below(3) == 0 {
                next.remove(&k);
                want.remove(&k);
            } else {
                next.insert(k.clone(), vec![step]);
                want.insert(k.clone(), vec![step]);
            }
            wrote.insert(k);
        }
        // Shared: nothing moves.
        let over = next.over.len();
        next.settle();
        assert_eq!(
            next.over.len(),
            over,
            "step {step}: a shared base is not written"
        );
        assert!(next.changed(&current).len() <= wrote.len());
        drop(current);
        next.settle();
        assert!(next.over.is_empty(), "step {step}: the overlay folded");
        same(&next, &want);
        current = next;
    }
}
