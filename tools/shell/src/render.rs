//! The Native text of the shell tools (docs/tools.md pins every format). Pure functions of the
//! canonical values.

use crate::bash::{BashOutput, ForegroundOutput, StreamOutput};
use crate::jobs::JobSnapshot;

/// A stream's text, with the truncation notice naming its spill file.
fn stream_text(stream: &StreamOutput) -> String {
    let mut text = stream.text.clone();
    if stream.truncated {
        let path = stream.spill_path.as_deref().unwrap_or("(unavailable)");
        text.push_str(&format!("\n[output truncated; full output: {path}]"));
    }
    text
}

/// `bash`: stdout, then `[stderr]` and stderr, then the markers (timeout, signal or exit code).
pub fn bash(output: &BashOutput) -> String {
    match output {
        BashOutput::Background { job_id } => format!("started background job {job_id}"),
        BashOutput::Foreground(fg) => foreground(fg),
    }
}

fn foreground(fg: &ForegroundOutput) -> String {
    let mut body = stream_text(&fg.stdout);
    let stderr = stream_text(&fg.stderr);
    if !stderr.is_empty() {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str("[stderr]\n");
        body.push_str(&stderr);
    }
    if body.is_empty() {
        body.push_str("(no output)");
    }
    let mut markers = Vec::new();
    if let Some(sandbox) = fg.sandbox.as_ref().filter(|s| s.denied) {
        markers.push(format!("[sandbox: file access denied under {} mode]", sandbox.mode));
    }
    if fg.timed_out {
        markers.push(format!("[timed out after {}ms]", fg.timeout_ms));
    }
    if let Some(signal) = &fg.signal {
        markers.push(format!("[killed by signal: {signal}]"));
    } else if let Some(code) = fg.exit_code.filter(|c| *c != 0) {
        markers.push(format!("[exit code: {code}]"));
    }
    if !markers.is_empty() {
        if !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str(&markers.join("\n"));
    }
    body
}

/// `[status: <s>]` or `[status: <s>, <detail>]`.
pub fn status_line(job: &JobSnapshot) -> String {
    match &job.detail {
        Some(detail) => format!("[status: {}, {detail}]", job.status.as_str()),
        None => format!("[status: {}]", job.status.as_str()),
    }
}

/// `job_output`: the new output (or `(no new output)`), then the status line.
pub fn job_output(text: &str, job: &JobSnapshot) -> String {
    let mut out = if text.is_empty() { "(no new output)".to_owned() } else { text.to_owned() };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&status_line(job));
    out
}

/// `job_list`: one line per job, or `(no background jobs)`.
pub fn job_list(jobs: &[JobSnapshot]) -> String {
    if jobs.is_empty() {
        return "(no background jobs)".to_owned();
    }
    jobs.iter()
        .map(|j| format!("{} [{}] {} — {}", j.id, j.kind, j.status.as_str(), j.label))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The notice sent when a background job ends.
pub fn completion_notice(job: &JobSnapshot) -> String {
    format!(
        "background job {} ({}: {}) finished {}. Read its output with job_output.",
        job.id,
        job.kind,
        job.label,
        status_line(job)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(text: &str) -> StreamOutput {
        StreamOutput { text: text.to_owned(), truncated: false, spill_path: None }
    }

    fn fg(stdout: &str, stderr: &str, code: Option<i32>) -> ForegroundOutput {
        ForegroundOutput {
            exit_code: code,
            signal: None,
            timed_out: false,
            aborted: false,
            timeout_ms: 120_000,
            stdout: stream(stdout),
            stderr: stream(stderr),
            sandbox: None,
        }
    }

    #[test]
    fn the_documented_example() {
        let out = BashOutput::Foreground(fg("build ok\n", "warn: x\n", Some(2)));
        assert_eq!(bash(&out), "build ok\n[stderr]\nwarn: x\n[exit code: 2]");
    }

    #[test]
    fn empty_output_and_success() {
        assert_eq!(bash(&BashOutput::Foreground(fg("", "", Some(0)))), "(no output)");
        assert_eq!(bash(&BashOutput::Foreground(fg("hi\n", "", Some(0)))), "hi\n");
        assert_eq!(
            bash(&BashOutput::Foreground(fg("", "", Some(1)))),
            "(no output)\n[exit code: 1]"
        );
        assert_eq!(bash(&BashOutput::Foreground(fg("a", "b", Some(0)))), "a\n[stderr]\nb");
    }

    #[test]
    fn timeout_then_signal_and_truncation_notice() {
        let mut out = fg("", "", None);
        out.timed_out = true;
        out.timeout_ms = 1000;
        out.signal = Some("SIGTERM".into());
        out.stdout = StreamOutput {
            text: "tail".into(),
            truncated: true,
            spill_path: Some("/s/blob".into()),
        };
        assert_eq!(
            bash(&BashOutput::Foreground(out)),
            "tail\n[output truncated; full output: /s/blob]\n[timed out after 1000ms]\n[killed by signal: SIGTERM]"
        );
        let bg = BashOutput::Background { job_id: "bash-3".into() };
        assert_eq!(bash(&bg), "started background job bash-3");
    }
}
