//! The text of what a terminal prints, escape sequences removed, in two forms:
//!
//! - `Sanitizer`: a `shell` terminal's viewport text: escape sequences (CSI, OSC, two-character
//!   escapes) removed, `\r\n` and a lone `\r` turned into `\n`, BEL dropped. The readiness
//!   marker the shell prints before each prompt (OSC `133;D;<status>`) is counted on the way, so
//!   a caller knows a prompt is coming;
//! - `Transcript`: every terminal's lines for `terminal_read`, a redrawn line (`\r`) kept in its
//!   last state.

use crate::live::decode_into;
use std::collections::VecDeque;

/// Transcript lines kept for `terminal_read`.
const TRANSCRIPT_LINES: usize = 10_000;

/// Where the sanitizer is in an escape sequence.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    Start,
    Csi,
    Osc,
    OscEsc,
}

/// Everything printed, as lines without escape sequences.
#[derive(Default)]
pub struct Transcript {
    lines: VecDeque<String>,
    current: String,
    carry: Vec<u8>,
    escape: Escape,
    pending_cr: bool,
}

impl Transcript {
    pub fn push(&mut self, bytes: &[u8]) {
        let mut text = String::new();
        decode_into(&mut text, &mut self.carry, bytes);
        for ch in text.chars() {
            self.escape = match (self.escape, ch) {
                (Escape::None, '\u{1b}') => Escape::Start,
                (Escape::None, _) => {
                    self.plain(ch);
                    Escape::None
                }
                (Escape::Start, '[') => Escape::Csi,
                (Escape::Start, ']') => Escape::Osc,
                (Escape::Start, _) => Escape::None,
                (Escape::Csi, c) if ('\u{40}'..='\u{7e}').contains(&c) => Escape::None,
                (Escape::Csi, _) => Escape::Csi,
                (Escape::Osc, '\u{7}') => Escape::None,
                (Escape::Osc, '\u{1b}') => Escape::OscEsc,
                (Escape::Osc, _) => Escape::Osc,
                (Escape::OscEsc, _) => Escape::None,
            };
        }
    }

    fn plain(&mut self, ch: char) {
        if self.pending_cr && ch != '\n' {
            // A carriage return not followed by a newline: the line is redrawn from its start.
            self.current.clear();
        }
        self.pending_cr = false;
        match ch {
            '\r' => self.pending_cr = true,
            '\n' => {
                self.lines.push_back(std::mem::take(&mut self.current));
                if self.lines.len() > TRANSCRIPT_LINES {
                    self.lines.pop_front();
                }
            }
            '\u{8}' => {
                self.current.pop();
            }
            '\t' => self.current.push('\t'),
            c if c.is_control() => {}
            c => self.current.push(c),
        }
    }

    /// Every retained line, the unfinished one last.
    pub fn all(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        if !self.current.is_empty() {
            all.push(&self.current);
        }
        all
    }
}

/// The OSC body that marks a finished command (its status follows).
const READY_MARK: &str = "133;D";

/// Turns a terminal's raw output into plain text, piece by piece (state carries across pieces:
/// a split UTF-8 character, an unfinished escape, a `\r` whose `\n` is still to come).
#[derive(Default)]
pub struct Sanitizer {
    carry: Vec<u8>,
    escape: Escape,
    osc: String,
    pending_cr: bool,
    /// Readiness markers seen so far.
    pub ready_marks: u64,
}

impl Sanitizer {
    /// Appends the plain text of `bytes` to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        let mut text = String::new();
        decode_into(&mut text, &mut self.carry, bytes);
        for ch in text.chars() {
            self.escape = match (self.escape, ch) {
                (Escape::None, '\u{1b}') => Escape::Start,
                (Escape::None, _) => {
                    self.plain(ch, out);
                    Escape::None
                }
                (Escape::Start, '[') => Escape::Csi,
                (Escape::Start, ']') => {
                    self.osc.clear();
                    Escape::Osc
                }
                (Escape::Start, _) => Escape::None,
                (Escape::Csi, c) if ('\u{40}'..='\u{7e}').contains(&c) => Escape::None,
                (Escape::Csi, _) => Escape::Csi,
                (Escape::Osc, '\u{7}') => {
                    self.end_osc();
                    Escape::None
                }
                (Escape::Osc, '\u{1b}') => Escape::OscEsc,
                (Escape::Osc, c) => {
                    // Only the head matters (the marker); a long title is not kept.
                    if self.osc.len() < 16 {
                        self.osc.push(c);
                    }
                    Escape::Osc
                }
                (Escape::OscEsc, _) => {
                    self.end_osc();
                    Escape::None
                }
            };
        }
    }

    fn end_osc(&mut self) {
        if self.osc.starts_with(READY_MARK) {
            self.ready_marks += 1;
        }
        self.osc.clear();
    }

    fn plain(&mut self, ch: char, out: &mut String) {
        let after_cr = std::mem::take(&mut self.pending_cr);
        match ch {
            '\r' => {
                out.push('\n');
                self.pending_cr = true;
            }
            // The `\n` of a `\r\n`: its `\r` already made the line break.
            '\n' if after_cr => {}
            '\u{7}' => {}
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(pieces: &[&[u8]]) -> (String, u64) {
        let mut s = Sanitizer::default();
        let mut out = String::new();
        for piece in pieces {
            s.push(piece, &mut out);
        }
        (out, s.ready_marks)
    }

    #[test]
    fn the_transcript_drops_escapes_and_redrawn_lines() {
        let mut t = Transcript::default();
        t.push(
            b"\x1b[31mred\x1b[0m plain\r\nprogress 10%\rprogress 100%\r\n\x1b]0;title\x07$ ab\x08c",
        );
        assert_eq!(t.all(), vec!["red plain", "progress 100%", "$ ac"]);
    }

    #[test]
    fn escapes_go_and_line_ends_become_newlines() {
        let (text, marks) = clean(&[
            b"\x1b]133;D;0\x07dsh> ",
            b"echo hi\r",
            b"\nhi\r\n\x1b[?2004l\x07a\rb\r\r\n\x1b]133;D;0\x1b\\dsh> ",
        ]);
        assert_eq!(text, "dsh> echo hi\nhi\na\nb\n\ndsh> ");
        assert_eq!(marks, 2);
    }

    #[test]
    fn a_split_character_and_a_split_escape_survive_the_cut() {
        let (text, marks) = clean(&[b"\xc3", b"\xa9 \x1b]13", b"3;D;1\x07\x1b[3", b"1mx"]);
        assert_eq!(text, "é x");
        assert_eq!(marks, 1);
    }
}
