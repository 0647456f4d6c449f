//! The tick writer's signing step: [`Seal`] signs a human's act with the
//! configured key, or an agent's with this clone's machine key, and checks
//! it as every path does. It takes the repository handle and the caller as
//! values (the tick writer's), never the command context.

use super::*;
use crate::model::Caller;

/// What the tick remembers between its retries: the last record signed
/// and its signature, so a retry against unchanged files signs nothing new.
#[derive(Default)]
pub struct Seal {
    last: Option<(Vec<u8>, String)>,
    signers: Option<AllowedSigners>,
    /// This clone's machine key, read once per command (None inside: none).
    machine: Option<Option<ssh_key::PrivateKey>>,
}

impl Seal {
    /// Signs `op` when a human with signing configured makes an act that
    /// wants a signature, then checks it with [`check_applied`]. The tick
    /// writer applies the signed op afterwards, so the files it produces
    /// carry the signature too. Only a `caller` that is the human signs
    /// with the configured key.
    pub fn seal(
        &mut self,
        repo: &Repo,
        caller: &Caller,
        tip: Option<crate::store::Oid>,
        before: &State,
        op: &mut Op,
    ) -> anyhow::Result<()> {
        let human = is_human_act(before, op, crate::model::WRITES);
        // An agent's tick is signed in-process with this clone's machine
        // key, when it has one (`machine`).
        if op.actor.agent().is_some() {
            return self.seal_agent(repo, tip, before, op);
        }
        // The key is looked up only for a human's op that wants a signature.
        let key =
            if op.signature.is_none() && *caller == Caller::Human && wants_signature(before, op) {
                sign::configured(repo)
            } else {
                None
            };
        if key.is_none()
            && op.signature.is_none()
            && !must_be_signed(op)
            && (!human || !enforced(before, self.signers(repo)?))
        {
            return Ok(());
        }
        let binding = Binding::live(lineage::state_id(repo.store(), tip)?);
        // The op's own rules speak first (an agent answering a human-only
        // gate is told so, not that it did not sign).
        let mut after = before.clone();
        op::apply(&mut after, op)?;
        if let Some(key) = key {
            let record = record(before, &after, op, &binding);
            let stored = match &self.last {
                Some((r, s)) if *r == record => s.clone(),
                _ => {
                    let s = sign::sign(repo, &key, &record)?;
                    self.last = Some((record, s.clone()));
                    s
                }
            };
            op.signature = Some(stored);
        }
        check_applied(before, &after, op, self.signers(repo)?, &binding)?;
        Ok(())
    }

    /// An agent's tick: signed with the clone's machine key (in-process,
    /// no prompt; before the ref is locked), then checked like every path
    /// checks it ([`check_applied`]).
    fn seal_agent(
        &mut self,
        repo: &Repo,
        tip: Option<crate::store::Oid>,
        before: &State,
        op: &mut Op,
    ) -> anyhow::Result<()> {
        if self.machine.is_none() {
            self.machine = Some(machine::load(repo.store().common_dir())?);
        }
        let key = self.machine.as_ref().and_then(Option::as_ref);
        if key.is_none() && op.signature.is_none() && !machine::required(before, op) {
            return Ok(());
        }
        let binding = Binding::live(machine::state_id(repo.store(), tip)?);
        let mut after = before.clone();
        op::apply(&mut after, op)?;
        match key {
            // Signed here, now: the signature is good by construction, so
            // only the admission is judged (as every clone will judge it).
            Some(key) if op.signature.is_none() => {
                op.signature = Some(machine::sign(key, &record(before, &after, op, &binding))?);
                machine::admission(before, &after, op, key.public_key())?;
            }
            _ => {
                machine::check(before, &after, op, &binding)?;
            }
        }
        Ok(())
    }

    /// This machine's allowed signers, read once per command.
    fn signers(&mut self, repo: &Repo) -> anyhow::Result<&AllowedSigners> {
        if self.signers.is_none() {
            self.signers = Some(AllowedSigners::load(repo)?);
        }
        Ok(self.signers.as_ref().expect("loaded above"))
    }
}
