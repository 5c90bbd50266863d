//! The `fleet-dispatch` binary: answer a shell's completion request, or
//! parse, dispatch, print an error once.
//!
//! Every failure arrives as the crate's own `Error`, which carries its protocol
//! code, so the exit status comes straight from it. A closed stdout (`| head`)
//! never reaches here: `out::line` ends the program quietly with status 0.

use std::process::ExitCode;

fn main() -> ExitCode {
    fleet_dispatch::front::complete::respond();
    forget_empty_variables();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match fleet_dispatch::front::cli::parse(&args) {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(fleet_dispatch::front::cli::refuse(e, &args)),
    };
    let json = cli.global.json;
    match fleet_dispatch::front::cmd::dispatch(cli) {
        Ok(status) => ExitCode::from(status),
        Err(err) => {
            err.report(json);
            ExitCode::from(fleet_dispatch::base::exit::of(err.code))
        }
    }
}

/// An empty `FLEET_DISPATCH_*` variable (`export FLEET_DISPATCH_ROOT=$UNSET`)
/// means unset, as an empty `NO_COLOR` does, rather than an empty value the
/// flag it stands for would refuse under a flag's name nobody typed.
fn forget_empty_variables() {
    let empty: Vec<std::ffi::OsString> = std::env::vars_os()
        .filter(|(k, v)| k.to_string_lossy().starts_with("FLEET_DISPATCH_") && v.is_empty())
        .map(|(k, _)| k)
        .collect();
    for k in empty {
        // SAFETY: at the start of `main`, before any thread is started.
        unsafe { std::env::remove_var(k) };
    }
}
