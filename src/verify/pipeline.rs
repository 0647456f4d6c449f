//! The pipelined chain check (see `mod pipeline` in the parent).

use std::sync::mpsc;

use super::*;

/// A commit read and its message parsed (or why it does not parse), by
/// the reader.
struct Read {
    entry: Entry,
    parsed: std::result::Result<message::Parsed, String>,
}

/// A tick for the file checker: the commit, its parent's tree (the
/// commit's own claim, checked by the tick before), and its files.
struct Job {
    index: usize,
    entry: Entry,
    tick: u64,
    parent_tree: Option<Oid>,
    changes: Vec<files::Change>,
}

/// How far ahead of the re-applying stage the others may run.
const AHEAD: usize = 256;

pub(super) fn run(
    store: &Store,
    base: Option<Verified>,
    ids: Vec<Oid>,
    now: Timestamp,
    signing: &Signing,
    lineage: &mut Lineage,
    progress: &mut dyn FnMut(usize, usize),
) -> Checked {
    let dir = store.common_dir().to_path_buf();
    let total = ids.len();
    std::thread::scope(|scope| {
        let (read_tx, read_rx) = mpsc::sync_channel::<Result<Read>>(AHEAD);
        let reader_dir = dir.clone();
        scope.spawn(move || {
            let store = match Store::discover(&reader_dir) {
                Ok(s) => s,
                Err(e) => {
                    let _ = read_tx.send(Err(e));
                    return;
                }
            };
            for id in ids {
                let read = store.entry(id).map(|entry| {
                    let parsed = message::parse(&entry.message);
                    Read { entry, parsed }
                });
                let failed = read.is_err();
                if read_tx.send(read).is_err() || failed {
                    return;
                }
            }
        });
        let (job_tx, job_rx) = mpsc::sync_channel::<Job>(AHEAD);
        let (done_tx, done_rx) = mpsc::channel::<(usize, Result<Option<Finding>>)>();
        scope.spawn(move || {
            let store = match Store::discover(&dir) {
                Ok(s) => s,
                Err(e) => {
                    let _ = done_tx.send((0, Err(e)));
                    return;
                }
            };
            let scratch = store.scratch();
            for job in job_rx {
                let checked = check_files(
                    &scratch,
                    job.parent_tree,
                    &job.entry,
                    job.tick,
                    &job.changes,
                );
                let stop = !matches!(checked, Ok(None));
                if done_tx.send((job.index, checked)).is_err() || stop {
                    return;
                }
            }
        });
        // What the file checker said, in chain order: the number of
        // ticks it passed, and the first it did not pass.
        let mut passed = 0;
        let mut refused: Option<(usize, Result<Option<Finding>>)> = None;
        let mut take = |done: (usize, Result<Option<Finding>>),
                        passed: &mut usize,
                        refused: &mut Option<(usize, Result<Option<Finding>>)>|
         -> bool {
            match done {
                (_, Ok(None)) => {
                    *passed += 1;
                    progress(*passed, total);
                    true
                }
                other => {
                    *refused = Some(other);
                    false
                }
            }
        };
        let mut current = base;
        // The first tick this stage refused (or failed to read).
        let mut head_stop: Option<Unverified> = None;
        let mut sent = 0;
        for (index, read) in read_rx.into_iter().enumerate() {
            while refused.is_none() {
                match done_rx.try_recv() {
                    Ok(d) => {
                        take(d, &mut passed, &mut refused);
                    }
                    Err(_) => break,
                }
            }
            if refused.is_some() {
                break;
            }
            let Read { entry, parsed } = match read {
                Ok(r) => r,
                Err(e) => {
                    head_stop = Some(Unverified::Failed(e));
                    break;
                }
            };
            let mut head = match check_head(
                store,
                current.as_ref(),
                &entry,
                parsed,
                now,
                signing,
                lineage,
            ) {
                Ok(h) => h,
                Err(stop) => {
                    head_stop = Some(stop);
                    break;
                }
            };
            let parent_tree = current.as_ref().map(|p| p.tip.tree);
            let changes = std::mem::take(&mut head.planned.changes);
            let tick = head.tick;
            // The parent's state is dropped here; its successor's writes
            // fold into the base they shared (`State::settle`).
            current = Some(head.accept(&entry, lineage));
            if let Some(c) = current.as_mut() {
                c.state.settle();
            }
            let job = Job {
                index,
                entry,
                tick,
                parent_tree,
                changes,
            };
            if job_tx.send(job).is_err() {
                break;
            }
            sent += 1;
        }
        drop(job_tx);
        while refused.is_none() && passed < sent {
            match done_rx.recv() {
                Ok(d) => {
                    take(d, &mut passed, &mut refused);
                }
                Err(_) => break,
            }
        }
        // The earliest refusal in chain order wins, as in `serial`.
        // (The file checker never gets a tick after the first one the
        // re-applying stage refused, so its refusal is always earlier.)
        match (refused, head_stop) {
            (Some((_, Ok(Some(f)))), _) => Err(Unverified::Invalid(f)),
            (Some((_, Ok(None))), _) => unreachable!("a passed tick is not a stop"),
            (Some((_, Err(e))), _) => Err(Unverified::Failed(e)),
            (None, Some(stop)) => Err(stop),
            (None, None) => {
                if passed < total {
                    return Err(Unverified::Failed(anyhow::anyhow!(
                        "verification stopped after {passed} of {total} ticks: a thread ended early"
                    )));
                }
                Ok(current.expect("a chain ending at a commit has at least one commit"))
            }
        }
    })
}
