//! `loopx machine setup`: make (or find) this clone's machine key and
//! propose it in the state.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::{commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::MachineName;
use crate::op::{Change, MachinePropose};
use crate::trust::{self, machine};

/// Make this clone's machine key and propose it in the state
///
/// Makes an ed25519 key in the clone's git dir (loopx/machine_ed25519, mode
/// 0600) unless it has one, and proposes it under a name with a
/// `machine.propose` tick. Every agent tick written here is then signed
/// with it. A proposal admits nothing: a human admits the machine with
/// `loopx machine admit NAME --fingerprint FP --for PATTERN` (a signed
/// act), after checking the fingerprint this command prints.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The machine's name (a slug) [default: this host's name]
    #[arg(long)]
    name: Option<String>,
}

#[derive(Serialize)]
struct Wire {
    name: String,
    fingerprint: String,
    key: String,
    /// Where the private key is kept.
    key_file: String,
    /// Whether this run made the key.
    created: bool,
    /// `proposed`, `admitted` or `revoked`.
    status: &'static str,
    /// Whether this run wrote a `machine.propose` tick.
    proposed: bool,
}

fn default_name(env: &crate::ctx::Env) -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .or_else(|| env.get("HOSTNAME").map(str::to_owned))
        .unwrap_or_default();
    let slug: String = host
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let slug = slug.trim_matches('-').to_owned();
    if MachineName::new(&slug).is_ok() {
        slug
    } else {
        "machine".to_owned()
    }
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let store = ctx.store()?;
    let dir = store.common_dir().to_owned();
    let (key, created) = match machine::load(&dir)? {
        Some(k) => (k, false),
        None => (machine::create(&dir)?, true),
    };
    let public = machine::public_line(&key);
    let fingerprint = trust::fingerprint(&public).map_err(|e| anyhow::anyhow!(e))?;
    let snap = tx::load(ctx)?;
    let known = snap
        .state
        .machines
        .values()
        .find(|m| m.key == public && m.revoked_by.is_none())
        .cloned();
    let (name, status, proposed) = match known {
        Some(m) if args.name.as_deref().is_none_or(|n| n == m.name.as_str()) => {
            (m.name.clone(), super::status(&m), false)
        }
        _ => {
            let raw = args.name.clone().unwrap_or_else(|| default_name(&ctx.env));
            let name = slug("machine", &raw, MachineName::new)?;
            commit_change(
                ctx,
                Change::MachinePropose(MachinePropose {
                    machine: name.clone(),
                    key: public.clone(),
                }),
            )?;
            (name, "proposed", true)
        }
    };
    let wire = Wire {
        name: name.to_string(),
        fingerprint: fingerprint.clone(),
        key: public,
        key_file: machine::key_path(&dir).display().to_string(),
        created,
        status,
        proposed,
    };
    ctx.out.emit(&wire, || {
        let mut s = format!(
            "Machine {name}: key {fingerprint} ({}), {status}.",
            if created { "made now" } else { "kept" }
        );
        if status != "admitted" {
            s.push_str(&format!(
                "\nA human admits it (a signed act) with: loopx machine admit {name} --fingerprint {fingerprint} --for PATTERN"
            ));
        }
        s
    })?;
    Ok(Exit::Ok)
}
