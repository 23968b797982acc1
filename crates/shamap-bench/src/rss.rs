//! Resident memory of this process from `/proc/self/status` (Linux), for
//! engines that do not count their own bytes.

/// `VmRSS` (current resident set) in bytes, if readable.
#[cfg_attr(
    not(feature = "peers-any"),
    expect(dead_code, reason = "used by the peer comparison")
)]
pub fn current() -> Option<u64> {
    field("VmRSS:")
}

/// `VmHWM` (peak resident set since start or the last [`reset_peak`]) in
/// bytes, if readable.
pub fn peak() -> Option<u64> {
    field("VmHWM:")
}

/// Resets `VmHWM` to the current resident set (writes `5` to
/// `/proc/self/clear_refs`); returns whether the kernel accepted it.
#[cfg_attr(
    not(feature = "peers-any"),
    expect(dead_code, reason = "used by the peer comparison")
)]
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn field(name: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}
