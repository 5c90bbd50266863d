//! Judging an Ed25519 document against the roster, now or partly later.
//!
//! The curve check is the one costly step (about 46 µs with `ring`, where
//! every other rule costs a lookup): a listener that lists a thousand new
//! jobs at once judges everything else of each at once and leaves that
//! check to [`Unchecked`], made by whichever thread asks first, so its
//! drain starts after one check instead of a thousand and a second thread
//! checks ahead of it (bench/README.md, the roster drain). The verdict is
//! the one judging at once gives: when another rule refuses a document
//! whose check is left, the check is made first, so a forged document is
//! still refused as forged.

use std::sync::Mutex;

use super::{Claim, Key, Refusal, Signature, identity, live, roster};

/// An Ed25519 signature whose check was left for later by
/// [`Key::judge_later`]: every other rule of the roster held. Checked once.
#[derive(Debug)]
pub struct Unchecked(Mutex<Check>);

#[derive(Debug)]
enum Check {
    Pending {
        public: identity::SigningPublic,
        message: Vec<u8>,
        tag: Vec<u8>,
        forged: String,
    },
    Done(Result<(), Refusal>),
}

impl Unchecked {
    /// The check's verdict, made now if no thread made it yet (one waits
    /// for another making it). The signed text is dropped once checked.
    pub fn verdict(&self) -> Result<(), Refusal> {
        let mut check = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Check::Pending {
            public,
            message,
            tag,
            forged,
        } = &*check
        {
            let verdict = if public.verifies(message, tag) {
                Ok(())
            } else {
                Err(Refusal::Forged(forged.clone()))
            };
            *check = Check::Done(verdict);
        }
        match &*check {
            Check::Done(v) => v.clone(),
            Check::Pending { .. } => unreachable!("made just above"),
        }
    }

    /// True once the check was made.
    pub fn is_done(&self) -> bool {
        matches!(
            *self.0.lock().unwrap_or_else(|p| p.into_inner()),
            Check::Done(_)
        )
    }
}

impl Key {
    /// [`Key::judge`], but an Ed25519 signature's curve check, when every
    /// other rule holds, is left to the [`Unchecked`] returned. Documents
    /// of the fleet key are judged whole (an HMAC costs a microsecond).
    ///
    /// # Errors
    ///
    /// The [`Refusal`] [`Key::judge`] would give.
    pub fn judge_later(&self, c: &Claim<'_>) -> Result<Option<Unchecked>, Refusal> {
        match c.alg {
            Some(super::ED25519) if self.auth != super::Auth::SharedKey => {
                self.judge_ed25519(c, true)
            }
            _ => self.judge(c).map(|()| None),
        }
    }

    /// An `ed25519` document judged against the roster; with `later`, its
    /// curve check is returned unmade when nothing else refuses it.
    pub(super) fn judge_ed25519(
        &self,
        c: &Claim<'_>,
        later: bool,
    ) -> Result<Option<Unchecked>, Refusal> {
        let live = self
            .roster
            .as_ref()
            .ok_or_else(|| "no admin key is pinned on this machine".to_string())
            .map_err(|why| {
                Refusal::UnknownSigner(format!("{} cannot be looked up: {why}", c.signer))
            })?;
        let judged = judge_on(live, c, later);
        // The roster is looked at every 100 ms at most: a machine added (or
        // a key rotated in, or a permission widened) a moment ago may not be
        // in the one held. A refusal is final, so before one that the roster
        // decides, the file is looked at now, and a newer good roster judges.
        match &judged {
            Err(Refusal::UnknownSigner(_) | Refusal::KeyNotValid(_) | Refusal::NotPermitted(_)) => {
                let before = live.generation();
                live.look_now();
                if live.generation() != before {
                    return judge_on(live, c, later);
                }
                judged
            }
            _ => judged,
        }
    }
}

/// [`Key::judge_ed25519`] against `live`'s current roster.
fn judge_on(live: &live::Live, c: &Claim<'_>, later: bool) -> Result<Option<Unchecked>, Refusal> {
    let body = live.current().map_err(|why| {
        Refusal::UnknownSigner(format!("{} cannot be looked up: {why}", c.signer))
    })?;
    let entry = body
        .machines
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(c.signer))
        .ok_or_else(|| {
            Refusal::UnknownSigner(format!(
                "{} is not on the roster (version {})",
                c.signer, body.version
            ))
        })?;
    let id = c
        .key_id
        .ok_or_else(|| Refusal::UnknownSigner("it names no keyId".into()))?;
    let key = entry.keys.iter().find(|k| k.key_id == id).ok_or_else(|| {
        Refusal::UnknownSigner(format!(
            "{} has no key {id:?} on the roster (version {})",
            c.signer, body.version
        ))
    })?;
    let forged = format!(
        "the signature does not verify with key {id} of {} on the roster (edited, or signed with another key)",
        c.signer
    );
    let sig = Signature::parse_ed25519(c.sig).ok_or_else(|| {
        Refusal::Forged("sig is not 128 hex digits, an Ed25519 signature as alg says".into())
    })?;
    let public = identity::SigningPublic::parse(&key.ed25519)
        .ok_or_else(|| Refusal::Forged(forged.clone()))?;
    let check = Unchecked(Mutex::new(Check::Pending {
        public,
        message: c.canonical.as_bytes().to_vec(),
        tag: sig.tag,
        forged,
    }));
    if !later {
        check.verdict()?;
    }
    // Another rule's refusal of a document left unchecked is given only
    // once it is checked: a forged one is refused as forged.
    let refuse = |why: Refusal| check.verdict().and(Err(why));
    let now = crate::base::clock::now();
    for (at, when) in [(c.made, "when the document was made"), (Some(now), "now")] {
        if let Some(at) = at
            && !roster::key_valid_at(key, at)
        {
            return refuse(Refusal::KeyNotValid(format!(
                "key {id} of {} is valid from {} until {}, not {when} ({})",
                c.signer,
                key.valid_from,
                key.valid_until.as_deref().unwrap_or("it is replaced"),
                crate::base::clock::format(at)
            )));
        }
    }
    if let Some(to) = c.sends_to
        && !entry
            .may_send
            .iter()
            .any(|t| t == "*" || t.eq_ignore_ascii_case(to))
    {
        return refuse(Refusal::NotPermitted(format!(
            "{} may not send to {to} (roster version {} lets it send to {})",
            c.signer,
            body.version,
            entry.may_send.join(",")
        )));
    }
    Ok(later.then_some(check))
}
