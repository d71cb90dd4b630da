//! The GEMM tune cache: the fastest kernel per GPU, types, layout and shape, as `oxtile tune gemm` ([`crate::tune`])
//! measured them, in a JSON file; [`Variant::Auto`] looks there first and falls back to its heuristic for shapes the
//! file does not hold. Reading the cache needs nothing of the benchmark harness.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::Variant;
use crate::runtime::Gpu;
use crate::types::{GemmLayout, GemmShape};

/// The version of the file format this oxtile reads and writes: `{"version": 1, "gemm": {key: variant, ...}}`. Files
/// written before the field existed are version 1 too (the same map).
pub const TUNE_CACHE_VERSION: u32 = 1;

/// The file: one entry per (GPU, input and output types, layout, shape).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneCache {
    #[serde(default = "first_version")]
    pub version: u32,
    pub gemm: BTreeMap<String, Variant>,
}

fn first_version() -> u32 {
    1
}

impl Default for TuneCache {
    fn default() -> Self {
        TuneCache { version: TUNE_CACHE_VERSION, gemm: BTreeMap::new() }
    }
}

/// What [`TuneCache::save`] found at the path it merged into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Saved {
    /// No file yet: the cache's entries alone.
    Created,
    /// The file's entries and the cache's, the cache's winning where both hold a key.
    Merged,
    /// The file could not be read as a tune cache of this version (the reason): it was replaced by the cache's
    /// entries.
    Replaced(String),
}

/// The cache key of a GEMM problem: the GPU by name and SM count (the choice depends on both), the input and output
/// types, the layout in BLAS letters and the shape, e.g. `NVIDIA H200 (132 SMs) bf16->bf16 tt 4096x4096x4096`.
/// (Keys written before layouts and output types existed, `... bf16 4096x4096x4096`, no longer match anything.)
pub fn gemm_key(
    device: &str,
    sm_count: u32,
    input: &str,
    output: &str,
    layout: GemmLayout,
    shape: GemmShape,
) -> String {
    format!("{device} ({sm_count} SMs) {input}->{output} {layout} {}x{}x{}", shape.m, shape.n, shape.k)
}

impl TuneCache {
    /// `$OXTILE_TUNE_CACHE`, else `$XDG_CACHE_HOME/oxtile/gemm-tune.json`, else `$HOME/.cache/oxtile/gemm-tune.json`.
    pub fn default_path() -> Option<PathBuf> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        var("OXTILE_TUNE_CACHE")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("oxtile/gemm-tune.json")))
            .or_else(|| var("HOME").map(|d| d.join(".cache/oxtile/gemm-tune.json")))
    }

    /// The cache at `path`; an absent file is an empty cache. An unreadable file, one that is not this format's JSON
    /// (malformed, another program's, a variant this oxtile does not know) or of another version is an
    /// [`Error::TuneCache`]. Takes no lock: [`TuneCache::save`] replaces the file by a rename, so a reader sees the
    /// whole old file or the whole new one.
    pub fn load(path: &Path) -> Result<TuneCache> {
        let error = |message: String| Error::TuneCache { path: path.display().to_string(), message };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TuneCache::default()),
            Err(e) => return Err(error(e.to_string())),
        };
        let cache: TuneCache =
            serde_json::from_str(&text).map_err(|e| error(format!("malformed or not a GEMM tune cache: {e}")))?;
        if cache.version != TUNE_CACHE_VERSION {
            let message = format!("format version {}, this oxtile reads version {TUNE_CACHE_VERSION}", cache.version);
            return Err(error(message));
        }
        Ok(cache)
    }

    /// Merges the cache's entries into the file at `path` (created with its folder if absent), the cache's entries
    /// winning over the file's for the same key. Concurrent savers (threads or processes, e.g. two `oxtile tune`
    /// runs) each keep their entries: the read, merge and write happen under an exclusive lock on `path` + `.lock`
    /// (a file left in place, as removing it would let a third saver lock a fresh one while another holds the old),
    /// and the merged cache goes to a temporary file of a name no other saver uses, renamed over `path` so a reader
    /// never sees half of it. A file that cannot be read as a tune cache of this version is replaced
    /// ([`Saved::Replaced`] says why).
    pub fn save(&self, path: &Path) -> Result<Saved> {
        static TEMPORARIES: AtomicU64 = AtomicU64::new(0);
        let error = |message: String| Error::TuneCache { path: path.display().to_string(), message };
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir).map_err(|e| error(format!("creating {}: {e}", dir.display())))?;
        let name = path.file_name().ok_or_else(|| error("not a file path".into()))?;
        let sibling = |suffix: &str| {
            let mut sibling = name.to_os_string();
            sibling.push(suffix);
            dir.join(sibling)
        };
        let lock_path = sibling(".lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| error(format!("opening the lock file {}: {e}", lock_path.display())))?;
        lock.lock().map_err(|e| error(format!("locking {}: {e}", lock_path.display())))?;
        // Under the lock (released when `lock` is closed at return): nobody else writes `path` now.
        let existed = path.exists();
        let (mut merged, saved) = match TuneCache::load(path) {
            Ok(existing) => (existing, if existed { Saved::Merged } else { Saved::Created }),
            Err(reason) => (TuneCache::default(), Saved::Replaced(reason.to_string())),
        };
        merged.gemm.extend(self.gemm.iter().map(|(key, variant)| (key.clone(), *variant)));
        let text = serde_json::to_string_pretty(&merged).map_err(|e| error(e.to_string()))? + "\n";
        let unique = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
        let temporary = sibling(&format!(".{}.{unique}.tmp", std::process::id()));
        if let Err(e) = write_and_rename(&temporary, text.as_bytes(), path) {
            // The rename did not happen: the temporary file, if made, is nobody's.
            let _ = std::fs::remove_file(&temporary);
            return Err(error(format!("writing through {}: {e}", temporary.display())));
        }
        Ok(saved)
    }
}

/// Writes `bytes` to the new file `temporary` (refused if it exists), flushes it to the disk, and renames it to `path`.
fn write_and_rename(temporary: &Path, bytes: &[u8], path: &Path) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(temporary, path)
}

/// The recorded choice for this GPU, types, layout and shape, from the default cache file (read once per process).
/// A cache file that cannot be read ([`TuneCache::load`]) is reported once per process on stderr and then treated as
/// empty: [`Variant::Auto`] falls back to its heuristic rather than failing every GEMM.
pub(crate) fn cached_gemm_variant(
    gpu: &Gpu,
    input: &str,
    output: &str,
    layout: GemmLayout,
    shape: GemmShape,
) -> Option<Variant> {
    static CACHE: OnceLock<TuneCache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| load_or_warn(TuneCache::default_path().as_deref()));
    cache.gemm.get(&gemm_key(gpu.name(), gpu.sm_count(), input, output, layout, shape)).copied()
}

/// The cache at `path` for [`cached_gemm_variant`]: empty when there is none, and empty with a warning on stderr when
/// it cannot be read.
fn load_or_warn(path: Option<&Path>) -> TuneCache {
    let Some(path) = path else { return TuneCache::default() };
    TuneCache::load(path).unwrap_or_else(|e| {
        eprintln!(
            "oxtile: warning: {e}; ignored: Variant::Auto uses its heuristic (`oxtile tune gemm` replaces the file)"
        );
        TuneCache::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_round_trips_and_an_absent_file_is_empty() {
        let dir = std::env::temp_dir().join(format!("oxtile-tune-test-{}", std::process::id()));
        let path = dir.join("nested/gemm-tune.json");
        assert_eq!(TuneCache::load(&path).unwrap(), TuneCache::default());
        let mut cache = TuneCache::default();
        let shape = GemmShape::new(4096, 4096, 4096);
        cache.gemm.insert(gemm_key("NVIDIA H200", 132, "bf16", "bf16", GemmLayout::Tn, shape), Variant::WideCluster2);
        cache.gemm.insert(gemm_key("NVIDIA H200", 132, "bf16", "f32", GemmLayout::Nt, shape), Variant::Wide);
        assert_eq!(cache.save(&path).unwrap(), Saved::Created);
        assert_eq!(TuneCache::load(&path).unwrap(), cache);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keys_tell_layouts_and_output_types_apart() {
        let shape = GemmShape::new(4096, 4096, 4096);
        let key = |output, layout| gemm_key("NVIDIA H200", 132, "bf16", output, layout, shape);
        assert_eq!(key("bf16", GemmLayout::Tt), "NVIDIA H200 (132 SMs) bf16->bf16 tt 4096x4096x4096");
        let keys = [
            key("bf16", GemmLayout::Tn),
            key("bf16", GemmLayout::Tt),
            key("f32", GemmLayout::Tn),
            key("f32", GemmLayout::Tt),
        ];
        for (i, a) in keys.iter().enumerate() {
            assert!(keys[i + 1..].iter().all(|b| a != b), "{keys:?}");
        }
    }

    /// A fresh folder for one test.
    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("oxtile-tune-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn unreadable_caches_are_clear_errors_and_auto_ignores_them() {
        let dir = scratch("bad");
        let cases = [
            ("corrupt", "{ not json", "malformed"),
            ("truncated", "{\"version\": 1, \"gemm\": {\"NVIDIA H200 (132 SMs)", "malformed"),
            ("foreign", "{\"name\": \"another tool\", \"entries\": [1, 2]}", "missing field `gemm`"),
            ("array", "[1, 2, 3]", "malformed"),
            ("unknown-variant", "{\"gemm\": {\"k\": \"Hyper\"}}", "unknown variant `Hyper`"),
            ("newer", "{\"version\": 2, \"gemm\": {}}", "format version 2, this oxtile reads version 1"),
        ];
        for (name, text, expected) in cases {
            let path = dir.join(format!("{name}.json"));
            std::fs::write(&path, text).unwrap();
            let err = TuneCache::load(&path).unwrap_err();
            assert!(matches!(err, Error::TuneCache { .. }), "{name}: {err}");
            let message = err.to_string();
            assert!(message.contains(expected) && message.contains(name), "{name}: {message}");
            // What Variant::Auto reads: nothing, so the heuristic decides.
            assert_eq!(load_or_warn(Some(&path)), TuneCache::default(), "{name}");
        }
        // A folder where the file should be: unreadable, ignored too.
        assert!(TuneCache::load(&dir).is_err());
        assert_eq!(load_or_warn(Some(&dir)), TuneCache::default());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_without_a_version_are_version_1_and_saves_write_it() {
        let dir = scratch("version");
        let path = dir.join("gemm-tune.json");
        std::fs::write(&path, "{\"gemm\": {\"a key\": \"Wide\"}}").unwrap();
        let cache = TuneCache::load(&path).unwrap();
        assert_eq!((cache.version, cache.gemm.get("a key")), (1, Some(&Variant::Wide)));
        assert_eq!(TuneCache::default().save(&path).unwrap(), Saved::Merged);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"version\": 1") && text.contains("\"a key\": \"Wide\""), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn saves_merge_with_the_file_and_replace_an_unreadable_one() {
        let dir = scratch("merge");
        let path = dir.join("gemm-tune.json");
        let one = |key: &str, variant| TuneCache { gemm: [(key.to_string(), variant)].into(), ..TuneCache::default() };
        assert_eq!(one("a", Variant::Wide).save(&path).unwrap(), Saved::Created);
        assert_eq!(one("b", Variant::Flat).save(&path).unwrap(), Saved::Merged);
        assert_eq!(one("a", Variant::PingPong).save(&path).unwrap(), Saved::Merged);
        let loaded = TuneCache::load(&path).unwrap();
        assert_eq!(loaded.gemm, [("a".to_string(), Variant::PingPong), ("b".to_string(), Variant::Flat)].into());
        std::fs::write(&path, "garbage").unwrap();
        let saved = one("c", Variant::Square).save(&path).unwrap();
        assert!(matches!(&saved, Saved::Replaced(reason) if reason.contains("malformed")), "{saved:?}");
        assert_eq!(TuneCache::load(&path).unwrap(), one("c", Variant::Square));
        // Only the cache and its lock file remain: no temporary left behind.
        let mut names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["gemm-tune.json", "gemm-tune.json.lock"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concurrent_savers_each_keep_their_entries() {
        // Several savers at once, each saving one new entry at a time: without the lock and the merge under it,
        // a saver's read-merge-write would drop the entries another wrote in between (and a shared temporary name
        // would let one rename the other's half-written file).
        let dir = scratch("concurrent");
        let path = dir.join("gemm-tune.json");
        let (savers, entries) = (4, 25);
        let start = std::sync::Barrier::new(savers);
        std::thread::scope(|scope| {
            for saver in 0..savers {
                let (path, start) = (&path, &start);
                scope.spawn(move || {
                    start.wait();
                    for entry in 0..entries {
                        let key = format!("saver {saver} entry {entry}");
                        let cache = TuneCache { gemm: [(key, Variant::Narrow)].into(), ..TuneCache::default() };
                        cache.save(path).unwrap();
                        // Readers take no lock and never see a partial file.
                        TuneCache::load(path).unwrap();
                    }
                });
            }
        });
        let cache = TuneCache::load(&path).unwrap();
        assert_eq!(cache.gemm.len(), savers * entries);
        for saver in 0..savers {
            for entry in 0..entries {
                assert!(cache.gemm.contains_key(&format!("saver {saver} entry {entry}")), "{saver} {entry}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
