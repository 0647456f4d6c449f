//! Listing refs by prefix: the goal refs of a split state
//! (`refs/loopx/goals/*`, docs/scale.md) and their remote-tracking copies.

use anyhow::{Result, anyhow};
use gix::bstr::ByteSlice;

use super::{Oid, Store};

impl Store {
    /// Every ref whose full name starts with `prefix` (which ends in `/`),
    /// with the commit it points at, in name order. Symbolic refs and refs
    /// that do not point at an object are left out.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<(String, Oid)>> {
        let platform = self
            .repo
            .references()
            .map_err(|e| anyhow!("listing refs under {prefix}: {e}"))?;
        let mut out = Vec::new();
        let iter = platform
            .prefixed(prefix.as_bytes())
            .map_err(|e| anyhow!("listing refs under {prefix}: {e}"))?;
        for r in iter {
            let r = r.map_err(|e| anyhow!("listing refs under {prefix}: {e}"))?;
            let name = r.name().as_bstr().to_str_lossy().into_owned();
            if let Some(id) = r.try_id() {
                out.push((name, Oid(id.detach())));
            }
        }
        out.sort();
        Ok(out)
    }
}
