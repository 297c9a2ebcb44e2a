//! A program's output kept within a memory bound: the first and last bytes in memory, the whole
//! stream in a file once it outgrows the head.
//!
//! Agents are untrusted and chatty: one printing 200 MiB used to cost 420 MB of RSS, because the
//! output was buffered whole and then copied into a `String`. What the orchestrator parses (a
//! review envelope, a JSON report) sits at the start or at the end of an answer, so a head and a
//! tail are enough; the middle goes to disk, where a person can still read it. The type is fed
//! chunk by chunk by whatever drains the pipe, so it does not care how draining is done.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bytes kept from the start of a stream.
pub const HEAD_BYTES: usize = 1024 * 1024;
/// Bytes kept from the end of a stream.
pub const TAIL_BYTES: usize = 1024 * 1024;

/// Where the whole stream goes once it outgrows the head.
#[derive(Debug)]
enum Spill {
    /// Nowhere: the middle is dropped.
    None,
    /// Not needed yet: the file is created only when the head overflows.
    Pending(PathBuf),
    /// Being written.
    Open(PathBuf, File),
    /// Could not be written; the reason goes into the note.
    Failed(PathBuf, String),
}

/// The head and tail of a stream, its total length, and (optionally) the whole of it in a file.
#[derive(Debug)]
pub struct BoundedCapture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
    spill: Spill,
}

impl BoundedCapture {
    /// A capture keeping `head_cap` + `tail_cap` bytes in memory; with `spill_to`, a stream that
    /// outgrows the head is written whole to that file (its directory is created).
    pub fn new(head_cap: usize, tail_cap: usize, spill_to: Option<PathBuf>) -> BoundedCapture {
        BoundedCapture {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            total: 0,
            spill: spill_to.map_or(Spill::None, Spill::Pending),
        }
    }

    /// A capture with the default bounds (`HEAD_BYTES`, `TAIL_BYTES`).
    pub fn with_defaults(spill_to: Option<PathBuf>) -> BoundedCapture {
        BoundedCapture::new(HEAD_BYTES, TAIL_BYTES, spill_to)
    }

    /// Takes the next chunk of the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        let (to_head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(to_head);
        if rest.is_empty() {
            return;
        }
        self.spill_write(rest);
        self.tail.extend(rest);
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        self.tail.drain(..excess);
    }

    /// Writes `rest` (bytes past the head) to the spill file, opening it with the head first.
    fn spill_write(&mut self, rest: &[u8]) {
        if let Spill::Pending(path) = &self.spill {
            let path = path.clone();
            // Through `fsx`: the directory is in the agent's reach, so a link planted there is
            // refused, never written through.
            let opened = crate::fsx::create(&path).and_then(|mut f| {
                f.write_all(&self.head)
                    .map(|()| f)
                    .map_err(|e| crate::error::Error::io(&path, e))
            });
            self.spill = match opened {
                Ok(f) => Spill::Open(path, f),
                Err(e) => Spill::Failed(path, e.to_string()),
            };
        }
        if let Spill::Open(path, file) = &mut self.spill
            && let Err(e) = file.write_all(rest)
        {
            self.spill = Spill::Failed(path.clone(), e.to_string());
        }
    }

    /// Bytes seen.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes dropped between head and tail.
    pub fn cut(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The file holding the whole stream, when the stream outgrew the head and it was written.
    pub fn spill_path(&self) -> Option<&Path> {
        match &self.spill {
            Spill::Open(path, _) => Some(path),
            _ => None,
        }
    }

    /// The note put where bytes were cut; `None` when nothing was.
    pub fn note(&self) -> Option<String> {
        let cut = self.cut();
        if cut == 0 {
            return None;
        }
        let whole = match &self.spill {
            Spill::Open(path, _) => format!("; the whole output is in {}", path.display()),
            Spill::Failed(path, e) => format!("; it could not be saved to {}: {e}", path.display()),
            Spill::None | Spill::Pending(_) => String::new(),
        };
        Some(format!(
            "[… {cut} bytes cut of {} (first {} and last {} kept){whole} …]",
            self.total,
            self.head.len(),
            self.tail.len()
        ))
    }

    /// The kept text (lossy UTF-8): the head, the note on its own line where bytes were cut, the
    /// tail. The file, if any, is flushed and closed.
    pub fn finish(mut self) -> String {
        if let Spill::Open(_, file) = &mut self.spill {
            let _ = file.flush();
        }
        let note = self.note();
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if let Some(note) = note {
            text.push('\n');
            text.push_str(&note);
            text.push('\n');
        }
        text.push_str(&String::from_utf8_lossy(self.tail.make_contiguous()));
        text
    }
}

/// Calls `f` with each line of `stream` (without its newline) and the number of bytes cut from
/// it: a line longer than `max` keeps its first `max` bytes. For output read line by line (an
/// app's log): a hostile program printing one endless line never costs more than `max` bytes.
pub fn for_each_bounded_line(
    stream: impl std::io::Read,
    max: usize,
    mut f: impl FnMut(&[u8], u64),
) {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(stream);
    let mut line = Vec::new();
    let mut cut = 0u64;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if buf.is_empty() {
            if !line.is_empty() || cut > 0 {
                f(&line, cut);
            }
            break;
        }
        let newline = buf.iter().position(|&b| b == b'\n');
        let part = &buf[..newline.unwrap_or(buf.len())];
        let keep = part.len().min(max.saturating_sub(line.len()));
        line.extend_from_slice(&part[..keep]);
        cut += (part.len() - keep) as u64;
        let consumed = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(consumed);
        if newline.is_some() {
            f(&line, cut);
            line.clear();
            cut = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::tests::{temp_file, temp_path};

    #[test]
    fn small_streams_are_kept_whole_and_write_no_file() {
        let (_dir, path) = temp_path("log/out.log");
        let mut c = BoundedCapture::new(8, 4, Some(path.clone()));
        c.push(b"hello");
        c.push(b"abc");
        assert_eq!(c.cut(), 0);
        assert_eq!(c.note(), None);
        assert_eq!(c.finish(), "helloabc");
        assert!(!path.exists());
    }

    #[test]
    fn big_streams_keep_head_and_tail_with_a_note_and_the_whole_in_a_file() {
        let (_dir, path) = temp_path("log/out.log");
        let mut c = BoundedCapture::new(4, 3, Some(path.clone()));
        let whole: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for chunk in whole.chunks(7) {
            c.push(chunk);
        }
        assert_eq!(c.total(), 1000);
        assert_eq!(c.cut(), 993);
        assert_eq!(c.spill_path(), Some(path.as_path()));
        let text = c.finish();
        assert!(text.starts_with("abcd\n[… 993 bytes cut of 1000"), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.ends_with(" …]\njkl"), "{text}");
        assert_eq!(std::fs::read(&path).unwrap(), whole);
    }

    #[test]
    fn without_a_file_the_note_still_says_what_was_cut() {
        let mut c = BoundedCapture::new(2, 2, None);
        c.push(b"0123456789");
        assert_eq!(
            c.finish(),
            "01\n[… 6 bytes cut of 10 (first 2 and last 2 kept) …]\n89"
        );
    }

    #[test]
    fn a_link_planted_at_the_log_is_not_written_through() {
        let (dir, outside) = temp_file("outside.txt", "keep");
        let path = dir.path().join("out.log");
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        let mut c = BoundedCapture::new(1, 1, Some(path.clone()));
        c.push(b"abc");
        assert!(c.finish().contains("could not be saved"));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
    }

    #[test]
    fn lines_are_bounded_and_say_how_much_was_cut() {
        let mut text = b"short\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 100_000));
        text.extend(b"\nlast");
        let mut seen = Vec::new();
        for_each_bounded_line(&text[..], 10, |line, cut| {
            seen.push((String::from_utf8_lossy(line).into_owned(), cut))
        });
        assert_eq!(
            seen,
            [
                ("short".to_string(), 0),
                ("x".repeat(10), 99_990),
                ("last".to_string(), 0)
            ]
        );
    }

    #[test]
    fn an_unwritable_file_is_named_in_the_note() {
        let mut c = BoundedCapture::new(1, 1, Some(PathBuf::from("/proc/no/such/dir/out.log")));
        c.push(b"abc");
        assert!(
            c.finish()
                .contains("could not be saved to /proc/no/such/dir/out.log")
        );
    }
}
