//! The documents a newcomer reads stay true to the tree: every path the README,
//! BENCHMARKS.md and `docs/` (its folders too) name exists (or, in a dated entry, says what it is
//! `(now ...)`), every file they name by itself is somewhere in it, and the configuration reference, `config.toml`
//! and the code's defaults list the same keys with the same values.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file, or a folder with something in it (git keeps no empty folder, so an
/// empty one left behind in a checkout counts as gone).
fn exists(path: &Path) -> bool {
    if path.is_dir() {
        std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some())
    } else {
        path.exists()
    }
}

fn documents() -> Vec<PathBuf> {
    let mut docs = vec![repo().join("README.md"), repo().join("BENCHMARKS.md")];
    // docs/ and its folders (the benchmarks' dated history among them).
    let mut more = Vec::new();
    let mut dirs = vec![repo().join("docs")];
    while let Some(dir) = dirs.pop() {
        for path in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                more.push(path);
            }
        }
    }
    more.sort();
    docs.extend(more);
    docs
}

/// The top-level folders and files a document may name by their full path.
const ROOTS: [&str; 10] = [
    "src/",
    "actors/",
    "sql/",
    "tests/",
    "benches/",
    "scripts/",
    "ops/",
    "docs/",
    "examples/",
    ".ci/",
];
const ROOT_FILES: [&str; 3] = ["config.toml", "Cargo.toml", "BENCHMARKS.md"];
const FILE_ENDINGS: [&str; 10] = [
    ".rs", ".sql", ".js", ".mjs", ".py", ".md", ".toml", ".sh", ".cfg", ".json",
];

/// Each text between backticks on one line.
fn code_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    for line in text.lines() {
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            spans.push(inside);
        }
    }
    spans
}

/// The targets of markdown links `[text](target)`.
fn link_targets(text: &str) -> Vec<&str> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            rest.find(')').map(|end| &rest[..end])
        })
        .filter(|t| !t.contains(char::is_whitespace))
        .collect()
}

/// The entries of a file tree drawn in a code block: a name at column 0 is a
/// top-level path, a name indented two spaces lives under the last of those.
fn tree_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for block in text.split("```").skip(1).step_by(2) {
        let mut top: Option<String> = None;
        for line in block.lines() {
            let indent = line.len() - line.trim_start().len();
            let Some(name) = line.split_whitespace().next() else {
                continue;
            };
            let is_path = name.contains('/') || FILE_ENDINGS.iter().any(|e| name.ends_with(e));
            if indent > 2
                || !is_path
                || !name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_.-/".contains(c))
            {
                continue;
            }
            if indent == 0 {
                top = Some(name.to_string());
                paths.push(name.to_string());
            } else if let Some(top) = &top {
                paths.push(format!("{top}{name}"));
            }
        }
    }
    paths
}

/// Every file name in the tree (what git would keep: no build output, no
/// installed packages).
fn file_names() -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut dirs = vec![repo()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() {
                if !["target", "node_modules", ".git"].contains(&name.as_str())
                    && !name.starts_with(".venv")
                {
                    dirs.push(entry.path());
                }
            } else {
                names.insert(name);
            }
        }
    }
    names
}

/// A dated entry may name what has since moved: "`old.rs` (now `new.rs`)" is
/// true to the tree when the new path is.
fn renamed_to<'a>(text: &'a str, span: &str) -> Option<&'a str> {
    let end = span.as_ptr() as usize - text.as_ptr() as usize + span.len() + 1;
    let rest = text.get(end..)?.strip_prefix(" (now `")?;
    rest.split('`').next()
}

/// What a document names that is not in the tree.
fn missing_paths(doc: &Path) -> Vec<String> {
    let names = file_names();
    let text = std::fs::read_to_string(doc).unwrap();
    let here = doc.parent().unwrap();
    let mut missing = Vec::new();
    for target in link_targets(&text) {
        if target.starts_with("http") || target.starts_with('#') || target.starts_with("mailto") {
            continue;
        }
        let file = target.split('#').next().unwrap();
        if !exists(&here.join(file)) {
            missing.push(format!("link {target}"));
        }
    }
    for span in code_spans(&text) {
        if renamed_to(&text, span).is_some_and(|now| exists(&repo().join(now))) {
            continue;
        }
        let span = span.trim_end_matches(['.', ',', ';', ':']);
        let placeholder = span.contains(['<', '{', '*', '…', ':', '=', '?', ' ']);
        // Absolute paths, and what a run makes (.surfpool/, .cluster/, target/).
        let made_at_run =
            (span.starts_with('.') && !span.starts_with(".ci/")) || span.starts_with("target/");
        if placeholder || made_at_run || span.starts_with(['/', '~']) {
            continue;
        }
        if ROOTS.iter().any(|r| span.starts_with(r)) || ROOT_FILES.contains(&span) {
            if !exists(&repo().join(span)) {
                missing.push(format!("path {span}"));
            }
        } else if span.contains('/') && FILE_ENDINGS.iter().any(|e| span.ends_with(e)) {
            // A path inside a layer (`chain/grpc.rs`): under one of them.
            let found = ["", "src", "actors", "tests", "scripts"]
                .iter()
                .any(|r| exists(&repo().join(r).join(span)));
            if !found {
                missing.push(format!("path {span}"));
            }
        } else if !span.contains('/')
            && FILE_ENDINGS.iter().any(|e| span.ends_with(e))
            && span
                .chars()
                .all(|c| c.is_alphanumeric() || "_.-".contains(c))
            && !names.contains(span)
        {
            missing.push(format!("file {span}"));
        }
    }
    if text.contains("```") {
        for path in tree_paths(&text) {
            if !exists(&repo().join(&path)) {
                missing.push(format!("tree {path}"));
            }
        }
    }
    missing
}

#[test]
fn every_path_the_documents_name_exists() {
    let mut missing = Vec::new();
    for doc in documents() {
        for m in missing_paths(&doc) {
            missing.push(format!(
                "{}: {m}",
                doc.strip_prefix(repo()).unwrap().display()
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "named but not in the tree:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_path_check_finds_what_is_missing() {
    let dir = std::env::temp_dir().join(format!("lendex-doc-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let doc = dir.join("probe.md");
    std::fs::write(
        &doc,
        "See `src/engine/gone.rs`, `chain/nowhere.rs`, [a](nothing.md), `src/app.rs`, `vanished.rs`, `app.rs`, `src/old.rs` (now `src/app.rs`), `src/older.rs` (now `src/gone.rs`).\n\n```\nsrc/\n  missing_file.rs   no such file\n  app.rs            is here\n```\n",
    )
    .unwrap();
    let missing = missing_paths(&doc);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        missing,
        [
            "link nothing.md",
            "path src/engine/gone.rs",
            "path chain/nowhere.rs",
            "file vanished.rs",
            "path src/older.rs",
            "path src/gone.rs",
            "tree src/missing_file.rs"
        ]
    );
}

/// A TOML value as the configuration reference writes it.
fn as_written(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

/// `section.key` → value of a TOML table of tables.
fn flatten(table: &toml::Table) -> BTreeMap<String, String> {
    let mut keys = BTreeMap::new();
    for (section, entries) in table {
        for (key, value) in entries.as_table().unwrap() {
            keys.insert(format!("{section}.{key}"), as_written(value));
        }
    }
    keys
}

#[test]
fn config_toml_the_reference_and_the_defaults_agree() {
    let file: toml::Table = std::fs::read_to_string(repo().join("config.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let file = flatten(&file);

    // The code's defaults, as the binary would print them.
    let defaults = toml::Table::try_from(lendex::config::Config::defaults()).unwrap();
    assert_eq!(
        flatten(&defaults),
        file,
        "config.toml and Config::defaults()"
    );

    // The reference: one row per key, `| key | default | ...`; a string
    // default is written bare or quoted, a note may follow in parentheses.
    let reference = std::fs::read_to_string(repo().join("docs/configuration.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in reference.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !cells[1].contains('.') || cells[1].contains(' ') {
            continue;
        }
        let default = cells[2].split(" (").next().unwrap().trim();
        rows.insert(cells[1].to_string(), default.to_string());
    }
    let keys: Vec<&String> = file.keys().collect();
    let documented: Vec<&String> = rows.keys().collect();
    assert_eq!(
        documented, keys,
        "keys of docs/configuration.md and config.toml"
    );
    for (key, value) in &file {
        let written = &rows[key];
        let bare = value.trim_matches('"');
        assert!(
            written == value || written == bare,
            "{key}: the reference says {written}, config.toml {value}"
        );
    }
}

/// The files of the repository a citation could hide in: code, SQL, scripts,
/// examples, settings (not what a run installs or builds).
fn source_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                let made = name == "node_modules" || name == "target" || name.starts_with('.');
                if !made {
                    walk(&path, out);
                }
            } else {
                out.push(path);
            }
        }
    }
    let mut files = vec![repo().join("config.toml"), repo().join("Cargo.toml")];
    for dir in [
        "src", "actors", "crates", "tests", "sql", "scripts", "examples", "ops", "benches", ".ci",
    ] {
        walk(&repo().join(dir), &mut files);
    }
    files
}

#[test]
fn no_file_cites_a_document_outside_the_repository() {
    // Spelled in pieces, so this file does not cite them itself.
    let outside = [
        format!("decisions {}", '§'),
        format!("decisions{}md", '.'),
        format!("service{}spec", '-'),
        format!("..{}shared", '/'),
        format!("spec {}", '§'),
    ];
    let mut found = Vec::new();
    for file in source_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // not text
        };
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let numbered = lower.match_indices("spec ").any(|(at, _)| {
                lower[at + 5..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            });
            if numbered || outside.iter().any(|o| lower.contains(o.as_str())) {
                let path = file.strip_prefix(repo()).unwrap().display().to_string();
                found.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cites a document a clone cannot open (cite docs/design.md):\n{}",
        found.join("\n")
    );
}

/// The sections `docs/design.md` has: `## N.` headings and `**N.M` entries.
fn design_sections() -> Vec<String> {
    let design = std::fs::read_to_string(repo().join("docs/design.md")).unwrap();
    let mut sections = Vec::new();
    for line in design.lines() {
        let line = line.trim_start_matches(['-', ' ']);
        let number = if let Some(rest) = line.strip_prefix("## ") {
            rest.split('.').next().unwrap_or("")
        } else if let Some(rest) = line.strip_prefix("**") {
            rest.split(' ').next().unwrap_or("")
        } else {
            continue;
        };
        if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.') {
            sections.push(number.to_string());
        }
    }
    sections
}

/// Each `§N` or `§N.M` cited after `design.md` on a line (`design.md §4.8, §4.9`).
fn cited_sections(line: &str) -> Vec<String> {
    let Some(at) = line.find("design.md") else {
        return Vec::new();
    };
    line[at..]
        .split('§')
        .skip(1)
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect::<String>()
                .trim_end_matches('.')
                .to_string()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn every_cited_section_of_the_design_exists() {
    let sections = design_sections();
    assert!(sections.contains(&"12".to_string()) && sections.contains(&"4.17".to_string()));
    let mut missing = Vec::new();
    let mut cited = 0;
    for file in source_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for section in cited_sections(line) {
                cited += 1;
                if !sections.contains(&section) {
                    let path = file.strip_prefix(repo()).unwrap().display().to_string();
                    missing.push(format!("{path}:{}: §{section}", n + 1));
                }
            }
        }
    }
    assert!(cited > 100, "the citations were found ({cited})");
    assert!(
        missing.is_empty(),
        "cites a section docs/design.md does not have:\n{}",
        missing.join("\n")
    );
}
