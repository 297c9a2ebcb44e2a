//! How every record writes a time: RFC 3339 in UTC with second precision
//! (`2026-11-29T09:55:00Z`), the one shape `pipeline-state.json`, the run records and the
//! retrospective ledger have always held.
//!
//! The records hold `DateTime<Utc>` (so durations, ordering and GitHub's `since=` are arithmetic,
//! not string parsing), and serialize through this module with `#[serde(with =
//! "crate::types::time")]`, so a file written now is byte-identical to one written when the
//! fields were strings. Reading accepts any RFC 3339 time (another offset, fractional seconds)
//! and converts it to UTC, to the second: a hand-edited or foreign time still loads, and is written back in the
//! one shape. A string that is not a time at all is refused with what was found, which the state
//! loader reports with the file and the key.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// The current time, truncated to the second: what a record written now holds, so that a value
/// kept in memory equals the one read back from the file.
pub fn now() -> DateTime<Utc> {
    whole_seconds(Utc::now())
}

/// `t` without its fraction of a second: the precision of every record.
fn whole_seconds(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t)
}

/// `2026-11-29T09:55:00Z`: the record shape, for a time shown to people or put in a name.
pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Parses any RFC 3339 time into UTC, to the second (a fraction is dropped, as a save would drop
/// it, so what is in memory is what the file will hold); the error names what was found and what
/// was expected.
pub fn parse(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| whole_seconds(t.with_timezone(&Utc)))
        .map_err(|e| {
            format!("invalid time `{s}` ({e}), expected RFC 3339 such as 2026-11-29T09:55:00Z")
        })
}

/// Writes `t` in the record shape (`with = "crate::types::time"`).
pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format(t))
}

/// Reads a time written in any RFC 3339 shape (`with = "crate::types::time"`).
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let s = String::deserialize(d)?;
    parse(&s).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Record {
        #[serde(with = "crate::types::time")]
        ts: DateTime<Utc>,
    }

    #[test]
    fn the_record_shape_reads_and_writes_back_byte_for_byte() {
        let text = r#"{"ts":"2026-11-29T09:55:00Z"}"#;
        let r: Record = serde_json::from_str(text).unwrap();
        assert_eq!(r.ts.timestamp(), 1_795_946_100);
        assert_eq!(serde_json::to_string(&r).unwrap(), text);
    }

    #[test]
    fn another_offset_or_fractions_load_as_utc_and_save_in_the_record_shape() {
        let r: Record = serde_json::from_str(r#"{"ts":"2026-11-29T11:55:00.250+02:00"}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"ts":"2026-11-29T09:55:00Z"}"#
        );
    }

    #[test]
    fn a_string_that_is_no_time_is_refused_naming_it() {
        let err = serde_json::from_str::<Record>(r#"{"ts":"yesterday"}"#)
            .expect_err("not a time")
            .to_string();
        assert!(
            err.contains("`yesterday`") && err.contains("RFC 3339"),
            "{err}"
        );
    }

    #[test]
    fn now_has_whole_seconds_so_it_survives_a_save() {
        let t = now();
        assert_eq!(t.timestamp_subsec_nanos(), 0);
        assert_eq!(parse(&format(&t)), Ok(t));
    }
}
