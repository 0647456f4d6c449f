//! Fresh ids (op ids, todo and evidence ids): random, or deterministic
//! when `LOOPX_SEED` is set (the context reads it and hands this down).

use std::cell::Cell;

use sha2::{Digest, Sha256};

/// Generates random ids, deterministically when `LOOPX_SEED` is set.
pub struct IdGen {
    seed: Option<String>,
    salt: i64,
    counter: Cell<u64>,
}

impl IdGen {
    pub fn new(seed: Option<String>, salt: i64) -> Self {
        IdGen {
            seed,
            salt,
            counter: Cell::new(0),
        }
    }

    /// `n` lowercase hex digits. With a seed they follow from the seed, the
    /// clock, a per-process counter and `context` (what the id is for), so
    /// two commands at the same instant still draw different ids.
    pub fn hex(&self, n: usize, context: &[u8]) -> String {
        let mut bytes = [0u8; 32];
        match &self.seed {
            Some(seed) => {
                let c = self.counter.get();
                self.counter.set(c + 1);
                let digest = Sha256::new()
                    .chain_update(seed.as_bytes())
                    .chain_update(self.salt.to_le_bytes())
                    .chain_update(c.to_le_bytes())
                    .chain_update(context)
                    .finalize();
                bytes.copy_from_slice(&digest);
            }
            None => getrandom::fill(&mut bytes).expect("the OS random source is available"),
        }
        let hex = crate::model::id::hex(&bytes);
        hex[..n.min(64)].to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ids_repeat_and_differ_by_salt() {
        let a = IdGen::new(Some("s".into()), 1);
        let b = IdGen::new(Some("s".into()), 1);
        assert_eq!(a.hex(8, b"x"), b.hex(8, b"x"));
        assert_ne!(a.hex(8, b"x"), a.hex(8, b"x"));
        let fresh = |salt| IdGen::new(Some("s".into()), salt);
        assert_ne!(fresh(2).hex(8, b"x"), fresh(1).hex(8, b"x"));
        assert_ne!(fresh(1).hex(8, b"x"), fresh(1).hex(8, b"y"));
    }
}
