// Server-sent events, read incrementally: bytes in, frames out. A frame is
// {id, event, data}, `data` the joined data lines (null when it had none);
// lines end with CRLF, LF or CR, a blank line ends a frame, and comments
// (keep-alives) alone give no frame.

export class SseParser {
  #buffer = "";
  #decoder = new TextDecoder();
  #frame = blank();

  /** The frames completed by this chunk (a Uint8Array or a string). */
  push(chunk) {
    const text = this.#buffer + (typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true }));
    const frames = [];
    // One pass with a cursor: the usual LF-only text takes indexOf alone.
    const crlf = text.includes("\r");
    let pos = 0;
    for (;;) {
      let end;
      let next;
      if (crlf) {
        const found = /\r\n|\n|\r/g;
        found.lastIndex = pos;
        const m = found.exec(text);
        // A CR last may be the first half of a CRLF: wait for the next chunk.
        if (!m || (m[0] === "\r" && m.index === text.length - 1)) break;
        end = m.index;
        next = end + m[0].length;
      } else {
        end = text.indexOf("\n", pos);
        if (end < 0) break;
        next = end + 1;
      }
      if (end === pos) {
        if (this.#frame.fields > 0) frames.push(finish(this.#frame));
        this.#frame = blank();
      } else {
        field(this.#frame, text.slice(pos, end));
      }
      pos = next;
    }
    this.#buffer = text.slice(pos);
    return frames;
  }
}

function blank() {
  return { id: null, event: null, data: [], fields: 0 };
}

function field(frame, line) {
  if (line.startsWith(":")) return; // a comment
  const colon = line.indexOf(":");
  const name = colon < 0 ? line : line.slice(0, colon);
  let value = colon < 0 ? "" : line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  frame.fields += 1;
  if (name === "id") frame.id = value;
  else if (name === "event") frame.event = value;
  else if (name === "data") frame.data.push(value);
}

function finish(frame) {
  return { id: frame.id, event: frame.event, data: frame.data.length ? frame.data.join("\n") : null };
}
