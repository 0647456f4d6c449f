//! Identifiers.
//!
//! Goals and agents are user-chosen slugs (`[a-z0-9][a-z0-9._-]*`, at most 64
//! characters). Todos, gates, evidence and operations get short random ids
//! with a type prefix (`t-3fa9c2d1`); the CLI accepts any unique prefix of
//! them, with or without the type prefix. Every id is a newtype that
//! serializes as its string, so an id can never be confused with another kind
//! of id or with free text.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest slug accepted.
pub const MAX_SLUG: usize = 64;

/// Checks a user-chosen slug and says exactly what is wrong with it.
pub fn check_slug(kind: &str, s: &str) -> Result<(), String> {
    let fix = "use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters";
    if s.is_empty() {
        return Err(format!("the {kind} id is empty: {fix}"));
    }
    if s.len() > MAX_SLUG {
        return Err(format!(
            "the {kind} id {s:?} is {} characters long: {fix}",
            s.len()
        ));
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return Err(format!(
            "the {kind} id {s:?} must start with a lowercase letter or digit: {fix}"
        ));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!("the {kind} id {s:?} contains {c:?}: {fix}"));
    }
    if s.contains("..") || s.ends_with(".lock") || s.ends_with('.') {
        return Err(format!(
            "the {kind} id {s:?} may not contain '..' or end with '.' or '.lock': {fix}"
        ));
    }
    Ok(())
}

/// What every id type shares: `Display` as the plain string, a type-named
/// `Debug`, and serde as a string that is validated by `new` on the way in.
macro_rules! string_id_impls {
    ($name:ident) => {
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_str(crate::time::Text(stringify!($name), $name::new))
            }
        }
    };
}

macro_rules! slug_id {
    ($(#[$m:meta])* $name:ident, $kind:literal) => {
        $(#[$m])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Validates `s` as this kind of id.
            pub fn new(s: &str) -> Result<Self, String> {
                check_slug($kind, s)?;
                Ok($name(s.to_owned()))
            }
        }

        string_id_impls!($name);
    };
}

slug_id!(
    /// A goal's user-chosen id.
    GoalId,
    "goal"
);
slug_id!(
    /// An agent's user-chosen (or runtime-derived) id.
    AgentId,
    "agent"
);
slug_id!(
    /// The name a signer is announced under (`signers/<name>.toml`).
    SignerName,
    "signer"
);
slug_id!(
    /// The name a machine (a clone's key) is proposed under
    /// (`machines/<name>.toml`, format 5).
    MachineName,
    "machine"
);

/// Length of the random part of generated ids, in hex digits.
pub const RANDOM_HEX: usize = 8;

macro_rules! random_id {
    ($(#[$m:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$m])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// The type prefix, without the dash.
            pub const PREFIX: &'static str = $prefix;
            /// What this kind of id names, for messages.
            pub const KIND: &'static str = $kind;

            /// Builds the id from its random hex part.
            pub fn from_hex(hex: &str) -> Self {
                $name(format!("{}-{}", $prefix, hex))
            }

            /// Validates a complete id such as `t-3fa9c2d1`.
            pub fn new(s: &str) -> Result<Self, String> {
                let hex = s
                    .strip_prefix(concat!($prefix, "-"))
                    .ok_or_else(|| format!("{s:?} is not a {} id: it should look like {}-3fa9c2d1", $kind, $prefix))?;
                if hex.len() < 4
                    || hex.len() > 32
                    || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                {
                    return Err(format!(
                        "{s:?} is not a {} id: it should look like {}-3fa9c2d1 (lowercase hex)",
                        $kind, $prefix
                    ));
                }
                Ok($name(s.to_owned()))
            }

            /// The hex part after the prefix.
            pub fn hex(&self) -> &str {
                &self.0[$prefix.len() + 1..]
            }
        }

        string_id_impls!($name);
    };
}

random_id!(
    /// A todo's generated id, `t-…`.
    TodoId,
    "t",
    "todo"
);
random_id!(
    /// A gate's generated id, `g-…`.
    GateId,
    "g",
    "gate"
);
random_id!(
    /// An evidence record's generated id, `e-…`.
    EvidenceId,
    "e",
    "evidence"
);
random_id!(
    /// An operation's stable id, `o-…`, kept across sync replays.
    OpId,
    "o",
    "operation"
);

impl GateId {
    /// The id of a gate an op opens by itself (a park that ran out, a
    /// stalled todo, a budget reached): derived from the op's id and what
    /// the gate is for, so a replay of the op opens the same gate.
    pub fn derived(op: &OpId, what: &str) -> GateId {
        use sha2::{Digest, Sha256};
        let d = Sha256::digest(format!("{op}:{what}").as_bytes());
        GateId::from_hex(&hex(&d[..RANDOM_HEX / 2]))
    }
}

/// Normalises what a user typed for a prefixed id: `3fa9`, `t-3fa9` and
/// `T-3FA9` all become the hex prefix `3fa9`. Returns an explanation when the
/// text cannot be a prefix of such an id.
pub fn prefix_of(prefix: &str, kind: &str, typed: &str) -> Result<String, String> {
    let t = typed.trim().to_ascii_lowercase();
    let hex = t
        .strip_prefix(&format!("{prefix}-"))
        .map(str::to_owned)
        .unwrap_or(t.clone());
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "{typed:?} is not a {kind} id or prefix: it should look like {prefix}-3fa9c2d1 or 3fa9"
        ));
    }
    Ok(hex)
}

/// Lowercase hex of bytes (digests, random ids): the one encoder.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_reject_paths_and_garbage() {
        for ok in ["main", "agent-a", "a.b_c-9", "0", &"x".repeat(64)] {
            assert!(GoalId::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            "A",
            "-a",
            ".a",
            "a..b",
            "a b",
            "a.lock",
            "a.",
            "é",
            &"x".repeat(65),
        ] {
            assert!(AgentId::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn random_ids_have_their_prefix() {
        let t = TodoId::from_hex("3fa9c2d1");
        assert_eq!(t.as_str(), "t-3fa9c2d1");
        assert_eq!(t.hex(), "3fa9c2d1");
        assert!(TodoId::new("t-3fa9c2d1").is_ok());
        assert!(TodoId::new("g-3fa9c2d1").is_err());
        assert!(TodoId::new("t-XYZ").is_err());
        assert!(TodoId::new("t-../../x").is_err());
    }

    #[test]
    fn prefixes_accept_with_or_without_the_type() {
        assert_eq!(prefix_of("t", "todo", "t-3fa").unwrap(), "3fa");
        assert_eq!(prefix_of("t", "todo", "3FA").unwrap(), "3fa");
        assert!(prefix_of("t", "todo", "t-").is_err());
        assert!(prefix_of("t", "todo", "../x").is_err());
    }
}
