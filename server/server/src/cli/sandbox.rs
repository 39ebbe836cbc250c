//! `toolhost sandbox-exec` (internal, the shell sandbox's launcher): applies the confinement and
//! replaces this process with the command. Exit 126 (with `toolhost sandbox: …` on stderr) when
//! the confinement cannot be applied, so the command never runs unconfined by accident; 127 when
//! the command cannot be executed. Runs before any runtime starts.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long = "write", value_name = "DIR")]
    write: Vec<PathBuf>,
    #[arg(long)]
    probe: bool,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

pub fn run(args: &Args) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let enforcement = match toolhost_tools_shell::sandbox::confine_writes(&args.write) {
        Ok(enforcement) => enforcement,
        Err(err) => {
            eprintln!("toolhost sandbox: {err}");
            return ExitCode::from(126);
        }
    };
    if args.probe {
        println!("{}", enforcement.as_str());
        return ExitCode::SUCCESS;
    }
    let Some((program, rest)) = args.command.split_first() else {
        eprintln!("toolhost sandbox: no command to run");
        return ExitCode::from(126);
    };
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!("toolhost sandbox: cannot run {}: {err}", program.to_string_lossy());
    ExitCode::from(127)
}
