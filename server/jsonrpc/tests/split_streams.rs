//! Property tests of both decoders over arbitrary byte streams split at arbitrary points:
//! no panics, and every complete frame comes out exactly once, in order, whatever the split.
//! `PROPTEST_CASES` raises the case count (the defaults below run in a few seconds).
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use toolhost_jsonrpc::content_length::{self, ContentLengthDecoder, FrameLimits};
use toolhost_jsonrpc::lines::{self, LineDecoder, LineLimits};
use toolhost_jsonrpc::{Decode, Frame, FrameError, LimitPolicy};

/// Feeds `input` cut at `cuts` (sorted, deduplicated offsets) and collects everything.
fn run(decoder: &mut dyn Decode, input: &[u8], cuts: &[usize]) -> (Vec<Frame>, Option<FrameError>) {
    let mut frames = Vec::new();
    let mut error = None;
    let mut start = 0;
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    points.sort_unstable();
    points.push(input.len());
    let mut drain = |decoder: &mut dyn Decode, frames: &mut Vec<Frame>| {
        while let Some(item) = decoder.pop() {
            match item {
                Ok(frame) => {
                    assert!(error.is_none(), "a frame after the stream failed");
                    frames.push(frame);
                }
                Err(e) => {
                    assert!(error.is_none(), "two errors");
                    error = Some(e);
                }
            }
        }
    };
    for point in points {
        decoder.push(&input[start..point]);
        start = point;
        drain(decoder, &mut frames);
    }
    let end = decoder.finish();
    drain(decoder, &mut frames);
    if let Err(e) = end {
        assert!(error.is_none(), "an end error after a stream error");
        error = Some(e);
    }
    (frames, error)
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        "[ -~]{0,200}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 200..3000),
    ]
}

/// A frame with optional extra headers and `\n` or `\r\n` line endings.
fn framed(body: &[u8], extra: bool, lf_only: bool) -> Vec<u8> {
    let eol = if lf_only { "\n" } else { "\r\n" };
    let mut out = Vec::new();
    if extra {
        out.extend(format!("Content-Type: application/vscode-jsonrpc; charset=utf-8{eol}").bytes());
    }
    out.extend(format!("Content-Length: {}{eol}{eol}", body.len()).bytes());
    out.extend_from_slice(body);
    out
}

/// 2,000 cases per property by default; `PROPTEST_CASES` raises it.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn content_length_frames_come_out_once_in_order(
        bodies in prop::collection::vec((body(), any::<bool>(), any::<bool>()), 0..12),
        cuts in prop::collection::vec(any::<usize>(), 0..40),
        max_body in 100usize..2500,
        drain in any::<bool>(),
    ) {
        let mut input = Vec::new();
        for (b, extra, lf) in &bodies {
            input.extend(framed(b, *extra, *lf));
        }
        let policy = if drain { LimitPolicy::Drain } else { LimitPolicy::Fail };
        let mut decoder = ContentLengthDecoder::new(FrameLimits::server(max_body), policy);
        let (frames, error) = run(&mut decoder, &input, &cuts);
        let mut expected = Vec::new();
        let mut expected_error = None;
        for (b, _, _) in &bodies {
            if b.len() <= max_body {
                expected.push(Frame::Body(b.clone()));
            } else if drain {
                expected.push(Frame::Oversized(b.len()));
            } else {
                expected_error = Some(FrameError::BodyTooLarge { len: b.len(), max: max_body });
                break;
            }
        }
        prop_assert_eq!(frames, expected);
        prop_assert_eq!(error, expected_error);
    }

    #[test]
    fn content_length_survives_any_bytes(
        input in prop::collection::vec(any::<u8>(), 0..4000),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        drain in any::<bool>(),
    ) {
        let policy = if drain { LimitPolicy::Drain } else { LimitPolicy::Fail };
        let mut decoder = ContentLengthDecoder::new(FrameLimits::server(1000), policy);
        let (frames, _) = run(&mut decoder, &input, &cuts);
        for frame in frames {
            if let Frame::Body(b) = frame {
                prop_assert!(b.len() <= 1000);
            }
        }
    }

    #[test]
    fn the_split_does_not_change_the_outcome(
        input in prop::collection::vec(
            prop_oneof![Just(b"Content-Length: 3\r\n\r\nabc".to_vec()),
                        Just(b"\r\n".to_vec()), Just(b"Content-Length: 5000\r\n\r\n".to_vec()),
                        prop::collection::vec(any::<u8>(), 0..30)], 0..10)
            .prop_map(|parts| parts.concat()),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
    ) {
        let mut whole = ContentLengthDecoder::new(FrameLimits::server(1000), LimitPolicy::Drain);
        let mut split = ContentLengthDecoder::new(FrameLimits::server(1000), LimitPolicy::Drain);
        prop_assert_eq!(run(&mut whole, &input, &[]), run(&mut split, &input, &cuts));
        let mut whole = LineDecoder::new(LineLimits { max_line: 20 }, LimitPolicy::Drain);
        let mut split = LineDecoder::new(LineLimits { max_line: 20 }, LimitPolicy::Drain);
        prop_assert_eq!(run(&mut whole, &input, &[]), run(&mut split, &input, &cuts));
    }

    #[test]
    fn lines_come_out_once_in_order(
        lines in prop::collection::vec(("[ -~]{0,300}", any::<bool>()), 0..20),
        cuts in prop::collection::vec(any::<usize>(), 0..40),
        max_line in 10usize..250,
        drain in any::<bool>(),
    ) {
        let mut input = Vec::new();
        for (line, crlf) in &lines {
            input.extend_from_slice(line.as_bytes());
            input.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
        }
        let policy = if drain { LimitPolicy::Drain } else { LimitPolicy::Fail };
        let mut decoder = LineDecoder::new(LineLimits { max_line }, policy);
        let (frames, error) = run(&mut decoder, &input, &cuts);
        let mut expected = Vec::new();
        let mut expected_error = None;
        for (line, _) in &lines {
            if line.len() > max_line {
                if drain {
                    expected.push(Frame::Oversized(line.len()));
                    continue;
                }
                expected_error = Some(FrameError::LineTooLong { max: max_line });
                break;
            }
            if !line.trim().is_empty() {
                expected.push(Frame::Body(line.clone().into_bytes()));
            }
        }
        prop_assert_eq!(frames, expected);
        prop_assert_eq!(error, expected_error);
    }
}

#[test]
fn encoders_round_trip() {
    let mut decoder = ContentLengthDecoder::new(FrameLimits::server(100), LimitPolicy::Drain);
    decoder.push(&content_length::encode(b"{\"x\":1}"));
    assert_eq!(decoder.pop(), Some(Ok(Frame::Body(b"{\"x\":1}".to_vec()))));
    let mut decoder = LineDecoder::new(LineLimits { max_line: 100 }, LimitPolicy::Drain);
    decoder.push(&lines::encode(b"{\"x\":1}"));
    assert_eq!(decoder.pop(), Some(Ok(Frame::Body(b"{\"x\":1}".to_vec()))));
}
