//! Times of the log: RFC 3339 stamps in UTC with milliseconds, written digit by digit (a line
//! per call: no formatting machinery), and the UTC day that names a record's file.

use std::time::SystemTime;

pub(super) fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    let buf = stamp(*t);
    s.serialize_str(std::str::from_utf8(&buf).unwrap_or("1970-01-01T00:00:00.000Z"))
}

/// `2026-12-01T21:24:26.123Z` for `t`.
pub fn rfc3339(t: SystemTime) -> String {
    String::from_utf8_lossy(&stamp(t)).into_owned()
}

/// The day of a stamp (`2026-12-01`).
pub(super) fn first_ten(stamp: &[u8; 24]) -> [u8; 10] {
    let mut day = [0; 10];
    day.copy_from_slice(&stamp[..10]);
    day
}

/// The stamp's bytes, written digit by digit (a line per call: no formatting machinery).
pub(super) fn stamp(t: SystemTime) -> [u8; 24] {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (y, m, day) = civil(i64::try_from(secs / 86_400).unwrap_or(0));
    let rem = secs % 86_400;
    let mut out = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut v: u64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, u64::try_from(y.clamp(0, 9999)).unwrap_or(0));
    put(5, 2, u64::from(m));
    put(8, 2, u64::from(day));
    put(11, 2, rem / 3600);
    put(14, 2, rem % 3600 / 60);
    put(17, 2, rem % 60);
    put(20, 3, u64::from(d.subsec_millis()));
    out
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's `civil_from_days`).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
