//! A command line clap refused, worded as every other error: its exit
//! status, the usage line of the command given, the `--` hint, and the
//! JSON document `--json` asks for.

use clap::CommandFactory;

use super::Cli;

/// Reports a command line clap refused, and returns the exit status: a bad
/// value for a flag (an unknown `--priority`, say) is `VALIDATION_ERROR`
/// like every other bad value; help and version are success; anything
/// else is a command line that cannot be parsed. A program given without
/// the `--` that must come before it gets a hint. With `--json` on the
/// command line the refusal is the JSON error every other error prints
/// (docs/protocol.md §9.2), `VALIDATION_ERROR` whatever clap's reason, so
/// a program reading stdout always gets a document whose code matches the
/// exit status.
pub fn refuse(mut err: clap::Error, args: &[std::ffi::OsString]) -> u8 {
    use clap::error::ErrorKind;
    plain_usage(&mut err, args);
    let kind = err.kind();
    if matches!(
        kind,
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        return crate::base::exit::SUCCESS;
    }
    let hint = forgot_dashes(kind, args).then_some(DASHES_HINT);
    if json_asked(args) {
        let mut e = crate::base::error::Error::validation(named_message(&err, args));
        if let Some(h) = hint {
            e = e.hint(h);
        }
        e.report(true);
        return crate::base::exit::VALIDATION;
    }
    if matches!(
        kind,
        ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::InvalidUtf8
    ) {
        // A bad value is the SPEC's VALIDATION_ERROR, said in its form.
        let mut e = crate::base::error::Error::validation(named_message(&err, args));
        if let Some(h) = hint {
            e = e.hint(h);
        }
        e.report(false);
        return crate::base::exit::VALIDATION;
    }
    let _ = err.print();
    if let Some(h) = hint {
        crate::note!("hint: {h}");
    }
    crate::base::exit::USAGE
}

/// Puts the command's own usage line in `err`. Clap's lists the options
/// given, and counts as given one that its environment variable set, so
/// with `FLEET_DISPATCH_ROOT` exported a refused `result` read
/// `Usage: fleet-dispatch result --target <T> --job-id <ID> --root <DIR>`,
/// as if `--root` were required.
fn plain_usage(err: &mut clap::Error, args: &[std::ffi::OsString]) {
    use clap::error::{ContextKind, ContextValue};
    if err.get(ContextKind::Usage).is_none() {
        return;
    }
    let mut cli = Cli::command();
    cli.build();
    let named = args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .filter_map(|a| a.to_str())
        .find(|a| cli.find_subcommand(a).is_some())
        .map(str::to_string);
    let usage = match named.and_then(|n| cli.find_subcommand_mut(n)) {
        Some(sub) => sub.render_usage(),
        None => cli.render_usage(),
    };
    err.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
}

/// What a command line missing its `--` is told.
const DASHES_HINT: &str = "the program and its arguments come after `--`: fleet-dispatch enqueue --target PC -- PROGRAM [ARG]...";

/// Whether a refused `enqueue` line looks like a program given without `--`.
fn forgot_dashes(kind: clap::error::ErrorKind, args: &[std::ffi::OsString]) -> bool {
    use clap::error::ErrorKind;
    args.iter().any(|a| a == "enqueue")
        && !args.iter().any(|a| a == "--" || a == "--batch")
        && matches!(
            kind,
            ErrorKind::UnknownArgument | ErrorKind::MissingRequiredArgument
        )
}

/// Whether `--json` is among our own arguments: before any `--`, after
/// which the words are the job's.
fn json_asked(args: &[std::ffi::OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// [`clap_message`], naming the `FLEET_DISPATCH_*` variable the bad value
/// came from when the flag itself is not on the command line: clap names
/// only the flag, which the user never typed.
fn named_message(err: &clap::Error, args: &[std::ffi::OsString]) -> String {
    use clap::error::{ContextKind, ContextValue};
    let message = clap_message(err);
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return message;
    };
    let Some(flag) = arg.split_whitespace().next() else {
        return message;
    };
    match given_by_variable(flag, args) {
        Some(var) => format!("{var}: {message}"),
        None => message,
    }
}

/// The `FLEET_DISPATCH_*` variable that gave the option `flag` (`--slots`)
/// its value: set, with the flag itself not on the command line `args`.
fn given_by_variable(flag: &str, args: &[std::ffi::OsString]) -> Option<String> {
    let long = flag.strip_prefix("--")?;
    let typed = args.iter().skip(1).take_while(|a| *a != "--").any(|a| {
        a.to_str().is_some_and(|a| {
            a.strip_prefix("--")
                .is_some_and(|a| a == long || a.starts_with(&format!("{long}=")))
        })
    });
    let var = variable_of(&Cli::command(), long)?;
    (!typed && std::env::var_os(&var).is_some()).then_some(var)
}

/// How a refusal names the option `flag` whose value this process was
/// given: by its variable when that is where the value came from, else by
/// the flag.
pub fn option_name(flag: &str) -> String {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    given_by_variable(flag, &args).unwrap_or_else(|| flag.to_string())
}

/// The environment variable of the option `--long`, anywhere in `cmd`.
fn variable_of(cmd: &clap::Command, long: &str) -> Option<String> {
    cmd.get_arguments()
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_env())
        .map(|v| v.to_string_lossy().into_owned())
        .or_else(|| cmd.get_subcommands().find_map(|c| variable_of(c, long)))
}

/// clap's message on one line, without its `error:` prefix, usage and
/// pointer to `--help`.
fn clap_message(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let text = text.trim_start().strip_prefix("error:").unwrap_or(&text);
    text.split("\n\n")
        .next()
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
