//! Stored signatures told to people: who signed, in words and as JSON.

use super::*;

/// Describes a stored signature (of an op or of a file it produced) for
/// people: "signed by ada (SHA256:…)", "signed by an untrusted key (…)" or
/// "unsigned". The signature itself was checked when the op was applied.
pub fn describe(signature: Option<&str>, signers: &AllowedSigners) -> String {
    match signature.map(decode) {
        None => "unsigned".to_owned(),
        Some(Err(_)) => "signed, unreadably".to_owned(),
        Some(Ok(sig)) => SignedBy {
            principal: signers.principal(sig.public_key(), None).map(str::to_owned),
            fingerprint: sig.public_key().fingerprint(HashAlg::Sha256).to_string(),
        }
        .to_string(),
    }
}

/// What history shows about a tick's signature: "signed by …" for a
/// signed op; "unsigned" for a human's op that needed a signature and has
/// none; else None. Whether it needed one is judged as the writer judges
/// it ([`is_human_act`] and [`enforced`]) on `state`, the state at hand
/// (the tip's, or the one `status --at` shows): this machine trusts a
/// signer or the state's policy asks for human signatures, and the op is a
/// human act there (a decision gate's answer is not; a permission gate's
/// is). An act that needed nothing is not marked, so "unsigned" never sits
/// beside signed acts as if a signature had failed.
pub fn history_note(op: &Op, signers: &AllowedSigners, state: &State) -> Option<String> {
    if op.actor.agent().is_some()
        && let Some(Ok(sig)) = op.signature.as_deref().map(decode)
    {
        // An agent's op is signed by its machine (format 5): which machine
        // the state knows the key as is `loopx machine list`'s to say.
        return Some(format!(
            "signed by a machine key ({})",
            sig.public_key().fingerprint(HashAlg::Sha256)
        ));
    }
    if op.signature.is_some() {
        return Some(describe(op.signature.as_deref(), signers));
    }
    let needed = op.actor.is_human()
        && enforced(state, signers)
        && is_human_act(state, op, crate::model::WRITES);
    needed.then(|| "unsigned".to_owned())
}

/// A stored signature as `--format json` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SignatureWire {
    pub signed: bool,
    /// The principal this machine's allowed signers name for the key; None
    /// when unsigned or not trusted here.
    pub signer: Option<String>,
    pub fingerprint: Option<String>,
    /// "signed by ada (SHA256:…)", "signed by an untrusted key (…)" or
    /// "unsigned".
    pub text: String,
}

impl SignatureWire {
    pub fn of(signature: Option<&str>, signers: &AllowedSigners) -> Self {
        let by = signer_of(signature, signers);
        SignatureWire {
            signed: signature.is_some(),
            signer: by.as_ref().and_then(|b| b.principal.clone()),
            fingerprint: by.map(|b| b.fingerprint),
            text: describe(signature, signers),
        }
    }
}

/// The signer of a stored signature, for JSON output: principal (None when
/// untrusted here) and fingerprint.
pub fn signer_of(signature: Option<&str>, signers: &AllowedSigners) -> Option<SignedBy> {
    let sig = decode(signature?).ok()?;
    Some(SignedBy {
        principal: signers.principal(sig.public_key(), None).map(str::to_owned),
        fingerprint: sig.public_key().fingerprint(HashAlg::Sha256).to_string(),
    })
}
