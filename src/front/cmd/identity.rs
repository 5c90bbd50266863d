//! `identity init` and `identity show`: this machine's key pair and its
//! identity line (docs/identities.md).

use serde_json::json;

use crate::base::error::Result;
use crate::base::exit;
use crate::front::cli::IdentityCmd;
use crate::front::config::Context;
use crate::trust::store;

/// Runs `identity`.
pub fn run(ctx: &Context, cmd: IdentityCmd) -> Result<u8> {
    let path = ctx.identity_path()?;
    store::outside_root(&path, ctx.root().ok().as_deref(), "identity file")?;
    let (id, made) = match cmd {
        IdentityCmd::Init { force } => {
            let machine = ctx.machine()?;
            (store::identity_init(&path, machine.as_str(), force)?, true)
        }
        IdentityCmd::Show => (store::load_identity(&path)?, false),
    };
    let line = id.line();
    let key_id = line.ed25519.key_id();
    let before = if made {
        format!(
            "wrote a new identity for {} to {} (mode 600), key id {key_id}\nadd it to the roster on the admin's machine: fleet-dispatch roster add {} --identity \"<the line below>\"\n",
            line.name,
            path.display(),
            line.name
        )
    } else {
        format!("{} (key id {key_id}):\n", path.display())
    };
    super::emit(
        ctx,
        &json!({
            "name": line.name,
            "keyId": key_id,
            "ed25519": line.ed25519.to_string(),
            "x25519": line.x25519.to_string(),
            "line": line.to_string(),
            "identityFile": path.display().to_string(),
        }),
        &format!("{before}{line}"),
    );
    Ok(exit::SUCCESS)
}
