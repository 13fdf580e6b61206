//! A job array's batch folder (its index and script, in the shared folder)
//! goes once no job of it can read it: an array SLURM refused for good,
//! and one whose elements SLURM failed before any supervisor left a
//! status, with a daemon watching or not.

use std::path::PathBuf;

use crate::cluster::{cluster, executor, shared_cluster, slurm, world};
use crate::harness::Nj;
use crate::slurm_arrays::sweep;
use crate::slurm_faults::{kill_in_sbatch, slow_sbatch};

/// The batch folders left under the daemon's shared folder.
fn batches_left(nj: &Nj) -> Vec<PathBuf> {
    std::fs::read_dir(nj.path("shared").join("batches"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn an_array_slurm_refuses_fails_its_runs_and_leaves_no_batch_folder() {
    let _cluster = shared_cluster();
    // No such partition: sbatch refuses the array for good.
    let nj = world("partition = \"nosuch\"\n");
    let members = sweep(&nj, 2, "", "true");
    for &id in &members {
        assert_ne!(nj.wait(id), 0, "{}", nj.daemon_log());
        let show = nj.show(id);
        let message = show["runs"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains("SLURM refused the job"), "{message}");
    }
    assert!(!nj.path("marks").join("m0").exists(), "nothing ran");
    let left = batches_left(&nj);
    assert!(left.is_empty(), "no job will read its index: {left:?}");
}

#[test]
fn an_array_whose_elements_end_without_a_status_leaves_no_batch_folder() {
    let _cluster = shared_cluster();
    // More memory than the node has: SLURM takes the array and fails each
    // element before its batch step starts (BadConstraints), so no
    // supervisor leaves a status.
    let nj = world("");
    let members = sweep(&nj, 2, "resources = { mem = \"64TiB\" }\n", "true");
    for &id in &members {
        assert_ne!(nj.wait(id), 0, "{}", nj.daemon_log());
        let show = nj.show(id);
        assert_eq!(show["runs"][0]["class"], "lost", "{show}");
        let message = show["runs"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains("without a status"), "{message}");
    }
    assert!(!nj.path("marks").join("m0").exists(), "nothing ran");
    nj.until("the batch's folder is removed", || {
        batches_left(&nj).is_empty()
    });
}

#[test]
fn an_array_whose_elements_end_without_a_status_while_no_daemon_runs_leaves_no_batch_folder() {
    let _cluster = shared_cluster();
    let mut nj = Nj::new("");
    let (path, gate) = slow_sbatch(&nj);
    let shared = nj.path("shared");
    nj.set_config(&executor(&shared));
    nj.env.push(("SLURM_CONF".into(), cluster().into()));
    nj.env.push(("PATH".into(), path));
    nj.start();
    // As above, SLURM fails each element before its batch step starts.
    let members = sweep(&nj, 2, "resources = { mem = \"64TiB\" }\n", "true");
    nj.until("sbatch began", || gate.join("pid").exists());
    let batch = batches_left(&nj)[0]
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .expect("the batch's folder");
    // SLURM's jobs of batches of that number (other tests' daemons number
    // theirs alike): (job, state).
    let of_batch = || -> Vec<(String, String)> {
        slurm("squeue", &["-h", "-r", "-t", "all", "-o", "%k %i %T"])
            .lines()
            .filter(|l| l.contains(&format!(":batch:{batch} ")))
            .filter_map(|l| {
                let mut f = l.split_whitespace().skip(1);
                Some((f.next()?.to_string(), f.next()?.to_string()))
            })
            .collect()
    };
    let before: Vec<String> = of_batch().into_iter().map(|(j, _)| j).collect();
    // The daemon killed with the sbatch in flight; the array lands after,
    // and both elements fail while no daemon runs.
    kill_in_sbatch(&mut nj, &gate, false);
    nj.until("SLURM failed both elements", || {
        (of_batch().iter())
            .filter(|(j, state)| !before.contains(j) && state == "FAILED")
            .count()
            == 2
    });
    // The next daemon adopts each as ended without a status.
    nj.start();
    for &id in &members {
        assert_ne!(nj.wait(id), 0, "{}", nj.daemon_log());
        let show = nj.show(id);
        assert_eq!(show["runs"][0]["class"], "lost", "{show}");
    }
    nj.until("the batch's folder is removed", || {
        batches_left(&nj).is_empty()
    });
}
