//! The held tree against gix's tree editor, over random edits in a real
//! repository: every tree id, and every file lookup, must be the editor's.

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

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Names whose order as a file and as a folder differ (`-` and `.` sort
/// before `/`, `0` after), so an entry put in the wrong place shows.
const NAMES: [&str; 6] = ["a", "a.t", "a-b", "a0", "b", "ab"];

fn repo() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let store = Store::discover(dir.path()).unwrap();
    (dir, store)
}

fn random_path(rng: &mut Rng) -> String {
    let depth = 1 + rng.below(3);
    (0..depth)
        .map(|_| NAMES[rng.below(NAMES.len())])
        .collect::<Vec<_>>()
        .join("/")
}

/// A few random writes and deletions; a path through a file, or a file
/// where a folder is, now and then (the cases left to the editor).
fn random_changes(rng: &mut Rng, n: u64) -> Vec<(String, Option<Vec<u8>>)> {
    (0..1 + rng.below(5))
        .map(|i| {
            let path = random_path(rng);
            let bytes = (rng.below(3) > 0).then(|| format!("{n} {i}\n").into_bytes());
            (path, bytes)
        })
        .collect()
}

#[test]
fn the_held_tree_makes_the_ids_and_finds_the_files_gix_does() {
    let (_dir, store) = repo();
    let scratch = store.scratch();
    let mut rng = Rng(29);
    // Every tree made so far: edits mostly go on from the last one, and
    // now and then from an older one or from nothing.
    let mut trees: Vec<Option<Oid>> = vec![None];
    let (mut held, mut unusual, mut refused) = (0, 0, 0);
    for n in 0..600u64 {
        let base = match rng.below(10) {
            0 => trees[rng.below(trees.len())],
            1 => None,
            _ => *trees.last().unwrap(),
        };
        let changes = random_changes(&mut rng, n);
        // The editor, writing to the object database, as a tick does.
        let want = edit_tree(&store.repo, base, &changes).map(Oid);
        let start = base.map_or_else(
            || gix::ObjectId::empty_tree(store.repo.object_hash()),
            |b| b.0,
        );
        let edit = scratch
            .held
            .borrow_mut()
            .edit(&scratch.repo, start, &changes);
        match (&want, edit) {
            (Ok(w), Ok(Edit::Done(got))) => {
                assert_eq!(Oid(got), *w, "edit {n}: {changes:?} on {base:?}");
                held += 1;
            }
            (_, Ok(Edit::Unusual)) => unusual += 1,
            (Err(e), Ok(Edit::Done(got))) => {
                panic!("edit {n}: the editor refuses ({e:#}), the held tree made {got}")
            }
            (_, Err(e)) => panic!("edit {n}: the held tree failed: {e:#}"),
        }
        // Through the scratch (the held tree or its fallback): the same.
        match (&want, scratch.tree(base, &changes)) {
            (Ok(w), Ok(got)) => assert_eq!(got, *w, "edit {n}"),
            (Err(_), Err(_)) => refused += 1,
            (w, got) => panic!("edit {n}: {w:?} against {got:?}"),
        }
        let Ok(tree) = want else { continue };
        trees.push(Some(tree));
        // Lookups on the tree just made (held) and on an older one.
        for t in [tree, trees[rng.below(trees.len())].unwrap_or(tree)] {
            for _ in 0..4 {
                let path = random_path(&mut rng);
                let want = store.read_file(t, &path).unwrap().is_some();
                assert_eq!(scratch.has_file(t, &path).unwrap(), want, "{path} in {t}");
            }
        }
    }
    // Both paths ran: the held tree most of the time, the editor for the
    // cases left to it, and the editor's refusals were refusals.
    assert!(held > 150, "held {held}, left to the editor {unusual}");
    assert!(unusual > 10, "left to the editor {unusual}");
    assert!(refused > 0, "refused {refused}");
}

#[test]
fn a_tree_out_of_order_is_left_to_the_editor() {
    let (_dir, store) = repo();
    let blob =
        gix::objs::Write::write_buf(&store.repo.objects, gix::objs::Kind::Blob, b"x\n").unwrap();
    // "b" before "a": not git's order, as only a hand-made tree has it.
    let mut data = Vec::new();
    for name in ["b", "a"] {
        data.extend_from_slice(b"100644 ");
        data.extend_from_slice(name.as_bytes());
        data.push(0);
        data.extend_from_slice(blob.as_bytes());
    }
    let bad =
        gix::objs::Write::write_buf(&store.repo.objects, gix::objs::Kind::Tree, &data).unwrap();
    let scratch = store.scratch();
    let changes = vec![("c".to_owned(), Some(b"y\n".to_vec()))];
    let edit = scratch
        .held
        .borrow_mut()
        .edit(&scratch.repo, bad, &changes)
        .unwrap();
    assert!(matches!(edit, Edit::Unusual));
    // (gix's editor itself asserts the order in a debug build, so the
    // fallback is not run here.) The lookup falls back to gix's.
    assert!(scratch.has_file(Oid(bad), "a").unwrap());
    assert!(!scratch.has_file(Oid(bad), "c").unwrap());
}
