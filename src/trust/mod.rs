//! Signed human authority (DESIGN §8, layer 2) and trusted validations
//! (layer 3).
//!
//! A human act carries an SSH signature (namespace `loopx`) over a
//! canonical record of its op and the revision of what it changes: the
//! hashes of the files it changes, as they were before. So a signed act
//! applies once: replayed later, against files that have moved on, it no
//! longer verifies. Which keys count is decided on each machine by an
//! allowed-signers file in git's format ([`crate::signing`]), never by the state.
//!
//! [`check_op`] is the one check every path that applies an op calls (the
//! tick, sync's replay, `verify`): pure, with the allowed signers passed in
//! as data. Signing ([`sign`]) runs `ssh-keygen -Y sign` as git does, so
//! passphrases, ssh-agent and hardware keys work. [`validation`] decides
//! whether a todo's validation may run on this machine.

mod describe;
pub mod lineage;
pub mod machine;
mod seal;
pub mod sign;
pub mod validation;

use sha2::{Digest, Sha256};
use ssh_key::{Algorithm, HashAlg, PublicKey, SshSig};

use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{Actor, State, files};
use crate::op::{
    self, AgentRetire, Change, GateAnswer, GateWithdraw, Op, Settle, TodoAdd, TodoEdit, TodoRelease,
};
use crate::repo::Repo;
// A key's check is pure, so it lives with the signer rules that use it
// (op/ reaches nothing above it); callers keep naming it here.
pub use crate::op::signer::normalize_key;
use crate::op::signer::supported;
// The signing setup's data lives below the repository handle, which
// caches it; callers keep naming it here.
pub use crate::signing::{AllowedSigners, NAMESPACE, allowed};
pub use describe::{SignatureWire, describe, history_note, signer_of};
pub use seal::Seal;

impl AllowedSigners {
    /// This machine's allowed signers, read afresh from the file git
    /// config names (`Repo::signers` is the copy loaded once per
    /// invocation).
    pub fn load(repo: &Repo) -> anyhow::Result<Self> {
        Self::read(repo.store(), repo.config(), repo.home())
    }
}

/// The first line of every signed record: what it is, and its version.
const RECORD_HEADER: &str = "loopx signed act 1";
/// The same from format 4 on, where the record also names the state.
const RECORD_HEADER_BOUND: &str = "loopx signed act 2";
/// The first format whose signatures bind the state's identity, and whose
/// signed acts must be signed by a key the state announces for their actor.
pub const BOUND_SINCE: u32 = 4;

/// What a signature binds beyond its op and the files it changes: the
/// format of the tick that records it and, from format 4, the state's
/// identity (the root tick's commit id; None for the root tick itself).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binding {
    pub format: u32,
    pub state: Option<String>,
}

impl Binding {
    /// The binding of a new tick, written in this binary's format.
    pub fn live(state: Option<String>) -> Self {
        Binding {
            format: crate::model::WRITES,
            state,
        }
    }

    fn bound(&self) -> bool {
        self.format >= BOUND_SINCE
    }
}

/// The setup a refusal of an unsigned act points to.
pub const SETUP: &str = "sign with your SSH key: `git config gpg.format ssh` and `git config user.signingKey ~/.ssh/id_ed25519.pub` (docs/gates.md, \"Signed answers\")";

/// Who signed an op, as far as this machine can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedBy {
    /// The principal the allowed-signers file names for the key; None when
    /// the key is not trusted here.
    pub principal: Option<String>,
    /// `SHA256:…`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
}

impl std::fmt::Display for SignedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.principal {
            Some(p) => write!(f, "signed by {p} ({})", self.fingerprint),
            None => write!(f, "signed by an untrusted key ({})", self.fingerprint),
        }
    }
}

/// The first format whose human acts are what the op table declares
/// (`op::authority`), and under a state policy that requires human
/// signatures (`humans` or `all`), every tick whose actor is a human.
pub const AUTHORITY_SINCE: u32 = 7;

/// Whether `op`, applied to `before` in a tick recorded in `format`, is a
/// human act that a signature must back where signatures are enforced.
/// From format 7: the op table says only a human may write it
/// ([`op::authority::who`]), or its actor is a human and the state's policy
/// requires human signatures (but for the records loopx writes by itself,
/// `loopx_record`); never the root tick (`init`). Before: the list those formats were written
/// under, kept as it was so no honest tick is judged again.
pub fn is_human_act(before: &State, op: &Op, format: u32) -> bool {
    if format >= AUTHORITY_SINCE {
        // The root tick (`init`) is nobody's to sign: no key can be
        // announced for a state that does not exist yet.
        !matches!(op.change, Change::Init(_))
            && (op::authority::who(before, op) == op::authority::Who::Human
                || (op.actor.is_human()
                    && before.meta.settings.signatures.humans()
                    && !loopx_record(op)))
    } else {
        human_act_before_7(before, op)
    }
}

/// A record loopx writes by itself in an actor's name, holding no authority:
/// a notification's mark (`gate.notified`, written by the background
/// runner) and sync's record of a lost op (`sync-rejected` evidence,
/// written by whichever process synced). Neither is signed by a human, so
/// neither is held to "every human tick is signed".
fn loopx_record(op: &Op) -> bool {
    matches!(
        op.change,
        Change::GateNotified(_)
            | Change::EvidenceAdd(crate::op::EvidenceAdd {
                kind: crate::model::EvidenceKind::SyncRejected,
                ..
            })
    )
}

/// The human acts of formats 1 to 6: the who-may table's human-only rows
/// (DESIGN §4), a signer announcement or a validation trust. Frozen.
fn human_act_before_7(before: &State, op: &Op) -> bool {
    match &op.change {
        Change::GoalAdd(_)
        | Change::GoalSet(_)
        | Change::QuotaVoid(_)
        | Change::QuotaResume(_)
        | Change::SignerAnnounce(_)
        | Change::SignerRequire(_)
        | Change::MachineAdmit(_)
        | Change::MachineRevoke(_)
        | Change::TodoTrust(_) => true,
        Change::GateAnswer(GateAnswer { gate, .. })
        | Change::GateWithdraw(GateWithdraw { gate }) => {
            before.gates.get(gate).is_some_and(|g| g.kind.human_only())
        }
        Change::TodoRelease(TodoRelease { force, .. }) => *force,
        Change::AgentRetire(AgentRetire { agent }) => op.actor.agent() != Some(agent),
        Change::Settle(Settle { steps, .. }) => steps.iter().any(|step| {
            human_act_before_7(
                before,
                &Op {
                    change: step.clone(),
                    ..op.clone()
                },
            )
        }),
        _ => false,
    }
}

/// Signs an op this clone makes outside a live tick (sync's record of a
/// local op that lost, written in its actor's name) when it is an agent's:
/// with the clone's machine key. A human's record stays unsigned (no
/// agent's process signs with a human's key; it is a `loopx_record`).
/// Replayed ops are never re-signed: they keep their signature.
pub fn sign_record(
    repo: &Repo,
    tip: &crate::store::Tip,
    before: &State,
    op: &mut Op,
) -> anyhow::Result<()> {
    if op.signature.is_some() || op.actor.agent().is_none() {
        return Ok(());
    }
    machine::sign_record(repo.store(), tip, before, op)
}

/// Whether a human's op should be signed when signing is configured: a
/// human act, or an op that writes a validation command (which a signature
/// makes trusted on other machines).
pub fn wants_signature(before: &State, op: &Op) -> bool {
    is_human_act(before, op, crate::model::WRITES)
        || matches!(
            &op.change,
            Change::TodoAdd(TodoAdd {
                validate: Some(_),
                ..
            }) | Change::TodoEdit(TodoEdit {
                validate: Some(_),
                ..
            })
        )
}

/// The record a signature covers: the op (id, time, actor, change; not the
/// signature itself), for every file the op changes the hash of that file
/// before the change (`absent` for a new file), and from format 4 the
/// state's identity (the root tick's commit id), so a signed act applies
/// once, to one state. `after` is `before` with the op applied.
pub fn record(before: &State, after: &State, op: &Op, binding: &Binding) -> Vec<u8> {
    let unsigned = Op {
        signature: None,
        ..op.clone()
    };
    let mut out = if binding.bound() {
        format!(
            "{RECORD_HEADER_BOUND}\nstate = {:?}\n",
            binding.state.as_deref().unwrap_or("none")
        )
    } else {
        format!("{RECORD_HEADER}\n")
    };
    out.push_str(&toml::to_string(&unsigned).expect("ops always serialize to TOML"));
    out.push_str("\n[revision]\n");
    // The reverse diff names every changed file with its content before.
    let mut targets = files::changes(after, before, &files::Records::default());
    targets.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, bytes) in targets {
        let hash = bytes.map_or_else(|| "absent".to_owned(), |b| sha256_hex(&b));
        out.push_str(&format!("{path:?} = {hash:?}\n"));
    }
    out.into_bytes()
}

/// Lowercase hex of SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The content hash of an op (its TOML, signature included): sync's replay
/// takes a local op as "already there" only when the remote holds the same
/// id with the same content.
pub fn op_digest(op: &Op) -> String {
    sha256_hex(
        toml::to_string(op)
            .expect("ops always serialize to TOML")
            .as_bytes(),
    )
}

/// The one check of an op's signature, for every path that applies ops
/// (the tick, sync's replay, `verify`). Pure: the allowed signers and the
/// binding come in as data.
///
/// - A signature, when present, must verify over the op's record against
///   `before` and `binding` (on every machine, trusted key or not), so a
///   signature in the state always belongs to the act it sits in, and from
///   format 4 to the state it is in. From format 4 its key must also be
///   one the state announces for the op's actor (`not-announced`): the
///   same verdict on every clone, whatever names the machines' files give.
/// - When `signers` lists anyone, or the state requires signatures, a human
///   act must be signed by one of them: unsigned is refused (`unsigned`),
///   an unknown key too (`unknown-signer`). Where signatures must be
///   enforced but the allowed-signers file is missing, unreadable or empty,
///   every human act is refused (`no-trust-root`).
///
/// Returns who signed, if anyone. Refusals are exit 3.
pub fn check_op(
    before: &State,
    op: &Op,
    signers: &AllowedSigners,
    binding: &Binding,
) -> Result<Option<SignedBy>, Refusal> {
    if !wanted(before, op, signers, binding) {
        return Ok(None);
    }
    let mut after = before.clone();
    op::apply(&mut after, op)?;
    check_applied(before, &after, op, signers, binding)
}

/// Whether [`check_op`] has anything to check for `op` on `before`: a
/// signature it carries, or one this machine or the state asks of it.
fn wanted(before: &State, op: &Op, signers: &AllowedSigners, binding: &Binding) -> bool {
    op.signature.is_some()
        || must_be_signed(op)
        || possession(op, binding).is_some()
        || approval(op, binding).is_some()
        || machine::required(before, op)
        || (enforced(before, signers) && is_human_act(before, op, binding.format))
}

/// [`check_op`] for a caller that has already applied the op: `after` is
/// what `op::apply` makes of `before` (verify's re-applied tick), so the
/// op is not applied a second time.
pub fn check_op_applied(
    before: &State,
    after: &State,
    op: &Op,
    signers: &AllowedSigners,
    binding: &Binding,
) -> Result<Option<SignedBy>, Refusal> {
    if !wanted(before, op, signers, binding) {
        return Ok(None);
    }
    check_applied(before, after, op, signers, binding)
}

/// Ops that are valid only signed, on every machine: the signing policy.
pub fn must_be_signed(op: &Op) -> bool {
    matches!(op.change, Change::SignerRequire(_))
}

/// The key an op must be signed by, whatever the policy: from format 7 a
/// key is announced (or reclaimed) only by its holder, so a signer
/// announcement or reclaim is signed by the key it names.
fn possession<'o>(op: &'o Op, binding: &Binding) -> Option<&'o str> {
    if binding.format < crate::op::signer::POSSESSION_SINCE {
        return None;
    }
    match &op.change {
        Change::SignerAnnounce(crate::op::SignerAnnounce { key, .. })
        | Change::SignerReclaim(crate::op::SignerReclaim { key, .. }) => Some(key),
        _ => None,
    }
}

/// A signer's new key approved (format 7): valid only signed, by the
/// signer's current key or another human's announced key.
fn approval<'o>(op: &'o Op, binding: &Binding) -> Option<&'o crate::op::SignerApprove> {
    match &op.change {
        Change::SignerApprove(a) if binding.format >= crate::op::signer::POSSESSION_SINCE => {
            Some(a)
        }
        _ => None,
    }
}

/// Whether the signature's key is the OpenSSH public key `key`.
fn signed_with(sig: &SshSig, key: &str) -> bool {
    PublicKey::from_openssh(key.trim()).is_ok_and(|k| k.key_data() == sig.public_key())
}

/// An announcement or reclaim signed by another key than the one it names.
fn not_own_key(op: &Op, sig: &SshSig) -> Refusal {
    Refusal::rule(
        Code::NotOwnKey,
        format!(
            "{} by {} names a key it is not signed by (it is signed by {}): a key is announced only by its holder, signing with it",
            op.change.kind(),
            op.actor.name(),
            sig.public_key().fingerprint(HashAlg::Sha256)
        ),
    )
    .with_hint(Hint::new(
        format!(
            "announce your own key, signed with it ({N}); if someone announced your key before, reclaim it with {N}; nothing was changed"
        ),
        [
            Next::AnnounceSigner("NAME".to_owned()),
            Next::ReclaimSigner("NAME".to_owned()),
        ],
    ))
}

/// A signer's new key is approved by the key it replaces, or by another
/// human's announced key: never by the new key alone.
fn approved_by(
    before: &State,
    op: &Op,
    a: &crate::op::SignerApprove,
    sig: &SshSig,
) -> Result<(), Refusal> {
    let Some(signer) = before.signers.get(&a.name) else {
        return Ok(()); // the op's own rule refuses it
    };
    let by_old = signed_with(sig, &signer.key);
    let by_other = before.signers.values().any(|s| {
        signed_with(sig, &s.key)
            && !crate::op::signer::same_human(&s.announced_by, &signer.announced_by)
    });
    if by_old || by_other {
        return Ok(());
    }
    Err(Refusal::rule(
        Code::NotOwnKey,
        format!(
            "{} of {}'s new key is signed by {}, which is neither {}'s current key nor another human's announced key",
            op.change.kind(),
            a.name,
            sig.public_key().fingerprint(HashAlg::Sha256),
            a.name
        ),
    )
    .with_hint(format!(
        "sign the approval with {}'s current key, or ask another announced human to approve it; nothing was changed",
        a.name
    )))
}

/// Whether human acts must be signed here: this machine trusts signers (or
/// has before, `AllowedSigners::broken`), or the state requires it.
pub fn enforced(before: &State, signers: &AllowedSigners) -> bool {
    signers.enforced() || before.meta.settings.signatures.humans()
}

/// [`check_op`] for a caller that has already applied the op (`after`),
/// so the op is not applied twice.
pub fn check_applied(
    before: &State,
    after: &State,
    op: &Op,
    signers: &AllowedSigners,
    binding: &Binding,
) -> Result<Option<SignedBy>, Refusal> {
    // An agent's tick is signed by its machine, from format 5.
    if machine::applies(before, op, binding) {
        return machine::check(before, after, op, binding);
    }
    let human = is_human_act(before, op, binding.format);
    let enforced = enforced(before, signers);
    if human && enforced && signers.listed == 0 {
        return Err(no_trust_root(
            op,
            signers,
            before.meta.settings.signatures.humans(),
        ));
    }
    let own = possession(op, binding);
    let approving = approval(op, binding);
    let Some(text) = &op.signature else {
        if own.is_some() || approving.is_some() {
            return Err(Refusal::rule(
                Code::Unsigned,
                format!(
                    "{} by {} is not signed: from format 7 a key is announced or reclaimed signed by that key, and a new key is approved signed by the old one",
                    op.change.kind(),
                    op.actor.name()
                ),
            )
            .with_hint(SETUP));
        }
        if must_be_signed(op) {
            return Err(Refusal::rule(
                Code::Unsigned,
                format!(
                    "{} by {} sets the team's signing policy, which only a signed human act may do, and it is not signed",
                    op.change.kind(),
                    op.actor.name()
                ),
            )
            .with_hint(SETUP));
        }
        if human && enforced {
            return Err(unsigned(op, signers));
        }
        return Ok(None);
    };
    let sig = decode(text).map_err(|e| bad_signature(op, &e))?;
    verify(&sig, &record(before, after, op, binding)).map_err(|e| bad_signature(op, &e))?;
    if own.is_some_and(|key| !signed_with(&sig, key)) {
        return Err(not_own_key(op, &sig));
    }
    if let Some(a) = approving {
        approved_by(before, op, a, &sig)?;
    }
    let by = signed_by(&sig, signers, op);
    // An announcement signed by the key it names grants nothing (each
    // machine's allowed signers decide what counts): a newcomer's key, or
    // a new key waiting for approval, is announced before anyone trusts it.
    if human && enforced && by.principal.is_none() && own.is_none() {
        return Err(Refusal::rule(
            Code::UnknownSigner,
            format!(
                "{} by {} is signed by {}, a key this machine's allowed signers do not list",
                op.change.kind(),
                op.actor.name(),
                by.fingerprint
            ),
        )
        .with_hint(Hint::new(
            format!(
                "if the key is theirs, trust it: {N} for an announced signer ({N}), or add it to {}",
                signers.describe_path()
            ),
            [Next::TrustSigner("NAME".to_owned()), Next::List("signer".to_owned())],
        )));
    }
    // Whose key it is comes from the state, so every clone agrees.
    if binding.bound() {
        bound_to_actor(before, after, op, &sig)?;
    }
    Ok(Some(by))
}

/// A signed act's actor must be the human the state announces for the
/// signing key (before the act, or by the act itself: an announcement
/// signed with the key it announces).
fn bound_to_actor(before: &State, after: &State, op: &Op, sig: &SshSig) -> Result<(), Refusal> {
    let key = PublicKey::from(sig.public_key().clone());
    let announced: Vec<&crate::model::Signer> = before
        .signers
        .values()
        .chain(after.signers.values())
        .filter(|s| {
            // A new key waiting for approval binds only the announcement
            // that names it.
            let pending = s
                .pending
                .as_ref()
                .filter(|_| matches!(op.change, Change::SignerAnnounce(_)))
                .map(|p| &p.key);
            std::iter::once(&s.key)
                .chain(pending)
                .any(|k| PublicKey::from_openssh(k).is_ok_and(|k| k.key_data() == key.key_data()))
        })
        .collect();
    if announced
        .iter()
        .any(|s| crate::op::signer::same_human(&s.announced_by, &op.actor))
    {
        return Ok(());
    }
    let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
    let whose = match announced.first() {
        Some(s) => format!(
            "the state announces it for {} (signer {})",
            s.announced_by, s.name
        ),
        None => "the state announces it for nobody".to_owned(),
    };
    Err(Refusal::rule(
        Code::NotAnnounced,
        format!(
            "{} by {} is signed by {fingerprint}, but {whose}: a signed act's actor must be the human whose announced key signed it",
            op.change.kind(),
            op.actor.name(),
        ),
    )
    .with_hint(Hint::new(
        format!(
            "announce your own key once with `loopx signer announce NAME --key FILE.pub` (signed with that key), then act again; {N} shows who holds which key; nothing was changed"
        ),
        [Next::List("signer".to_owned())],
    )))
}

/// Verifies a decoded signature over `record`: namespace `loopx`, a key
/// type loopx accepts, and for FIDO keys the user-presence flag.
pub fn verify(sig: &SshSig, record: &[u8]) -> Result<(), String> {
    if sig.namespace() != NAMESPACE {
        return Err(format!(
            "its namespace is {:?}, not {NAMESPACE:?}",
            sig.namespace()
        ));
    }
    let algorithm = sig.algorithm();
    if !supported(&algorithm) {
        return Err(format!("{algorithm} keys are not accepted"));
    }
    if matches!(
        algorithm,
        Algorithm::SkEd25519 | Algorithm::SkEcdsaSha2NistP256
    ) {
        // flags (1 byte) and counter (4) trail a FIDO signature; bit 0 of
        // the flags says the user was present.
        let bytes = sig.signature_bytes();
        let flags = bytes.len().checked_sub(5).map(|i| bytes[i]);
        if flags.is_none_or(|f| f & 0x01 == 0) {
            return Err("the FIDO key did not assert user presence".to_owned());
        }
    }
    PublicKey::from(sig.public_key().clone())
        .verify(NAMESPACE, record, sig)
        .map_err(|_| "it does not match this op and the state it changes (an altered op, or an old signed act replayed)".to_owned())
}

/// Who a (verified) signature names, by the allowed signers.
fn signed_by(sig: &SshSig, signers: &AllowedSigners, op: &Op) -> SignedBy {
    let fingerprint = sig.public_key().fingerprint(HashAlg::Sha256).to_string();
    SignedBy {
        principal: signers
            .principal(sig.public_key(), Some(op.at))
            .map(str::to_owned),
        fingerprint,
    }
}

/// Reads a stored signature: base64 of the SSHSIG blob, on one line.
pub fn decode(text: &str) -> Result<SshSig, String> {
    let body = text.trim();
    if body.is_empty()
        || !body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
    {
        return Err("it is not base64".to_owned());
    }
    let mut pem = String::from("-----BEGIN SSH SIGNATURE-----\n");
    for chunk in body.as_bytes().chunks(70) {
        pem.push_str(std::str::from_utf8(chunk).expect("ascii"));
        pem.push('\n');
    }
    pem.push_str("-----END SSH SIGNATURE-----\n");
    SshSig::from_pem(pem).map_err(|e| format!("it is not an SSH signature ({e})"))
}

/// The stored form of an armored signature (`ssh-keygen -Y sign` output):
/// the base64 body on one line.
pub fn encode(armored: &str) -> Result<String, String> {
    let body: String = armored
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    decode(&body)?;
    Ok(body)
}

pub use crate::op::signer::fingerprint;

fn unsigned(op: &Op, signers: &AllowedSigners) -> Refusal {
    let who = match &op.actor {
        Actor::Human { name, .. } => name.clone(),
        Actor::Agent(id) => id.to_string(),
    };
    Refusal::rule(
        Code::Unsigned,
        format!(
            "{} by {who} is a human act and is not signed; this machine trusts the signers in {}, so it needs a signature by one of them",
            op.change.kind(),
            signers.describe_path()
        ),
    )
    .with_hint(SETUP)
}

fn no_trust_root(op: &Op, signers: &AllowedSigners, required: bool) -> Refusal {
    let why = match (&signers.broken, required) {
        (Some(b), _) => format!("this clone has enforced signatures before, and now {b}"),
        (None, true) => format!(
            "the state requires signatures (signer require), and {}",
            match &signers.path {
                Some(p) => format!("the allowed-signers file {} lists nobody", p.display()),
                None =>
                    "git config loopx.allowedSignersFile names no allowed-signers file".to_owned(),
            }
        ),
        (None, false) => "the allowed-signers file lists nobody".to_owned(),
    };
    Refusal::rule(
        Code::NoTrustRoot,
        format!(
            "{} by {} is a human act, and this clone has no usable trust root: {why}; until it has one, every human act is refused",
            op.change.kind(),
            op.actor.name()
        ),
    )
    .with_hint(Hint::new(
        format!(
            "restore the allowed-signers file (git config loopx.allowedSignersFile), or trust the team's announced signers again with {N} for each ({N} lists them); nothing was changed"
        ),
        [Next::TrustSigner("NAME".to_owned()), Next::List("signer".to_owned())],
    ))
}

fn bad_signature(op: &Op, why: &str) -> Refusal {
    Refusal::rule(
        Code::BadSignature,
        format!(
            "the signature on {} {} by {} is not valid: {why}",
            op.change.kind(),
            op.id,
            op.actor.name()
        ),
    )
    .with_hint("a human act is signed against the state it changes: run the command again to sign it anew; nothing was changed")
}

#[cfg(test)]
#[allow(clippy::print_stderr)] // says when a test is skipped, and the measurement
mod tests {
    use super::*;
    use crate::model::{AgentId, GoalId, OpId};
    use crate::op::{AgentRegister, GoalSet, Init, SignerAnnounce, SignerRequire};
    use crate::time::Timestamp;

    /// Signs `record` with a fresh ed25519 key made by `ssh-keygen` in
    /// `dir`; None (skipped, said so) where OpenSSH is missing.
    fn keygen(dir: &std::path::Path) -> Option<std::path::PathBuf> {
        let key = dir.join("key");
        let made = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "t", "-f"])
            .arg(&key)
            .status();
        match made {
            Ok(s) if s.success() => Some(key),
            _ => {
                eprintln!("skipped: ssh-keygen is not installed (apt-get install openssh-client)");
                None
            }
        }
    }

    fn sign_file(key: &std::path::Path, record: &[u8]) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("ssh-keygen")
            .args(["-Y", "sign", "-n", NAMESPACE, "-f"])
            .arg(key)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(record).unwrap();
        let out = child.wait_with_output().unwrap();
        encode(&String::from_utf8_lossy(&out.stdout)).unwrap()
    }

    fn t(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn op(at: &str, change: Change) -> Op {
        Op {
            id: OpId::from_hex(&format!("{:016x}", at.len() * 7 + change.kind().len())),
            at: t(at),
            actor: Actor::Human {
                name: "Ada".into(),
                email: "ada@example.com".into(),
            },
            signature: None,
            change,
        }
    }

    fn board() -> State {
        let mut s = State::default();
        let init = op(
            "2026-11-30T09:00:00Z",
            Change::Init(Init {
                goal: Some(GoalId::new("main").unwrap()),
                objective: Some("Ship".into()),
            }),
        );
        op::apply(&mut s, &init).unwrap();
        s
    }

    fn pause(at: &str, status: crate::model::GoalStatus) -> Op {
        op(
            at,
            Change::GoalSet(GoalSet {
                status: Some(status),
                ..GoalSet::new(GoalId::new("main").unwrap())
            }),
        )
    }

    fn signed(key: &std::path::Path, state: &State, mut o: Op) -> Op {
        let mut after = state.clone();
        op::apply(&mut after, &o).unwrap();
        o.signature = Some(sign_file(
            key,
            &record(state, &after, &o, &Binding::default()),
        ));
        o
    }

    fn allowed(key: &std::path::Path) -> AllowedSigners {
        let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
        AllowedSigners::parse(&format!("ada {public}"))
    }

    #[test]
    fn a_signed_act_applies_once_and_only_as_signed() {
        let dir = tempfile::tempdir().unwrap();
        let Some(key) = keygen(dir.path()) else {
            return;
        };
        let signers = allowed(&key);
        let mut state = board();
        let paused = signed(
            &key,
            &state,
            pause("2026-11-30T09:01:00Z", crate::model::GoalStatus::Paused),
        );
        let by = check_op(&state, &paused, &signers, &Binding::default())
            .unwrap()
            .unwrap();
        assert_eq!(by.principal.as_deref(), Some("ada"));
        op::apply(&mut state, &paused).unwrap();
        let resumed = signed(
            &key,
            &state,
            pause("2026-11-30T09:02:00Z", crate::model::GoalStatus::Active),
        );
        op::apply(&mut state, &resumed).unwrap();
        // The old signed pause, replayed later: its files moved on.
        let err = check_op(&state, &paused, &signers, &Binding::default()).unwrap_err();
        assert_eq!(err.code, Code::BadSignature);
        // Altered after signing: the same signature no longer fits.
        let mut altered = resumed.clone();
        altered.change = pause("2026-11-30T09:02:00Z", crate::model::GoalStatus::Done).change;
        let err = check_op(&state, &altered, &signers, &Binding::default()).unwrap_err();
        assert_eq!(err.code, Code::BadSignature);
        // Unsigned is refused only where someone is trusted.
        let plain = pause("2026-11-30T09:03:00Z", crate::model::GoalStatus::Paused);
        assert_eq!(
            check_op(&state, &plain, &signers, &Binding::default())
                .unwrap_err()
                .code,
            Code::Unsigned
        );
        assert_eq!(
            check_op(&state, &plain, &AllowedSigners::none(), &Binding::default()).unwrap(),
            None
        );
        // A valid signature by a key nobody listed counts for nothing.
        let stranger_dir = tempfile::tempdir().unwrap();
        let stranger = keygen(stranger_dir.path()).unwrap();
        let by_stranger = signed(&stranger, &state, plain.clone());
        assert_eq!(
            check_op(&state, &by_stranger, &signers, &Binding::default())
                .unwrap_err()
                .code,
            Code::UnknownSigner
        );
        // Agents' ops are not human acts and need nothing.
        let mut agent_op = plain;
        agent_op.actor = Actor::Agent(AgentId::new("agent-a").unwrap());
        agent_op.change = Change::AgentRegister(AgentRegister {
            agent: AgentId::new("agent-a").unwrap(),
            runtime: crate::model::Runtime::Custom,
            capabilities: Vec::new(),
            goals: None,
        });
        assert_eq!(
            check_op(&state, &agent_op, &signers, &Binding::default()).unwrap(),
            None
        );
    }

    #[test]
    fn from_format_4_a_signature_binds_the_state_and_its_announced_actor() {
        let dir = tempfile::tempdir().unwrap();
        let Some(key) = keygen(dir.path()) else {
            return;
        };
        let signers = allowed(&key);
        let here = Binding {
            format: BOUND_SINCE,
            state: Some("1111111111111111111111111111111111111111".into()),
        };
        let sign_bound = |state: &State, mut o: Op| {
            let mut after = state.clone();
            op::apply(&mut after, &o).unwrap();
            o.signature = Some(sign_file(&key, &record(state, &after, &o, &here)));
            o
        };
        let mut state = board();
        // Signed, but the state announces the key for nobody.
        let paused = sign_bound(
            &state,
            pause("2026-11-30T09:01:00Z", crate::model::GoalStatus::Paused),
        );
        let err = check_op(&state, &paused, &AllowedSigners::none(), &here).unwrap_err();
        assert_eq!(err.code, Code::NotAnnounced);
        // Ada announces it, signed with it: the announcement binds itself.
        let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
        let announce = sign_bound(
            &state,
            op(
                "2026-11-30T09:02:00Z",
                Change::SignerAnnounce(SignerAnnounce {
                    name: crate::model::SignerName::new("ada").unwrap(),
                    key: public,
                }),
            ),
        );
        check_op(&state, &announce, &signers, &here).unwrap();
        op::apply(&mut state, &announce).unwrap();
        let paused = sign_bound(
            &state,
            pause("2026-11-30T09:03:00Z", crate::model::GoalStatus::Paused),
        );
        // Every machine agrees, whatever its file says.
        check_op(&state, &paused, &AllowedSigners::none(), &here).unwrap();
        assert_eq!(
            check_op(&state, &paused, &signers, &here)
                .unwrap()
                .unwrap()
                .principal
                .as_deref(),
            Some("ada")
        );
        // The same act in another state does not verify.
        let there = Binding {
            format: BOUND_SINCE,
            state: Some("2222222222222222222222222222222222222222".into()),
        };
        assert_eq!(
            check_op(&state, &paused, &signers, &there)
                .unwrap_err()
                .code,
            Code::BadSignature
        );
        // Her key on an act whose actor is Bob: refused.
        let mut as_bob = pause("2026-11-30T09:04:00Z", crate::model::GoalStatus::Paused);
        as_bob.actor = Actor::Human {
            name: "Bob".into(),
            email: "bob@example.com".into(),
        };
        let as_bob = sign_bound(&state, as_bob);
        assert_eq!(
            check_op(&state, &as_bob, &signers, &here).unwrap_err().code,
            Code::NotAnnounced
        );
        // The state's policy: unsigned, it cannot be set; signed, it can;
        // then a machine with no allowed signers refuses every human act.
        let require = op(
            "2026-11-30T09:05:00Z",
            Change::SignerRequire(SignerRequire {
                signatures: crate::model::Signatures::Humans,
            }),
        );
        assert_eq!(
            check_op(&state, &require, &AllowedSigners::none(), &here)
                .unwrap_err()
                .code,
            Code::Unsigned
        );
        let require = sign_bound(&state, require);
        check_op(&state, &require, &AllowedSigners::none(), &here).unwrap();
        op::apply(&mut state, &require).unwrap();
        let plain = pause("2026-11-30T09:06:00Z", crate::model::GoalStatus::Active);
        assert_eq!(
            check_op(&state, &plain, &AllowedSigners::none(), &here)
                .unwrap_err()
                .code,
            Code::NoTrustRoot
        );
    }

    #[test]
    fn a_fido_signature_without_user_presence_is_refused() {
        use ssh_key::public::{Ed25519PublicKey, KeyData, SkEd25519};
        let key = KeyData::SkEd25519(SkEd25519::new(
            Ed25519PublicKey([7u8; 32]),
            String::from("ssh:"),
        ));
        // 64 bytes of signature, then flags 0 (no user presence), counter 1.
        let mut bytes = vec![0u8; 64];
        bytes.extend([0u8, 0, 0, 0, 1]);
        let sig = ssh_key::Signature::new(Algorithm::SkEd25519, bytes).unwrap();
        let sshsig = SshSig::new(key, NAMESPACE, HashAlg::Sha512, sig).unwrap();
        let err = verify(&sshsig, b"record").unwrap_err();
        assert!(err.contains("user presence"), "{err}");
    }

    #[test]
    #[ignore = "a measurement, not a test: cargo test --release --lib trust::tests::measure -- --ignored --nocapture"]
    fn measure_verification() {
        let dir = tempfile::tempdir().unwrap();
        let Some(key) = keygen(dir.path()) else {
            return;
        };
        let signers = allowed(&key);
        let state = board();
        let o = signed(
            &key,
            &state,
            pause("2026-11-30T09:01:00Z", crate::model::GoalStatus::Paused),
        );
        let n = 2000u32;
        let started = std::time::Instant::now();
        for _ in 0..n {
            check_op(&state, &o, &signers, &Binding::default()).unwrap();
        }
        let each = started.elapsed() / n;
        let sig = decode(o.signature.as_deref().unwrap()).unwrap();
        let mut after = state.clone();
        op::apply(&mut after, &o).unwrap();
        let rec = record(&state, &after, &o, &Binding::default());
        let started = std::time::Instant::now();
        for _ in 0..n {
            verify(&sig, &rec).unwrap();
        }
        eprintln!(
            "check_op: {each:?} per op; signature verification alone: {:?}",
            started.elapsed() / n
        );
    }

    /// From format 7 a human act is what the op table gives a human, and
    /// under a policy requiring human signatures every human's tick; ticks
    /// of older formats keep the list they were written under.
    #[test]
    fn from_format_7_the_table_and_the_policy_say_what_a_human_act_is() {
        use crate::op::test_support::{every_change, human, op};
        let mut policy = State::default();
        policy.meta.settings.signatures = crate::model::Signatures::Humans;
        let open = State::default();
        for c in every_change()
            .into_iter()
            .filter(|c| !matches!(c.kind(), "init" | "gate.notified"))
        {
            let o = op(human(), "2026-01-01T09:00:00Z", c.clone());
            assert!(
                is_human_act(&policy, &o, AUTHORITY_SINCE),
                "{} by a human under the policy",
                c.kind()
            );
            let table = op::authority::who(&open, &o) == op::authority::Who::Human;
            assert_eq!(
                is_human_act(&open, &o, AUTHORITY_SINCE),
                table,
                "{}",
                c.kind()
            );
        }
        // Format 5: a human's `todo.add`, `quota.park` of another agent or
        // `goal.split` stays what it was, even under the policy.
        for kind in ["todo.add", "quota.park", "goal.split", "agent.register"] {
            let c = every_change()
                .into_iter()
                .find(|c| c.kind() == kind)
                .unwrap();
            let o = op(human(), "2026-01-01T09:00:00Z", c);
            assert!(!is_human_act(&policy, &o, 5), "{kind} in format 5");
            assert!(is_human_act(&policy, &o, 7), "{kind} in format 7");
        }
    }

    /// Format 7 (issue 44): a key is announced only signed by itself (a
    /// rogue cannot squat Ada's key, Ada cannot announce Bob's), a newcomer
    /// announces a key nobody trusts yet, a new key waits for the old one
    /// (or another human) to approve it, and the holder reclaims a key
    /// squatted before format 7.
    #[test]
    fn from_format_7_a_key_is_announced_by_its_holder() {
        let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
        let Some(ada) = keygen(dirs[0].path()) else {
            return;
        };
        let [ada2, bob, rogue] = [1, 2, 3].map(|i| keygen(dirs[i].path()).unwrap());
        let public =
            |k: &std::path::Path| std::fs::read_to_string(k.with_extension("pub")).unwrap();
        let here = Binding {
            format: 7,
            state: Some("1111111111111111111111111111111111111111".into()),
        };
        let as_who = |who: &str, mut o: Op| {
            o.actor = Actor::Human {
                name: who.into(),
                email: format!("{}@example.com", who.to_lowercase()),
            };
            o
        };
        let announce = |who: &str, at: &str, name: &str, key: &std::path::Path| {
            as_who(
                who,
                op(
                    at,
                    Change::SignerAnnounce(SignerAnnounce {
                        name: crate::model::SignerName::new(name).unwrap(),
                        key: public(key),
                    }),
                ),
            )
        };
        let sign = |key: &std::path::Path, state: &State, mut o: Op| {
            let mut after = state.clone();
            op::apply(&mut after, &o).unwrap();
            o.signature = Some(sign_file(key, &record(state, &after, &o, &here)));
            o
        };
        let signers = allowed(&ada);
        let code = |state: &State, o: &Op| check_op(state, o, &signers, &here).unwrap_err().code;
        let mut state = board();
        // Unsigned: refused, whatever the policy.
        let plain = announce("Ada", "2026-11-30T09:01:00Z", "ada", &ada);
        assert_eq!(
            check_op(&state, &plain, &AllowedSigners::none(), &here)
                .unwrap_err()
                .code,
            Code::Unsigned
        );
        // A rogue announces Ada's key, signed with its own: refused.
        let squat = sign(
            &rogue,
            &state,
            announce("Rogue", "2026-11-30T09:02:00Z", "ada", &ada),
        );
        assert_eq!(code(&state, &squat), Code::NotOwnKey);
        // Ada announces her own, signed with it.
        let own = sign(&ada, &state, plain);
        check_op(&state, &own, &signers, &here).unwrap();
        op::apply(&mut state, &own).unwrap();
        // Ada announces Bob's key, signed with hers: refused (A03).
        let borrowed = sign(
            &ada,
            &state,
            announce("Ada", "2026-11-30T09:03:00Z", "bob", &bob),
        );
        assert_eq!(code(&state, &borrowed), Code::NotOwnKey);
        // Bob, a newcomer nobody trusts yet, announces his own key.
        let newcomer = sign(
            &bob,
            &state,
            announce("Bob", "2026-11-30T09:04:00Z", "bob", &bob),
        );
        check_op(&state, &newcomer, &signers, &here).unwrap();
        op::apply(&mut state, &newcomer).unwrap();
        // Ada's new key announces itself and waits.
        let rotate = sign(
            &ada2,
            &state,
            announce("Ada", "2026-11-30T09:05:00Z", "ada", &ada2),
        );
        check_op(&state, &rotate, &AllowedSigners::none(), &here).unwrap();
        op::apply(&mut state, &rotate).unwrap();
        let name = crate::model::SignerName::new("ada").unwrap();
        let normalized = |k: &std::path::Path| normalize_key(&public(k)).unwrap();
        assert_eq!(state.signers[&name].key, normalized(&ada));
        assert_eq!(
            state.signers[&name].pending.as_ref().map(|p| p.key.clone()),
            Some(normalized(&ada2))
        );
        // Until approved, the new key signs nothing for her.
        let early = sign(
            &ada2,
            &state,
            pause("2026-11-30T09:06:00Z", crate::model::GoalStatus::Paused),
        );
        assert_eq!(
            check_op(&state, &early, &AllowedSigners::none(), &here)
                .unwrap_err()
                .code,
            Code::NotAnnounced
        );
        let approve = |who: &str| {
            as_who(
                who,
                op(
                    "2026-11-30T09:07:00Z",
                    Change::SignerApprove(crate::op::SignerApprove {
                        name: name.clone(),
                        key: public(&ada2),
                    }),
                ),
            )
        };
        // The new key cannot approve itself; the old key can, and so can
        // another announced human.
        let by_itself = sign(&ada2, &state, approve("Ada"));
        assert_eq!(code(&state, &by_itself), Code::NotOwnKey);
        let by_bob = sign(&bob, &state, approve("Bob"));
        check_op(&state, &by_bob, &AllowedSigners::none(), &here).unwrap();
        let by_old = sign(&ada, &state, approve("Ada"));
        check_op(&state, &by_old, &AllowedSigners::none(), &here).unwrap();
        op::apply(&mut state, &by_old).unwrap();
        assert_eq!(state.signers[&name].key, normalized(&ada2));
        assert_eq!(state.signers[&name].pending, None);
        // A squat of Ada's first key written before format 7 (unsigned,
        // by the rogue), then reclaimed by its holder.
        let old_squat = announce("Rogue", "2026-11-30T09:08:00Z", "rogue", &ada);
        op::apply_as(&mut state, &old_squat, 6).unwrap();
        let taken_back = op(
            "2026-11-30T09:09:00Z",
            Change::SignerReclaim(crate::op::SignerReclaim {
                name: crate::model::SignerName::new("ada-old").unwrap(),
                key: public(&ada),
            }),
        );
        let by_rogue = sign(&rogue, &state, as_who("Ada", taken_back.clone()));
        assert_eq!(code(&state, &by_rogue), Code::NotOwnKey);
        let by_holder = sign(&ada, &state, taken_back);
        check_op(&state, &by_holder, &AllowedSigners::none(), &here).unwrap();
        op::apply(&mut state, &by_holder).unwrap();
        let rogue_name = crate::model::SignerName::new("rogue").unwrap();
        assert!(
            !state.signers.contains_key(&rogue_name),
            "the squat is void"
        );
        assert_eq!(
            state.signers[&crate::model::SignerName::new("ada-old").unwrap()].announced_by,
            own.actor
        );
    }
}
