//! `lendex remote audit` for people: the server's entries as a table (time with
//! its zone, actor, action, target, details), newest first as served.

use serde_json::Value;

use crate::wire::admin::AuditResponse;

/// Detail keys that only repeat what the row says or are for machines.
const HIDDEN: [&str; 2] = ["slot", "init_signature"];

/// The table of an audit answer.
pub fn render(answer: &AuditResponse) -> String {
    if answer.entries.is_empty() {
        return "no entries".into();
    }
    let header = ["TIME", "ACTOR", "ACTION", "TARGET", "DETAILS"].map(String::from);
    let rows: Vec<[String; 5]> = answer
        .entries
        .iter()
        .map(|e| {
            [
                e.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
                e.actor.clone(),
                e.action.clone(),
                e.target.clone(),
                details(&e.details),
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
    lines.join("\n")
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
        let table = render(&serde_json::from_str(answer).unwrap());
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
    fn nothing_is_said_plainly() {
        let empty = AuditResponse { entries: vec![] };
        assert_eq!(render(&empty), "no entries");
    }
}
