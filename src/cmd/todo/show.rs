//! `loopx todo show`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::ctx::{Caller, Ctx};
use crate::error::{Code, Exit};
use crate::model::{Todo, files};
use crate::op::rules;

/// Show one todo with its claim and notes
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(flatten)]
    todo: &'a Todo,
    path: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    archived: bool,
    /// The status of each `after` todo (`archived` once it left the live set).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    after_status: Vec<AfterStatus<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_ready: Option<String>,
    /// For a todo with a validation: whether it runs on this machine, and
    /// why (`runs`, `why`; docs/gates.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_here: Option<Here>,
}

#[derive(Serialize)]
struct Here {
    runs: bool,
    why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

#[derive(Serialize)]
struct AfterStatus<'a> {
    id: &'a crate::model::TodoId,
    status: &'static str,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    // Archived todos are found too, after the live ones.
    let archive;
    let (t, archived) = match state.resolve_todo(&args.id) {
        Ok(id) => (&state.todos[&id], false),
        Err(live) if live.code == Code::UnknownId => {
            archive = tx::load_archive(ctx, &snap)?;
            let id = crate::model::resolve_todo_in(&archive, &args.id).map_err(|_| live)?;
            (&archive[&id], true)
        }
        Err(e) => return Err(e.into()),
    };
    // Whether the acting agent could claim it now, and why not.
    let not_ready = match ctx.caller() {
        Caller::Agent(a) => state.agents.get(a).and_then(|agent| {
            if t.owner() == Some(a) {
                None
            } else {
                rules::ready(state, t, agent, ctx.now)
                    .err()
                    .map(|why| why.to_string())
            }
        }),
        _ => None,
    };
    let validation_here = if archived {
        None
    } else {
        super::trust::verdict(ctx, state, t)?.map(|v| match v {
            Ok(trusted) => Here {
                runs: true,
                why: trusted.to_string(),
                hint: None,
            },
            Err(refusal) => Here {
                runs: false,
                why: refusal.message,
                hint: refusal.hint.map(|h| h.to_string()),
            },
        })
    };
    let wire = Wire {
        validation_here,
        todo: t,
        path: if archived {
            files::archived_todo_path(&t.id)
        } else {
            files::todo_path(&t.id)
        },
        archived,
        after_status: t
            .after
            .iter()
            .map(|a| AfterStatus {
                id: a,
                status: state.todos.get(a).map_or("archived", |x| x.status.as_str()),
            })
            .collect(),
        not_ready,
    };
    ctx.out.emit(&wire, || {
        let mut s = format!(
            "{}  {}  {}  {}\n{}",
            t.id, t.priority, t.status, t.goal, t.title
        );
        if let Some(c) = &t.claim {
            let live = if c.lease_until > ctx.now {
                ""
            } else {
                " (expired)"
            };
            s.push_str(&format!(
                "\nclaimed by {} since {}, lease until {}{live}, epoch {}",
                c.owner, c.since, c.lease_until, t.epoch
            ));
        }
        if let Some(d) = t.done_at {
            s.push_str(&format!("\ndone at {d}"));
        }
        if !wire.after_status.is_empty() {
            let after: Vec<String> = wire
                .after_status
                .iter()
                .map(|a| format!("{} ({})", a.id, a.status))
                .collect();
            s.push_str(&format!("\nafter: {}", after.join(", ")));
        }
        if !t.capabilities.is_empty() {
            s.push_str(&format!("\nneeds: {}", t.capabilities.join(", ")));
        }
        if !t.scope.is_empty() {
            s.push_str(&format!("\nscope: {}", t.scope.join(", ")));
        }
        if let Some(n) = &wire.not_ready {
            s.push_str(&format!("\nnot ready for you: {n}"));
        }
        if let Some(v) = &t.validate {
            s.push_str(&format!(
                "\nvalidation: `{}` (timeout {})",
                crate::trust::validation::shell_words(&v.argv),
                v.timeout
            ));
            match &wire.validation_here {
                Some(h) if h.runs => s.push_str(&format!("\n  runs here: {}", h.why)),
                Some(h) => {
                    s.push_str(&format!("\n  {}", h.why));
                    if let Some(hint) = &h.hint {
                        s.push_str(&format!("\n  {hint}"));
                    }
                }
                None => {}
            }
        }
        s.push_str(&format!(
            "\ncreated {} by {}",
            t.created_at,
            t.created_by.name()
        ));
        for n in &t.notes {
            s.push_str(&format!("\n  {} {}: {}", n.at, n.by.name(), n.text));
        }
        s
    })?;
    Ok(Exit::Ok)
}
