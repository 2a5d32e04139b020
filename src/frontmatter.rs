//! Front matter: the YAML block between `---` lines at the top of a Markdown
//! file. Agent and skill files (cairn's, Claude Code's, OpenCode's) carry their
//! settings there and their prompt or instructions in the body. Parsed with
//! `yaml-rust2` (maintained, pure Rust, keeps the line of a syntax error, which
//! a broken agent file must name).

use thiserror::Error;
use yaml_rust2::{Yaml, YamlLoader};

/// A Markdown file split into its front matter fields and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontMatter {
    fields: Yaml,
    /// Everything after the closing `---`, with leading blank lines removed.
    pub body: String,
}

#[derive(Debug, Error, PartialEq)]
pub enum FrontMatterError {
    #[error("line {line}: front matter is not valid YAML: {reason}")]
    Syntax { line: usize, reason: String },
    #[error("line 1: front matter must be a list of `key: value` lines")]
    NotAMapping,
    #[error("the front matter opened on line 1 is never closed by a `---` line")]
    Unclosed,
}

impl FrontMatter {
    /// Splits `text`. A file without a leading `---` line has no fields and is
    /// all body, as Claude Code and OpenCode read such files.
    pub fn parse(text: &str) -> Result<FrontMatter, FrontMatterError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(rest) = strip_fence(text) else {
            return Ok(FrontMatter {
                fields: Yaml::Hash(Default::default()),
                body: text.to_string(),
            });
        };
        let (yaml, body) = split_at_closing_fence(rest).ok_or(FrontMatterError::Unclosed)?;
        Ok(FrontMatter {
            fields: parse_fields(yaml)?,
            body: body.trim_start_matches(['\n', '\r']).to_string(),
        })
    }

    /// The field's value when it is a string (or a number or boolean written
    /// where a string is meant, such as `model: 4`), trimmed.
    pub fn string(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Yaml::String(s) | Yaml::Real(s) => Some(s.trim().to_string()),
            Yaml::Integer(n) => Some(n.to_string()),
            Yaml::Boolean(b) => Some(b.to_string()),
            _ => None,
        }
    }

    pub fn number(&self, key: &str) -> Option<f64> {
        match self.get(key)? {
            Yaml::Integer(n) => Some(*n as f64),
            Yaml::Real(s) => s.parse().ok(),
            _ => None,
        }
    }

    pub fn boolean(&self, key: &str) -> Option<bool> {
        self.get(key)?.as_bool()
    }

    /// A list written either as a YAML sequence or, as Claude Code's agent
    /// files write `tools`, as one comma-separated string.
    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        match self.get(key)? {
            Yaml::Array(items) => Some(items.iter().filter_map(scalar).collect()),
            Yaml::String(s) => Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .map(String::from)
                    .collect(),
            ),
            _ => None,
        }
    }

    /// A nested mapping of scalars (`permission:` or `tools:` written as
    /// `name: value` lines), in file order.
    pub fn map(&self, key: &str) -> Option<Vec<(String, String)>> {
        let Yaml::Hash(hash) = self.get(key)? else {
            return None;
        };
        Some(
            hash.iter()
                .filter_map(|(k, v)| Some((scalar(k)?, scalar(v)?)))
                .collect(),
        )
    }

    /// The raw YAML value, for fields with a shape of their own.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        let Yaml::Hash(hash) = &self.fields else {
            return None;
        };
        hash.get(&Yaml::String(key.to_string()))
            .filter(|value| !matches!(value, Yaml::Null | Yaml::BadValue))
    }
}

fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(n) => Some(n.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The text after an opening `---` line, if the file starts with one.
fn strip_fence(text: &str) -> Option<&str> {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    (first.trim_end() == "---").then_some(rest)
}

/// The YAML before the closing `---` line, and the body after it.
fn split_at_closing_fence(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

fn parse_fields(yaml: &str) -> Result<Yaml, FrontMatterError> {
    let docs = match YamlLoader::load_from_str(yaml) {
        Ok(docs) => docs,
        // Hand-written files often say `description: Use when: ...`, which
        // strict YAML rejects; OpenCode reads them by quoting such values,
        // and so does cairn. Quoting fixes nothing else, so the first error
        // is the one reported.
        Err(err) => YamlLoader::load_from_str(&quote_values_with_colons(yaml)).map_err(|_| {
            FrontMatterError::Syntax {
                // +1 for the opening `---` line the YAML starts after.
                line: err.marker().line() + 1,
                reason: err.info().to_string(),
            }
        })?,
    };
    match docs.into_iter().next() {
        None | Some(Yaml::Null) => Ok(Yaml::Hash(Default::default())),
        Some(hash @ Yaml::Hash(_)) => Ok(hash),
        Some(_) => Err(FrontMatterError::NotAMapping),
    }
}

/// Top-level `key: value` lines whose plain value holds `: ` get the value
/// double-quoted, so the line reads as the writer meant.
fn quote_values_with_colons(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + 16);
    for line in yaml.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        match body.split_once(": ") {
            Some((key, value))
                if !key.starts_with([' ', '\t', '-', '#'])
                    && value.contains(": ")
                    && !value
                        .trim_start()
                        .starts_with(['"', '\'', '|', '>', '[', '{']) =>
            {
                let escaped = value.trim().replace('\\', "\\\\").replace('"', "\\\"");
                out.push_str(&format!("{key}: \"{escaped}\"{ending}"));
            }
            _ => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_agent_file_splits_into_fields_and_body() {
        let text = "---\nname: code-reviewer\ndescription: Reviews code: quality, security\ntools: Read, Grep, Glob\nmodel: sonnet\n---\n\nYou are a senior reviewer.\n";
        let fm = FrontMatter::parse(text).unwrap();
        assert_eq!(fm.string("name").as_deref(), Some("code-reviewer"));
        assert_eq!(
            fm.string("description").as_deref(),
            Some("Reviews code: quality, security")
        );
        assert_eq!(
            fm.list("tools"),
            Some(vec!["Read".into(), "Grep".into(), "Glob".into()])
        );
        assert_eq!(fm.body, "You are a senior reviewer.\n");
    }

    #[test]
    fn sequences_maps_numbers_and_booleans_are_read() {
        let text = "---\ntools:\n  - read\n  - grep\npermission:\n  bash: ask\n  edit: deny\ntemperature: 0.2\nsteps: 5\nhidden: true\n---\nbody";
        let fm = FrontMatter::parse(text).unwrap();
        assert_eq!(fm.list("tools"), Some(vec!["read".into(), "grep".into()]));
        assert_eq!(
            fm.map("permission"),
            Some(vec![
                ("bash".into(), "ask".into()),
                ("edit".into(), "deny".into())
            ])
        );
        assert_eq!(fm.number("temperature"), Some(0.2));
        assert_eq!(fm.number("steps"), Some(5.0));
        assert_eq!(fm.boolean("hidden"), Some(true));
        assert_eq!(fm.string("missing"), None);
    }

    #[test]
    fn a_file_without_front_matter_is_all_body() {
        let fm = FrontMatter::parse("Just instructions.\n---\nmore").unwrap();
        assert_eq!(fm.body, "Just instructions.\n---\nmore");
        assert_eq!(fm.string("name"), None);
    }

    #[test]
    fn broken_front_matter_names_the_line() {
        let err =
            FrontMatter::parse("---\nname: a\ndescription: [unclosed\n---\nbody").unwrap_err();
        assert!(
            matches!(err, FrontMatterError::Syntax { line, .. } if line >= 3),
            "{err:?}"
        );
        assert_eq!(
            FrontMatter::parse("---\nname: a\nbody"),
            Err(FrontMatterError::Unclosed)
        );
        assert_eq!(
            FrontMatter::parse("---\n- a\n- b\n---\n"),
            Err(FrontMatterError::NotAMapping)
        );
    }

    #[test]
    fn crlf_files_and_empty_front_matter_work() {
        let fm = FrontMatter::parse("---\r\nname: x\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(fm.string("name").as_deref(), Some("x"));
        assert_eq!(fm.body, "body\r\n");
        let empty = FrontMatter::parse("---\n---\nbody").unwrap();
        assert_eq!(empty.body, "body");
    }
}
