//! Strict JSON for what people write by hand (a `--batch` line): a key
//! given twice in one object is a mistake to name, where serde_json would
//! keep the last silently.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{MapAccess, SeqAccess, Visitor};

/// The first key given twice in one object of the JSON `text`, at any
/// depth, after the keys of the objects around it (outermost first):
/// serde_json would keep the last silently. `None` too for text that is
/// not JSON, which the parse proper refuses; serde_json bounds the depth.
pub fn duplicate_key(text: &str) -> Option<Vec<String>> {
    serde_json::from_str::<Dup>(text).ok()?.0
}

/// What [`duplicate_key`] found in one JSON value.
struct Dup(Option<Vec<String>>);

impl<'de> serde::Deserialize<'de> for Dup {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Dup, D::Error> {
        d.deserialize_any(DupVisitor)
    }
}

struct DupVisitor;

impl<'de> Visitor<'de> for DupVisitor {
    type Value = Dup;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_unit<E>(self) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Dup, A::Error> {
        let mut found = None;
        while let Some(Dup(inner)) = seq.next_element()? {
            found = found.or(inner);
        }
        Ok(Dup(found))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Dup, A::Error> {
        let mut seen = BTreeSet::new();
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            let Dup(inner) = map.next_value()?;
            if found.is_some() {
                continue;
            }
            if seen.contains(&key) {
                found = Some(vec![key]);
            } else if let Some(mut path) = inner {
                path.insert(0, key);
                found = Some(path);
            } else {
                seen.insert(key);
            }
        }
        Ok(Dup(found))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        let found = |t: &str| duplicate_key(t);
        assert_eq!(found(r#"{"argv":["a"],"label":"x"}"#), None);
        assert_eq!(
            found(r#"{"argv":["true"],"argv":["false"]}"#),
            Some(vec!["argv".to_string()])
        );
        assert_eq!(
            found(r#"{"argv":["a"],"env":{"A":"1","A":"2"}}"#),
            Some(vec!["env".to_string(), "A".to_string()])
        );
        assert_eq!(found(r#"[{"a":1},{"a":2}]"#), None);
        assert_eq!(found("not json"), None);
    }
}
