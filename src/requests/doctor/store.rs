//! `doctor` on an object-store root (`s3://BUCKET[/PREFIX]`): where the
//! store is, whether credentials were found (never what they are), whether
//! it answers a listing of the prefix, and the conditional-write probe
//! ([`objstore::probe`]). A store that fails the probe is not a warning but
//! a refusal: the `CONFIG` error names its answer, as a listener's start
//! will.

use super::{Check, Report};
use crate::base::error::Result;
use crate::store::objstore::{self, Answer, Client, S3Root, Settings};

/// The checks of the store at the root `text`, with the settings `settings`
/// gives; `Err` when the root or the settings are invalid or the store
/// fails the probe. `config` lines say where the settings came from.
pub fn examine_store(
    text: &str,
    settings: &dyn Fn() -> Result<Settings>,
    config: &[String],
) -> Result<Report> {
    let root = &S3Root::parse(text)?;
    let settings = &settings()?;
    let client = Client::new(settings, &root.bucket)?;
    let mut checks = vec![Check::ok(
        "store",
        format!(
            "{root} at {} (region {}, {} URLs)",
            settings.endpoint,
            settings.region,
            if settings.path_style {
                "path-style"
            } else {
                "virtual-host"
            }
        ),
    )];
    checks.push(match &settings.creds {
        Some(c) => Check::ok("credentials", format!("credentials from {}", c.from)),
        None => Check::warn(
            "credentials",
            "no credentials found: requests go unsigned",
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE for a profile in ~/.aws/credentials",
        ),
    });
    for line in config {
        checks.push(Check::ok("config", line.clone()));
    }
    let reach = client.list(&root.prefix, None, 1);
    let reached = reach.is_ok();
    checks.push(match reach {
        Ok(_) => Check::ok(
            "reach",
            format!("the store answered a listing of {root}"),
        ),
        Err(a) => Check::warn(
            "reach",
            format!("a listing of {root} got {}", a.describe()),
            match a {
                Answer::Denied(_) => "the bucket policy must allow s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on the prefix; see docs/object-store.md",
                Answer::NotFound => "create the bucket, or fix the bucket name in the root",
                _ => "check the endpoint and that the store is running",
            },
        ),
    });
    checks.push(if reached {
        let p = objstore::probe(&client, root)?;
        Check::ok(
            "probe",
            format!(
                "a create-only PUT of {} was answered {} and a second one 412: the store honours conditional writes",
                p.key, p.first
            ),
        )
    } else {
        Check::warn(
            "probe",
            "the conditional-write probe did not run: the store did not answer",
            "fix the reach check first",
        )
    });
    Ok(Report::new(checks, None))
}
