//! Git trailers of tick messages (`Loopx-Op: todo.claim`), read from the
//! message's last paragraph only, so a multi-line note in the op body can
//! never pass for a trailer. Below both `store` (which reads a tip's tick
//! number without parsing the op) and `op::message` (which writes and
//! parses whole messages).

/// The trailer key of the op kind.
pub const OP: &str = "Loopx-Op";
/// The trailer key of the tick number.
pub const TICK: &str = "Loopx-Tick";

/// The trailer block: the message's last paragraph.
pub fn block(msg: &str) -> &str {
    let msg = msg.trim_end();
    msg.rsplit_once("\n\n").map_or("", |(_, last)| last)
}

/// Every `Key: value` line of the trailer block, in order.
pub fn all(msg: &str) -> impl Iterator<Item = (&str, &str)> {
    lines(block(msg))
}

/// The `Key: value` lines of a trailer block already split off.
pub fn lines(block: &str) -> impl Iterator<Item = (&str, &str)> {
    block.lines().filter_map(|l| l.split_once(": "))
}

/// The last value of a trailer, trimmed.
pub fn value<'m>(msg: &'m str, key: &str) -> Option<&'m str> {
    all(msg)
        .filter(|(k, _)| *k == key)
        .last()
        .map(|(_, v)| v.trim())
}

/// The `Loopx-Tick` number, cheaply: None for a commit that is not a tick.
pub fn tick(msg: &str) -> Option<u64> {
    value(msg, TICK).and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_come_from_the_last_paragraph_only() {
        let msg = "subject\n\nnote = \"\"\"\nLoopx-Tick: 99\n\"\"\"\n\nLoopx-Op: todo.add\nLoopx-Tick: 7\n";
        assert_eq!(tick(msg), Some(7));
        assert_eq!(value(msg, OP), Some("todo.add"));
        assert_eq!(tick("subject\n\nLoopx-Tick: 99\n\nno trailers here"), None);
        assert_eq!(tick("just a subject"), None);
    }
}
