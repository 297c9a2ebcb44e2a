//! Benchmark: the evidence manifest (walkdir + sha256 on every core) over 1 GiB in 1,000 files,
//! against `sha256sum` over the same files in the same run.
//!
//! `cargo bench --bench manifest` runs the full size (1 GiB in 1,000 files); under `cargo test`
//! (no `--bench` argument) it runs a small smoke size so the suite stays fast. Both tools read
//! the files from the page cache (every file is read once before timing), each measurement is
//! repeated and the median is reported, and the hashes of both tools are compared so the
//! benchmark cannot win by hashing less.

// A test or benchmark program prints for the person running it; the library may not.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spec_orchestrate::evidence::manifest;
use spec_orchestrate::secrets::Redactor;

const REPEAT: usize = 5;

fn xorshift(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x
}

/// Writes `total` bytes of pseudo-random data split over `files` files (the last one takes the
/// remainder), spread over ten directories.
fn make_files(round: &Path, files: usize, total: usize) -> Vec<PathBuf> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut paths = Vec::with_capacity(files);
    let size = total / files;
    for i in 0..files {
        let this = if i + 1 == files {
            total - size * (files - 1)
        } else {
            size
        };
        let mut buf = vec![0u8; this];
        for chunk in buf.chunks_mut(8) {
            let v = xorshift(&mut seed).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        let dir = round.join(format!("d{:02}", i % 10));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join(format!("f{i:04}.bin"));
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&buf))
            .expect("write");
        paths.push(path);
    }
    paths
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn sha256sum(paths: &[PathBuf]) -> (Duration, BTreeMap<String, String>) {
    let started = Instant::now();
    let out = std::process::Command::new("sha256sum")
        .args(paths)
        .output()
        .expect("sha256sum runs (coreutils)");
    let elapsed = started.elapsed();
    assert!(out.status.success(), "sha256sum failed");
    let map = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(h, p)| (p.to_string(), h.to_string()))
        .collect();
    (elapsed, map)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    // 1 GiB in 1,000 files: 1,073,741 bytes each, the last one 1,073,765.
    let (files, total) = if full { (1000, 1 << 30) } else { (16, 1 << 20) };
    let tmp = tempfile::tempdir().expect("tempdir");
    let feature = tmp.path().join("feature");
    let round = feature.join("evidence/1");
    eprintln!(
        "writing {files} files, {total} bytes in all, under {}",
        round.display()
    );
    let paths = make_files(&round, files, total);
    // Warm the page cache for both tools.
    for p in &paths {
        let _ = std::fs::read(p).expect("read");
    }
    let redactor = Redactor::default();
    let cores = manifest::default_threads();
    let mut t_sum = Vec::new();
    let mut t_all = Vec::new();
    let mut t_one = Vec::new();
    let mut reference = BTreeMap::new();
    let mut rows = Vec::new();
    // Interleaved, so a change in machine load hits all three alike.
    for _ in 0..REPEAT {
        let (d, map) = sha256sum(&paths);
        t_sum.push(d);
        reference = map;
        let started = Instant::now();
        rows = manifest::build(&feature, &round, &redactor).expect("manifest");
        t_all.push(started.elapsed());
        let started = Instant::now();
        let single =
            manifest::build_with_threads(&feature, &round, &redactor, 1).expect("manifest");
        t_one.push(started.elapsed());
        assert_eq!(single, rows);
    }
    assert_eq!(rows.len(), files);
    assert_eq!(rows.iter().map(|r| r.bytes).sum::<u64>(), total as u64);
    for row in &rows {
        let full_path = feature.join(&row.path).display().to_string();
        assert_eq!(reference.get(&full_path), Some(&row.sha256), "{}", row.path);
    }
    let (sum, all, one) = (median(t_sum), median(t_all), median(t_one));
    let mib = total as f64 / (1 << 20) as f64;
    let rate = |d: Duration| mib / d.as_secs_f64();
    println!(
        "manifest benchmark: {files} files, {total} bytes ({mib:.0} MiB), median of {REPEAT}, {cores} core(s) available"
    );
    println!("| tool | time | MiB/s |");
    println!("|---|---|---|");
    println!(
        "| sha256sum (coreutils, one process) | {:.3} s | {:.0} |",
        sum.as_secs_f64(),
        rate(sum)
    );
    println!(
        "| manifest, 1 thread | {:.3} s | {:.0} |",
        one.as_secs_f64(),
        rate(one)
    );
    println!(
        "| manifest, {cores} threads | {:.3} s | {:.0} |",
        all.as_secs_f64(),
        rate(all)
    );
    println!(
        "ratio manifest/sha256sum: {:.2} ({cores} threads), {:.2} (1 thread); below 1 = faster than sha256sum",
        all.as_secs_f64() / sum.as_secs_f64(),
        one.as_secs_f64() / sum.as_secs_f64()
    );
}
