//! Line diffs for write/edit metadata.
//!
//! `diff_meta` turns the canonical before/after texts of a write or edit into the replayable
//! `DiffMeta`: one `FileDiff` per hunk (jsdiff `structuredPatch` semantics with 3
//! context lines) plus `patch`, the same hunks as a unified diff that replays `before` into `after`
//! byte for byte. Both views come from one pass over the same grouped ops, so their numbers agree.
//!
//! Lines are split on `\n` only and keep their terminator while diffing: a final line without `\n`
//! differs from the same text with one (as in jsdiff and GNU diff), and `\r` is ordinary line text,
//! so CRLF content round-trips through the patch unchanged.

use similar::{Algorithm, DiffOp, DiffTag, capture_diff_slices_deadline, group_diff_ops};
use std::time::{Duration, Instant};
use toolhost_protocol::{DiffMeta, FileDiff};

/// Context lines around each change; equal runs of at most twice this stay inside one hunk.
const CONTEXT: usize = 3;

/// Budget for the Myers search. Past it similar falls back to a coarser but still correct diff,
/// so a huge rewrite cannot stall the tool call.
const DIFF_BUDGET: Duration = Duration::from_secs(2);

/// The marker GNU diff, jsdiff and diffy use after a line that has no final newline.
const NO_NEWLINE_MARKER: &str = "\\ No newline at end of file\n";

/// Diff metadata of a write/edit: one FileDiff per hunk plus the lossless unified patch.
///
/// Identical texts give `diffs: []` and no patch. `path` is copied verbatim into every `FileDiff`
/// and into the `--- a/<path>` / `+++ b/<path>` headers.
pub fn diff_meta(path: &str, before: &str, after: &str) -> DiffMeta {
    Change::new(before, after).meta(path)
}

/// Diff metadata of several files' changes, `(path, before, after)` each (`None`: no such side):
/// every file's hunks, and one patch over all of them (none when nothing differs). The diff card
/// of a call that changed several files (revert, apply_changes, an agent's step).
pub fn diff_meta_of_files<'a>(
    files: impl IntoIterator<Item = (&'a str, Option<&'a str>, Option<&'a str>)>,
) -> DiffMeta {
    let mut meta = DiffMeta { diffs: Vec::new(), patch: None };
    for (path, before, after) in files {
        let one = diff_meta(path, before.unwrap_or(""), after.unwrap_or(""));
        meta.diffs.extend(one.diffs);
        if let Some(patch) = one.patch {
            meta.patch.get_or_insert_with(String::new).push_str(&patch);
        }
    }
    meta
}

/// A change between two texts as hunks, computed once, so the hunks a reviewer decides on are
/// exactly the ones applied afterwards (the diff has a time budget, so a second run on a huge
/// input could group differently).
pub struct Change<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    groups: Vec<Vec<DiffOp>>,
}

impl<'a> Change<'a> {
    pub fn new(before: &'a str, after: &'a str) -> Self {
        if before == after {
            return Change { old: Vec::new(), new: Vec::new(), groups: Vec::new() };
        }
        // `split_inclusive` keeps each line's `\n`, which is what makes "x" and "x\n" distinct
        // lines and lets the patch restore the exact bytes (similar's own line tokenizer would also
        // split on a lone `\r`, which would not match the `\n`-only line model of the diffs).
        let old: Vec<&str> = before.split_inclusive('\n').collect();
        let new: Vec<&str> = after.split_inclusive('\n').collect();
        let deadline = Instant::now().checked_add(DIFF_BUDGET);
        let ops = capture_diff_slices_deadline(Algorithm::Myers, &old, &new, deadline);
        let groups = group_diff_ops(ops, CONTEXT).into_iter().filter(|g| !g.is_empty()).collect();
        Change { old, new, groups }
    }

    /// Number of hunks.
    pub fn hunk_count(&self) -> usize {
        self.groups.len()
    }

    /// Identical texts give `diffs: []` and no patch.
    pub fn meta(&self, path: &str) -> DiffMeta {
        if self.groups.is_empty() {
            return DiffMeta { diffs: Vec::new(), patch: None };
        }
        let mut patch = format!("--- a/{path}\n+++ b/{path}\n");
        let diffs: Vec<FileDiff> = self
            .groups
            .iter()
            .filter_map(|group| hunk(path, &self.old, &self.new, group, &mut patch))
            .collect();
        // Unequal texts always differ in at least one line token, so this only guards the invariant.
        let patch = if diffs.is_empty() { None } else { Some(patch) };
        DiffMeta { diffs, patch }
    }

    /// The lines hunk `index` changes in the text before, context excluded: the 1-based first
    /// line and the count (0 for a pure insertion, which then comes after that line).
    pub fn old_lines_of(&self, index: usize) -> Option<(usize, usize)> {
        let changed = self.groups.get(index)?.iter().filter(|op| op.tag() != DiffTag::Equal);
        let (mut begin, mut end) = (usize::MAX, 0);
        for op in changed {
            begin = begin.min(op.old_range().start);
            end = end.max(op.old_range().end);
        }
        (begin != usize::MAX).then(|| (unified_start(begin, end - begin), end - begin))
    }

    /// The text with only the `accepted` hunks applied. `old_raw` and `new_raw` are the two texts
    /// as they are written (e.g. with CRLF endings): line for line the texts this change was
    /// computed on, which only differ from them in line endings.
    pub fn apply(&self, accepted: &[usize], old_raw: &str, new_raw: &str) -> String {
        let old: Vec<&str> = old_raw.split_inclusive('\n').collect();
        let new: Vec<&str> = new_raw.split_inclusive('\n').collect();
        let mut out = String::with_capacity(old_raw.len().max(new_raw.len()));
        let mut at = 0;
        for (index, group) in self.groups.iter().enumerate() {
            let take_new = accepted.contains(&index);
            for op in group {
                let (tag, old_range, new_range) = op.as_tag_tuple();
                if old_range.start > at {
                    old[at..old_range.start].iter().for_each(|l| out.push_str(l));
                }
                match tag {
                    DiffTag::Equal => old[old_range.clone()].iter().for_each(|l| out.push_str(l)),
                    _ if take_new => new[new_range].iter().for_each(|l| out.push_str(l)),
                    _ => old[old_range.clone()].iter().for_each(|l| out.push_str(l)),
                }
                at = old_range.end;
            }
        }
        old[at.min(old.len())..].iter().for_each(|l| out.push_str(l));
        out
    }
}

/// Builds the `FileDiff` of one group of ops and appends the same hunk to `patch`.
fn hunk(
    path: &str,
    old: &[&str],
    new: &[&str],
    group: &[DiffOp],
    patch: &mut String,
) -> Option<FileDiff> {
    let (first, last) = (group.first()?, group.last()?);
    let old_begin = first.old_range().start;
    let new_begin = first.new_range().start;
    let old_count = last.old_range().end - old_begin;
    let new_count = last.new_range().end - new_begin;
    let old_start = unified_start(old_begin, old_count);
    let new_start = unified_start(new_begin, new_count);
    patch.push_str(&format!("@@ -{old_start},{old_count} +{new_start},{new_count} @@\n"));

    let mut old_side: Vec<&str> = Vec::with_capacity(old_count);
    let mut new_side: Vec<&str> = Vec::with_capacity(new_count);
    for op in group {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {
                for line in &old[old_range] {
                    push_patch_line(patch, ' ', line);
                    old_side.push(line_text(line));
                    new_side.push(line_text(line));
                }
            }
            // Removals print before additions within a change, as jsdiff and GNU diff do;
            // `Replace` carries both ranges, `Delete`/`Insert` have an empty one.
            DiffTag::Delete | DiffTag::Insert | DiffTag::Replace => {
                for line in &old[old_range] {
                    push_patch_line(patch, '-', line);
                    old_side.push(line_text(line));
                }
                for line in &new[new_range] {
                    push_patch_line(patch, '+', line);
                    new_side.push(line_text(line));
                }
            }
        }
    }

    Some(FileDiff {
        path: path.to_owned(),
        old_text: if old_side.is_empty() { None } else { Some(old_side.join("\n")) },
        new_text: new_side.join("\n"),
        old_start: old_start as u64,
        old_lines: old_count as u64,
        new_start: new_start as u64,
        new_lines: new_count as u64,
    })
}

/// Unified-diff start of a side beginning at 0-based line `begin`: 1-based when the side has
/// lines, else the number of the line before the (empty) range, possibly 0 (GNU convention).
fn unified_start(begin: usize, count: usize) -> usize {
    if count == 0 { begin } else { begin + 1 }
}

/// A line's text for `FileDiff`: without its `\n` (a `\r` before it is content and stays).
fn line_text(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

/// Appends one patch line; a line without final newline gets the `\` marker so the patch still
/// reproduces the missing newline.
fn push_patch_line(patch: &mut String, op: char, line: &str) {
    patch.push(op);
    patch.push_str(line);
    if !line.ends_with('\n') {
        patch.push('\n');
        patch.push_str(NO_NEWLINE_MARKER);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use toolhost_protocol::card::parse_patch;

    const TWELVE: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\n";

    #[test]
    fn only_the_accepted_hunks_are_applied() {
        let after = TWELVE.replace("l2\n", "two\n").replace("l11\n", "eleven\n");
        let change = Change::new(TWELVE, &after);
        assert_eq!(change.hunk_count(), 2);
        assert_eq!(change.apply(&[0, 1], TWELVE, &after), after);
        assert_eq!(change.apply(&[], TWELVE, &after), TWELVE);
        assert_eq!(change.apply(&[1], TWELVE, &after), TWELVE.replace("l11\n", "eleven\n"));
        assert_eq!(change.old_lines_of(1), Some((11, 1)), "context is not counted");
    }

    #[test]
    fn a_partial_apply_keeps_each_sides_own_line_endings() {
        let after = TWELVE.replace("l2\n", "two\n").replace("l11\n", "eleven\n");
        let change = Change::new(TWELVE, &after);
        let (old_raw, new_raw) = (TWELVE.replace('\n', "\r\n"), after.replace('\n', "\r\n"));
        let written = change.apply(&[0], &old_raw, &new_raw);
        assert_eq!(written, TWELVE.replace("l2\n", "two\n").replace('\n', "\r\n"));
    }

    #[test]
    fn a_pure_insertion_is_placed_after_its_line() {
        let after = TWELVE.replace("l5\n", "l5\nnew\n");
        let change = Change::new(TWELVE, &after);
        assert_eq!(change.old_lines_of(0), Some((5, 0)));
        assert_eq!(change.apply(&[], TWELVE, &after), TWELVE);
    }

    fn fd(
        old_text: Option<&str>,
        new_text: &str,
        (old_start, old_lines, new_start, new_lines): (u64, u64, u64, u64),
    ) -> FileDiff {
        FileDiff {
            path: "a.txt".into(),
            old_text: old_text.map(str::to_owned),
            new_text: new_text.to_owned(),
            old_start,
            old_lines,
            new_start,
            new_lines,
        }
    }

    /// Applies `patch` with diffy, an independent unified-diff implementation.
    fn replay(before: &str, patch: &str) -> String {
        let parsed = diffy::Patch::from_str(patch).unwrap();
        diffy::apply(before, &parsed).unwrap()
    }

    fn assert_replays(before: &str, after: &str) -> DiffMeta {
        let meta = diff_meta("a.txt", before, after);
        if let Some(patch) = &meta.patch {
            assert_eq!(replay(before, patch), after, "patch:\n{patch}");
        }
        meta
    }

    #[test]
    fn replace_in_middle_is_one_hunk_with_context() {
        let before = "a\nb\nc\nOLD\nd\ne\nf\n";
        let after = before.replace("OLD", "NEW");
        let meta = assert_replays(before, &after);
        assert_eq!(
            meta.diffs,
            vec![fd(Some("a\nb\nc\nOLD\nd\ne\nf"), "a\nb\nc\nNEW\nd\ne\nf", (1, 7, 1, 7))]
        );
        assert_eq!(
            meta.patch.as_deref(),
            Some("--- a/a.txt\n+++ b/a.txt\n@@ -1,7 +1,7 @@\n a\n b\n c\n-OLD\n+NEW\n d\n e\n f\n")
        );
    }

    #[test]
    fn creation_from_empty_has_null_old_text() {
        let meta = assert_replays("", "brand new\n");
        assert_eq!(meta.diffs, vec![fd(None, "brand new", (0, 0, 1, 1))]);
        assert_eq!(
            meta.patch.as_deref(),
            Some("--- a/a.txt\n+++ b/a.txt\n@@ -0,0 +1,1 @@\n+brand new\n")
        );
    }

    #[test]
    fn whole_file_deletion_has_empty_new_text() {
        let meta = assert_replays("gone\n", "");
        assert_eq!(meta.diffs, vec![fd(Some("gone"), "", (1, 1, 0, 0))]);
        assert_eq!(
            meta.patch.as_deref(),
            Some("--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +0,0 @@\n-gone\n")
        );
    }

    #[test]
    fn single_lines_without_newline() {
        let meta = assert_replays("x", "y");
        assert_eq!(meta.diffs, vec![fd(Some("x"), "y", (1, 1, 1, 1))]);
        assert_eq!(
            meta.patch.as_deref(),
            Some(
                "--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-x\n\\ No newline at end of file\n\
                 +y\n\\ No newline at end of file\n"
            )
        );
    }

    #[test]
    fn changes_13_lines_apart_are_two_hunks() {
        let before: String = (1..=20).map(|i| format!("line{i}\n")).collect();
        let after = before.replace("line3\n", "CHANGED3\n").replace("line16\n", "CHANGED16\n");
        let meta = assert_replays(&before, &after);
        assert_eq!(
            meta.diffs,
            vec![
                fd(
                    Some("line1\nline2\nline3\nline4\nline5\nline6"),
                    "line1\nline2\nCHANGED3\nline4\nline5\nline6",
                    (1, 6, 1, 6)
                ),
                fd(
                    Some("line13\nline14\nline15\nline16\nline17\nline18\nline19"),
                    "line13\nline14\nline15\nCHANGED16\nline17\nline18\nline19",
                    (13, 7, 13, 7)
                ),
            ]
        );
    }

    #[test]
    fn identical_texts_have_no_diffs_and_no_patch() {
        for text in ["", "same\n", "no newline", "a\r\nb\r\n"] {
            assert_eq!(diff_meta("a.txt", text, text), DiffMeta { diffs: Vec::new(), patch: None });
        }
    }

    /// A 20-line file with lines `first` and `first + gap + 1` changed.
    fn two_changes(gap: usize) -> DiffMeta {
        let first = 5;
        let before: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let after: String = (1..=20)
            .map(|i| {
                if i == first || i == first + gap + 1 {
                    format!("x{i}\n")
                } else {
                    format!("{i}\n")
                }
            })
            .collect();
        assert_replays(&before, &after)
    }

    #[test]
    fn six_equal_lines_between_changes_stay_in_one_hunk() {
        let meta = two_changes(6);
        assert_eq!(meta.diffs.len(), 1);
        // 3 context + change + 6 equal + change + 3 context.
        assert_eq!((meta.diffs[0].old_start, meta.diffs[0].old_lines), (2, 3 + 1 + 6 + 1 + 3));
    }

    #[test]
    fn seven_equal_lines_between_changes_split_the_hunk() {
        let meta = two_changes(7);
        let numbers: Vec<_> = meta
            .diffs
            .iter()
            .map(|d| (d.old_start, d.old_lines, d.new_start, d.new_lines))
            .collect();
        assert_eq!(numbers, vec![(2, 7, 2, 7), (10, 7, 10, 7)]);
    }

    #[test]
    fn final_newline_only_change_is_a_line_change() {
        let meta = assert_replays("a\nx", "a\nx\n");
        assert_eq!(meta.diffs, vec![fd(Some("a\nx"), "a\nx", (1, 2, 1, 2))]);
        assert_eq!(
            meta.patch.as_deref(),
            Some(
                "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n a\n-x\n\\ No newline at end of file\n+x\n"
            )
        );
        let meta = assert_replays("x\n", "x");
        assert_eq!(meta.diffs, vec![fd(Some("x"), "x", (1, 1, 1, 1))]);
    }

    #[test]
    fn unterminated_context_line_keeps_its_marker() {
        let meta = assert_replays("a\nb\nc", "A\nb\nc");
        assert_eq!(meta.diffs, vec![fd(Some("a\nb\nc"), "A\nb\nc", (1, 3, 1, 3))]);
        assert_eq!(
            meta.patch.as_deref(),
            Some(
                "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n\\ No newline at end of file\n"
            )
        );
    }

    #[test]
    fn insertion_and_deletion_use_the_line_before_as_empty_start() {
        let before: String = (1..=10).map(|i| format!("{i}\n")).collect();
        let inserted = before.replace("5\n", "5\nnew\n");
        let meta = assert_replays(&before, &inserted);
        assert_eq!(
            meta.diffs,
            vec![fd(Some("3\n4\n5\n6\n7\n8"), "3\n4\n5\nnew\n6\n7\n8", (3, 6, 3, 7))]
        );
        // A pure insertion at the top of a file with no context on the old side.
        let meta = assert_replays("", "a\nb");
        assert_eq!(meta.diffs, vec![fd(None, "a\nb", (0, 0, 1, 2))]);
    }

    #[test]
    fn crlf_unicode_and_tabs_round_trip() {
        let before = "héllo\r\n\tworld ✓\r\nend\r\n";
        let after = "héllo\r\n\tWORLD ✓\r\nend\r\nnew 🚀";
        let meta = assert_replays(before, after);
        assert_eq!(
            meta.diffs,
            vec![fd(
                Some("héllo\r\n\tworld ✓\r\nend\r"),
                "héllo\r\n\tWORLD ✓\r\nend\r\nnew 🚀",
                (1, 3, 1, 4)
            )]
        );
    }

    #[test]
    fn argument_path_is_used_verbatim() {
        let meta = diff_meta("src/../x y.rs", "a\n", "b\n");
        assert_eq!(meta.diffs[0].path, "src/../x y.rs");
        let patch = meta.patch.unwrap_or_default();
        assert!(patch.starts_with("--- a/src/../x y.rs\n+++ b/src/../x y.rs\n@@ "), "{patch}");
    }

    #[test]
    fn card_parser_reads_the_patch() {
        let meta = diff_meta("a.txt", "a\nb\nc", "a\nB\nc\n");
        let hunks = parse_patch("a.txt", meta.patch.as_deref().unwrap_or_default()).unwrap();
        assert_eq!(hunks.len(), 1);
        let lines: Vec<(&str, &str)> =
            hunks[0].lines.iter().map(|l| (l.op.as_str(), l.text.as_str())).collect();
        assert_eq!(lines, vec![(" ", "a"), ("-", "b"), ("-", "c"), ("+", "B"), ("+", "c")]);
    }

    /// One line of generated text: a small alphabet so lines repeat, plus `\r`, tabs and unicode.
    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => prop::sample::select(vec!["a", "b", "c", ""]).prop_map(str::to_owned),
            1 => prop::sample::select(vec!["a\r", "\r", "\tb c", "é✓", "🚀x", "\\", "-", "+ ", "@@"])
                .prop_map(str::to_owned),
        ]
    }

    fn text_of(lines: &[String], final_newline: bool) -> String {
        let mut text = lines.join("\n");
        if final_newline {
            text.push('\n');
        }
        text
    }

    /// A before/after pair: `after` is `before` with a few line edits, so diffs have long equal
    /// runs (several hunks) as well as unrelated content when the edits are dense.
    fn text_pair() -> impl Strategy<Value = (String, String)> {
        let edits = prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, line()), 0..6);
        (prop::collection::vec(line(), 0..40), any::<bool>(), edits, any::<bool>()).prop_map(
            |(lines, before_nl, edits, after_nl)| {
                let before = text_of(&lines, before_nl);
                let mut new_lines = lines;
                for (at, kind, text) in edits {
                    let i = at.index(new_lines.len() + 1);
                    match kind {
                        0 => new_lines.insert(i, text),
                        1 if i < new_lines.len() => new_lines[i] = text,
                        _ if i < new_lines.len() => {
                            new_lines.remove(i);
                        }
                        _ => new_lines.push(text),
                    }
                }
                (before, text_of(&new_lines, after_nl))
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn patch_replays_and_matches_file_diffs((before, after) in text_pair()) {
            let meta = diff_meta("p/a.txt", &before, &after);
            if before == after {
                prop_assert!(meta.diffs.is_empty() && meta.patch.is_none());
                return Ok(());
            }
            let patch = meta.patch.clone().unwrap_or_default();
            prop_assert_eq!(replay(&before, &patch), after.clone(), "patch:\n{}", patch);

            let hunks = parse_patch("p/a.txt", &patch);
            prop_assert!(hunks.is_some(), "card parser rejected:\n{}", patch);
            let hunks = hunks.unwrap_or_default();
            prop_assert_eq!(hunks.len(), meta.diffs.len());
            let mut prev_old_end = 0;
            for (hunk, diff) in hunks.iter().zip(&meta.diffs) {
                prop_assert_eq!(&diff.path, "p/a.txt");
                prop_assert_eq!(
                    (hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines),
                    (diff.old_start, diff.old_lines, diff.new_start, diff.new_lines)
                );
                let old: Vec<&str> =
                    hunk.lines.iter().filter(|l| l.op != "+").map(|l| l.text.as_str()).collect();
                let new: Vec<&str> =
                    hunk.lines.iter().filter(|l| l.op != "-").map(|l| l.text.as_str()).collect();
                prop_assert_eq!(old.len() as u64, diff.old_lines);
                prop_assert_eq!(new.len() as u64, diff.new_lines);
                let old_text = if old.is_empty() { None } else { Some(old.join("\n")) };
                prop_assert_eq!(&old_text, &diff.old_text);
                prop_assert_eq!(new.join("\n"), diff.new_text.clone());
                // Hunks are ordered and separated by more than 2 × CONTEXT equal lines.
                let old_begin = if diff.old_lines == 0 { diff.old_start } else { diff.old_start - 1 };
                if prev_old_end > 0 {
                    prop_assert!(old_begin > prev_old_end, "hunks overlap or touch");
                }
                prev_old_end = old_begin + diff.old_lines;
                // Every hunk holds a change; context is at most CONTEXT lines at each edge.
                prop_assert!(hunk.lines.iter().any(|l| l.op != " "));
                let lead = hunk.lines.iter().take_while(|l| l.op == " ").count();
                let trail = hunk.lines.iter().rev().take_while(|l| l.op == " ").count();
                prop_assert!(lead <= CONTEXT && trail <= CONTEXT);
            }
        }
    }
}
