//! The `fleet-dispatch` binary: answer a shell's completion request, or
//! parse, dispatch, print an error once.
//!
//! Every failure arrives as the crate's own `Error`, which carries its protocol
//! code, so the exit status comes straight from it. A closed stdout (`| head`)
//! never reaches here: `out::line` ends the program quietly with status 0.

use std::process::ExitCode;

fn main() -> ExitCode {
    fleet_dispatch::complete::respond();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match fleet_dispatch::cli::parse(&args) {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(fleet_dispatch::cli::refuse(e, &args)),
    };
    let json = cli.global.json;
    match fleet_dispatch::cmd::dispatch(cli) {
        Ok(status) => ExitCode::from(status),
        Err(err) => {
            err.report(json);
            ExitCode::from(fleet_dispatch::exit::of(err.code))
        }
    }
}
