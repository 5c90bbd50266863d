//! Text read from the shared folder is hostile until escaped for the sink
//! it goes to: anyone with folder access writes a label, a rejection's
//! reason, a heartbeat's state. On a terminal its control characters are
//! written out ([`terminal`]; every printed line is screened again by
//! [`crate::base::out::line`]); on a page its markup characters are entities
//! ([`html`]). JSON needs neither: serde escapes it, and
//! [`crate::base::out::json_text`] the controls serde leaves.

use std::borrow::Cow;

/// `text` for a terminal: every control character a `\u{..}` escape, so
/// it can neither drive the terminal nor start a line of its own
/// ([`crate::base::screen::tame`], which the documents apply as they are read).
pub fn terminal(text: &str) -> Cow<'_, str> {
    crate::base::screen::tame(text)
}

/// `text` for an HTML page, as element text or a quoted attribute value:
/// `&`, `<`, `>`, `"` and `'` as entities. Text without any is returned
/// as it is.
pub fn html(text: &str) -> Cow<'_, str> {
    let entity = |c: char| match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some("&#39;"),
        _ => None,
    };
    if !text.chars().any(|c| entity(c).is_some()) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match entity(c) {
            Some(e) => out.push_str(e),
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_markup_and_leaves_other_text_alone() {
        assert!(matches!(html("plain é, 1 + 1"), Cow::Borrowed(_)));
        assert_eq!(
            html(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        // Escaping is done once: an entity already there is text.
        assert_eq!(html("&amp;"), "&amp;amp;");
    }

    #[test]
    fn a_terminal_gets_no_control_character_from_the_folder() {
        assert!(matches!(terminal("label é"), Cow::Borrowed(_)));
        assert_eq!(terminal("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\u{a}c");
    }
}
