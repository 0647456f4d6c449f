//! The rules of [`super::check_tick`] in two halves: [`check_head`] (the
//! op re-applied on the parent's state, up to its message) and
//! [`check_files`] (the files it writes and the tree), so the pipeline can
//! run them on two threads.

use super::*;

/// A tick that passed [`check_head`]: what its op plans, for
/// [`check_files`], and what it adds to the lineage once accepted.
pub(super) struct Head {
    pub(super) tick: u64,
    pub(super) format: u32,
    pub(super) op_id: String,
    pub(super) planned: tx::Planned,
    /// An agent tick no allowed machine signed, valid because the signing
    /// policy did not require it (`trust::machine`): noted once accepted.
    pub(super) unsigned_agent: bool,
}

impl Head {
    /// The verified tick, its op added to `lineage`.
    pub(super) fn accept(self, entry: &Entry, lineage: &mut Lineage) -> Verified {
        lineage.push(entry.commit, &self.op_id, self.format);
        if self.unsigned_agent {
            lineage.unsigned_agent_ticks.push(self.tick);
        }
        Verified {
            tip: Tip {
                commit: entry.commit,
                tree: entry.tree,
                tick: self.tick,
            },
            state: self.planned.state,
        }
    }
}

/// The rules of [`check_tick`] up to the re-applied op's message: all but
/// the files (`parsed` is `message::parse` of the entry's message).
pub(super) fn check_head(
    store: &Store,
    parent: Option<&Verified>,
    entry: &Entry,
    parsed: std::result::Result<message::Parsed, String>,
    now: Timestamp,
    signing: &Signing,
    lineage: &Lineage,
) -> std::result::Result<Head, Unverified> {
    let tick = parent.map_or(0, |p| p.tip.tick) + 1;
    let fail = |rule, msg: String| Err(Unverified::Invalid(Finding::new(entry, tick, rule, msg)));
    let want_parents = usize::from(parent.is_some());
    if entry.parents != want_parents || entry.parent != parent.map(|p| p.tip.commit) {
        return fail(
            Rule::Parents,
            format!(
                "a tick has exactly {} parent{}; this commit has {}",
                want_parents,
                if want_parents == 1 { "" } else { "s" },
                entry.parents
            ),
        );
    }
    if let Some(kind) = message::kind_of(&entry.message)
        && !Change::KINDS.contains(&kind)
    {
        return fail(
            Rule::UnknownOp,
            format!("its op {kind:?} is unknown to this loopx"),
        );
    }
    let parsed = match parsed {
        Ok(p) => p,
        Err(why) => return fail(Rule::NotATick, why),
    };
    if parsed.format > FORMAT {
        return fail(
            Rule::FormatTooNew,
            format!(
                "it was written in format {} and this loopx knows format {FORMAT} at most",
                parsed.format
            ),
        );
    }
    if parsed.op.change.since() > parsed.format {
        return fail(
            Rule::Message,
            format!(
                "its op {} first exists in format {}, but the tick says Loopx-Format {}",
                parsed.op.change.kind(),
                parsed.op.change.since(),
                parsed.format
            ),
        );
    }
    if lineage.format >= crate::trust::BOUND_SINCE && parsed.format < lineage.format {
        return fail(
            Rule::FormatDown,
            format!(
                "it says Loopx-Format {} after a tick in format {}: formats never go down along a chain",
                parsed.format, lineage.format
            ),
        );
    }
    if parsed.tick != tick {
        return fail(
            Rule::TickNumber,
            format!(
                "it says Loopx-Tick {} but follows tick {}",
                parsed.tick,
                tick - 1
            ),
        );
    }
    let op = &parsed.op;
    if lineage.has(op.id.as_str()) {
        let mut f = Finding::new(
            entry,
            tick,
            Rule::OpIdReused,
            format!(
                "its op id {} is used by an earlier tick of the chain: an op id appears once along a chain (a copied or reused op)",
                op.id
            ),
        );
        f.refusal = Some(Code::OpIdReused);
        return Err(Unverified::Invalid(f));
    }
    let empty = State::default();
    let (name, email) = (op.actor.name(), op.actor.email());
    if entry.author.name != name || entry.author.email != email {
        return fail(
            Rule::Author,
            format!(
                "its op's actor is {} but the commit's author is {} <{}>",
                op.actor, entry.author.name, entry.author.email
            ),
        );
    }
    if entry.time != op.at.unix() {
        return fail(
            Rule::Author,
            format!(
                "its op is dated {} but the commit {}",
                op.at,
                Timestamp::from_unix(entry.time)
            ),
        );
    }
    let (before, base) = match parent {
        Some(p) => (&p.state, Some(&p.tip)),
        None => (&empty, None),
    };
    // A goal ref's tick applies to the shared parts it pins (format 6).
    let pin = match tx::goalref::for_check(
        store,
        parent.map(|p| (&p.tip, &p.state)),
        op,
        &entry.message,
    ) {
        Ok(p) => p,
        Err(tx::goalref::PinError::Invalid(why)) => return fail(Rule::Pin, why),
        Err(tx::goalref::PinError::Failed(e)) => return Err(e.into()),
    };
    let splitting_off = tx::goalref::first_split_off(op, parent.map(|p| &p.state));
    let overlaid;
    let mut refresh = Vec::new();
    let before = match &pin {
        Some(p) if !splitting_off => {
            let mut s = before.clone();
            refresh = tx::goalref::overlay(&mut s, p);
            overlaid = s;
            &overlaid
        }
        _ => before,
    };
    let skew = before.meta.settings.clock_skew;
    if op.at > now.plus(skew) {
        return fail(
            Rule::Future,
            format!(
                "it is dated {}, after this machine's clock ({now}) plus the clock-skew margin ({skew}); it is refused until then",
                op.at
            ),
        );
    }
    let extra: Vec<(&str, String)> = parsed
        .trailers
        .iter()
        .filter(|(k, _)| !message::OWN_TRAILERS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    // The op re-applied once: the signature check below reads the state it
    // makes rather than applying the op again.
    let planned = tx::plan_tick(base, before, op, parsed.format, &extra);
    // Human authority before the rules: a replayed signed act reports its
    // signature, not the revision it no longer matches.
    let mut unsigned_agent = false;
    if !signing.exempt(store, entry.commit, tick)? {
        let binding = crate::trust::Binding {
            format: parsed.format,
            state: lineage.state_id(),
        };
        let signed = match &planned {
            // `plan_tick` applied the op as `op::apply` does (its format
            // is at most this binary's, checked above), but for the first
            // tick, whose state it also stamps with the format.
            Ok(p) if base.is_some() => {
                crate::trust::check_op_applied(before, &p.state, op, signing.signers(), &binding)
            }
            // Refused (or the first tick): the signature check applies the
            // op itself, and reports first.
            _ => crate::trust::check_op(before, op, signing.signers(), &binding),
        };
        match signed {
            Err(r) => {
                let mut f = Finding::new(entry, tick, Rule::Signature, r.message);
                f.refusal = Some(r.code);
                return Err(Unverified::Invalid(f));
            }
            // An agent tick no allowed machine signed, before the policy
            // requires it: valid, and reported (`trust::machine`).
            Ok(by) => {
                unsigned_agent = by.is_none()
                    && op.actor.agent().is_some()
                    && parsed.format >= crate::trust::machine::SINCE;
            }
        }
    }
    let mut planned = match planned {
        Ok(p) => p,
        Err(refusal) => {
            let mut f = Finding::new(
                entry,
                tick,
                Rule::Refused,
                format!(
                    "its op {} by {} breaks a rule: {}",
                    op.change.kind(),
                    op.actor,
                    refusal.message
                ),
            );
            f.refusal = Some(refusal.code);
            return Err(Unverified::Invalid(f));
        }
    };
    if let Some(p) = &pin
        && !planned.state.same_shared(&p.shared)
    {
        return fail(
            Rule::Pin,
            "it changes settings, signers or machines on a goal ref (they live on the shared ref), or its shared parts are not its pinned tip's".to_owned(),
        );
    }
    if parent.is_some_and(|p| tx::goalref::is_shared_state(&p.state))
        && !tx::goalref::goal_parts_empty(&planned.state)
    {
        return fail(
            Rule::Pin,
            "it writes a goal's part on the shared ref of a split state (goals, agents, todos, gates and quota live on the goal refs)".to_owned(),
        );
    }
    planned.changes.extend(refresh);
    if planned.message != entry.message {
        return fail(
            Rule::Message,
            message_difference(&planned.message, &entry.message),
        );
    }
    Ok(Head {
        tick,
        format: parsed.format,
        op_id: op.id.to_string(),
        planned,
        unsigned_agent,
    })
}

/// The rules of [`check_tick`] on the files a tick's op `changes` on top
/// of `parent_tree` (None: the first tick): evidence and the archive only
/// grow, every file reads back, and the tree is the commit's. Needs no
/// state, so a second thread can run it for one tick while the next is
/// re-applied.
pub(super) fn check_files(
    scratch: &Scratch,
    parent_tree: Option<Oid>,
    entry: &Entry,
    tick: u64,
    changes: &[files::Change],
) -> Result<Option<Finding>> {
    let fail = |rule, msg: String| Ok(Some(Finding::new(entry, tick, rule, msg)));
    if let Some(parent_tree) = parent_tree {
        let under = |path: &str, folder: &str| {
            path.strip_prefix(folder)
                .is_some_and(|rest| rest.starts_with('/'))
        };
        for (path, _) in changes {
            let grows_only = under(path, files::EVIDENCE) || under(path, files::ARCHIVE);
            // The parent's tree is the one the scratch made last (held
            // decoded), so this reads nothing from the pack.
            if grows_only && scratch.has_file(parent_tree, path)? {
                return fail(
                    Rule::AppendOnly,
                    format!("it replaces {path}, and evidence and the archive only grow"),
                );
            }
        }
    }
    for (path, bytes) in changes {
        if let Some(bytes) = bytes
            && let Err(r) = files::check_file(path, bytes)
        {
            return fail(
                Rule::Refused,
                format!(
                    "its op writes {path}, which would not read back: {}",
                    r.message
                ),
            );
        }
    }
    let tree = scratch.tree(parent_tree, changes)?;
    if tree != entry.tree {
        return fail(
            Rule::Tree,
            format!(
                "its tree {} is not what its op makes of the parent's state ({}): files were changed that the op does not change",
                entry.tree.short(8),
                tree.short(8)
            ),
        );
    }
    Ok(None)
}

/// Says where a message differs from the one loopx writes.
pub(super) fn message_difference(wanted: &str, got: &str) -> String {
    let (ws, gs) = (
        wanted.lines().next().unwrap_or_default(),
        got.lines().next().unwrap_or_default(),
    );
    if ws != gs {
        return format!("its subject reads {gs:?} where loopx writes {ws:?} for its op");
    }
    let line = wanted
        .lines()
        .zip(got.lines())
        .find(|(w, g)| w != g)
        .map(|(w, g)| format!("{g:?} where loopx writes {w:?}"));
    match line {
        Some(l) => format!(
            "its message is not what loopx writes for its op (fields this loopx does not know, or edited by hand): {l}"
        ),
        None => "its message is not what loopx writes for its op: it has extra or missing lines"
            .to_owned(),
    }
}
