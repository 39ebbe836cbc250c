//! Position encodings (LSP 3.17 `general.positionEncodings`): toolhost speaks UTF-16 columns; a
//! server that negotiated UTF-8 (bytes) or UTF-32 (code points) gets converted columns both ways,
//! using the text of the line the position is on.

use toolhost_contract::lsp::LspPosition;

/// A negotiated encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf16,
    Utf8,
    Utf32,
}

impl Encoding {
    /// Parses the server's `positionEncoding` (absent ⇒ UTF-16); `None` when unsupported.
    pub fn parse(name: Option<&str>) -> Option<Self> {
        match name {
            None | Some("utf-16") => Some(Encoding::Utf16),
            Some("utf-8") => Some(Encoding::Utf8),
            Some("utf-32") => Some(Encoding::Utf32),
            Some(_) => None,
        }
    }
}

/// Line `n` (zero-based) of `text`, without its terminator; lines end at `\n`, `\r\n` or `\r`.
pub fn line_of(text: &str, n: u32) -> Option<&str> {
    let mut rest = text;
    let mut index = 0u32;
    loop {
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        if index == n {
            return Some(&rest[..end]);
        }
        if end == rest.len() {
            return None;
        }
        let skip = if rest[end..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[end + skip..];
        index += 1;
    }
}

/// Column units of `ch` in `encoding`.
fn units(ch: char, encoding: Encoding) -> u32 {
    match encoding {
        Encoding::Utf16 => ch.len_utf16() as u32,
        Encoding::Utf8 => ch.len_utf8() as u32,
        Encoding::Utf32 => 1,
    }
}

/// Converts a column on `line` between encodings. Columns past the end of the line keep their
/// overshoot; a column inside a character snaps to that character's start.
pub fn convert_column(line: &str, column: u32, from: Encoding, to: Encoding) -> u32 {
    if from == to {
        return column;
    }
    let (mut seen_from, mut seen_to) = (0u32, 0u32);
    for ch in line.chars() {
        let step = units(ch, from);
        if seen_from + step > column {
            return seen_to;
        }
        seen_from += step;
        seen_to += units(ch, to);
    }
    seen_to + (column - seen_from)
}

/// Converts a position using the text it refers to (unchanged without the text or line).
pub fn convert(text: Option<&str>, pos: LspPosition, from: Encoding, to: Encoding) -> LspPosition {
    if from == to {
        return pos;
    }
    match text.and_then(|t| line_of(t, pos.line)) {
        Some(line) => {
            LspPosition { line: pos.line, character: convert_column(line, pos.character, from, to) }
        }
        None => pos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_on_every_terminator() {
        let text = "a\r\nbb\rccc\nd";
        assert_eq!(line_of(text, 0), Some("a"));
        assert_eq!(line_of(text, 1), Some("bb"));
        assert_eq!(line_of(text, 2), Some("ccc"));
        assert_eq!(line_of(text, 3), Some("d"));
        assert_eq!(line_of(text, 4), None);
        assert_eq!(line_of("x\n", 1), Some(""));
    }

    #[test]
    fn columns_convert_both_ways() {
        // "é" is 2 UTF-8 bytes / 1 UTF-16 unit; "😀" is 4 bytes / 2 units / 1 code point.
        let line = "é😀x";
        assert_eq!(convert_column(line, 3, Encoding::Utf16, Encoding::Utf8), 6);
        assert_eq!(convert_column(line, 6, Encoding::Utf8, Encoding::Utf16), 3);
        assert_eq!(convert_column(line, 3, Encoding::Utf16, Encoding::Utf32), 2);
        assert_eq!(convert_column(line, 2, Encoding::Utf32, Encoding::Utf16), 3);
        // Inside a character: its start. Past the end: the overshoot is kept.
        assert_eq!(convert_column(line, 2, Encoding::Utf16, Encoding::Utf8), 2);
        assert_eq!(convert_column(line, 6, Encoding::Utf16, Encoding::Utf8), 9);
        assert_eq!(Encoding::parse(Some("utf-7")), None);
    }
}
