//! The `toolhost` binary: a thin shell over `toolhost_server::cli`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    toolhost_server::cli::main()
}
