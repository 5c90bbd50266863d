//! `config`: the effective settings and where each came from
//! ([`crate::front::config::shown`]), as one JSON document or aligned text.
//! Creates nothing: a missing root, key or state directory is said, never
//! an error.

use serde_json::{Value, json};

use crate::base::error::Result;
use crate::front::cli::ConfigArgs;
use crate::front::config::{Context, shown};

/// Prints the settings.
pub fn run(ctx: &Context, _args: ConfigArgs) -> Result<u8> {
    let shown::Shown { lines, status } = shown::shown(ctx);
    if ctx.json() {
        let doc: serde_json::Map<String, Value> = lines
            .iter()
            .map(|l| {
                let v = json!({"value": l.value, "source": l.source, "note": l.note});
                (l.key.to_string(), v)
            })
            .collect();
        crate::base::out::line(&Value::Object(doc).to_string());
        return Ok(status);
    }
    let width = lines.iter().map(|l| l.label.len()).max().unwrap_or(0);
    for l in &lines {
        let value = match &l.value {
            Value::Null => "(none)".to_string(),
            Value::String(s) => s.clone(),
            Value::Array(a) if a.is_empty() => "(none)".to_string(),
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        };
        let mut text = format!("{:width$}  {value}  ({})", l.label, l.source);
        if let Some(n) = &l.note {
            text.push_str(&format!(": {n}"));
        }
        crate::base::out::line(&text);
    }
    Ok(status)
}
