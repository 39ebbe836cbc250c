//! Reviews on the terminal: a person running `toolhost session apply` (or any call whose changes
//! are reviewed) at a terminal sees each hunk on stderr and answers on stdin, hunk by hunk, the
//! way `git add -p` asks.

use std::io::{BufRead, Write};
use toolhost_contract::{BoxFuture, CancellationToken};
use toolhost_host::review::Reviewer;
use toolhost_protocol::lsp_ext::{ReviewParams, ReviewResult};

/// Asks on the controlling terminal (stderr and stdin).
pub struct TerminalReviewer;

/// What the person typed for one hunk.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    Yes,
    No,
    /// This hunk and every later one of the file.
    All,
    /// No further hunk of the file.
    Quit,
}

fn parse(line: &str) -> Option<Choice> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Choice::Yes),
        "n" | "no" | "" => Some(Choice::No),
        "a" | "all" => Some(Choice::All),
        "q" | "quit" => Some(Choice::Quit),
        _ => None,
    }
}

fn ask(params: &ReviewParams) -> Result<ReviewResult, String> {
    let mut accepted = Vec::new();
    let mut stderr = std::io::stderr().lock();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let total = params.hunks.len();
    let _ = writeln!(stderr, "\n{} — {}", params.title, params.path);
    let mut take_rest = false;
    for (index, hunk) in params.hunks.iter().enumerate() {
        if take_rest {
            accepted.push(index);
            continue;
        }
        let _ = writeln!(stderr, "{}", hunk.header);
        for line in &hunk.lines {
            // `op` is the unified diff's own mark: "+", "-" or " ".
            let _ = writeln!(stderr, "{}{}", line.op, line.text);
        }
        loop {
            let _ = write!(stderr, "({}/{total}) apply this hunk [y,n,a,q]? ", index + 1);
            let _ = stderr.flush();
            let Some(Ok(answer)) = lines.next() else {
                return Err("the terminal closed".to_owned());
            };
            match parse(&answer) {
                Some(Choice::Yes) => accepted.push(index),
                Some(Choice::No) => {}
                Some(Choice::All) => {
                    accepted.push(index);
                    take_rest = true;
                }
                Some(Choice::Quit) => return Ok(ReviewResult { accepted, comment: None }),
                None => {
                    let _ = writeln!(
                        stderr,
                        "y: apply, n: keep as is, a: this and the rest, q: no more"
                    );
                    continue;
                }
            }
            break;
        }
    }
    Ok(ReviewResult { accepted, comment: None })
}

impl Reviewer for TerminalReviewer {
    fn review(
        &self,
        params: ReviewParams,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<ReviewResult, String>> {
        Box::pin(async move {
            let asking = tokio::task::spawn_blocking(move || ask(&params));
            tokio::select! {
                answer = asking => answer.map_err(|e| e.to_string())?,
                () = stop.cancelled() => Err("the review was withdrawn".to_owned()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_git_add_p_reads_them() {
        assert_eq!(parse("y"), Some(Choice::Yes));
        assert_eq!(parse(" N "), Some(Choice::No));
        assert_eq!(parse(""), Some(Choice::No));
        assert_eq!(parse("a"), Some(Choice::All));
        assert_eq!(parse("q"), Some(Choice::Quit));
        assert_eq!(parse("maybe"), None);
    }
}
