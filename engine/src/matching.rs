//! Case-insensitive substring tests for rules that match a dialog's message or URL.
//! The host folds a rule's text with the same `fold` before encoding it, so the page only
//! folds the subject. No Unicode tables (they would weigh more than the whole engine):
//! Latin-1, Greek and Cyrillic capitals fold; everything else compares as is.

pub fn fold(u: u16) -> u16 {
    match u {
        0x41..=0x5A => u + 0x20,
        0xC0..=0xDE if u != 0xD7 => u + 0x20,
        0x391..=0x3A9 if u != 0x3A2 => u + 0x20,
        0x400..=0x40F => u + 0x50,
        0x410..=0x42F => u + 0x20,
        _ => u,
    }
}

/// Whether `needle` (already folded) occurs in `hay` (folded as it is read).
pub fn contains_folded(hay: &[u16], needle: &[u16]) -> bool {
    if needle.is_empty() {
        return true;
    }
    if needle.len() > hay.len() {
        return false;
    }
    hay.windows(needle.len()).any(|w| w.iter().zip(needle).all(|(&h, &n)| fold(h) == n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn folded(s: &str) -> Vec<u16> {
        s.encode_utf16().map(fold).collect()
    }

    #[test]
    fn matches_ignoring_case() {
        assert!(contains_folded(&units("Delete Project ALPHA?"), &folded("project alpha")));
        assert!(contains_folded(&units("ÉCOLE"), &folded("école")));
        assert!(contains_folded(&units("УДАЛИТЬ"), &folded("удалить")));
        assert!(contains_folded(&units("anything"), &[]));
        assert!(!contains_folded(&units("Delete beta?"), &folded("alpha")));
        assert!(!contains_folded(&units("al"), &folded("alpha")));
    }
}
