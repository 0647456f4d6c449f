//! The signing setup of this machine, as data: which keys it allows to
//! sign human acts ([`AllowedSigners`], read from the allowed-signers file
//! git config names) and from which commit on history must be signed
//! ([`Signing`]). Read from the repository's settings and files, never
//! from the state; the repository handle (`Repo::signing`) loads it once
//! per invocation and every check of that invocation shares it.
//!
//! It sits below the repository handle, so the handle can cache it
//! without reaching up into `verify` or `trust`, which use it.

pub mod allowed;

use std::path::Path;

use anyhow::Result;

use crate::config::Config;
use crate::error::{Code, Refusal};
use crate::store::{Oid, PrefixMatch, Store};

pub use allowed::AllowedSigners;
// A key's check is pure, so it lives with the signer rules that use it.
pub use crate::op::signer::normalize_key;

/// The SSH signature namespace of loopx's signatures (`ssh-keygen -n`).
pub const NAMESPACE: &str = "loopx";

/// Which signatures this machine asks of human acts: its allowed signers
/// (outside the state), and the commit (git config `loopx.signaturesFrom`)
/// at or before which history is exempt, with its tick number.
pub struct Signing {
    signers: AllowedSigners,
    exempt: Option<(Oid, u64)>,
}

impl Signing {
    /// No signers and no exemption: human acts are checked as on a machine
    /// that trusts nobody (the fuzz targets, which have no machine).
    pub fn none() -> Signing {
        Signing {
            signers: AllowedSigners::none(),
            exempt: None,
        }
    }

    /// This machine's signers and exemption, read from its settings (the
    /// repository handle loads them once: `Repo::signing`).
    pub fn load(store: &Store, config: &Config, home: Option<&Path>) -> Result<Signing> {
        let signers = AllowedSigners::read(store, config, home)?;
        let exempt = match exempt_below(store, config)? {
            Some(x) => Some((x, store.tip_at(x)?.tick)),
            None => None,
        };
        Ok(Signing { signers, exempt })
    }

    /// The allowed signers this was loaded with.
    pub fn signers(&self) -> &AllowedSigners {
        &self.signers
    }

    /// Whether the tick `tick` at `commit` is history written before
    /// signing was turned on.
    pub fn exempt(&self, store: &Store, commit: Oid, tick: u64) -> Result<bool> {
        Ok(match self.exempt {
            Some((x, x_tick)) => tick <= x_tick && (x == commit || store.is_ancestor(commit, x)?),
            None => false,
        })
    }
}

/// History written before the team turned signing on: the commit named by
/// git config `loopx.signaturesFrom`, at or before which ticks need no
/// signature. Every check of incoming history (`verify`, sync, the hub)
/// honours it through `verify::check_tick`.
pub fn exempt_below(store: &Store, config: &Config) -> Result<Option<Oid>> {
    let Some(rev) = config.signatures_from.clone() else {
        return Ok(None);
    };
    match store.commit_by_prefix(rev.trim()) {
        Ok(PrefixMatch::One(oid)) => Ok(Some(oid)),
        _ => Err(Refusal::usage(
            Code::BadConfig,
            format!(
                "git config loopx.signaturesFrom is {rev:?}, which names no single commit here"
            ),
        )
        .with_hint("set it to the full id of the last commit whose human acts need no signature")
        .into()),
    }
}
