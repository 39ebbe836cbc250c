//! Tolerant positions: with a `symbol` argument the column is moved onto that symbol's
//! occurrence on the given line, or on the nearest line within ±[`SYMBOL_LINE_WINDOW`] holding
//! it. Whole-word occurrences win over substrings anywhere in the window; then the nearest line
//! (the line above first on a tie), then the occurrence closest to the given column.
//! Also: the source line snippets the tool attaches to each location.

use toolhost_contract::lsp::LspPosition;

/// How many lines above and below the given line are searched.
pub const SYMBOL_LINE_WINDOW: u32 = 3;

/// Longest snippet, in chars (an ellipsis marks a cut).
pub const SNIPPET_MAX_CHARS: usize = 200;

/// The lines of `text`, split at `\n`, `\r\n` and `\r` (the LSP line terminators).
pub fn lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        match rest.find(['\n', '\r']) {
            Some(end) => {
                out.push(&rest[..end]);
                let skip = if rest[end..].starts_with("\r\n") { 2 } else { 1 };
                rest = &rest[end + skip..];
            }
            None => {
                out.push(rest);
                return out;
            }
        }
    }
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_' || ch == '$'
}

fn utf16_len(text: &str) -> u32 {
    text.encode_utf16().count() as u32
}

/// Occurrences of `symbol` on `line`: (UTF-16 column, whole word).
fn occurrences(line: &str, symbol: &str) -> Vec<(u32, bool)> {
    let first_ident = symbol.chars().next().is_some_and(is_ident);
    let last_ident = symbol.chars().next_back().is_some_and(is_ident);
    line.match_indices(symbol)
        .map(|(idx, _)| {
            let before_ok = !first_ident || !line[..idx].chars().next_back().is_some_and(is_ident);
            let after = &line[idx + symbol.len()..];
            let after_ok = !last_ident || !after.chars().next().is_some_and(is_ident);
            (utf16_len(&line[..idx]), before_ok && after_ok)
        })
        .collect()
}

/// The position of `symbol` near `at` (zero-based UTF-16), or `None` when it does not occur
/// within the window.
pub fn resolve_symbol(text: &str, at: LspPosition, symbol: &str) -> Option<LspPosition> {
    if symbol.is_empty() {
        return None;
    }
    let all = lines(text);
    let symbol_len = utf16_len(symbol);
    // (whole word?, line distance, above-first order, column distance) — smaller is better.
    let mut best: Option<((bool, u32, u32, u32), LspPosition)> = None;
    let first = at.line.saturating_sub(SYMBOL_LINE_WINDOW);
    let last = at.line.saturating_add(SYMBOL_LINE_WINDOW);
    for line_no in first..=last {
        let Some(line) = all.get(line_no as usize) else { continue };
        let distance = line_no.abs_diff(at.line);
        let below = u32::from(line_no > at.line);
        for (column, whole) in occurrences(line, symbol) {
            let column_distance = if at.character >= column && at.character < column + symbol_len {
                0
            } else {
                column.abs_diff(at.character)
            };
            let key = (!whole, distance, below, column_distance);
            if best.as_ref().is_none_or(|(k, _)| key < *k) {
                best = Some((key, LspPosition { line: line_no, character: column }));
            }
        }
    }
    best.map(|(_, pos)| pos)
}

/// Line `line` (zero-based) of `text`, trimmed and cut to [`SNIPPET_MAX_CHARS`].
pub fn snippet(text: &str, line: u32) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(raw) = lines(text).get(line as usize).copied() else { return String::new() };
    let trimmed = raw.trim();
    if trimmed.chars().count() <= SNIPPET_MAX_CHARS {
        return trimmed.to_owned();
    }
    let mut cut: String = trimmed.chars().take(SNIPPET_MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> LspPosition {
        LspPosition { line, character }
    }

    #[test]
    fn moves_the_column_onto_the_symbol() {
        let text = "int total = add(a, b);\n";
        assert_eq!(resolve_symbol(text, pos(0, 0), "add"), Some(pos(0, 12)));
        // Already inside: the occurrence's start.
        assert_eq!(resolve_symbol(text, pos(0, 13), "add"), Some(pos(0, 12)));
    }

    #[test]
    fn whole_words_win_over_substrings() {
        let text = "address = 1;\nx = add(1);\n";
        assert_eq!(resolve_symbol(text, pos(0, 0), "add"), Some(pos(1, 4)));
        let text = "padd + add\n";
        assert_eq!(resolve_symbol(text, pos(0, 0), "add"), Some(pos(0, 7)));
    }

    #[test]
    fn nearest_line_within_the_window() {
        let text = "a\nb\nfoo()\nc\nd\ne\nf\ng\nfoo\n";
        assert_eq!(resolve_symbol(text, pos(0, 0), "foo"), Some(pos(2, 0)));
        assert_eq!(resolve_symbol(text, pos(5, 0), "foo"), Some(pos(2, 0)));
        assert_eq!(resolve_symbol(text, pos(6, 0), "foo"), Some(pos(8, 0)));
        assert_eq!(resolve_symbol("a\nb\nc\nd\ne\nfoo\n", pos(0, 0), "foo"), None);
        // Closest column among several on the line.
        assert_eq!(resolve_symbol("x + x + x", pos(0, 5), "x"), Some(pos(0, 4)));
    }

    #[test]
    fn columns_are_utf16() {
        let text = "s = \"😀\"; call(s)\n";
        assert_eq!(resolve_symbol(text, pos(0, 0), "call"), Some(pos(0, 10)));
    }

    #[test]
    fn snippets_are_trimmed_and_bounded() {
        assert_eq!(snippet("  int x;  \r\nnext", 0), "int x;");
        assert_eq!(snippet("a\nb", 5), "");
        let long = "x".repeat(300);
        let cut = snippet(&long, 0);
        assert_eq!(cut.chars().count(), SNIPPET_MAX_CHARS);
        assert!(cut.ends_with('…'));
    }
}
