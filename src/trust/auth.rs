//! The `--auth` mode (`FLEET_DISPATCH_AUTH`, `auth` in the config file;
//! docs/identities.md): which signatures this machine makes and accepts.

/// Which signatures a machine makes and accepts (`--auth`,
/// `FLEET_DISPATCH_AUTH`, `auth` in the config file; docs/identities.md).
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Auth {
    /// The fleet key: every machine signs and checks with the one HMAC key
    #[default]
    SharedKey,
    /// Each machine signs with its own Ed25519 identity, judged against the
    /// roster; no fleet key file is needed
    Roster,
    /// Accepts each document by the algorithm it states, for a migration;
    /// signs with the fleet key, or the identity once the roster lists it
    Both,
}

impl Auth {
    /// The word `--auth` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Auth::SharedKey => "shared-key",
            Auth::Roster => "roster",
            Auth::Both => "both",
        }
    }
}
