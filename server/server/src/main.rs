//! The `toolhost` binary: a thin shell over `toolhost_server::cli`.

fn main() -> std::process::ExitCode {
    toolhost_server::cli::main()
}
