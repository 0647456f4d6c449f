//! `loopx verify`: check that every tick of the history is exactly what
//! loopx writes for its op (DESIGN §8.1); the checks live in
//! `crate::verify`.

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::history::{self, Rev};
use crate::verify::{self, Finding, Unverified};

/// Check that every tick re-applies to exactly its tree
///
/// Walks the state's first-parent chain and, for every commit, checks that it
/// is a tick (one parent, a message that parses, an op and format this loopx
/// knows, trailers, author and date that agree with the op), re-applies its op
/// to the parent's state with the same rules the commands use, and requires the
/// message and the tree a live tick would write. A tick dated beyond the
/// clock-skew margin after this machine's clock is refused until then.
///
/// Exits 0 when every tick holds, 3 naming the first commit that does not.
/// On a terminal, a long check shows how far it is, with its rate and the
/// time left, on stderr (nothing when stderr is a pipe or a file). See "What
/// a clone trusts" in docs/sync.md.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Start at this tick (a tick number, a commit id prefix, a ref, or a
    /// time: a duration reads as that long ago), trusting its parent's
    /// state [default: the first tick]
    #[arg(long, value_name = "REV")]
    from: Option<Rev>,
    /// Stop at this tick [default: the state's tip]
    #[arg(long, value_name = "REV")]
    to: Option<Rev>,
}

#[derive(Serialize)]
struct Wire<'a> {
    ok: bool,
    /// Ticks checked and found valid.
    verified: usize,
    /// The tick the check started after (0: from the first tick).
    from: u64,
    /// The last valid tick reached.
    tick: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
    findings: &'a [Finding],
    /// Valid ticks worth a warning: agent ticks no allowed machine signed,
    /// before the signing policy required it.
    unsigned_agent_ticks: &'a [u64],
    /// Format 6: on the shared ref of a split state, each goal ref's check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    refs: Vec<GoalRefWire>,
}

/// One goal ref's check, when `verify` on the shared ref checks them all.
#[derive(Serialize)]
struct GoalRefWire {
    #[serde(rename = "ref")]
    name: String,
    ok: bool,
    tick: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    finding: Option<Finding>,
}

/// On the shared ref of a split state (format 6), with no range given:
/// checks every goal ref's whole chain too (`tx::goalref`).
fn goal_refs(ctx: &Ctx, args: &Args) -> Result<Vec<GoalRefWire>> {
    use crate::tx::goalref;
    if args.from.is_some()
        || args.to.is_some()
        || ctx.state_ref() != goalref::SHARED
        || !crate::cmd::tx::load(ctx).is_ok_and(|s| s.state.meta.goal_refs)
    {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (name, tip) in goalref::goal_refs(ctx.store()?)? {
        let mut progress = |done: usize, total: usize| {
            ctx.out.progress(&format!("Verifying {name}"), done, total);
        };
        let (checked, _) = verify::chain(ctx.repo()?, None, tip, &mut progress);
        out.push(match checked {
            Ok(v) => {
                ctx.store()?.mark_verified(&name, v.tip.commit);
                GoalRefWire {
                    name,
                    ok: true,
                    tick: v.tip.tick,
                    finding: None,
                }
            }
            Err(Unverified::Failed(e)) => return Err(e),
            Err(Unverified::Invalid(f)) => GoalRefWire {
                name,
                ok: false,
                tick: f.tick.saturating_sub(1),
                finding: Some(f),
            },
        });
    }
    Ok(out)
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let to = match &args.to {
        Some(rev) => history::resolve(ctx.repo()?, rev, ctx.now)?,
        None => history::tip_entry(ctx.repo()?)?,
    };
    let base = match &args.from {
        None => None,
        Some(rev) => {
            let from = history::resolve(ctx.repo()?, rev, ctx.now)?;
            if !verify::is_ancestor(ctx.repo()?, from.commit, to.commit)? {
                return Err(Refusal::usage(
                    Code::BadRange,
                    format!(
                        "{rev} ({}) is not on the first-parent chain of the tick verify stops at ({})",
                        from.commit.short(8),
                        to.commit.short(8)
                    ),
                )
                .with_hint("give --from an older tick of the same history")
                .into());
            }
            verify::trusted_parent(ctx.repo()?, &from)?
        }
    };
    let from_tick = base.as_ref().map_or(0, |b| b.tip.tick);
    let mut verified = 0;
    let mut progress = |done: usize, total: usize| {
        verified = done;
        ctx.out.progress("Verifying", done, total);
    };
    let (checked, notes) = verify::chain(ctx.repo()?, base, to.commit, &mut progress);
    let checked = match checked {
        Err(Unverified::Failed(e)) => return Err(e),
        Err(Unverified::Invalid(f)) => Err(f),
        Ok(v) => Ok(v),
    };
    let unsigned = &notes.unsigned_agent_ticks;
    if !unsigned.is_empty() && !ctx.out.is_json() {
        let shown: Vec<String> = unsigned.iter().take(5).map(u64::to_string).collect();
        ctx.out.warn(&format!(
            "{} agent tick{} (tick {}{}) {} not signed by an admitted machine allowed to act for {} agent; valid while the signing policy does not require it, refused once `loopx signer require --machines` is on (`loopx machine list` shows the machines)",
            unsigned.len(),
            if unsigned.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if unsigned.len() > 5 { ", …" } else { "" },
            if unsigned.len() == 1 { "is" } else { "are" },
            if unsigned.len() == 1 { "its" } else { "their" },
        ));
    }
    match checked {
        Ok(v) => {
            // The whole history up to the ref's tip verified: the tip is
            // this clone's verified mark (`verify::current`).
            if args.from.is_none() && args.to.is_none() {
                let store = ctx.store()?;
                store.mark_verified(store.state_ref(), v.tip.commit);
            }
            let refs = goal_refs(ctx, args)?;
            let bad = refs
                .iter()
                .find_map(|r| r.finding.clone().map(|f| (r.name.clone(), f)));
            if let Some((name, f)) = bad
                && !ctx.out.is_json()
            {
                let mut r = f.refusal(format!(
                    "the ticks of {name} from this commit on are not trusted; `LOOPX_REF={name} loopx verify` says more"
                ));
                r.message = format!("{name}: {}", r.message);
                return Err(r.into());
            }
            let all_ok = refs.iter().all(|r| r.ok);
            let wire = Wire {
                ok: all_ok,
                verified,
                from: from_tick,
                tick: v.tip.tick,
                commit: Some(v.tip.commit.to_string()),
                findings: &[],
                unsigned_agent_ticks: unsigned,
                refs,
            };
            ctx.out.emit(&wire, || {
                let mut text = format!(
                    "Verified {verified} tick{} (tick {} to {}): each one re-applies to exactly its tree.",
                    if verified == 1 { "" } else { "s" },
                    from_tick + u64::from(verified > 0),
                    v.tip.tick
                );
                for r in &wire.refs {
                    text.push_str(&format!("\nVerified {} to tick {}.", r.name, r.tick));
                }
                text
            })?;
            Ok(if all_ok { Exit::Ok } else { Exit::Refused })
        }
        Err(finding) => {
            let refusal = finding.refusal(format!(
                "the ticks from this commit on are not trusted. If it came from a remote, a human can put the remote back with `loopx sync --repair-remote`; here, `git update-ref {r} {c}^` moves {r} back to the last valid tick (the ticks after it are then gone from this clone)",
                r = ctx.state_ref(),
                c = &finding.commit[..finding.commit.len().min(12)]
            ));
            if ctx.out.is_json() {
                let last = finding.tick.saturating_sub(1);
                let wire = Wire {
                    ok: false,
                    verified,
                    from: from_tick,
                    tick: last,
                    commit: None,
                    findings: std::slice::from_ref(&finding),
                    unsigned_agent_ticks: unsigned,
                    refs: Vec::new(),
                };
                ctx.out.emit(&wire, String::new)?;
                return Ok(Exit::Refused);
            }
            Err(refusal.into())
        }
    }
}
