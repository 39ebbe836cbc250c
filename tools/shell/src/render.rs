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

/// A number as ECMAScript's `Number.prototype.toString` writes it, the form a model and the
/// JSON it sent use: `1500.5`, `120000` (no `.0`), `0.000001`, `1e-7`, `1e+21`, `-1.5`.
pub fn js_number(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value == 0.0 {
        return "0".to_owned();
    }
    if value < 0.0 {
        return format!("-{}", js_number(-value));
    }
    if value.is_infinite() {
        return "Infinity".to_owned();
    }
    // Rust's shortest round-trip digits, `d.ddde<exp>`, re-laid out by the ECMAScript rules.
    let sci = format!("{value:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        match digits.split_at(1) {
            (first, "") => format!("{first}e{sign}{}", e.abs()),
            (first, rest) => format!("{first}.{rest}e{sign}{}", e.abs()),
        }
    }
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
            timeout_ms: crate::bash::Millis(120_000.0),
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
    fn numbers_are_written_as_a_model_writes_them() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (-1.5, "-1.5"),
            (1500.5, "1500.5"),
            (120_000.0, "120000"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (-2.5e300, "-2.5e+300"),
            (0.1, "0.1"),
        ];
        for (value, text) in cases {
            assert_eq!(js_number(value), text, "{value}");
        }
    }

    #[test]
    fn a_fractional_timeout_is_shown_as_given() {
        let mut out = fg("", "", None);
        out.timed_out = true;
        out.timeout_ms = crate::bash::Millis(1500.5);
        out.signal = Some("SIGTERM".into());
        assert_eq!(
            bash(&BashOutput::Foreground(out)),
            "(no output)\n[timed out after 1500.5ms]\n[killed by signal: SIGTERM]"
        );
    }

    #[test]
    fn timeout_then_signal_and_truncation_notice() {
        let mut out = fg("", "", None);
        out.timed_out = true;
        out.timeout_ms = crate::bash::Millis(1000.0);
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
