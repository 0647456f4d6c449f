//! Unit tests of the todo lifecycle, one file per op kind. The fixtures are
//! in `op::test_support`.

use crate::op::test_support::*;

mod add;
mod archive;
mod claim;
mod done;
mod edit;
mod handoff;
mod release;
mod renew;
mod reopen;
mod update;

#[test]
fn todo_ops_refuse_an_unknown_todo() {
    let mut s = board();
    for change in [
        release(T2, 0),
        update(T2, 0, None, Some("x")),
        done(T2, 0, None),
    ] {
        refuse(
            &mut s,
            &op(agent("agent-a"), "2026-01-01T09:15:00Z", change),
            Exit::Error,
            "unknown-todo",
        );
    }
}
