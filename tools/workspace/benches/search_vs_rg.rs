//! Wall-clock comparison of the in-process glob/grep with the equivalent `rg` invocations.
//!
//! Run with `cargo bench -p toolhost-workspace --bench search_vs_rg` (a plain `main`, no harness).
//! The tree defaults to cargo's unpacked registry sources (`$CARGO_HOME/registry/src`); set
//! `TOOLHOST_BENCH_TREE` to another directory. Each case reports the best of `RUNS` runs, ours and
//! rg interleaved so that cache and frequency drift hit both equally. rg's time includes what the
//! spawning `rg` pays: the process spawn, `--json` serialization and reading the pipe.

// Cargo's auto-discovery builds this file with the libtest harness until the `[[bench]]`
// entry (harness = false) is present; `main` is unused in that build only.
#![cfg_attr(test, allow(dead_code))]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use toolhost_workspace::search::{GlobOptions, GrepOptions, VCS_DIRS, glob, grep};

const RUNS: usize = 5;
const NEVER: &(dyn Fn() -> bool + Sync) = &|| false;
const GREP_PATTERNS: &[&str] =
    &[r"fn\s+\w+_test", r"unsafe impl", r"TODO|FIXME", r"impl\s+Drop\s+for", "pub fn"];
const GLOB_PATTERNS: &[&str] = &["*.rs", "**/tests/**/*.rs", "Cargo.toml"];

fn tree() -> PathBuf {
    if let Some(dir) = std::env::var_os("TOOLHOST_BENCH_TREE") {
        return PathBuf::from(dir);
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    cargo_home.map(|home| home.join("registry").join("src")).unwrap_or_default()
}

/// Best-of-`RUNS` wall time of each closure, interleaved, plus the result size of each.
fn race(mut ours: impl FnMut() -> usize, mut rg: impl FnMut() -> usize) -> [(Duration, usize); 2] {
    // One untimed round warms the page cache and the dentry cache for both.
    let mut best = [(Duration::MAX, ours()), (Duration::MAX, rg())];
    for _ in 0..RUNS {
        let start = Instant::now();
        best[0].1 = ours();
        best[0].0 = best[0].0.min(start.elapsed());
        let start = Instant::now();
        best[1].1 = rg();
        best[1].0 = best[1].0.min(start.elapsed());
    }
    best
}

fn rg_count(dir: &Path, args: &[String], count: impl Fn(&[u8]) -> usize) -> usize {
    let out = Command::new("rg").arg("--no-config").args(args).current_dir(dir).output();
    match out {
        Ok(out) if matches!(out.status.code(), Some(0 | 1)) => count(&out.stdout),
        Ok(out) => {
            eprintln!("rg {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
            usize::MAX
        }
        Err(err) => {
            eprintln!("cannot run rg (install it with `apt-get install -y ripgrep`): {err}");
            std::process::exit(2);
        }
    }
}

fn count_json_matches(stdout: &[u8]) -> usize {
    stdout.split(|&b| b == b'\n').filter(|line| line.starts_with(br#"{"type":"match""#)).count()
}

fn count_lines(stdout: &[u8]) -> usize {
    stdout.split(|&b| b == b'\n').filter(|line| !line.is_empty()).count()
}

fn row(kind: &str, pattern: &str, [(ours, n_ours), (rg, n_rg)]: [(Duration, usize); 2]) -> f64 {
    let ratio = ours.as_secs_f64() / rg.as_secs_f64();
    let agree = if n_ours == n_rg { "same" } else { "DIFFERENT" };
    println!(
        "{kind:<5} {pattern:<24} {:>9.1} {:>9.1} {ratio:>7.2}x {n_ours:>9} {n_rg:>9} {agree}",
        ours.as_secs_f64() * 1e3,
        rg.as_secs_f64() * 1e3,
    );
    ratio
}

fn main() {
    let dir = tree();
    if !dir.is_dir() {
        eprintln!("benchmark tree {} is not a directory (set TOOLHOST_BENCH_TREE)", dir.display());
        std::process::exit(2);
    }
    println!("tree: {} (best of {RUNS} runs, times in ms)", dir.display());
    println!(
        "{:<5} {:<24} {:>9} {:>9} {:>8} {:>9} {:>9}",
        "tool", "pattern", "ours", "rg", "ours/rg", "n ours", "n rg"
    );
    let mut worst = [0.0f64, 0.0f64];
    for pattern in GREP_PATTERNS {
        let ours = || match grep(&GrepOptions::new(&dir, &dir, pattern, None, NEVER)) {
            Ok(matches) => matches.len(),
            Err(err) => panic!("grep {pattern}: {err}"),
        };
        let args = ["--json".to_owned(), format!("--regexp={pattern}")];
        let rg = || rg_count(&dir, &args, count_json_matches);
        worst[0] = worst[0].max(row("grep", pattern, race(ours, rg)));
    }
    for pattern in GLOB_PATTERNS {
        let ours = || match glob(&GlobOptions::new(&dir, &dir, pattern, NEVER)) {
            Ok(paths) => paths.len(),
            Err(err) => panic!("glob {pattern}: {err}"),
        };
        let mut args = vec![
            "--files".to_owned(),
            format!("--glob={pattern}"),
            "--sort=modified".to_owned(),
            "--no-ignore".to_owned(),
            "--hidden".to_owned(),
        ];
        for vcs in VCS_DIRS {
            args.push(format!("--glob=!**/{vcs}"));
            args.push(format!("--glob=!**/{vcs}/**"));
        }
        let rg = || rg_count(&dir, &args, count_lines);
        worst[1] = worst[1].max(row("glob", pattern, race(ours, rg)));
    }
    println!(
        "worst ratio: grep {:.2}x (target <= 1.15x), glob {:.2}x (target <= 1.20x)",
        worst[0], worst[1]
    );
}
