//! The `fleet-dispatch` binary: parse, dispatch, print an error once.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use fleet_dispatch::cli::Cli;
use fleet_dispatch::error::{Code, Error};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.global.json;
    match run(cli) {
        Ok(status) => ExitCode::from(status),
        Err(err) => {
            let err = match err.downcast::<Error>() {
                Ok(e) => e,
                Err(other) => {
                    // A closed stdout (`| head`) is not an error worth a word.
                    if other
                        .downcast_ref::<std::io::Error>()
                        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
                    {
                        return ExitCode::SUCCESS;
                    }
                    Error::new(Code::Internal, format!("{other:#}"))
                }
            };
            if json {
                let _ = writeln!(std::io::stdout(), "{}", err.to_json());
            } else {
                let _ = writeln!(std::io::stderr(), "fleet-dispatch: error: {err}");
            }
            ExitCode::from(fleet_dispatch::exit::of(err.code))
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    Ok(fleet_dispatch::cmd::dispatch(cli)?)
}
