//! Signers announced in the state, and the record of who vouched for a
//! todo's validation. Stored at `signers/<name>.toml` and inside todos.
//!
//! An announcement only helps teammates find a key: which keys count is
//! decided on each machine by its allowed-signers file (`trust`), never by
//! the state.

use serde::{Deserialize, Serialize};

use super::{actor::Actor, id::OpId, id::SignerName};
use crate::time::Timestamp;

/// `signers/<name>.toml`: a name and an SSH public key, and who announced
/// it when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signer {
    pub name: SignerName,
    /// The public key in OpenSSH form (`ssh-ed25519 AAAA…`), without its
    /// comment.
    pub key: String,
    pub announced_by: Actor,
    pub announced_at: Timestamp,
    /// The SSH signature of the announcing op, when it was signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Format 7: a new key the signer announced (signed by that key), which
    /// replaces `key` once a `signer.approve` signed by the old key, or by
    /// another announced human, approves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingKey>,
}

/// A signer's new key waiting for approval (format 7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingKey {
    pub key: String,
    pub announced_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// Who wrote (or trusted) a todo's validation: the op, its actor and time,
/// and the op's signature if it carried one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vouch {
    pub op: OpId,
    pub by: Actor,
    pub at: Timestamp,
    /// `add`, `edit` or `trust`: how the validation got here.
    pub how: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}
