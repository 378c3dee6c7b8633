//! Atlas collection and pack builds on a real single-node Slurm cluster (Debian slurm-wlm +
//! munge, started on localhost by .ci/slurm-up): plan 4 shards of the CNN's CPU grid, submit the
//! generated sbatch array, merge the shards, and compare with a one-machine collection record for
//! record; plan a pack build (one job per format, each starting its own llama-server), submit its
//! array, assemble, and compare with `pack build` on one machine; compute a fresh audit's
//! references as an array, one format per task (`dataset references-slurm`), and compare each
//! with the same references computed on one machine.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

struct Cluster {
    dir: PathBuf,
    conf: String,
    /// One cluster at a time: `.ci/slurm-up` listens on fixed loopback ports.
    _one: std::sync::MutexGuard<'static, ()>,
}

static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Cluster {
    fn up(dir: &Path) -> Cluster {
        let one = ONE_CLUSTER
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert!(
            Path::new("/usr/sbin/slurmctld").exists() && Path::new("/usr/sbin/munged").exists(),
            "Slurm is not installed: run .ci/setup (it installs Debian's slurm-wlm and munge)"
        );
        let out = Command::new(root.join(".ci/slurm-up"))
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "slurm-up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Cluster {
            dir: dir.to_path_buf(),
            conf: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            _one: one,
        }
    }
}

impl Cluster {
    /// [`Self::run_array`] of `script`'s `tasks` tasks, logging to `logs` with `{}` the index.
    fn run_tasks(&self, script: &Path, tasks: usize, logs: &Path) {
        let text = std::fs::read_to_string(script).unwrap();
        let array = format!("#SBATCH --array=0-{}", tasks - 1);
        assert!(text.contains(&array), "{text}");
        let logs: Vec<PathBuf> = (0..tasks)
            .map(|i| PathBuf::from(logs.display().to_string().replace("{}", &i.to_string())))
            .collect();
        self.run_array(script, &logs);
    }

    /// `sbatch --wait` of `script`, its tasks' `logs` shown where it fails.
    fn run_array(&self, script: &Path, logs: &[PathBuf]) {
        let submitted = Command::new("sbatch")
            .env("SLURM_CONF", &self.conf)
            .arg("--wait")
            .arg(script)
            .output()
            .unwrap();
        let logs: String = logs
            .iter()
            .map(|l| std::fs::read_to_string(l).unwrap_or_default())
            .collect();
        assert!(
            submitted.status.success(),
            "sbatch: {}{}\ntask logs:\n{logs}",
            String::from_utf8_lossy(&submitted.stdout),
            String::from_utf8_lossy(&submitted.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let _ = Command::new(root.join(".ci/slurm-down"))
            .arg(&self.dir)
            .status();
    }
}

#[test]
fn a_slurm_array_over_four_shards_merges_into_the_one_machine_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster::up(&tmp.path().join("slurm"));
    let plan_dir = tmp.path().join("atlas");
    let plan = plan_dir.join("plan.json");
    ok(&[
        "atlas",
        "plan",
        "--model",
        "cnn-digits",
        "--probes",
        "40",
        "--shards",
        "4",
        "--out",
        plan_dir.to_str().unwrap(),
    ]);
    let script = tmp.path().join("atlas.sbatch");
    ok(&[
        "atlas",
        "slurm",
        plan.to_str().unwrap(),
        "--hspi",
        env!("CARGO_BIN_EXE_hspi"),
        "--cpus-per-task",
        "1",
        "--out",
        script.to_str().unwrap(),
    ]);
    cluster.run_tasks(&script, 4, &plan_dir.join("logs/shard-{}.log"));
    let shards: Vec<String> = (0..4)
        .map(|i| {
            plan_dir
                .join(format!("shards/shard-{i:03}"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let merged = tmp.path().join("merged");
    let mut args = vec!["dataset", "merge", "--out", merged.to_str().unwrap()];
    args.extend(shards.iter().map(String::as_str));
    ok(&args);
    let single = tmp.path().join("single");
    ok(&[
        "collect",
        "--model",
        "cnn-digits",
        "--probes",
        plan_dir.join("probes.json").to_str().unwrap(),
        "--out",
        single.to_str().unwrap(),
    ]);
    let (m, s) = (record_set(&merged), record_set(&single));
    assert_eq!(m.len(), 26 * 40);
    assert_eq!(m, s, "the merged atlas equals a one-machine collection");
    ok(&["dataset", "verify", merged.to_str().unwrap()]);
    // Every shard's provenance is kept: its session (host, command) plus the merge's own.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["sessions"].as_array().unwrap().len(), 5);
    assert_eq!(manifest["platforms"].as_array().unwrap().len(), 26);
}

#[test]
fn bad_shards_fail_alone_with_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let plan_dir = tmp.path().join("atlas");
    let plan = plan_dir.join("plan.json");
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let platforms = format!("{isa}/candle-0.11.1/f32/bs1,{isa}/candle-0.11.1/bf16/bs1,cuda-h100-sxm-sm90-132sm/cublas-12.6/f16/bs1");
    ok(&[
        "atlas",
        "plan",
        "--platforms",
        &platforms,
        "--probes",
        "10",
        "--shards",
        "2",
        "--out",
        plan_dir.to_str().unwrap(),
    ]);
    let p = plan.to_str().unwrap();
    // Shard 0 is the CPU shard, shard 1 the GPU one; on this CPU node the GPU shard fails alone.
    let plan_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    assert_eq!(plan_json["shards"][1]["node"], "gpu");
    let r = run(&["collect", "--plan", p, "--shard", "1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no CUDA driver found"), "{}", r.stderr);
    assert_eq!(run(&["collect", "--plan", p, "--shard", "0"]).code, 0);
    // Out of range, and the scheduler's index read from the environment.
    let r = run(&["collect", "--plan", p, "--shard", "5"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("shard 5 is out of range: the plan has 2 shards (0-1)"),
        "{}",
        r.stderr
    );
    let out = hspi()
        .args(["collect", "--plan", p])
        .env("SLURM_ARRAY_TASK_ID", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Merging shards of different probe sets names the shard.
    let other = tmp.path().join("other");
    ok(&[
        "collect",
        "--platforms",
        &format!("{isa}/candle-0.11.1/f16/bs1"),
        "--probes",
        "10",
        "--seed",
        "9",
        "--out",
        other.to_str().unwrap(),
    ]);
    let shard0 = plan_dir.join("shards/shard-000");
    let r = run(&[
        "dataset",
        "merge",
        shard0.to_str().unwrap(),
        other.to_str().unwrap(),
        "--out",
        tmp.path().join("m").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains(&format!(
            "cannot merge shard {}: probe set",
            other.display()
        )),
        "{}",
        r.stderr
    );
}

/// One record as (platform, probe, output bits).
type RecordBits = (String, String, Vec<u8>);

/// A pack's datasets under `sub` (`references`, `repeats`): per directory, its records, sorted.
fn pack_records(pack: &Path, sub: &str) -> Vec<(String, Vec<RecordBits>)> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(pack.join(sub))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let mut records: Vec<_> = hspi_datasets::Dataset::open(d)
                .unwrap()
                .records()
                .unwrap()
                .into_iter()
                .map(|r| (r.platform_key(), r.probe_id, r.outputs.identity_bytes()))
                .collect();
            records.sort();
            (
                d.file_name().unwrap().to_string_lossy().into_owned(),
                records,
            )
        })
        .collect()
}

#[test]
fn a_pack_built_as_a_slurm_array_equals_the_one_machine_build() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster::up(&tmp.path().join("slurm"));
    let gguf = llama::smollm2_gguf();
    // A third platform from an engine the job starts itself (as vLLM on a GPU node would be).
    let q4_0 = llama::build("avx2").platform("q4_0");
    let engine = format!(
        "{q4_0}={} -m {} --alias smollm2 --host 127.0.0.1 --port {{port}} -t 2 -c 2048 -np 4",
        llama::server_bin("avx2").display(),
        llama::gguf("Q4_0").display()
    );
    let build_args = |out: &Path| -> Vec<String> {
        [
            "--model",
            "smollm2",
            "--gguf",
            gguf.to_str().unwrap(),
            "--formats",
            "f16,q8_0",
            "--engine",
            &engine,
            "--count",
            "8",
            "--out",
            out.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };
    let plan_dir = tmp.path().join("plan");
    let plan = plan_dir.join("plan.json");
    let mut args = vec!["pack".to_string(), "plan".into()];
    args.extend(build_args(&plan_dir));
    ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    // Nothing collected yet: assembling names every unfinished job.
    let packed = tmp.path().join("slurm-pack");
    let r = run(&[
        "pack",
        "assemble",
        plan.to_str().unwrap(),
        "--out",
        packed.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "job 0 (f16 on llama.cpp), job 1 (q8_0 on llama.cpp), job 2 ({q4_0} from an engine \
             started here: "
        )),
        "{}",
        r.stderr
    );
    let script = tmp.path().join("pack.sbatch");
    // Two CPUs per task, as many as llama-server's threads (ggml's threads spin: on one CPU a
    // job took 3.5 minutes instead of 5 seconds); the node's two CPUs run one task at a time.
    ok(&[
        "pack",
        "slurm",
        plan.to_str().unwrap(),
        "--hspi",
        env!("CARGO_BIN_EXE_hspi"),
        "--cpus-per-task",
        "2",
        "--out",
        script.to_str().unwrap(),
    ]);
    cluster.run_tasks(&script, 3, &plan_dir.join("logs/job-{}.log"));
    ok(&[
        "pack",
        "assemble",
        plan.to_str().unwrap(),
        "--out",
        packed.to_str().unwrap(),
    ]);
    let single = tmp.path().join("one-machine");
    let mut args = vec!["pack".to_string(), "build".into()];
    args.extend(build_args(&single));
    ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    for sub in ["references", "repeats"] {
        let (a, b) = (pack_records(&packed, sub), pack_records(&single, sub));
        assert_eq!(a.len(), 3, "{sub}: {a:?}");
        assert_eq!(
            a, b,
            "{sub}: the Slurm-built pack's records equal the one-machine build's"
        );
    }
    let classifier = |p: &Path| std::fs::read(p.join("classifier.json")).unwrap();
    assert_eq!(
        classifier(&packed),
        classifier(&single),
        "the same classifier, byte for byte"
    );
    let platforms = |p: &Path| -> serde_json::Value {
        let m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.join("pack.json")).unwrap()).unwrap();
        m["platforms"].clone()
    };
    assert_eq!(platforms(&packed), platforms(&single));
    ok(&["pack", "verify", packed.to_str().unwrap()]);
    // A finished job is kept when asked again; an unknown index is named.
    let r = run(&["pack", "job", plan.to_str().unwrap(), "--index", "1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("was finished already"), "{}", r.stdout);
    let r = run(&["pack", "job", plan.to_str().unwrap(), "--index", "3"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no job 3 (it has 3)"), "{}", r.stderr);
}

/// hspi's formats one task each, and an engine a task starts for itself (a llama-server serving
/// Q8_0, as vLLM on a GPU node would serve its format): every task's references equal those
/// computed on one machine, bit for bit, and the engine is stopped when its task ends.
#[test]
fn fresh_references_as_a_slurm_array_equal_the_one_machine_ones() {
    let tmp = tempfile::tempdir().unwrap();
    // Answers of a live llama-server to prompts made for this audit.
    let server = llama::start("avx2", "F16");
    let probes = hspi_probe::fresh_prompts(71, 4, 8, 5);
    let file = tmp.path().join("fresh.json");
    hspi_probe::write_probe_set(&file, &probes).unwrap();
    let answers = chat_answers(&server.url, &file, &tmp.path().join("answers"));
    drop(server);
    let weights = llama::smollm2_gguf();
    let cluster = Cluster::up(&tmp.path().join("slurm"));
    let out = tmp.path().join("references");
    let script = tmp.path().join("references.sbatch");
    let q8_0 = llama::build("avx2").platform("q8_0");
    let engine = format!(
        "{q8_0}={} -m {} --host 127.0.0.1 --port {{port}} -t 2 -c 2048",
        llama::server_bin("avx2").display(),
        llama::gguf("Q8_0").display()
    );
    ok(&[
        "dataset",
        "references-slurm",
        answers.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
        "--formats",
        "f16,q8_0",
        "--engine",
        &engine,
        "--engine-api",
        "llama-server",
        "--engine-wait",
        "60",
        "--out",
        out.to_str().unwrap(),
        "--hspi",
        env!("CARGO_BIN_EXE_hspi"),
        "--cpus-per-task",
        "2",
        "--script",
        script.to_str().unwrap(),
    ]);
    cluster.run_tasks(&script, 3, &out.join("logs/references-{}.log"));
    // The engine the task started is gone with it.
    let pattern = format!(
        "-m {} --host 127.0.0.1 --port",
        llama::gguf("Q8_0").display()
    );
    let left = std::process::Command::new("pgrep")
        .args(["-f", &pattern])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "the task's llama-server is still running: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    // Each task's references equal those computed on one machine, bit for bit: hspi's formats,
    // and the engine's asked from one machine.
    let same_as_one_machine = |name: &str, how: &[&str], task_dir: PathBuf| {
        let single = tmp.path().join(format!("one-machine-{name}"));
        let (answers, weights) = (answers.to_str().unwrap(), weights.to_str().unwrap());
        let mut args = vec!["dataset", "references", answers, "--weights", weights];
        args.extend_from_slice(how);
        args.extend(["--out", single.to_str().unwrap()]);
        ok(&args);
        let (single, task_dir) = (single.to_str().unwrap(), task_dir.to_str().unwrap());
        ok(&["dataset", "diff", single, task_dir]);
    };
    for format in ["f16", "q8_0"] {
        same_as_one_machine(format, &["--formats", format], out.join(format));
    }
    let server = llama::start("avx2", "Q8_0");
    let spec = format!("{}={q8_0}", server.url);
    let task_dir = out.join(q8_0.replace('/', "_"));
    same_as_one_machine("engine", &["--reference-server", &spec], task_dir);
}
