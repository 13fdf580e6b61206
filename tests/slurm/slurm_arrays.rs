//! Runs a round of starts releases together, asking alike, are one SLURM
//! job array: a sweep's members are its elements, each its own run. The
//! crash cases of an array on the real cluster: the daemon killed after
//! the batch's index was written and before its `sbatch` reached SLURM,
//! while that `sbatch` is in flight, and while the array is half started
//! (an element running, one waiting for a GPU); and one element cancelled
//! by hand. Each counts what ran, and how often.

use std::path::{Path, PathBuf};

use crate::cluster::{
    Hog, cluster, executor, gpu_cluster, job_field, job_of, jobs_like, shared_cluster, slurm,
    world, wrapped_sbatch,
};
use crate::harness::{Nj, read};
use crate::slurm_faults::{kill_in_sbatch, slow_sbatch};

/// Writes a sweep of `n` members (`i` = 0..n) whose member `i` appends a
/// line to `marks/m<i>` and then runs `then`, with `extra` TOML keys;
/// submits it; the members' ids, in order.
pub(crate) fn sweep(nj: &Nj, n: usize, extra: &str, then: &str) -> Vec<i64> {
    let marks = nj.path("marks");
    let file = nj.path("sweep").join("sweep.toml");
    let values: Vec<String> = (0..n).map(|i| format!("\"{i}\"")).collect();
    std::fs::write(
        &file,
        format!(
            "name = \"arr\"\ncommand = [\"sh\", \"-c\", \"echo run >> {}/m${{i}}; echo element=$SLURM_ARRAY_TASK_ID; {then}\"]\n{extra}[sweep]\ni = [{}]\n",
            marks.display(),
            values.join(", ")
        ),
    )
    .unwrap();
    let id = nj.submit(&[file.to_str().unwrap()]);
    nj.show(id)["members"]
        .as_array()
        .expect("a sweep's members")
        .iter()
        .map(|m| m["id"].as_i64().expect("a member id"))
        .collect()
}

/// Each member ran exactly once, ended once with `code`, as one run.
fn each_once(nj: &Nj, members: &[i64]) {
    let marks = nj.path("marks");
    for (i, &id) in members.iter().enumerate() {
        assert_eq!(nj.wait(id), 0, "member {i}: {}", nj.daemon_log());
        nj.until("its end is recorded", || {
            nj.show(id)["task"]["state"] == "succeeded"
        });
        assert_eq!(read(&marks.join(format!("m{i}"))), "run\n", "m{i} ran once");
    }
}

/// The batch comments of the elements SLURM keeps of `job`'s daemon.
fn elements_like(job: &str) -> Vec<String> {
    jobs_like(job)
        .into_iter()
        .filter(|c| c.contains(":batch:"))
        .collect()
}

#[test]
fn a_sweep_is_one_job_array_and_a_hand_scancel_of_one_element_ends_that_run_alone() {
    let _cluster = shared_cluster();
    let nj = world("");
    let members = sweep(&nj, 3, "", "if [ ${i} = 1 ]; then sleep 300; fi");
    let job = job_of(&nj, members[1]);
    let (array, index) = job.split_once('_').expect("an element of an array");
    nj.until("SLURM runs it", || {
        job_field(&job, "JobState").as_deref() == Some("RUNNING")
    });
    nj.until("why names the element", || {
        nj.ok(&["why", &members[1].to_string()])
            .contains(&format!("SLURM job {job}: RUNNING"))
    });
    let marks = nj.path("marks");
    // SLURM says RUNNING a moment before the batch step begins.
    nj.until("its task began", || marks.join("m1").exists());
    slurm("scancel", &[&job]);
    for (i, &id) in members.iter().enumerate() {
        let code = nj.wait(id);
        assert_eq!(read(&marks.join(format!("m{i}"))), "run\n", "m{i} ran once");
        let show = nj.show(id);
        let run = &show["runs"][0];
        assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
        if i == 1 {
            assert_ne!(code, 0);
            assert_eq!(run["class"], "cancelled", "{show}");
            let message = run["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!(
                    "SLURM job {job} was cancelled outside nightjar by root (uid 0)"
                )),
                "{message}"
            );
        } else {
            assert_eq!(code, 0, "the rest of the array went on: {show}");
            let log = nj.ok(&["logs", &id.to_string()]);
            let element = job_of(&nj, id);
            let (a, k) = element.split_once('_').expect("an element");
            assert_eq!(a, array, "one array for the sweep");
            assert!(log.contains(&format!("element={k}")), "{log}");
        }
    }
    let elements = elements_like(&job);
    assert!(
        elements.len() == 3 && elements.iter().all(|c| *c == elements[0]),
        "three elements of one batch: {elements:?}"
    );
    assert!(index.parse::<u32>().is_ok_and(|k| k < 3), "{job}");
    // Each element's SLURM output is its run folder's once its end is
    // recorded, and the batch's folder goes with its last element.
    let batches = nj.path("shared").join("batches");
    nj.until("the batch's folder is removed", || {
        std::fs::read_dir(&batches).is_ok_and(|d| d.count() == 0)
    });
    for &id in &members {
        let show = nj.show(id);
        let dir = Path::new(show["runs"][0]["run_dir"].as_str().expect("a run folder"));
        assert!(dir.join("slurm.out").exists(), "{}", dir.display());
    }
    let cancelled = nj.show(members[1]);
    let dir = Path::new(
        cancelled["runs"][0]["run_dir"]
            .as_str()
            .expect("a run folder"),
    );
    assert!(
        read(&dir.join("slurm.out")).contains("CANCELLED"),
        "SLURM's word on it"
    );
}

#[test]
fn a_daemon_killed_while_an_array_is_half_started_adopts_each_element_and_each_runs_once() {
    let _cluster = gpu_cluster();
    let mut nj = world("");
    // One GPU of the two taken outside nightjar: one element runs, the
    // other waits in SLURM for it.
    let hog = Hog::start(1, 120);
    nj.until("the hog holds its GPU", || {
        job_field(&hog.0, "JobState").as_deref() == Some("RUNNING")
    });
    let members = sweep(&nj, 2, "[resources]\ngpus = 1\n", "sleep 2");
    let jobs: Vec<String> = members.iter().map(|&id| job_of(&nj, id)).collect();
    nj.until("one element runs and one waits", || {
        let mut states: Vec<String> = jobs
            .iter()
            .filter_map(|j| job_field(j, "JobState"))
            .collect();
        states.sort();
        states == ["PENDING", "RUNNING"]
    });
    nj.kill9();
    nj.start();
    hog.cancel();
    each_once(&nj, &members);
    for &id in &members {
        let show = nj.show(id);
        assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
    }
    let elements = elements_like(&jobs[0]);
    assert!(
        elements.len() == 2 && elements[0] == elements[1],
        "one array, two elements: {elements:?}"
    );
    crate::harness::chaos_row("daemon kill -9 with a job array half started", 2, 0, 0, 0);
}

/// A daemon on the cluster whose `sbatch` waits at the gate (the slow
/// sbatch's `path`), with a 3-member sweep submitted; returns once the
/// array's sbatch began (the batch's index and marks already written).
fn sweep_through(nj: &mut Nj, path: String, gate: &Path) -> Vec<i64> {
    let shared = nj.path("shared");
    nj.set_config(&executor(&shared));
    nj.env.push(("SLURM_CONF".into(), cluster().into()));
    nj.env.push(("PATH".into(), path));
    nj.start();
    let members = sweep(nj, 3, "", "true");
    nj.until("sbatch began", || gate.join("pid").exists());
    let batches: Vec<PathBuf> = std::fs::read_dir(shared.join("batches"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(batches.len(), 1, "the batch is written before its sbatch");
    assert_eq!(read(&batches[0].join("index")).lines().count(), 3);
    members
}

fn killed_in_array_sbatch(and_sbatch_too: bool) {
    let mut nj = Nj::new("");
    let (path, gate) = slow_sbatch(&nj);
    let members = sweep_through(&mut nj, path, &gate);
    kill_in_sbatch(&mut nj, &gate, and_sbatch_too);
    nj.start();
    each_once(&nj, &members);
    let elements = elements_like(&job_of(&nj, members[0]));
    assert!(
        elements.len() == 3 && elements.iter().all(|c| *c == elements[0]),
        "one array of the three: {elements:?}"
    );
    if !and_sbatch_too {
        for &id in &members {
            let show = nj.show(id);
            assert_eq!(
                show["runs"].as_array().map(Vec::len),
                Some(1),
                "adopted: {show}"
            );
        }
    }
}

#[test]
fn a_daemon_killed_between_a_batchs_index_and_its_sbatch_gives_each_run_back_and_each_runs_once() {
    let _cluster = shared_cluster();
    killed_in_array_sbatch(true);
    crate::harness::chaos_row(
        "daemon and sbatch kill -9 between a job array's index and its sbatch",
        3,
        0,
        0,
        0,
    );
}

#[test]
fn a_daemon_killed_while_an_arrays_sbatch_is_in_flight_adopts_each_element_it_lands() {
    let _cluster = shared_cluster();
    killed_in_array_sbatch(false);
    crate::harness::chaos_row(
        "daemon kill -9 while a job array's sbatch is in flight",
        3,
        0,
        0,
        0,
    );
}

#[test]
fn a_batches_folder_another_user_made_in_a_sticky_shared_folder_stops_the_daemon() {
    use std::os::unix::fs::PermissionsExt;
    let _cluster = shared_cluster();
    let mut nj = Nj::new("");
    // A scratch folder every user may write (sticky, as /tmp): nobody got
    // there first and made `batches`, whose index would tell the node's
    // root supervisor which spec to run.
    let shared = nj.path("scratch");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let batches = shared.join("batches");
    std::fs::create_dir(&batches).unwrap();
    std::os::unix::fs::chown(&batches, Some(65534), Some(65534)).unwrap();
    nj.set_config(&executor(&shared));
    nj.env.push(("SLURM_CONF".into(), cluster().into()));
    let (code, said) = nj.start_refused();
    assert_ne!(code, 0);
    assert!(
        said.contains("its batches folder is owned by uid 65534"),
        "{said}"
    );
    // The daemon's own, in the same scratch folder: it starts.
    std::os::unix::fs::chown(&batches, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&batches, std::fs::Permissions::from_mode(0o700)).unwrap();
    nj.start();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
}

#[test]
fn a_round_whose_first_sbatch_slurm_does_not_answer_sends_no_other_and_gives_each_run_back() {
    let _cluster = shared_cluster();
    let mut nj = Nj::new("");
    // An sbatch that counts its calls and, while `down` is there, says
    // what sbatch says when slurmctld does not answer.
    let (path, gate) = wrapped_sbatch(&nj, |g| {
        format!(
            "echo call >> {g}/calls\nif [ -e {g}/down ]; then\n  echo 'sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)' >&2\n  exit 1\nfi",
            g = g.display()
        )
    });
    std::fs::write(gate.join("down"), "").unwrap();
    let shared = nj.path("shared");
    // A backoff (the poll, at least 5 s) long enough to look at the round
    // before the next one.
    nj.set_config(&executor(&shared).replace("poll = \"300ms\"", "poll = \"10s\""));
    nj.env.push(("SLURM_CONF".into(), cluster().into()));
    nj.env.push(("PATH".into(), path));
    nj.start();
    // Three tasks that ask for different time limits: three jobs of their
    // own, released by one round.
    let marks = nj.path("marks");
    let file = nj.path("round").join("round.toml");
    let tasks: Vec<String> = (0..3)
        .map(|i| {
            format!(
                "[[task]]\nname = \"t{i}\"\ncommand = [\"sh\", \"-c\", \"echo run >> {}/t{i}\"]\n[task.resources]\ntimeout = \"{}h\"\n",
                marks.display(),
                i + 1
            )
        })
        .collect();
    std::fs::write(&file, tasks.concat()).unwrap();
    let ids: Vec<i64> = nj
        .json(&["submit", file.to_str().unwrap()])
        .as_array()
        .expect("the submitted tasks")
        .iter()
        .map(|t| t["id"].as_i64().expect("an id"))
        .collect();
    assert_eq!(ids.len(), 3);
    nj.until("each run is given back", || {
        ids.iter().all(|&id| {
            let show = nj.show(id);
            show["task"]["state"] == "queued"
                && show["runs"].as_array().is_some_and(|r| r.len() == 1)
        })
    });
    // The first sbatch waited out SLURM's silence; the others of its round
    // did not each wait it out again (sbatch's own retries: minutes).
    assert_eq!(
        read(&gate.join("calls")).lines().count(),
        1,
        "{}",
        nj.daemon_log()
    );
    std::fs::remove_file(gate.join("down")).unwrap();
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(nj.wait(id), 0, "t{i}: {}", nj.daemon_log());
        assert_eq!(read(&marks.join(format!("t{i}"))), "run\n", "t{i} ran once");
    }
}
