//! `lendex remote audit` for people: the server's entries as a table (time with
//! its zone, actor, action, target, details), newest first as served.

use serde_json::Value;

/// Detail keys that only repeat what the row says or are for machines.
const HIDDEN: [&str; 2] = ["slot", "init_signature"];

/// The table of an audit answer (`{"entries": [...]}`).
pub fn render(answer: &str) -> Result<String, String> {
    let body: Value = serde_json::from_str(answer)
        .map_err(|_| format!("the audit answer is not JSON: {answer}"))?;
    let entries = body["entries"]
        .as_array()
        .ok_or_else(|| format!("the audit answer has no entries: {answer}"))?;
    if entries.is_empty() {
        return Ok("no entries".into());
    }
    let header = ["TIME", "ACTOR", "ACTION", "TARGET", "DETAILS"].map(String::from);
    let rows: Vec<[String; 5]> = entries
        .iter()
        .map(|e| {
            [
                time(e["created_at"].as_str().unwrap_or_default()),
                text(&e["actor"]),
                text(&e["action"]),
                text(&e["target"]),
                details(&e["details"]),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String; 5]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.trim_end().to_string()
    };
    let mut lines = vec![line(&header)];
    lines.extend(rows.iter().map(line));
    Ok(lines.join("\n"))
}

/// RFC 3339 as `YYYY-MM-DD HH:MM:SS UTC` (the server's times are UTC).
fn time(rfc3339: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string(),
        Err(_) => rfc3339.to_string(),
    }
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// `key=value` for each detail that says something, by name.
fn details(v: &Value) -> String {
    let Some(map) = v.as_object() else {
        return String::new();
    };
    map.iter()
        .filter(|(k, v)| !v.is_null() && !HIDDEN.contains(&k.as_str()))
        .map(|(k, v)| {
            let value = text(v);
            if value.contains(char::is_whitespace) {
                format!("{k}={value:?}")
            } else {
                format!("{k}={value}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_become_aligned_rows_with_zoned_times_and_details() {
        let answer = r#"{"entries":[
            {"id":2,"actor":"AAA","action":"init_pool","target":"PoolX","created_at":"2026-11-24T07:12:03.5+00:00",
             "details":{"token_mint":"M","symbol":"USDC","created":false,"symbol_not_applied":"USDX","slot":9,"init_signature":"s"}},
            {"id":1,"actor":"system","action":"add_admin","target":"BBBB","created_at":"2026-11-24T07:10:00Z",
             "details":{"role":"pool_admin","label":"ops team"}}]}"#;
        let table = render(answer).unwrap();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].starts_with("TIME                     ACTOR   ACTION     TARGET  DETAILS")
        );
        assert_eq!(
            lines[1],
            "2026-11-24 07:12:03 UTC  AAA     init_pool  PoolX   created=false symbol=USDC symbol_not_applied=USDX token_mint=M"
        );
        assert_eq!(
            lines[2],
            "2026-11-24 07:10:00 UTC  system  add_admin  BBBB    label=\"ops team\" role=pool_admin"
        );
    }

    #[test]
    fn nothing_is_said_plainly_and_garbage_is_an_error() {
        assert_eq!(render(r#"{"entries":[]}"#).unwrap(), "no entries");
        assert!(render("<html>").is_err());
        assert!(render("{}").is_err());
    }
}
