//! The one shortening of content ids and hashes for people to read (tables, messages).

/// The first 12 characters of an id or hash (the whole of a shorter one): enough to tell the
/// probes of one set apart, short enough for a table column.
pub fn short_id(id: &str) -> &str {
    match id.char_indices().nth(12) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

#[cfg(test)]
mod tests {
    use super::short_id;

    #[test]
    fn twelve_characters_or_the_whole() {
        assert_eq!(short_id("0123456789abcdef"), "0123456789ab");
        assert_eq!(short_id("abc"), "abc");
        assert_eq!(short_id("ééééééééééééé"), "éééééééééééé");
    }
}
