//! What text read from the shared folder may show on a terminal: values
//! from files anyone with folder access can write are
//! [`tame`]d when read, and every line printed is [`screened`], so no
//! file can drive the terminal of whoever looks at it or fake a line.
//! Whether the terminal takes escape codes at all is decided here too.

/// True when `TERM` says the terminal understands no escape codes (`dumb`:
/// Emacs's shell, some CI logs): then nothing is coloured and no progress
/// line is redrawn, whatever `isatty` says.
pub fn dumb_terminal() -> bool {
    std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

/// True when a progress line may be drawn, and redrawn in place, on
/// stderr: a terminal that understands escape codes.
pub fn progress_line() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && !dumb_terminal()
}

/// `text` with every control character written out as a `\u{..}` escape:
/// for a value read from a file anyone with folder access can write (a
/// rejection's reason, a heartbeat, a `running/` file), so it can neither
/// drive the terminal nor start a line of its own. Text without any is
/// returned as it is.
pub fn tame(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// [`tame`] as a serde field deserializer, for the documents above.
pub fn tamed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = <String as serde::Deserialize>::deserialize(d)?;
    Ok(match tame(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(t) => t,
    })
}

/// [`tamed`] for an optional field.
pub fn tamed_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = <Option<String> as serde::Deserialize>::deserialize(d)?;
    Ok(s.map(|s| tame(&s).into_owned()))
}

/// [`tamed`] for a list field.
pub fn tamed_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = <Vec<String> as serde::Deserialize>::deserialize(d)?;
    Ok(v.iter().map(|s| tame(s).into_owned()).collect())
}

/// `text` for a terminal: line breaks, tabs and the colour codes of
/// [`crate::view::paint`] pass; any other control character is escaped ([`tame`]), so
/// no text, whatever it quotes, drives the terminal.
pub fn screened(text: &str) -> std::borrow::Cow<'_, str> {
    let risky = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(risky) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b'
            && let Some(len) = colour_code(rest)
        {
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        if risky(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// The length of the colour code (`ESC [ digits/semicolons m`) `text` starts with.
fn colour_code(text: &str) -> Option<usize> {
    let body = text.strip_prefix("\x1b[")?;
    let end = body.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    (body[end..].starts_with('m')).then_some(2 + end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tamed_value_keeps_its_text_and_loses_its_control_characters() {
        assert!(matches!(tame("plain é"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            tame("a\u{1b}]0;PWNED\u{7}\nb\rc\td\u{9b}"),
            "a\\u{1b}]0;PWNED\\u{7}\\u{a}b\\u{d}c\\u{9}d\\u{9b}"
        );
    }

    #[test]
    fn a_screened_line_keeps_breaks_tabs_and_colours_only() {
        let painted = "\u{1b}[31mfailed\u{1b}[0m\tnext\nline";
        assert_eq!(screened(painted), painted);
        assert_eq!(
            screened("x\u{1b}[2Jy\u{1b}]0;t\u{7}\r"),
            "x\\u{1b}[2Jy\\u{1b}]0;t\\u{7}\\u{d}"
        );
        // A colour code cut short is escaped, not passed.
        assert_eq!(screened("\u{1b}[31"), "\\u{1b}[31");
    }
}
