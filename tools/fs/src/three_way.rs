//! Three-way merge of texts that changed in two places since a common ancestor, kept apart into
//! what merges cleanly and what conflicts, so a person can take the clean hunks one by one and see
//! every conflict with its three sides instead of finding markers in a file.
//!
//! `base` is the common ancestor, `ours` the text here now, `theirs` the other side's text. The
//! [`Merge::proposed`] text is `ours` with every region only `theirs` changed taken from `theirs`;
//! a region both sides changed differently stays as `ours` and is listed in
//! [`Merge::conflicts`] — never resolved silently.

use serde::{Deserialize, Serialize};
use similar::{MergeResolution, TextMerge};

/// One region both sides changed differently.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    /// First line (1-based) of the region in the text here (for an empty region: the line it
    /// comes after, 0 at the start).
    pub line: usize,
    /// How many lines the region spans in the text here.
    pub lines: usize,
    /// The region as it is here.
    pub ours: String,
    /// The region in the common ancestor.
    pub base: String,
    /// The region as the other side has it.
    pub theirs: String,
}

/// What merging `theirs` into `ours` gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merge {
    /// `ours` with the regions only `theirs` changed taken from it.
    pub proposed: String,
    pub conflicts: Vec<Conflict>,
}

/// The lines `range` of one side, joined.
fn join<'a>(range: std::ops::Range<usize>, line: impl Fn(usize) -> Option<&'a str>) -> String {
    range.filter_map(line).collect()
}

/// Merges line by line.
pub fn merge(base: &str, ours: &str, theirs: &str) -> Merge {
    let merged = TextMerge::from_lines(base, ours, theirs);
    let mut proposed = String::with_capacity(ours.len().max(theirs.len()));
    let mut conflicts = Vec::new();
    for region in merged.regions() {
        let ours_range = region.ours_range();
        let ours_text = join(ours_range.clone(), |i| merged.ours_line(i));
        match region.resolution() {
            MergeResolution::Theirs => {
                proposed.push_str(&join(region.theirs_range(), |i| merged.theirs_line(i)));
            }
            MergeResolution::Conflict => {
                conflicts.push(Conflict {
                    line: if ours_range.is_empty() {
                        ours_range.start
                    } else {
                        ours_range.start + 1
                    },
                    lines: ours_range.len(),
                    base: join(region.base_range(), |i| merged.base_line(i)),
                    theirs: join(region.theirs_range(), |i| merged.theirs_line(i)),
                    ours: ours_text.clone(),
                });
                proposed.push_str(&ours_text);
            }
            _ => proposed.push_str(&ours_text),
        }
    }
    Merge { proposed, conflicts }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_only_the_other_side_made_is_taken() {
        let m = merge("a\nb\nc\n", "a\nb\nc\nd\n", "A\nb\nc\n");
        assert_eq!(m.proposed, "A\nb\nc\nd\n");
        assert!(m.conflicts.is_empty());
    }

    #[test]
    fn both_sides_changing_one_line_differently_is_a_conflict_that_keeps_ours() {
        let m = merge("a\nb\nc\n", "a\nB1\nc\n", "a\nB2\nc\nz\n");
        assert_eq!(m.proposed, "a\nB1\nc\nz\n");
        assert_eq!(
            m.conflicts,
            vec![Conflict {
                line: 2,
                lines: 1,
                ours: "B1\n".into(),
                base: "b\n".into(),
                theirs: "B2\n".into()
            }]
        );
    }

    #[test]
    fn the_same_change_on_both_sides_merges_cleanly() {
        let m = merge("a\n", "b\n", "b\n");
        assert_eq!(m.proposed, "b\n");
        assert!(m.conflicts.is_empty());
    }

    #[test]
    fn texts_without_a_final_newline_keep_their_ends() {
        let m = merge("a\nb", "a\nb", "a\nc");
        assert_eq!(m.proposed, "a\nc");
    }
}
