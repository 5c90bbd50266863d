//! `report`: the fleet as one self-contained HTML page, or with `--json`
//! the data it is drawn from. The model is [`crate::places::report`]'s and the
//! page [`crate::view::report`]'s; this file reads the flags, picks the
//! targets and puts the page where `--out` says.

use std::path::Path;

use time::OffsetDateTime;

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::ReportArgs;
use crate::front::config::Context;
use crate::places::report::{self, Window};
use crate::store::fsops::{self, Flush};
use crate::view;

/// Runs `report`.
pub fn run(ctx: &Context, args: ReportArgs) -> Result<u8> {
    let now = crate::base::clock::now();
    let since = args.since.as_deref().map(|s| since(s, now)).transpose()?;
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let targets = ctx.targets(&root, &args.target)?;
    let fleet = report::gather(&targets, &key, Window { since, now });
    if ctx.json() {
        crate::base::out::json(&serde_json::to_value(&fleet).unwrap_or_default());
        return Ok(exit::SUCCESS);
    }
    let page = view::report::html(&fleet);
    if args.out == Path::new("-") {
        write_stdout(page.as_bytes());
        return Ok(exit::SUCCESS);
    }
    fsops::replace(&args.out, page.as_bytes(), Flush::Data)?;
    let jobs: usize = fleet.lanes.iter().map(|l| l.finished).sum();
    crate::base::out::line(&format!(
        "wrote {} ({} machines, {jobs} jobs, {} unverified files, {} KiB)",
        args.out.display(),
        fleet.lanes.len(),
        fleet.unverified_files,
        page.len().div_ceil(1024)
    ));
    Ok(exit::SUCCESS)
}

/// The span's start `--since` names: a duration back from `now`, or a time.
fn since(text: &str, now: OffsetDateTime) -> Result<OffsetDateTime> {
    let bad = || {
        Error::validation(format!(
            "--since {text}: neither a duration (24h, 7d) nor an RFC 3339 time"
        ))
        .hint("write `--since 24h` or `--since 2026-12-01T00:00:00Z`")
    };
    let at = match crate::base::clock::parse(text) {
        Some(t) => t,
        None => {
            let back = crate::base::clock::parse_duration(text).map_err(|_| bad())?;
            time::Duration::try_from(back)
                .ok()
                .and_then(|d| now.checked_sub(d))
                .ok_or_else(bad)?
        }
    };
    if at > now {
        return Err(Error::validation(format!(
            "--since {text}: that is in the future"
        )));
    }
    Ok(at)
}

/// The page on stdout, whole: it is HTML, not lines for a terminal (its
/// folder texts are already entities). A reader gone ends quietly.
fn write_stdout(bytes: &[u8]) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(exit::SUCCESS));
    }
}
