//! Server-sent events as Lendex sends them (docs/design.md §11): frames of
//! `id:`, `event:` and `data:` lines ending in a blank line; comments
//! (`:`) keep the connection alive. Parsed as the bytes arrive, in any cut.

/// One frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    /// `<epoch>.<seq>`: what a reconnect names in `Last-Event-ID`.
    pub id: Option<String>,
    /// The event's name; none on a frame that only says the feed's position.
    pub event: Option<String>,
    /// The JSON payload (its lines joined with `\n`).
    pub data: Option<String>,
}

/// Frames out of a byte stream cut anywhere.
#[derive(Debug, Default)]
pub struct Parser {
    /// Bytes after the last complete line.
    partial: Vec<u8>,
    frame: Frame,
    /// The frame has a field (a blank line after only comments is nothing).
    started: bool,
}

impl Parser {
    /// Takes the next bytes; returns the frames they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        self.partial.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(at) = self.partial[start..].iter().position(|b| *b == b'\n') {
            let end = start + at;
            let line = &self.partial[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if std::mem::take(&mut self.started) {
                    frames.push(std::mem::take(&mut self.frame));
                }
            } else {
                let line = String::from_utf8_lossy(line).into_owned();
                self.field(&line);
            }
            start = end + 1;
        }
        self.partial.drain(..start);
        frames
    }

    fn field(&mut self, line: &str) {
        if line.starts_with(':') {
            return;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value).to_string();
        self.started = true;
        match name {
            "id" => self.frame.id = Some(value),
            "event" => self.frame.event = Some(value),
            "data" => match &mut self.frame.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(&value);
                }
                None => self.frame.data = Some(value),
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const STREAM: &str = ": hello\n\nid: 7.1\nevent: candidate_start\ndata: {\"a\":1}\n\nid: 7.2\n\n: ping\n\nevent: reset\ndata: {\"reason\":\"unknown\"}\r\n\r\n";

    fn expected() -> Vec<Frame> {
        vec![
            Frame {
                id: Some("7.1".into()),
                event: Some("candidate_start".into()),
                data: Some("{\"a\":1}".into()),
            },
            Frame {
                id: Some("7.2".into()),
                ..Frame::default()
            },
            Frame {
                id: None,
                event: Some("reset".into()),
                data: Some("{\"reason\":\"unknown\"}".into()),
            },
        ]
    }

    #[test]
    fn frames_comments_and_position_only_frames() {
        assert_eq!(Parser::default().push(STREAM.as_bytes()), expected());
    }

    #[test]
    fn data_lines_join() {
        let frames = Parser::default().push(b"data: a\ndata: b\n\n");
        assert_eq!(frames[0].data.as_deref(), Some("a\nb"));
    }

    proptest! {
        /// However the bytes are cut, the same frames come out.
        #[test]
        fn any_cut_gives_the_same_frames(cuts in proptest::collection::vec(0usize..STREAM.len(), 0..12)) {
            let mut cuts = cuts;
            cuts.sort();
            cuts.dedup();
            let bytes = STREAM.as_bytes();
            let mut parser = Parser::default();
            let mut frames = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                frames.extend(parser.push(&bytes[from..cut]));
                from = cut;
            }
            prop_assert_eq!(frames, expected());
        }
    }
}
