//! The server's log (`toolhost serve`, `mcp`, `acp`): stderr (editors show it in their output
//! panel), or appended to the file `TOOLHOST_LOG_FILE` names (test runs keep it and show it only
//! on failure); `TOOLHOST_LOG` takes an env-filter directive.

use std::path::PathBuf;

/// Starts the log with `default_filter` unless `TOOLHOST_LOG` says otherwise.
pub fn init(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_target(false);
    let file = std::env::var_os("TOOLHOST_LOG_FILE").filter(|p| !p.is_empty()).and_then(|path| {
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(file) => Some(file),
            Err(err) => {
                eprintln!(
                    "toolhost: cannot open the log file {}: {err}; logging to stderr",
                    PathBuf::from(&path).display()
                );
                None
            }
        }
    });
    let _ = match file {
        Some(file) => builder.with_writer(std::sync::Mutex::new(file)).try_init(),
        None => builder.with_writer(std::io::stderr).try_init(),
    };
}
