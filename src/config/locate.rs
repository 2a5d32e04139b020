//! Turns a byte offset reported by the TOML parser into what a user needs:
//! the 1-based line and the dotted key at that offset (read from the text
//! itself when a syntax error leaves nothing parsed).
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
/// When the text does not parse (a syntax error), the key is read from the
/// text as written ([`key_by_text`]). None when no key covers the offset.
pub fn key_at(text: &str, offset: usize) -> Option<String> {
    let Ok(root) = DeTable::parse(text) else {
        return key_by_text(text, offset);
    };
    let mut path = Vec::new();
    find_in_table(root.get_ref(), offset, &mut path).then(|| dotted(&path))
}

/// The key a syntax error at `offset` is in, read from the text as written:
/// the `key =` on its line under the nearest `[table]` header above it
/// (`log.level` for a `level =` with no value under `[log]`). None when the
/// line assigns nothing (a broken header, a stray word).
fn key_by_text(text: &str, offset: usize) -> Option<String> {
    // `get`: an offset off a character boundary finds no key, not a panic.
    let line_start = text
        .get(..offset.min(text.len()))?
        .rfind('\n')
        .map_or(0, |at| at + 1);
    let line = text[line_start..].lines().next().unwrap_or("").trim();
    if line.starts_with('[') || line.starts_with('#') {
        return None;
    }
    let key = line.split_once('=')?.0.trim();
    if key.is_empty() {
        return None;
    }
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|header| {
            let header = header.split('#').next().unwrap_or("").trim();
            header.trim_start_matches('[').trim_end_matches(']').trim()
        });
    Some(match table {
        Some(table) if !table.is_empty() => format!("{table}.{key}"),
        _ => key.to_string(),
    })
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
    fn a_syntax_error_is_placed_under_its_table() {
        let text = "model = \"a/b\"\n[log]\nlevel = \n";
        let offset = text.rfind('=').expect("present") + 2;
        assert_eq!(key_by_text(text, offset).as_deref(), Some("log.level"));
        let text = "model = oops\n";
        assert_eq!(key_by_text(text, 8).as_deref(), Some("model"));
        let text = "[compaction\nauto = true\n";
        assert_eq!(key_by_text(text, 1), None);
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
