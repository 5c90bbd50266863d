//! `roster`: the admin's edits of `<root>/roster.json` (on a bucket root,
//! the object `PREFIX/roster.json`), and every machine's
//! pin, view and check of it (docs/identities.md).

use std::path::PathBuf;

use serde_json::json;

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::{AdminKeyArg, RosterCmd};
use crate::front::config::Context;
use crate::trust::identity::{IdentityLine, SigningPublic};
use crate::trust::roster::{Body, DEFAULT_EXPIRY, DEFAULT_OVERLAP, Edit};
use crate::trust::store::{self, Local};

/// Runs `roster`.
pub fn run(ctx: &Context, cmd: RosterCmd) -> Result<u8> {
    let (at, state) = ctx.roster_at()?;
    let local = Local::new(&state);
    let admin = |a: &AdminKeyArg| -> Result<PathBuf> {
        let path = a
            .admin_key
            .clone()
            .or_else(crate::store::layout::default_admin_key_file)
            .ok_or_else(|| {
                Error::config("no admin key file: pass --admin-key FILE (HOME is not set)")
            })?;
        store::outside_root(&path, at.folder(), "admin key file")?;
        Ok(path)
    };
    let edit = |a: &AdminKeyArg, e: Edit, expires: Option<std::time::Duration>| {
        store::roster_edit(&at, &admin(a)?, &local, e, expires)
    };
    let positive = |v: &Option<String>, flag: &str, default| -> Result<_> {
        let d = super::duration_flag(v, flag)?.unwrap_or(default);
        if d.is_zero() {
            return Err(Error::validation(format!(
                "{flag}: a roster's times must be more than zero"
            )));
        }
        Ok(d)
    };
    let line_of = |name: &str, text: &str| -> Result<IdentityLine> {
        let line = IdentityLine::parse(text)
            .map_err(|why| Error::validation(format!("--identity: {why}")))?;
        if line.name != name {
            return Err(Error::validation(format!(
                "--identity names {}, not {name}",
                line.name
            )));
        }
        Ok(line)
    };
    let body = match cmd {
        RosterCmd::Init { admin: a, expires } => {
            let expires = positive(&expires, "--expires", DEFAULT_EXPIRY)?;
            let path = admin(&a)?;
            let (key, made) = store::roster_init(&at, &path, &local, expires)?;
            let made = if made {
                "wrote a new admin key to"
            } else {
                "signed with the admin key"
            };
            super::emit(
                ctx,
                &json!({"roster": at.shown(), "version": 1, "adminKeyFile": path, "admin": key.to_string()}),
                &format!(
                    "{made} {} (mode 600; keep it off the shared folder)\npublished {} version 1, pinned here\non every other machine run: fleet-dispatch roster pin {key}\n{key}",
                    path.display(),
                    at.shown()
                ),
            );
            return Ok(exit::SUCCESS);
        }
        RosterCmd::Pin { key } => {
            let pin = SigningPublic::parse(key.trim()).ok_or_else(|| {
                Error::validation(format!(
                    "{key:?} is not an admin public key, `ed25519:` and 64 hex digits"
                ))
            })?;
            local.set_pin(&pin)?;
            super::emit(
                ctx,
                &json!({"pinned": pin.to_string()}),
                &format!("pinned admin key {pin} on this machine"),
            );
            return Ok(exit::SUCCESS);
        }
        RosterCmd::Add {
            name,
            identity,
            may_send,
            require_seal,
            admin: a,
        } => {
            let may_send = may_send
                .as_deref()
                .unwrap_or("*")
                .split(',')
                .map(|t| t.trim().to_string())
                .collect::<Vec<_>>();
            for t in may_send.iter().filter(|t| *t != "*") {
                crate::base::names::Machine::parse(t, "--may-send target")?;
            }
            let line = line_of(&name, &identity)?;
            edit(
                &a,
                Edit::Add {
                    line,
                    may_send,
                    require_seal,
                },
                None,
            )?
        }
        RosterCmd::Remove {
            name,
            key,
            admin: a,
        } => edit(&a, Edit::Remove { name, key_id: key }, None)?,
        RosterCmd::Rotate {
            name,
            identity,
            overlap,
            admin: a,
        } => {
            let overlap = super::duration_flag(&overlap, "--overlap")?.unwrap_or(DEFAULT_OVERLAP);
            let line = line_of(&name, &identity)?;
            edit(&a, Edit::Rotate { line, overlap }, None)?
        }
        RosterCmd::Renew { expires, admin: a } => {
            let expires = positive(&expires, "--expires", DEFAULT_EXPIRY)?;
            edit(&a, Edit::Renew, Some(expires))?
        }
        RosterCmd::Show => {
            store::verify_at(&at, &local)?.map_err(|r| {
                Error::config(format!("{}: {r}", at.shown()))
                    .hint("run `fleet-dispatch roster verify` for the reason; the admin fixes it with `roster renew`")
            })?
        }
        RosterCmd::Verify { file } => {
            let (shown, verdict) = match file {
                Some(path) => (path.display().to_string(), store::verify(&path, &local)?),
                None => (at.shown(), store::verify_at(&at, &local)?),
            };
            let (ok, message) = match &verdict {
                Ok(b) => (
                    true,
                    format!(
                        "valid: version {}, expires at {}, {} machines",
                        b.version,
                        b.expires_at,
                        b.machines.len()
                    ),
                ),
                Err(r) => (false, r.to_string()),
            };
            super::emit(
                ctx,
                &json!({"file": shown, "valid": ok, "version": verdict.as_ref().ok().map(|b| b.version), "message": message}),
                &format!("{shown}: {message}"),
            );
            return Ok(exit::no_if(!ok));
        }
    };
    super::emit(ctx, &shown(&body), &human(&body));
    Ok(exit::SUCCESS)
}

/// The roster as `roster show --json` prints it.
fn shown(b: &Body) -> serde_json::Value {
    serde_json::to_value(b).expect("a roster serializes")
}

/// The roster in lines: its version and expiry, then a line per key.
fn human(b: &Body) -> String {
    let mut out = format!(
        "roster version {}, expires at {}, admin {}",
        b.version, b.expires_at, b.admin
    );
    for m in &b.machines {
        let sends = m.may_send.join(",");
        let seal = if m.require_seal {
            ", requires sealed jobs"
        } else {
            ""
        };
        out += &format!("\n{}: may send to {sends}{seal}", m.name);
        for k in &m.keys {
            let until = k.valid_until.as_deref().unwrap_or("(current)");
            out += &format!(
                "\n  key {} valid from {} until {until}",
                k.key_id, k.valid_from
            );
        }
    }
    out
}
