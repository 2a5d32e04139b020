//! `cairn config`'s view: the merged configuration as TOML with a comment after
//! each value naming its source, inline API keys, header values and URL
//! passwords redacted.
//!
//! Formatting only; loading and merging live in `load.rs`.

use std::collections::BTreeMap;

use toml::{Table, Value};

use super::load::{Loaded, Origin};
use super::locate::dotted;

impl Loaded {
    /// The merged config as TOML, each value followed by a comment naming its source.
    /// Inline API keys, header values and `base_url` passwords are shown as `<redacted>`.
    pub fn render(&self) -> String {
        let mut table =
            Table::try_from(&self.config).expect("Config serializes: every map key is a string");
        redact_api_keys(&mut table);
        let mut out = String::new();
        render_table(&table, &mut Vec::new(), &self.origins, &mut out);
        out
    }
}

fn redact_api_keys(table: &mut Table) {
    if let Some(Value::Table(providers)) = table.get_mut("provider") {
        for (_, provider) in providers.iter_mut() {
            let Value::Table(provider) = provider else {
                continue;
            };
            if let Some(key) = provider.get_mut("api_key") {
                *key = Value::String("<redacted>".to_owned());
            }
            // Header values are credentials more often than not.
            if let Some(Value::Table(headers)) = provider.get_mut("headers") {
                for (_, value) in headers.iter_mut() {
                    *value = Value::String("<redacted>".to_owned());
                }
            }
            if let Some(Value::String(url)) = provider.get_mut("base_url")
                && let Some(password) = crate::shared::url_password(url)
            {
                *url = url.replacen(&format!(":{password}@"), ":<redacted>@", 1);
            }
        }
    }
}

/// Writes leaves first, then sub-tables under `[headers]`, like a hand-written file.
fn render_table(
    table: &Table,
    path: &mut Vec<String>,
    origins: &BTreeMap<String, Origin>,
    out: &mut String,
) {
    for (key, value) in table {
        if matches!(value, Value::Table(inner) if !inner.is_empty()) {
            continue;
        }
        path.push(key.clone());
        let origin = origins
            .get(&dotted(path))
            .map_or_else(|| "default".to_owned(), Origin::to_string);
        let shown = match value {
            Value::Table(_) => "{}".to_owned(),
            other => other.to_string(),
        };
        out.push_str(&format!(
            "{} = {shown}  # {origin}\n",
            dotted(&path[path.len() - 1..])
        ));
        path.pop();
    }
    for (key, value) in table {
        if let Value::Table(inner) = value
            && !inner.is_empty()
        {
            path.push(key.clone());
            let has_leaves = inner
                .values()
                .any(|value| !matches!(value, Value::Table(t) if !t.is_empty()));
            if has_leaves {
                out.push_str(&format!("\n[{}]\n", dotted(path)));
            }
            render_table(inner, path, origins, out);
            path.pop();
        }
    }
}
