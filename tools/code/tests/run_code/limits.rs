//! Every limit stops a run with its own kind: compute, wall clock, memory, stack, output, calls,
//! and cancellation — with nothing left running.

use crate::fake::Fake;
use crate::support::{PARENT, failed, run_with, until};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use toolhost_contract::CancellationToken;
use toolhost_tools_code::{CodeConfig, FailureKind, run_program};

fn limits(f: impl FnOnce(&mut CodeConfig)) -> CodeConfig {
    let mut config = CodeConfig::default();
    f(&mut config);
    config
}

#[tokio::test]
async fn a_runaway_loop_stops_at_the_compute_limit() {
    let config = limits(|c| c.compute = Duration::from_millis(200));
    let started = Instant::now();
    let err = failed(run_with("while (true) {}", None, &config).await, FailureKind::Timeout);
    assert!(err.contains("200 ms of compute time"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    // A catch cannot keep it going.
    let err = failed(
        run_with("for (;;) { try { while (true) {} } catch (e) {} }", None, &config).await,
        FailureKind::Timeout,
    );
    assert!(err.contains("compute"), "{err}");
}

#[tokio::test]
async fn awaiting_tools_costs_wall_clock_not_compute() {
    let (fake, handle) = Fake::handle();
    let config = limits(|c| {
        c.compute = Duration::from_millis(300);
        c.wall = Duration::from_millis(700);
    });
    let started = Instant::now();
    let err = failed(
        run_with("while (true) await tools.slow({})", Some(handle), &config).await,
        FailureKind::Timeout,
    );
    assert!(err.contains("wall-clock limit of 700 ms"), "{err}");
    assert!(started.elapsed() >= Duration::from_millis(700));
    assert!(fake.started.lock().unwrap().len() > 5);
    assert_eq!(fake.in_flight.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_memory_bomb_stops_at_the_memory_limit() {
    let config = limits(|c| c.memory_bytes = 32 * 1024 * 1024);
    let err = failed(
        run_with("const a = []; while (true) a.push('x'.repeat(100000) + a.length)", None, &config)
            .await,
        FailureKind::Memory,
    );
    assert!(err.contains("memory limit"), "{err}");
    // Catching it does not hide it either way; the next run is fine.
    let out = run_with("return 'fine'", None, &config).await.unwrap();
    assert_eq!(out.result, Some(serde_json::json!("fine")));
}

#[tokio::test]
async fn deep_recursion_stops_at_the_stack_limit() {
    let err = failed(
        run_with("function f(n) { return f(n + 1) + 1 } return f(0)", None, &CodeConfig::default())
            .await,
        FailureKind::Stack,
    );
    assert!(err.contains("stack limit"), "{err}");
}

#[tokio::test]
async fn nested_values_count_against_the_output_budget() {
    let (_fake, handle) = Fake::handle();
    let config = limits(|c| c.output_bytes = 10_000);
    let err = failed(
        run_with("const s = await tools.big({n: 20000}); return s.length", Some(handle), &config)
            .await,
        FailureKind::OutputLimit,
    );
    assert!(err.contains("10000 bytes"), "{err}");
    let err = failed(
        run_with("for (let i = 0; i < 1000; i++) console.log('x'.repeat(100))", None, &config)
            .await,
        FailureKind::OutputLimit,
    );
    assert!(err.contains("Captured output:\nxxx"), "the logs so far are kept");
    failed(run_with("return 'y'.repeat(20000)", None, &config).await, FailureKind::OutputLimit);
}

#[tokio::test]
async fn too_many_calls_stop_at_the_call_limit() {
    let (fake, handle) = Fake::handle();
    let config = limits(|c| c.max_calls = 5);
    let err = failed(
        run_with("for (let i = 0; i < 10; i++) await tools.echo({i})", Some(handle), &config).await,
        FailureKind::CallLimit,
    );
    assert!(err.contains("more than 5 nested calls"), "{err}");
    assert_eq!(fake.started.lock().unwrap().len(), 5);
}

#[tokio::test]
async fn cancellation_stops_the_run_and_every_nested_call() {
    let (fake, handle) = Fake::handle();
    let signal = CancellationToken::new();
    let run = tokio::spawn({
        let signal = signal.clone();
        async move {
            let code = "await Promise.all([tools.wait({}), tools.wait({}), tools.wait({})])";
            run_program(code, Some(handle), PARENT, &CodeConfig::default(), signal, None).await
        }
    });
    until(|| fake.in_flight.load(Ordering::SeqCst) == 3).await;
    signal.cancel();
    let err = failed(run.await.unwrap(), FailureKind::Abort);
    assert!(err.contains("cancelled"), "{err}");
    assert_eq!(fake.in_flight.load(Ordering::SeqCst), 0, "no nested call left running");
    assert_eq!(fake.cancelled.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn cancellation_interrupts_a_busy_program() {
    let signal = CancellationToken::new();
    let run = tokio::spawn({
        let signal = signal.clone();
        async move {
            run_program(
                "console.log('go'); while (true) {}",
                None,
                PARENT,
                &CodeConfig::default(),
                signal,
                None,
            )
            .await
        }
    });
    let started = Instant::now();
    signal.cancel();
    let err = failed(run.await.unwrap(), FailureKind::Abort);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.starts_with("code run failed (abort)"), "{err}");
}
