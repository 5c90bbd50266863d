//! The wire of the MCP server: JSON-RPC 2.0, one message a line
//! (the stdio transport), and the `initialize` answer with its protocol
//! revision. Pure: a line in, a [`Message`] out; a value in, a line out.
//! What a method does is [`super::tools`]'s and [`super::serve`]'s.

use serde_json::{Value, json};

/// The revisions this server speaks, newest first: a client asking for one
/// of them gets it; any other gets the newest (the client then decides).
pub const REVISIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// JSON-RPC: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: JSON, but not a request, a notification or a response.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the parameters are wrong (an unknown tool, no tool name).
pub const INVALID_PARAMS: i64 = -32602;

/// One message read from the client.
#[derive(Debug, PartialEq)]
pub enum Message {
    /// A call that wants an answer under `id`.
    Request {
        /// Its id, a string or a number, answered as it came.
        id: Value,
        /// The method.
        method: String,
        /// Its parameters (`null` when none).
        params: Value,
    },
    /// A call that wants no answer.
    Notification {
        /// The method.
        method: String,
        /// Its parameters (`null` when none).
        params: Value,
    },
    /// An answer to a request of ours (the server sends none; ignored).
    Response,
    /// A line that cannot be read: the error to answer, with the id when
    /// one could be read.
    Invalid {
        /// The id, or `null`.
        id: Value,
        /// [`PARSE_ERROR`] or [`INVALID_REQUEST`].
        code: i64,
        /// Why.
        message: String,
    },
}

/// Reads one line.
pub fn parse(line: &str) -> Message {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return Message::Invalid {
                id: Value::Null,
                code: PARSE_ERROR,
                message: format!("parse error: {e}"),
            };
        }
    };
    let invalid = |id: Value, message: &str| Message::Invalid {
        id,
        code: INVALID_REQUEST,
        message: message.to_string(),
    };
    let Value::Object(mut m) = v else {
        return invalid(
            Value::Null,
            "a message is one JSON object (batches are not taken)",
        );
    };
    let id = m.remove("id");
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id.unwrap_or(Value::Null), "\"jsonrpc\" must be \"2.0\"");
    }
    let params = m.remove("params").unwrap_or(Value::Null);
    let method = match m.remove("method") {
        Some(Value::String(s)) => s,
        Some(_) => return invalid(id.unwrap_or(Value::Null), "\"method\" must be a string"),
        None if id.is_some() && (m.contains_key("result") || m.contains_key("error")) => {
            return Message::Response;
        }
        None => return invalid(id.unwrap_or(Value::Null), "no \"method\""),
    };
    match id {
        None => Message::Notification { method, params },
        Some(id @ (Value::String(_) | Value::Number(_))) => Message::Request { id, method, params },
        Some(_) => invalid(Value::Null, "\"id\" must be a string or a number"),
    }
}

/// The line answering `id` with `result`.
pub fn result(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// The line answering `id` with a JSON-RPC error.
pub fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// The line of a notification.
pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// The revision to answer a client that asked for `asked`.
pub fn revision(asked: Option<&str>) -> &'static str {
    REVISIONS
        .iter()
        .find(|r| Some(**r) == asked)
        .copied()
        .unwrap_or(REVISIONS[0])
}

/// The `initialize` result for `params`, with `instructions`.
pub fn initialized(params: &Value, instructions: &str) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    json!({
        "protocolVersion": revision(asked),
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "fleet-dispatch", "version": env!("CARGO_PKG_VERSION")},
        "instructions": instructions,
    })
}

/// The string key of a request id, to find the request a
/// `notifications/cancelled` names (`1` and `"1"` are different ids).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_revision_is_answered_and_any_other_gets_the_newest() {
        assert_eq!(revision(Some("2025-03-26")), "2025-03-26");
        assert_eq!(revision(Some("2025-06-18")), "2025-06-18");
        assert_eq!(revision(Some("2024-11-05")), REVISIONS[0]);
        assert_eq!(revision(None), REVISIONS[0]);
    }

    #[test]
    fn lines_are_read_as_requests_notifications_or_errors() {
        let r = parse(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
        assert_eq!(
            r,
            Message::Request {
                id: json!(7),
                method: "ping".into(),
                params: Value::Null
            }
        );
        let n = parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(matches!(n, Message::Notification { .. }));
        assert!(matches!(
            parse("{not json"),
            Message::Invalid {
                code: PARSE_ERROR,
                ..
            }
        ));
        assert!(matches!(
            parse(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            Message::Invalid {
                code: INVALID_REQUEST,
                ..
            }
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Message::Response
        ));
        assert!(matches!(
            parse(r#"{"id":1,"method":"ping"}"#),
            Message::Invalid {
                code: INVALID_REQUEST,
                ..
            }
        ));
    }
}
