//! The disk floor: `bytes` written sequentially to one new file in 4 MiB
//! writes, then one fsync. An import cannot store its bytes faster than
//! this on the same disk.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use super::{allocated_bytes, Row};

pub fn run(dir: &Path, bytes: u64, entries: u64) -> Result<Row, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("floor.bin");
    let chunk: Vec<u8> = (0..4u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let t = Instant::now();
    let mut f = std::fs::File::create(&path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        left -= n as u64;
    }
    f.sync_all()
        .map_err(|e| format!("cannot sync {}: {e}", path.display()))?;
    let seconds = t.elapsed().as_secs_f64();
    let disk = allocated_bytes(dir);
    let _ = std::fs::remove_file(&path);
    Ok(Row {
        engine: "disk-floor".into(),
        workload: "import".into(),
        // The import's entries, so ops/s compares with the import rows.
        ops: entries,
        seconds,
        peak_rss_mib: f64::NAN,
        fsync: true,
        disk_bytes: Some(disk),
        bytes_written: Some(bytes),
        note: format!(
            "{:.0} MB/s sequential, one fsync",
            bytes as f64 / seconds / 1e6
        ),
        rounds: Vec::new(),
    })
}
