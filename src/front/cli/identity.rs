//! The flags of `identity` and `roster`: this machine's key pair and the
//! signed roster of the fleet's machines (docs/identities.md).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueHint};

/// `identity`.
#[derive(Debug, Subcommand)]
pub enum IdentityCmd {
    /// Make this machine's key pair; prints its identity line, last
    Init {
        /// Replace an existing identity (the old keys are gone from this machine)
        #[arg(long)]
        force: bool,
    },
    /// Print this machine's identity line and key id
    Show,
}

/// The admin key file option of the roster edits.
#[derive(Debug, Args)]
pub struct AdminKeyArg {
    /// The admin key file [default: ~/.claude/fleet-dispatch.admin.key]
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub admin_key: Option<PathBuf>,
}

/// `roster`.
#[derive(Debug, Subcommand)]
pub enum RosterCmd {
    /// Make the admin key (when FILE is absent) and the root's roster.json, version 1, pinned here; prints the admin public key, last
    Init {
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
        /// How long the roster is valid, e.g. 90d [default: 90d]
        #[arg(long, value_name = "D")]
        expires: Option<String>,
    },
    /// Trust this admin public key (ed25519:KEY) on this machine
    Pin {
        /// The key `roster init` printed
        #[arg(value_name = "ADMIN_PUBLIC_KEY")]
        key: String,
    },
    /// Add a machine by its identity line
    Add {
        /// The machine's name, as its identity line gives it
        name: String,
        /// The line `identity init` printed on that machine
        #[arg(long, value_name = "LINE")]
        identity: String,
        /// The targets it may send to, comma-separated, or * [default: *]
        #[arg(long, value_name = "T1,T2|*")]
        may_send: Option<String>,
        /// Jobs to this machine must be sealed
        #[arg(long)]
        require_seal: bool,
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
    },
    /// Remove a machine, or only one of its keys
    Remove {
        /// The machine's name
        name: String,
        /// Remove only this key id
        #[arg(long, value_name = "KEY_ID")]
        key: Option<String>,
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
    },
    /// Give a machine a new key; its old keys end after the overlap
    Rotate {
        /// The machine's name
        name: String,
        /// The new identity line
        #[arg(long, value_name = "LINE")]
        identity: String,
        /// How long the old keys stay valid [default: 24h]
        #[arg(long, value_name = "D")]
        overlap: Option<String>,
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
    },
    /// Sign the roster again with a new expiry
    Renew {
        /// How long the roster is valid from now [default: 90d]
        #[arg(long, value_name = "D")]
        expires: Option<String>,
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
    },
    /// Print the roster's machines and keys, once verified
    Show,
    /// Check a roster's signature, version and expiry; exit 0 valid, 1 not
    Verify {
        /// The roster file [default: roster.json in the root]
        #[arg(value_hint = ValueHint::FilePath)]
        file: Option<PathBuf>,
    },
}
