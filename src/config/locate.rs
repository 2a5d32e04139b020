//! Turns a byte offset reported by the TOML parser into what a user needs:
//! the 1-based line and the dotted key at that offset.
//!
//! Pure functions over the file's text; no I/O.

use toml::de::{DeTable, DeValue};

/// 1-based line number of a byte offset in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The dotted key whose name or value covers `offset`, the deepest one if
/// tables nest (`compaction.threshold`, `permission.bash."git *"`).
/// None when the text does not parse or no key covers the offset.
pub fn key_at(text: &str, offset: usize) -> Option<String> {
    let root = DeTable::parse(text).ok()?;
    let mut path = Vec::new();
    find_in_table(root.get_ref(), offset, &mut path).then(|| dotted(&path))
}

/// Depth-first search. Table header spans do not always cover the keys
/// written under them, so every table is searched, not only covering ones.
fn find_in_table(table: &DeTable<'_>, offset: usize, path: &mut Vec<String>) -> bool {
    for (key, value) in table.iter() {
        path.push(key.get_ref().to_string());
        if let DeValue::Table(inner) = value.get_ref()
            && find_in_table(inner, offset, path)
        {
            return true;
        }
        if let DeValue::Array(items) = value.get_ref() {
            for item in items.iter() {
                if let DeValue::Table(inner) = item.get_ref()
                    && find_in_table(inner, offset, path)
                {
                    return true;
                }
            }
        }
        if key.span().contains(&offset) || value.span().contains(&offset) {
            return true;
        }
        path.pop();
    }
    false
}

/// Joins keys with dots, quoting those that are not bare TOML keys.
pub fn dotted(path: &[String]) -> String {
    path.iter()
        .map(|key| {
            let bare = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if bare {
                key.clone()
            } else {
                format!("{key:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_one_based() {
        let text = "a = 1\nb = 2\n";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 6), 2);
        assert_eq!(line_of(text, 999), 3);
    }

    #[test]
    fn finds_keys_under_table_headers() {
        let text = "model = \"a/b\"\n\n[compaction]\nauto = true\nthreshold = 1.5\n";
        let offset = text.find("1.5").expect("present");
        assert_eq!(
            key_at(text, offset).as_deref(),
            Some("compaction.threshold")
        );
        let offset = text.find("a/b").expect("present");
        assert_eq!(key_at(text, offset).as_deref(), Some("model"));
    }

    #[test]
    fn quotes_keys_that_are_not_bare() {
        let text = "[permission.bash]\n\"git status*\" = \"maybe\"\n";
        let offset = text.find("maybe").expect("present");
        assert_eq!(
            key_at(text, offset).as_deref(),
            Some("permission.bash.\"git status*\"")
        );
    }
}
