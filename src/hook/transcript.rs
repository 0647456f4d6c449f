//! The usage a hook records from a session (Claude Code's transcript, Pi's
//! payload): where the transcript was last read, and the running total of
//! the session's current stretch, reported under one key per session and
//! stretch so that a re-read counts once (the usage ledger's max rule).

use std::io::{Read, Seek, SeekFrom};

use sha2::Digest;

use super::session::Session;
use crate::model::usage::Usage;
use crate::time::{Span, Timestamp};

/// The most of a transcript one hook reads at once.
pub const CHUNK: u64 = 64 << 20;

/// How long one ledger entry of a hook-read session gathers usage.
pub const STRETCH: Span = Span::hours(1);

/// The whole lines of the transcript at `path` from byte `offset` on (from
/// its start when the file is now shorter: a new transcript), at most
/// [`CHUNK`] bytes, and the offset after them. None when the file cannot
/// be opened or holds no new whole line (the last one may still be being
/// written).
pub fn read_new(path: &str, offset: u64) -> std::io::Result<Option<(String, u64)>> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(None);
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = if offset > len { 0 } else { offset };
    file.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::new();
    file.take(CHUNK).read_to_end(&mut buf)?;
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&buf[..=end]).into_owned();
    Ok(Some((text, from + end as u64 + 1)))
}

/// What one record of a session's usage reports: the stretch it belongs
/// to, its total with the new usage, and the ledger key of the stretch.
#[derive(Debug, PartialEq, Eq)]
pub struct Stretch {
    pub since: Timestamp,
    pub total: Usage,
    pub key: String,
}

/// Adds `delta` to the session `sid`'s running total: to the current
/// stretch's, or to a new one when the stretch is over [`STRETCH`] old. The
/// caller records the total under the key, then keeps it in the session
/// ([`Stretch::keep`]) once that landed.
pub fn stretch(s: &Session, sid: &str, now: Timestamp, delta: &Usage) -> Stretch {
    let (since, before) = match s.usage_since {
        Some(since) if now.since(since) < STRETCH => (since, s.usage_total.clone()),
        _ => (now, Usage::default()),
    };
    let total = super::usage::merge(vec![before, delta.clone()]);
    let digest = sha2::Sha256::new()
        .chain_update(b"loopx transcript usage")
        .chain_update([0])
        .chain_update(sid.as_bytes())
        .chain_update([0])
        .chain_update(since.unix().to_le_bytes())
        .finalize();
    Stretch {
        since,
        total,
        key: crate::model::id::hex(&digest[..8]),
    }
}

impl Stretch {
    /// The record landed: the session's total is this one.
    pub fn keep(self, s: &mut Session) {
        s.usage_since = Some(self.since);
        s.usage_total = self.total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_unix(1_800_000_000 + s)
    }

    fn tokens(input: u64) -> Usage {
        Usage {
            input_tokens: input,
            ..Usage::default()
        }
    }

    #[test]
    fn a_stretch_adds_up_for_an_hour_under_one_key() {
        let mut s = Session::default();
        let first = stretch(&s, "sid", at(0), &tokens(10));
        assert_eq!(first.since, at(0));
        assert_eq!(first.total.input_tokens, 10);
        let key = first.key.clone();
        assert_eq!(key.len(), 16);
        // Not kept (the record did not land): the same stretch again.
        assert_eq!(stretch(&s, "sid", at(0), &tokens(10)), first);
        first.keep(&mut s);
        let second = stretch(&s, "sid", at(3599), &tokens(5));
        assert_eq!((second.since, second.total.input_tokens), (at(0), 15));
        assert_eq!(second.key, key);
        second.keep(&mut s);
        // An hour on: a new stretch, a new key, a new total.
        let third = stretch(&s, "sid", at(3600), &tokens(1));
        assert_eq!((third.since, third.total.input_tokens), (at(3600), 1));
        assert_ne!(third.key, key);
        // Another session's stretch has another key.
        assert_ne!(
            stretch(&Session::default(), "other", at(0), &tokens(1)).key,
            key
        );
    }

    #[test]
    fn a_transcript_is_read_in_whole_lines_from_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let p = path.to_str().unwrap();
        assert_eq!(read_new(p, 0).unwrap(), None);
        std::fs::write(&path, "one\ntw").unwrap();
        assert_eq!(read_new(p, 0).unwrap(), Some(("one\n".to_owned(), 4)));
        assert_eq!(read_new(p, 4).unwrap(), None);
        std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
        assert_eq!(
            read_new(p, 4).unwrap(),
            Some(("two\nthree\n".to_owned(), 14))
        );
        // A shorter file is a new transcript: read from its start.
        std::fs::write(&path, "new\n").unwrap();
        assert_eq!(read_new(p, 14).unwrap(), Some(("new\n".to_owned(), 4)));
    }
}
