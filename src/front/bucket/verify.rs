//! `verify-marker` on an object-store root: the marker named as a key of
//! the root (`s3://BUCKET/PREFIX/TARGET/cancel/<id>.json`, or the part
//! after the root, `TARGET/cancel/<id>.json`; a consumed one under
//! `archive/consumed/<id>.cancel.json`) is read over the seam and judged as
//! on a folder ([`crate::protocol::accept::marker`]): the same verdicts,
//! output and exit status.

use serde_json::json;

use super::Lane;
use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::base::names::Machine;
use crate::front::cli::VerifyMarkerArgs;
use crate::front::config::Context;
use crate::protocol::doc::marker;
use crate::store::layout::Place;
use crate::store::objstore::S3Root;
use crate::store::port::Shelves;

/// Where a marker named on a bucket is: its target's folder name, its
/// place, and its name there.
#[derive(Debug, PartialEq, Eq)]
struct Named {
    target: String,
    place: Place,
    name: String,
}

/// Reads `text`, a marker named on `root`: a full `s3://` address under
/// the root, or the key after the root's prefix; `None` when it is not
/// `TARGET/cancel/NAME` or `TARGET/archive/consumed/NAME` there.
fn named(root: &S3Root, text: &str) -> Option<Named> {
    let rest = match text.strip_prefix(crate::store::objstore::SCHEME) {
        Some(addr) => addr
            .strip_prefix(root.bucket.as_str())?
            .strip_prefix('/')?
            .strip_prefix(root.prefix.as_str())?,
        None => text,
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let (target, place, name) = match parts.as_slice() {
        [t, "cancel", n] => (t, Place::Cancel, n),
        [t, "archive", "consumed", n] => (t, Place::Consumed, n),
        _ => return None,
    };
    (!target.is_empty() && !name.is_empty()).then(|| Named {
        target: target.to_string(),
        place,
        name: name.to_string(),
    })
}

/// Runs `verify-marker` on the root `root`.
pub fn run(ctx: &Context, root: &str, args: &VerifyMarkerArgs) -> Result<u8> {
    let text = args.file.to_string_lossy().into_owned();
    let given = args
        .target
        .as_deref()
        .map(|t| Machine::parse(t, "target"))
        .transpose()?;
    let parsed = S3Root::parse(root)?;
    let Some(at) = named(&parsed, &text) else {
        return Err(Error::validation(format!(
            "{text:?} is not a marker of {parsed}: name it as {parsed}TARGET/cancel/<id>.json (or TARGET/cancel/<id>.json)"
        ))
        .hint("a consumed marker is TARGET/archive/consumed/<id>.cancel.json"));
    };
    let folder = Machine::parse(&at.target, "target (from the marker's key)")?;
    let lane = Lane::load(ctx, root)?;
    let t = lane.bucket.target(&folder);
    let shelf = t.shelf(at.place);
    let shown = shelf.shown(&at.name);
    if !shelf.exists(&at.name)? {
        return Err(Error::not_found(format!("no marker file at {shown}")));
    }
    let target = given.unwrap_or(folder);
    // A consumed marker is judged under the name it had in `cancel/`.
    let judged = match at.name.strip_suffix(".cancel.json") {
        Some(id) => format!("{id}.json"),
        None => at.name.clone(),
    };
    let read = shelf.read(&at.name, marker::MAX_BYTES);
    let (verdict, message) =
        match crate::protocol::accept::marker(&judged, read, target.as_str(), &lane.key) {
            Ok(m) => (
                "valid",
                format!(
                    "a genuine request from {} at {} to stop job {} on {}",
                    m.origin, m.created_at, m.job_id, m.target
                ),
            ),
            Err(r) => (r.verdict.as_str(), r.message),
        };
    super::emit(
        ctx,
        &json!({"file": shown, "target": target.as_str(), "verdict": verdict, "message": message}),
        &format!(
            "{}: {message}",
            crate::view::paint(verdict, crate::view::Tone::of_verdict(verdict))
        ),
    );
    Ok(exit::no_if(verdict != "valid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_named_by_its_key_under_the_root_or_after_it() {
        let root = S3Root::parse("s3://jobs/fleet").unwrap();
        let want = |place, name: &str| {
            Some(Named {
                target: "PC".into(),
                place,
                name: name.into(),
            })
        };
        assert_eq!(
            named(&root, "PC/cancel/a.json"),
            want(Place::Cancel, "a.json")
        );
        assert_eq!(
            named(&root, "s3://jobs/fleet/PC/cancel/a.json"),
            want(Place::Cancel, "a.json")
        );
        assert_eq!(
            named(&root, "PC/archive/consumed/a.cancel.json"),
            want(Place::Consumed, "a.cancel.json")
        );
        for bad in [
            "s3://other/fleet/PC/cancel/a.json",
            "s3://jobs/elsewhere/PC/cancel/a.json",
            "PC/inbox/a.json",
            "cancel/a.json",
            "PC/cancel/",
            "PC/cancel/x/a.json",
        ] {
            assert_eq!(named(&root, bad), None, "{bad}");
        }
    }
}
