//! The checks of a machine in `roster` or `both` mode (`--auth`,
//! docs/identities.md): the mode itself, this machine's identity file, the
//! pinned admin key, and the roster's signature, version and expiry, with
//! how long until it expires. [`gather`] reads the facts without writing
//! anything (the versions seen are read, not recorded); [`judge_roster`]
//! judges them.

use std::path::Path;
use std::time::Duration;

use time::OffsetDateTime;

use super::Check;
use crate::base::clock;
use crate::trust::roster::{self, Refusal};
use crate::trust::store::{self, Local, RosterAt};
use crate::trust::{Auth, identity::Identity};

/// A roster expiring sooner than this is worth a warning: the admin has a
/// week to renew it before every listener refuses to start.
pub const EXPIRES_SOON: Duration = Duration::from_secs(7 * 24 * 3600);

/// What the roster checks look at.
#[derive(Clone, Debug)]
pub struct RosterFacts {
    /// The mode.
    pub auth: Auth,
    /// This machine's identity: its name and key id, or why it did not
    /// load (`roster` mode only).
    pub identity: Option<Result<(String, String), String>>,
    /// The pinned admin key, if any, or why it cannot be read.
    pub pin: Result<Option<String>, String>,
    /// The roster: its version and expiry when good, its refusal when not,
    /// or why it could not be read.
    pub roster: Option<Result<(u64, String), String>>,
}

/// Reads the facts for `auth` from the identity file at `identity`, the
/// root `root` and the state directory `state`.
pub fn gather(
    auth: Auth,
    identity: &Path,
    at: Option<&RosterAt>,
    state: Option<&Path>,
) -> RosterFacts {
    let identity = (auth == Auth::Roster).then(|| {
        store::load_identity(identity)
            .map(|id: Identity| {
                let line = id.line();
                (line.name, line.ed25519.key_id())
            })
            .map_err(|e| e.message)
    });
    let local = state.map(Local::new);
    let pin = match &local {
        None => Err("no state directory".to_string()),
        Some(l) => l
            .pin()
            .map(|p| p.map(|k| k.to_string()))
            .map_err(|e| e.message),
    };
    let roster = match (&local, at, &pin) {
        (Some(l), Some(at), Ok(Some(_))) => Some(read(l, at)),
        _ => None,
    };
    RosterFacts {
        auth,
        identity,
        pin,
        roster,
    }
}

fn read(local: &Local, at: &RosterAt) -> Result<(u64, String), String> {
    let pin = local.pinned().map_err(|e| e.message)?;
    let seen = local.seen().map_err(|e| e.message)?;
    let read = at.read().map_err(|e| e.message)?;
    roster::verify(&read.bytes, &pin, seen, clock::now(), true)
        .map(|b| (b.version, b.expires_at))
        .map_err(|r: Refusal| format!("{}: {r}", at.shown()))
}

/// The checks over `f` at `now`.
pub fn judge_roster(f: &RosterFacts, now: OffsetDateTime) -> Vec<Check> {
    let mut checks = vec![Check::ok(
        "auth",
        match f.auth {
            Auth::Roster => {
                "roster: documents are signed with this machine's identity and judged against the roster; no fleet key file is needed"
            }
            Auth::Both => {
                "both: signs with the fleet key, and accepts fleet key and roster documents alike (a migration)"
            }
            Auth::SharedKey => "shared-key: the fleet key signs and checks every document",
        },
    )];
    if let Some(id) = &f.identity {
        checks.push(match id {
            Ok((name, key_id)) => Check::ok("identity", format!("{name}, key id {key_id}")),
            Err(why) => Check::warn(
                "identity",
                why.clone(),
                "run `fleet-dispatch identity init`, and have the admin add its line with `roster add`",
            ),
        });
    }
    checks.push(match &f.pin {
        Ok(Some(k)) => Check::ok("pin", format!("admin key {k}")),
        Ok(None) => Check::warn(
            "pin",
            "no admin key is pinned on this machine",
            "run `fleet-dispatch roster pin ed25519:<key>` with the key `roster init` printed on the admin's machine",
        ),
        Err(why) => Check::warn("pin", why.clone(), "run `fleet-dispatch roster pin` again"),
    });
    match &f.roster {
        None => {}
        Some(Err(why)) => checks.push(Check::warn(
            "roster",
            why.clone(),
            "the admin mends it with `fleet-dispatch roster renew` (or publishes a newer one); `roster verify` says the same",
        )),
        Some(Ok((version, expires))) => {
            let left: Duration = clock::parse(expires)
                .and_then(|t| (t - now).try_into().ok())
                .unwrap_or_default();
            let message = format!(
                "version {version}, verified; expires at {expires}, in {}",
                until(left)
            );
            checks.push(if left < EXPIRES_SOON {
                Check::warn(
                    "roster",
                    message,
                    "the admin runs `fleet-dispatch roster renew` before then: an expired roster stops every listener from starting",
                )
            } else {
                Check::ok("roster", message)
            });
        }
    }
    checks
}

/// A time left, in days once it is more than two.
fn until(left: Duration) -> String {
    let days = left.as_secs() / 86_400;
    if days >= 2 {
        format!("{days} days")
    } else {
        clock::human(left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(roster: Option<Result<(u64, String), String>>) -> RosterFacts {
        RosterFacts {
            auth: Auth::Roster,
            identity: Some(Ok(("PC".into(), "0056c07c518c".into()))),
            pin: Ok(Some("ed25519:ab".into())),
            roster,
        }
    }

    #[test]
    fn the_roster_warns_when_refused_or_expiring_within_a_week() {
        let now = clock::parse("2026-12-01T00:00:00.000Z").unwrap();
        let far = facts(Some(Ok((4, "2027-03-01T00:00:00.000Z".into()))));
        let c = judge_roster(&far, now);
        assert!(
            c.iter().all(|c| c.status == super::super::Status::Ok),
            "{c:?}"
        );
        assert!(c.last().unwrap().message.contains("version 4"));
        assert!(c.last().unwrap().message.contains("in 90 days"), "{c:?}");
        let soon = facts(Some(Ok((4, "2026-12-03T00:00:00.000Z".into()))));
        let c = judge_roster(&soon, now);
        assert_eq!(c.last().unwrap().status, super::super::Status::Warn);
        assert!(c.last().unwrap().message.contains("in 2 days"), "{c:?}");
        let bad = facts(Some(Err("expired: version 4 expired at …".into())));
        assert_eq!(
            judge_roster(&bad, now).last().unwrap().status,
            super::super::Status::Warn
        );
    }
}
