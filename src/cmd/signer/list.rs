//! `loopx signer list`: the signers announced in the state and the keys
//! this machine's allowed-signers file trusts.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::Actor;
use crate::time::Timestamp;
use crate::trust::{self, AllowedSigners};

/// List announced signers and which keys this machine trusts
#[derive(clap::Args, Debug)]
pub struct Args {}

#[derive(Serialize)]
struct Wire {
    /// The allowed-signers file git config names, if any.
    allowed_signers_file: Option<String>,
    /// Whether human acts must be signed here (the file lists anyone, the
    /// clone enforced them before, or the state requires them).
    enforced: bool,
    signers: Vec<Row>,
    /// Lines of the file loopx cannot use.
    unusable: Vec<Unusable>,
}

#[derive(Serialize)]
struct Row {
    /// The announced name; None for a key only the local file lists.
    name: Option<String>,
    key: String,
    fingerprint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    announced_by: Option<Actor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    announced_at: Option<Timestamp>,
    /// The principal the local file names for the key; None: not trusted
    /// here.
    trusted_as: Option<String>,
    /// A new key the signer announced, waiting for `signer approve`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pending: Option<Pending>,
}

#[derive(Serialize)]
struct Pending {
    key: String,
    fingerprint: String,
    announced_at: Timestamp,
}

#[derive(Serialize)]
struct Unusable {
    line: usize,
    why: String,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let signers = AllowedSigners::load(ctx.repo()?)?;
    let mut rows: Vec<Row> = snap
        .state
        .signers
        .values()
        .map(|s| Row {
            name: Some(s.name.to_string()),
            key: s.key.clone(),
            fingerprint: trust::fingerprint(&s.key).unwrap_or_default(),
            announced_by: Some(s.announced_by.clone()),
            announced_at: Some(s.announced_at),
            trusted_as: signers.trusts(&s.key).map(str::to_owned),
            pending: s.pending.as_ref().map(|p| Pending {
                key: p.key.clone(),
                fingerprint: trust::fingerprint(&p.key).unwrap_or_default(),
                announced_at: p.announced_at,
            }),
        })
        .collect();
    for e in &signers.entries {
        if !rows.iter().any(|r| r.key == e.openssh) {
            rows.push(Row {
                name: None,
                key: e.openssh.clone(),
                fingerprint: trust::fingerprint(&e.openssh).unwrap_or_default(),
                announced_by: None,
                announced_at: None,
                trusted_as: signers.trusts(&e.openssh).map(str::to_owned),
                pending: None,
            });
        }
    }
    let wire = Wire {
        allowed_signers_file: signers.path.as_ref().map(|p| p.display().to_string()),
        enforced: trust::enforced(&snap.state, &signers),
        signers: rows,
        unusable: signers
            .skipped
            .iter()
            .map(|(line, why)| Unusable {
                line: *line,
                why: why.clone(),
            })
            .collect(),
    };
    ctx.out.emit(&wire, || human(&wire))?;
    Ok(Exit::Ok)
}

fn human(w: &Wire) -> String {
    let mut out = Vec::new();
    for r in &w.signers {
        let name = r.name.as_deref().unwrap_or("(not announced)");
        let algo = r.key.split(' ').next().unwrap_or_default();
        let here = match &r.trusted_as {
            Some(p) => format!("trusted here as {p}"),
            None => "not trusted here".to_owned(),
        };
        out.push(format!("{name:<16} {} {algo:<12} {here}", r.fingerprint));
        if let Some(p) = &r.pending {
            out.push(format!(
                "{:<16} new key {} announced {}, waiting for `loopx signer approve {name}`",
                "", p.fingerprint, p.announced_at
            ));
        }
    }
    if out.is_empty() {
        out.push("No signers announced, and none trusted here.".to_owned());
    }
    match (&w.allowed_signers_file, w.enforced) {
        (Some(f), true) => out.push(format!(
            "Human acts must be signed by a signer listed in {f}."
        )),
        (Some(f), false) => out.push(format!(
            "{f} lists nobody: human acts are accepted unsigned here."
        )),
        (None, _) => out.push(
            "No allowed-signers file is configured: human acts are accepted unsigned here; `loopx signer trust NAME` sets one up.".to_owned(),
        ),
    }
    for u in &w.unusable {
        out.push(format!(
            "Line {} of the file is not usable: {}.",
            u.line, u.why
        ));
    }
    out.join("\n")
}
