//! The roster as a reader holds it (docs/identities.md): the last good
//! version it verified, read again whenever `<root>/roster.json` changes.
//! A roster that is not good (forged, signed by another admin key, rolled
//! back below the version recorded in the state directory, expired) is
//! refused, said once, and the last good one is kept: in memory while the
//! process runs, and as `roster.good.json` in the state directory for the
//! next one (checked again there, expiry included).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::base::error::{Error, Result};
use crate::base::read::FileRead;
use crate::store::fsops::{Dir, Flush};

use super::identity::{SealingPublic, SigningPublic};
use super::roster::{self, Body};
use super::store::{Local, RosterAt};

/// The last good roster's copy in the state directory.
const GOOD_FILE: &str = "roster.good.json";

/// How long a look at the roster file's size and time stands: a drain
/// judging thousands of files at once stats it a few times, not each time.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The same for a roster object: a look is a request to the store (a
/// listener on a bucket polls every 2 s by default).
const LOOK_EVERY_OBJECT: Duration = Duration::from_secs(1);

/// The roster a reader judges documents against.
pub struct Live {
    at: RosterAt,
    state: PathBuf,
    local: Local,
    pin: SigningPublic,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    good: Option<Arc<Body>>,
    /// The version tag of the roster last read ([`RosterAt::version`]).
    version: Option<String>,
    looked: Option<Instant>,
    /// The last refusal said, so it is said once.
    refused: Option<String>,
    /// Bumped each time another good roster is taken.
    generation: u64,
}

impl Live {
    /// The roster of the folder root `root` for the machine whose state
    /// directory is `state` ([`Live::open_at`]).
    pub fn open(root: &Path, state: &Path) -> Result<Live> {
        Live::open_at(RosterAt::Folder(root.to_path_buf()), state)
    }

    /// The roster at `at` for the machine whose state directory is
    /// `state`: refuses (`CONFIG`) a machine with no pin. A roster that is
    /// not good is no error here: [`Live::ready`] says why.
    pub fn open_at(at: RosterAt, state: &Path) -> Result<Live> {
        let local = Local::new(state);
        let pin = local.pinned()?;
        let live = Live {
            at,
            state: state.to_path_buf(),
            local,
            pin,
            held: Mutex::new(Held::default()),
        };
        live.look(true);
        if live.held().good.is_none()
            && let Some(body) = live.kept()
        {
            let mut h = live.held();
            h.good = Some(Arc::new(body));
            h.generation += 1;
        }
        Ok(live)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The last good roster's copy in the state directory, when it is
    /// still good.
    fn kept(&self) -> Option<Body> {
        let FileRead::Bytes(b) =
            crate::store::fsops::read_local(&self.state.join(GOOD_FILE), roster::MAX_ROSTER_BYTES)
        else {
            return None;
        };
        let seen = self.local.seen().ok()?;
        roster::verify(&b, &self.pin, seen, crate::base::clock::now(), true).ok()
    }

    /// Reads the roster again when its file changed (looked at most every
    /// [`LOOK_EVERY`] unless `now`); a good one is taken, its version
    /// recorded and kept; a refused one is said once.
    fn look(&self, now: bool) {
        {
            let h = self.held();
            let every = match self.at {
                RosterAt::Folder(_) => LOOK_EVERY,
                RosterAt::Bucket(_) => LOOK_EVERY_OBJECT,
            };
            if !now && h.looked.is_some_and(|t| t.elapsed() < every) {
                return;
            }
        }
        let version = self.at.version();
        {
            let mut h = self.held();
            h.looked = Some(Instant::now());
            if version.is_some() && version == h.version {
                return;
            }
            h.version = version;
        }
        let verdict = match self.at.read() {
            Err(e) => Err(e.message),
            Ok(read) => match self.local.seen() {
                Err(e) => Err(e.message),
                Ok(seen) => roster::verify(
                    &read.bytes,
                    &self.pin,
                    seen,
                    crate::base::clock::now(),
                    true,
                )
                .map(|b| (b, read.bytes))
                .map_err(|r| r.to_string()),
            },
        };
        match verdict {
            Ok((body, bytes)) => {
                let _ = self.local.saw(body.version);
                if let Ok(dir) = Dir::open_trusted(&self.state) {
                    let _ = dir.replace(GOOD_FILE, &bytes, Flush::Data);
                }
                let mut h = self.held();
                if h.good.as_deref() != Some(&body) {
                    h.generation += 1;
                    h.good = Some(Arc::new(body));
                }
                h.refused = None;
            }
            Err(why) => {
                let mut h = self.held();
                if h.refused.as_deref() != Some(&why) {
                    match &h.good {
                        Some(g) => crate::note!(
                            "roster {}: {why}; still using version {}, the last good one",
                            self.at.shown(),
                            g.version
                        ),
                        None => crate::note!("roster {}: {why}", self.at.shown()),
                    }
                    h.refused = Some(why);
                }
            }
        }
    }

    /// Looks at the roster file now, whenever it was last looked at (see
    /// [`Live::generation`] for whether another roster was taken).
    pub fn look_now(&self) {
        self.look(true);
    }

    /// The roster to judge with now: the last good one, after a look at
    /// the file; or why there is none.
    pub fn current(&self) -> std::result::Result<Arc<Body>, String> {
        self.look(false);
        let h = self.held();
        h.good.clone().ok_or_else(|| {
            format!(
                "no good roster on this machine ({})",
                h.refused.as_deref().unwrap_or("none read yet")
            )
        })
    }

    /// The X25519 key to seal to for `machine` (docs/identities.md,
    /// "Sealed jobs"): from its entry on the good roster, its key valid
    /// now (the newest, during a rotation's overlap).
    ///
    /// # Errors
    ///
    /// Why there is none, naming the machine: no good roster, not on it,
    /// or no key valid now.
    pub fn sealing_key(&self, machine: &str) -> std::result::Result<SealingPublic, String> {
        let body = self.current()?;
        let entry = body
            .machines
            .iter()
            .find(|m| m.name.eq_ignore_ascii_case(machine))
            .ok_or_else(|| format!("{machine} is not on the roster (version {})", body.version))?;
        let now = crate::base::clock::now();
        entry
            .keys
            .iter()
            .rev()
            .find(|k| roster::key_valid_at(k, now))
            .and_then(|k| SealingPublic::parse(&k.x25519))
            .ok_or_else(|| {
                format!(
                    "{machine} has no key valid now on the roster (version {})",
                    body.version
                )
            })
    }

    /// Whether `machine`'s entry on the good roster asks for sealed jobs
    /// (`--require-seal`); false without a good roster.
    pub fn requires_seal(&self, machine: &str) -> bool {
        self.current().is_ok_and(|body| {
            body.machines
                .iter()
                .any(|m| m.name.eq_ignore_ascii_case(machine) && m.require_seal)
        })
    }

    /// A number that changes whenever another good roster is taken: what
    /// was accepted under the old one is judged again.
    pub fn generation(&self) -> u64 {
        self.look(false);
        self.held().generation
    }

    /// `Ok` when a good roster is held; else the `CONFIG` refusal naming
    /// the reason and the command to run.
    pub fn ready(&self) -> Result<()> {
        self.look(true);
        let h = self.held();
        match (&h.good, &h.refused) {
            (Some(_), _) => Ok(()),
            (None, why) => Err(Error::config(format!(
                "no good roster: {}: {}",
                self.at.shown(),
                why.as_deref().unwrap_or("not read")
            ))
            .hint("run `fleet-dispatch roster verify` here; the admin mends it with `fleet-dispatch roster renew` (or publishes a newer one)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::identity::{AdminKey, Identity};
    use crate::trust::roster::Edit;
    use crate::trust::store::ROSTER_FILE;
    use crate::trust::{Claim, Key, Refusal};
    use std::time::SystemTime;

    /// A root whose roster lists PC (may send anywhere) and NAS (only to
    /// LAPTOP), pinned in a state directory; PC's key, judging with it.
    fn fleet(tmp: &Path) -> (Key, Identity) {
        let admin = AdminKey::new([1; 32]);
        let now = crate::base::clock::now();
        let mut body = roster::first(&admin, now, roster::DEFAULT_EXPIRY);
        for (name, seed, may) in [("PC", 2, "*"), ("NAS", 3, "LAPTOP")] {
            let edit = Edit::Add {
                line: Identity::new(name, [seed; 64]).line(),
                may_send: vec![may.into()],
                require_seal: false,
            };
            body = roster::apply(body, edit, now, None).unwrap();
        }
        std::fs::write(tmp.join(ROSTER_FILE), roster::sign(&body, &admin)).unwrap();
        let state = tmp.join("state");
        Local::new(&state).set_pin(&admin.public()).unwrap();
        let live = Live::open(tmp, &state).unwrap();
        (
            Key::roster(Identity::new("PC", [2; 64]), live),
            Identity::new("NAS", [3; 64]),
        )
    }

    fn claim<'a>(signer: &'a str, s: &'a crate::trust::Signed, to: Option<&'a str>) -> Claim<'a> {
        Claim {
            signer,
            alg: s.alg.as_deref(),
            key_id: s.key_id.as_deref(),
            made: Some(crate::base::clock::now()),
            sends_to: to,
            canonical: "job|x",
            sig: &s.sig,
        }
    }

    #[test]
    fn a_document_is_judged_by_its_signer_key_and_permission() {
        let tmp = tempfile::tempdir().unwrap();
        let (key, nas) = fleet(tmp.path());
        let signed = key.sign_document("job|x");
        assert_eq!(signed.alg.as_deref(), Some("ed25519"));
        assert_eq!(key.judge(&claim("PC", &signed, Some("NAS"))), Ok(()));
        // Named as another machine: that machine has no such key.
        assert!(matches!(
            key.judge(&claim("NAS", &signed, None)),
            Err(Refusal::UnknownSigner(_))
        ));
        assert!(matches!(
            key.judge(&claim("EVE", &signed, None)),
            Err(Refusal::UnknownSigner(_))
        ));
        // Edited.
        let mut c = claim("PC", &signed, None);
        c.canonical = "job|y";
        assert!(matches!(key.judge(&c), Err(Refusal::Forged(_))));
        // Made before the key was valid.
        let mut c = claim("PC", &signed, None);
        c.made = crate::base::clock::parse("2000-01-01T00:00:00.000Z");
        assert!(matches!(key.judge(&c), Err(Refusal::KeyNotValid(_))));
        // NAS may send to LAPTOP only.
        let by_nas = crate::trust::Signed {
            alg: Some("ed25519".into()),
            key_id: Some(nas.line().ed25519.key_id()),
            sig: hex::encode(nas.sign(b"job|x")),
        };
        assert_eq!(key.judge(&claim("NAS", &by_nas, Some("LAPTOP"))), Ok(()));
        assert!(matches!(
            key.judge(&claim("NAS", &by_nas, Some("PC"))),
            Err(Refusal::NotPermitted(_))
        ));
        // A fleet key document, and an unknown algorithm.
        let hmac = crate::trust::Signed {
            sig: "00".repeat(32),
            ..Default::default()
        };
        assert!(matches!(
            key.judge(&claim("PC", &hmac, None)),
            Err(Refusal::AlgNotAllowed(_))
        ));
        let other = crate::trust::Signed {
            alg: Some("rsa".into()),
            ..signed.clone()
        };
        assert!(matches!(
            key.judge(&claim("PC", &other, None)),
            Err(Refusal::AlgNotAllowed(_))
        ));
    }

    /// A curve check left for later gives the verdict judging at once
    /// gives, including its precedence over the rules after it.
    #[test]
    fn a_check_left_for_later_gives_the_verdict_of_one_made_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (key, nas) = fleet(tmp.path());
        let signed = key.sign_document("job|x");
        let later = key.judge_later(&claim("PC", &signed, Some("NAS")));
        let later = later.unwrap().expect("the check is left");
        assert!(!later.is_done());
        assert_eq!(later.verdict(), Ok(()));
        assert!(later.is_done());
        // Edited: every other rule holds, the check left refuses it.
        let mut c = claim("PC", &signed, None);
        c.canonical = "job|y";
        let later = key.judge_later(&c).unwrap().expect("the check is left");
        assert!(matches!(later.verdict(), Err(Refusal::Forged(_))));
        assert!(matches!(later.verdict(), Err(Refusal::Forged(_))), "kept");
        // Edited and sent where NAS may not send: forged comes first.
        let by_nas = crate::trust::Signed {
            alg: Some("ed25519".into()),
            key_id: Some(nas.line().ed25519.key_id()),
            sig: hex::encode(nas.sign(b"job|x")),
        };
        assert!(matches!(
            key.judge_later(&claim("NAS", &by_nas, Some("PC"))),
            Err(Refusal::NotPermitted(_))
        ));
        let mut c = claim("NAS", &by_nas, Some("PC"));
        c.canonical = "job|y";
        assert!(matches!(key.judge_later(&c), Err(Refusal::Forged(_))));
        // A fleet key document is judged whole.
        let hmac = crate::trust::Signed {
            sig: "00".repeat(32),
            ..Default::default()
        };
        assert!(matches!(
            key.judge_later(&claim("PC", &hmac, None)),
            Err(Refusal::AlgNotAllowed(_))
        ));
    }

    #[test]
    fn a_roster_job_token_is_an_hmac_only_the_same_identity_makes() {
        let tmp = tempfile::tempdir().unwrap();
        let (key, _) = fleet(tmp.path());
        let text = "job-token|20261129-193000-9f2c4e1ab37d5c08|PC";
        let token = key.token(text);
        // An HMAC (64 hex digits), not an Ed25519 signature (128).
        assert_eq!(token.len(), 64);
        assert!(key.token_holds(text, &token));
        assert!(key.token_holds(text, &token.to_uppercase()));
        assert!(!key.token_holds("job-token|20261129-193000-9f2c4e1ab37d5c09|PC", &token));
        assert!(!key.token_holds(text, ""));
        assert!(!key.token_holds(text, &key.sign(text)));
        // Another process loading the same identity file checks it.
        let state = tmp.path().join("state");
        let again = Key::roster(
            Identity::new("PC", [2; 64]),
            Live::open(tmp.path(), &state).unwrap(),
        );
        assert!(again.token_holds(text, &token));
        // Another identity (or the fleet key) does not.
        let nas = Key::roster(
            Identity::new("PC", [3; 64]),
            Live::open(tmp.path(), &state).unwrap(),
        );
        assert!(!nas.token_holds(text, &token));
        assert!(
            !Key::from_bytes(&[2u8; 32])
                .unwrap()
                .token_holds(text, &token)
        );
    }

    #[test]
    fn a_machine_added_a_moment_ago_is_judged_by_the_new_roster_not_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (key, _) = fleet(tmp.path());
        let live = key.live().unwrap();
        // Looked at just now: the next ordinary look is 100 ms away.
        assert_eq!(live.current().unwrap().version, 3);
        let admin = AdminKey::new([1; 32]);
        let lap = Identity::new("LAPTOP", [4; 64]);
        let edit = Edit::Add {
            line: lap.line(),
            may_send: vec!["*".into()],
            require_seal: false,
        };
        let now = crate::base::clock::now();
        let body = roster::apply((*live.current().unwrap()).clone(), edit, now, None).unwrap();
        let path = tmp.path().join(ROSTER_FILE);
        std::fs::write(&path, roster::sign(&body, &admin)).unwrap();
        let by_lap = crate::trust::Signed {
            alg: Some("ed25519".into()),
            key_id: Some(lap.line().ed25519.key_id()),
            sig: hex::encode(lap.sign(b"job|x")),
        };
        assert_eq!(key.judge(&claim("LAPTOP", &by_lap, Some("PC"))), Ok(()));
        assert_eq!(live.current().unwrap().version, 4);
        // One the new roster does not list either is still refused.
        let eve = Identity::new("EVE", [5; 64]);
        let by_eve = crate::trust::Signed {
            alg: Some("ed25519".into()),
            key_id: Some(eve.line().ed25519.key_id()),
            sig: hex::encode(eve.sign(b"job|x")),
        };
        assert!(matches!(
            key.judge(&claim("EVE", &by_eve, Some("PC"))),
            Err(Refusal::UnknownSigner(_))
        ));
    }

    #[test]
    fn the_roster_file_is_read_again_only_when_its_size_or_time_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let (key, _) = fleet(tmp.path());
        let live = key.live().unwrap();
        let path = tmp.path().join(ROSTER_FILE);
        let when = std::fs::metadata(&path).unwrap().modified().unwrap();
        let len = std::fs::read(&path).unwrap().len();
        let touch = |t: SystemTime| {
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(t).unwrap();
        };
        // Garbage of the same size and time: the same file to a look, so
        // never read, however many documents are judged.
        std::fs::write(&path, vec![b'x'; len]).unwrap();
        touch(when);
        for _ in 0..1000 {
            live.look_now();
            assert_eq!(live.current().unwrap().version, 3);
        }
        assert!(live.held().refused.is_none(), "the unchanged file was read");
        // Its time moved: read once, refused, the last good one kept.
        touch(when + Duration::from_secs(1));
        live.look_now();
        assert!(
            live.held().refused.is_some(),
            "the changed file was not read"
        );
        assert_eq!(live.current().unwrap().version, 3);
    }

    #[test]
    fn a_new_roster_is_taken_and_a_forged_one_leaves_the_last_good() {
        let tmp = tempfile::tempdir().unwrap();
        let (key, _) = fleet(tmp.path());
        let live = key.live().unwrap();
        let before = live.generation();
        assert_eq!(live.current().unwrap().version, 3);
        let path = tmp.path().join(ROSTER_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("LAPTOP", "PC")).unwrap();
        live.look(true);
        assert_eq!(live.generation(), before);
        assert_eq!(live.current().unwrap().version, 3);
        assert!(live.ready().is_ok());
    }
}
