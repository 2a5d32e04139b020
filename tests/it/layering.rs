//! The layering law of `src/lib.rs` ("dependencies point down this list,
//! never up"), checked on the source (issue #26): every module path in
//! `src/**/*.rs` is read, not only `use` lines: `crate::a::b` in function
//! bodies, types and macros, grouped `use crate::{a::{b, c}, d}`, `super::`
//! and `self::` paths (resolved from the file's module, inline `mod tests`
//! included) and bare paths through a child module (`gauge::f()` in
//! `session/mod.rs`). Comments and string literals are not code.
//!
//! It reports (a) every file-to-file edge that points up the layer list in
//! [`LAYERS`] and (b) every file-level import circle (Tarjan's strongly
//! connected components). What is not fixed yet is listed in
//! `layering_known.txt`: the test fails on anything new and on anything
//! listed that is gone, so the list can only shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top to bottom: the one list. `src/lib.rs`'s "# Layers" doc
/// must list the same modules in the same groups (checked below).
const LAYERS: &[&[&str]] = &[
    &["tui", "headless", "acp"],
    &["app"],
    &["session"],
    &["snapshot", "hook"],
    &["context"],
    &["provider", "tool", "mcp", "store", "permission", "secret"],
    &["sandbox"],
    &["token"],
    &[
        "message",
        "bus",
        "gauge",
        "permission_request",
        "id",
        "clock",
        "config",
        "trust",
        "paths",
        "cli",
        "slash",
        "custom_command",
        "skill",
        "frontmatter",
        "shared",
    ],
];

/// The violations not fixed yet, one a line: `up FROM -> TO` or
/// `circle FILE FILE ...`.
const KNOWN: &str = include_str!("layering_known.txt");

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Open,
    Close,
    Comma,
    Star,
    Other,
}

/// Rust source as the tokens a path is made of; comments, strings, chars,
/// lifetimes and numbers dropped.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        i = match c {
            _ if c.is_whitespace() => i + 1,
            '/' if next == '/' => skip_line(&chars, i),
            '/' if next == '*' => skip_block_comment(&chars, i),
            '"' => skip_string(&chars, i + 1),
            '\'' => skip_char_or_lifetime(&chars, i),
            ':' if next == ':' => {
                out.push(Token::PathSep);
                i + 2
            }
            _ if c.is_alphabetic() || c == '_' => ident(&chars, i, &mut out),
            _ if c.is_ascii_digit() => skip_while(&chars, i, |c| c.is_alphanumeric() || c == '_'),
            _ => {
                out.push(match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    ',' => Token::Comma,
                    '*' => Token::Star,
                    _ => Token::Other,
                });
                i + 1
            }
        };
    }
    out
}

fn skip_while(chars: &[char], mut i: usize, keep: impl Fn(char) -> bool) -> usize {
    while i < chars.len() && keep(chars[i]) {
        i += 1;
    }
    i
}

fn skip_line(chars: &[char], i: usize) -> usize {
    skip_while(chars, i, |c| c != '\n')
}

/// `/* ... */`, nested as Rust nests them.
fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1).copied()) {
            ('/', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    i
}

/// From just after the opening `"` to just after the closing one.
fn skip_string(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// `r"..."`, `r#"..."#`: from the first `#` or `"` to after the end.
fn skip_raw_string(chars: &[char], i: usize) -> usize {
    let hashes = skip_while(chars, i, |c| c == '#') - i;
    let mut j = i + hashes + 1;
    while j < chars.len() {
        if chars[j] == '"'
            && chars[j + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return j + 1 + hashes;
        }
        j += 1;
    }
    j
}

/// `'a'`, `'\n'`, `'\u{1F600}'` are chars; `'a` alone is a lifetime.
fn skip_char_or_lifetime(chars: &[char], i: usize) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => skip_while(chars, i + 3, |c| c != '\'') + 1,
        (Some(_), Some('\'')) => i + 3,
        _ => skip_while(chars, i + 1, |c| c.is_alphanumeric() || c == '_'),
    }
}

/// An identifier, or the prefix of a (raw, byte, C) string literal.
fn ident(chars: &[char], i: usize, out: &mut Vec<Token>) -> usize {
    let end = skip_while(chars, i, |c| c.is_alphanumeric() || c == '_');
    let word: String = chars[i..end].iter().collect();
    let next = chars.get(end).copied();
    match (word.as_str(), next) {
        ("b" | "c", Some('"')) => skip_string(chars, end + 1),
        ("r" | "br" | "cr", Some('"')) => skip_raw_string(chars, end),
        ("r" | "br" | "cr", Some('#'))
            if chars.get(end + 1) == Some(&'"') || chars.get(end + 1) == Some(&'#') =>
        {
            skip_raw_string(chars, end)
        }
        ("b", Some('\'')) => skip_char_or_lifetime(chars, end),
        _ => {
            out.push(Token::Ident(word));
            end
        }
    }
}

/// Reads the path (tree) that starts at `i` with `prefix` already resolved;
/// each full path goes to `out`. Returns the index after it.
fn path_tree(
    tokens: &[Token],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i) {
            Some(Token::Ident(word)) => {
                match word.as_str() {
                    "super" => {
                        prefix.pop();
                    }
                    "self" | "crate" => {}
                    _ => prefix.push(word.clone()),
                }
                if tokens.get(i + 1) == Some(&Token::PathSep) {
                    i += 2;
                    continue;
                }
                out.push(prefix);
                return i + 1;
            }
            Some(Token::Open) => return group(tokens, i + 1, &prefix, out),
            _ => {
                out.push(prefix);
                return i + usize::from(tokens.get(i) == Some(&Token::Star));
            }
        }
    }
}

/// The items of `{a::b, c as d, self}` after `prefix::`.
fn group(tokens: &[Token], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    loop {
        if tokens.get(i) == Some(&Token::Close) {
            return i + 1;
        }
        i = path_tree(tokens, i, prefix.to_vec(), out);
        if tokens.get(i) == Some(&Token::Ident("as".into())) {
            i += 2;
        }
        match tokens.get(i) {
            Some(Token::Comma) => i += 1,
            Some(Token::Close) => return i + 1,
            _ => return i,
        }
    }
}

/// A source file as a module of the crate.
struct File {
    /// `src/session/gauge.rs`
    name: String,
    /// `["session", "gauge"]`
    module: Vec<String>,
    source: String,
}

fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Every module path `file` names, resolved to the crate's module tree.
fn paths_in(file: &File, children: &BTreeSet<Vec<String>>) -> Vec<Vec<String>> {
    let tokens = tokens(&file.source);
    let mut out = Vec::new();
    // Inline modules (`mod tests {`) open: (name, brace depth inside).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let here = || {
            [
                file.module.clone(),
                inline.iter().map(|(n, _)| n.clone()).collect(),
            ]
            .concat()
        };
        match &tokens[i] {
            Token::Open => depth += 1,
            Token::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Open)) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Token::Ident(word)
                if tokens.get(i + 1) == Some(&Token::PathSep)
                    && (i == 0 || tokens[i - 1] != Token::PathSep) =>
            {
                let module = here();
                let base = match word.as_str() {
                    "crate" => Some(Vec::new()),
                    "super" => Some(module[..module.len().saturating_sub(1)].to_vec()),
                    "self" => Some(module.clone()),
                    _ if children.contains(&[module.clone(), vec![word.clone()]].concat()) => {
                        Some([module.clone(), vec![word.clone()]].concat())
                    }
                    _ => None,
                };
                let mut found = Vec::new();
                i = path_tree(&tokens, i + 2, base.clone().unwrap_or_default(), &mut found);
                if base.is_some() {
                    out.extend(found);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// File-to-file edges: the longest prefix of each path that is a file.
fn edges(files: &[File]) -> BTreeSet<(String, String)> {
    let by_module: BTreeMap<&[String], &str> = files
        .iter()
        .map(|f| (f.module.as_slice(), f.name.as_str()))
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut edges = BTreeSet::new();
    for file in files {
        for path in paths_in(file, &modules) {
            let target = (0..=path.len())
                .rev()
                .find_map(|n| by_module.get(&path[..n]));
            if let Some(target) = target.filter(|t| **t != file.name) {
                edges.insert((file.name.clone(), (*target).to_string()));
            }
        }
    }
    edges
}

fn layer_of(file: &str) -> Option<(usize, String)> {
    let top = file
        .trim_start_matches("src/")
        .split(['/', '.'])
        .next()?
        .to_string();
    LAYERS
        .iter()
        .position(|layer| layer.contains(&top.as_str()))
        .map(|n| (n, top))
}

/// Edges from a lower layer to a higher one (index 0 is the top).
fn upward(edges: &BTreeSet<(String, String)>) -> Vec<String> {
    edges
        .iter()
        .filter_map(|(from, to)| {
            let ((from_layer, from_top), (to_layer, to_top)) = (layer_of(from)?, layer_of(to)?);
            (to_layer < from_layer).then(|| format!("up {from} -> {to}   ({from_top} -> {to_top})"))
        })
        .collect()
}

/// Tarjan's strongly connected components with more than one file.
fn circles(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        next: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(walk: &mut Walk<'a>, v: &'a str) {
        let n = walk.index.len();
        walk.index.insert(v, (n, n));
        walk.stack.push(v);
        walk.on_stack.insert(v);
        for w in walk.next.get(v).cloned().unwrap_or_default() {
            if !walk.index.contains_key(w) {
                visit(walk, w);
                let low = walk.index[w].1.min(walk.index[v].1);
                walk.index.get_mut(v).expect("visited").1 = low;
            } else if walk.on_stack.contains(w) {
                let low = walk.index[w].0.min(walk.index[v].1);
                walk.index.get_mut(v).expect("visited").1 = low;
            }
        }
        if walk.index[v].0 == walk.index[v].1 {
            let mut component = Vec::new();
            while let Some(w) = walk.stack.pop() {
                walk.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                walk.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        next: BTreeMap::new(),
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for (from, to) in edges {
        walk.next
            .entry(from.as_str())
            .or_default()
            .push(to.as_str());
    }
    let starts: Vec<&str> = walk.next.keys().copied().collect();
    for v in starts {
        if !walk.index.contains_key(v) {
            visit(&mut walk, v);
        }
    }
    walk.found.sort();
    walk.found
}

fn read_tree(dir: &Path, src: &Path, out: &mut Vec<File>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            read_tree(&path, src, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src).expect("under src");
            // The binary is not part of the library's layers.
            if relative == Path::new("main.rs") {
                continue;
            }
            out.push(File {
                name: format!("src/{}", relative.display()),
                module: module_of(relative),
                source: std::fs::read_to_string(&path).expect("read source"),
            });
        }
    }
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Today's violations, one a line, as `layering_known.txt` lists them.
fn violations(files: &[File]) -> BTreeSet<String> {
    let edges = edges(files);
    let mut found: BTreeSet<String> = upward(&edges).into_iter().collect();
    for circle in circles(&edges) {
        found.insert(format!("circle {}", circle.join(" ")));
    }
    found
}

/// A violation without its `(a -> b)` note: how the list names it.
fn key(line: &str) -> &str {
    line.split("   (").next().unwrap_or(line)
}

/// (violations found that `known` does not list, listed ones not found).
fn ratchet(now: &BTreeSet<String>, known: &str) -> (Vec<String>, Vec<String>) {
    let known: BTreeSet<&str> = known
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let now_keys: BTreeSet<&str> = now.iter().map(|l| key(l)).collect();
    let new = now
        .iter()
        .filter(|l| !known.contains(key(l)))
        .cloned()
        .collect();
    let gone = known
        .difference(&now_keys)
        .map(|l| (*l).to_string())
        .collect();
    (new, gone)
}

fn lines(list: &[String]) -> String {
    list.iter().map(|l| format!("  {l}\n")).collect()
}

#[test]
fn dependencies_point_down_the_layer_list() {
    let mut files = Vec::new();
    read_tree(&src_dir(), &src_dir(), &mut files);
    let now = violations(&files);
    let (new, gone) = ratchet(&now, KNOWN);
    let ups = now.iter().filter(|l| l.starts_with("up ")).count();
    let sizes: Vec<usize> = now
        .iter()
        .filter(|l| l.starts_with("circle "))
        .map(|c| c.split(' ').count() - 1)
        .collect();
    let all: Vec<String> = now.into_iter().collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "{ups} upward edges, {} circles (files: {sizes:?}):\n{}\nNEW (fix them; the layers are in src/lib.rs):\n{}\nGONE (delete these lines from tests/it/layering_known.txt):\n{}",
        sizes.len(),
        lines(&all),
        lines(&new),
        lines(&gone)
    );
}

#[test]
fn the_list_of_known_violations_only_shrinks() {
    let now: BTreeSet<String> = ["up src/a.rs -> src/b.rs   (a -> b)".to_string()].into();
    let (new, gone) = ratchet(&now, "# header\nup src/a.rs -> src/b.rs\n");
    assert!(new.is_empty() && gone.is_empty());
    let (new, gone) = ratchet(&now, "circle src/c.rs src/d.rs\n");
    assert_eq!(new, ["up src/a.rs -> src/b.rs   (a -> b)"]);
    assert_eq!(gone, ["circle src/c.rs src/d.rs"]);
}

/// The groups of backticked module names of `src/lib.rs`'s "# Layers" list.
fn documented_layers(lib: &str) -> Vec<Vec<String>> {
    let doc: Vec<&str> = lib.lines().filter_map(|l| l.strip_prefix("//!")).collect();
    let start = doc
        .iter()
        .position(|l| l.contains("# Layers"))
        .expect("a # Layers section");
    let mut bullets: Vec<String> = Vec::new();
    for line in &doc[start + 1..] {
        if let Some(bullet) = line.strip_prefix(" - ") {
            bullets.push(bullet.to_string());
        } else if let (Some(last), true) = (bullets.last_mut(), line.starts_with("   ")) {
            last.push(' ');
            last.push_str(line.trim());
        } else if !bullets.is_empty() {
            break;
        }
    }
    bullets
        .iter()
        .map(|bullet| {
            let mut names = Vec::new();
            let mut rest = bullet.trim_start();
            while let Some(after) = rest.strip_prefix('`') {
                let Some((name, tail)) = after.split_once('`') else {
                    break;
                };
                names.push(name.to_string());
                rest = tail.trim_start_matches(',').trim_start();
            }
            names
        })
        .collect()
}

#[test]
fn the_layer_list_is_the_one_lib_rs_documents_and_declares() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("read lib.rs");
    let listed: Vec<Vec<String>> = LAYERS
        .iter()
        .map(|l| l.iter().map(|m| (*m).to_string()).collect())
        .collect();
    assert_eq!(
        documented_layers(&lib),
        listed,
        "src/lib.rs's # Layers and LAYERS differ"
    );
    let declared: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .collect();
    let on_list: BTreeSet<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    assert_eq!(
        declared, on_list,
        "every module has a layer, and only modules do"
    );
}

/// A small crate with the shapes the reader must see, each a known answer.
fn fixture(sources: &[(&str, &str)]) -> Vec<File> {
    sources
        .iter()
        .map(|(name, source)| File {
            name: (*name).to_string(),
            module: module_of(Path::new(name.trim_start_matches("src/"))),
            source: (*source).to_string(),
        })
        .collect()
}

#[test]
fn the_reader_sees_paths_in_bodies_groups_super_and_children() {
    let files = fixture(&[
        ("src/lib.rs", "pub mod a; pub mod b; pub mod c;"),
        (
            "src/a/mod.rs",
            "mod x; mod y; pub use y::Y; // crate::c::not_code\n",
        ),
        (
            "src/a/x.rs",
            "use super::super::b::{self, inner::{Deep, Deeper as D}};\nconst S: &str = \"crate::c::x\";",
        ),
        (
            "src/a/y.rs",
            "pub fn f() -> usize { crate::c::gauge::count(r#\"crate::b\"#) + super::x::N }\n#[cfg(test)] mod tests { use super::*; }",
        ),
        (
            "src/b/mod.rs",
            "pub mod inner; fn g<'a>(s: &'a str) -> char { let _ = 'x'; crate::a::y::f(); ':' }",
        ),
        (
            "src/b/inner.rs",
            "macro_rules! m { () => { $crate::c::count() } }",
        ),
        ("src/c/mod.rs", "pub mod gauge;"),
        ("src/c/gauge.rs", "pub fn count() {}"),
    ]);
    let found: Vec<String> = edges(&files)
        .iter()
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect();
    assert_eq!(
        found,
        [
            "src/a/mod.rs -> src/a/y.rs",
            "src/a/x.rs -> src/b/inner.rs",
            "src/a/x.rs -> src/b/mod.rs",
            "src/a/y.rs -> src/a/x.rs",
            "src/a/y.rs -> src/c/gauge.rs",
            "src/b/inner.rs -> src/c/mod.rs",
            "src/b/mod.rs -> src/a/y.rs",
        ]
    );
    let circles = circles(&edges(&files));
    assert_eq!(circles, [vec!["src/a/x.rs", "src/a/y.rs", "src/b/mod.rs"]]);
}

#[test]
fn an_import_up_the_list_is_reported() {
    // `config` is in the bottom layer, `provider` above it.
    let files = fixture(&[
        (
            "src/config/mod.rs",
            "fn f() { let _ = crate::provider::catalog::lookup(); }",
        ),
        ("src/provider/catalog.rs", "use crate::config::Config;"),
    ]);
    let found = violations(&files);
    assert!(
        found.contains("up src/config/mod.rs -> src/provider/catalog.rs   (config -> provider)"),
        "{found:?}"
    );
    assert!(
        found.contains("circle src/config/mod.rs src/provider/catalog.rs"),
        "{found:?}"
    );
}

/// Not a check: prints the file edges inside one circle, to see which
/// import to cut. `LAYERING_FILE=src/tui/app.rs cargo test --test it --
/// --ignored layering::print_circle --nocapture`
#[test]
#[ignore = "a tool for breaking a circle, not a check"]
fn print_circle() {
    let mut files = Vec::new();
    read_tree(&src_dir(), &src_dir(), &mut files);
    let edges = edges(&files);
    let wanted = std::env::var("LAYERING_FILE").unwrap_or_default();
    for circle in circles(&edges).iter().filter(|c| c.contains(&wanted)) {
        for (from, to) in edges
            .iter()
            .filter(|(f, t)| circle.contains(f) && circle.contains(t))
        {
            println!("{from} -> {to}");
        }
    }
}
