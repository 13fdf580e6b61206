use super::*;
use crate::task::environment::Mount;

fn container(image: &str, mounts: Vec<Mount>) -> Container {
    Container {
        image: image.into(),
        runtime: None,
        mounts,
    }
}

fn env() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("PATH".to_string(), "/usr/bin".to_string()),
        ("HOME".to_string(), "/root".to_string()),
        ("API_TOKEN".to_string(), "s3cret-value".to_string()),
        ("CUDA_VISIBLE_DEVICES".to_string(), "2,3".to_string()),
        ("NIGHTJAR_TASK_ID".to_string(), "7".to_string()),
    ])
}

fn build(
    runtime: Runtime,
    c: &Container,
    gpus: &[String],
) -> (Vec<String>, BTreeMap<String, String>) {
    let global = vec!["--runtime=runc".to_string()];
    let run = vec!["--network=none".to_string()];
    let env = env();
    let argv = vec!["python".to_string(), "train.py".to_string()];
    command(&Wrap {
        container: c,
        runtime,
        args: (&global, &run),
        name: "nightjar-abcd-run-7",
        workdir: Path::new("/home/u/proj"),
        output: Some(Path::new("/home/u/out/7")),
        gpus,
        by_uuid: false,
        user: (1000, 1000),
        env: &env,
        argv: &argv,
    })
    .unwrap()
}

fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn podman_gets_cdi_devices_mounts_workdir_env_names_and_the_image_after_a_double_dash() {
    let c = container(
        "localhost/img:1",
        vec![Mount {
            host: "/data".into(),
            target: "/in".into(),
            read_only: true,
        }],
    );
    let (argv, env) = build(Runtime::Podman, &c, &["2".into(), "3".into()]);
    let want = words(&[
        "podman",
        "--runtime=runc",
        "run",
        "--rm",
        "--name",
        "nightjar-abcd-run-7",
        "-w",
        "/home/u/proj",
        "--mount",
        "type=bind,source=/home/u/proj,target=/home/u/proj",
        "--mount",
        "type=bind,source=/home/u/out/7,target=/home/u/out/7",
        "--mount",
        "type=bind,source=/data,target=/in,readonly",
        "--device",
        "nvidia.com/gpu=2",
        "--device",
        "nvidia.com/gpu=3",
        "--env",
        "API_TOKEN",
        "--env",
        "CUDA_VISIBLE_DEVICES",
        "--env",
        "NIGHTJAR_TASK_ID",
        "--network=none",
        "--",
        "localhost/img:1",
        "python",
        "train.py",
    ]);
    assert_eq!(argv, want);
    // Inside, the two devices given are 0 and 1; values stay off the command line.
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "0,1");
    assert!(!argv.iter().any(|a| a.contains("s3cret")));
    assert_eq!(env["API_TOKEN"], "s3cret-value");
}

#[test]
fn docker_gets_gpus_by_device_list_and_the_task_user() {
    let c = container("python:3.12", vec![]);
    let (argv, env) = build(Runtime::Docker, &c, &["1".into()]);
    let at = |flag: &str| argv.iter().position(|a| a == flag).unwrap();
    assert_eq!(argv[0], "docker");
    assert_eq!(argv[at("--gpus") + 1], "\"device=1\"");
    assert_eq!(argv[at("--user") + 1], "1000:1000");
    assert_eq!(argv[at("--") + 1], "python:3.12");
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "0");
    assert!(!argv.contains(&"--device".to_string()));
}

#[test]
fn apptainer_binds_and_keeps_host_gpu_numbers() {
    let c = container("/srv/img.sif", vec![]);
    let (argv, env) = build(Runtime::Apptainer, &c, &["2".into()]);
    let want = words(&[
        "apptainer",
        "--runtime=runc",
        "exec",
        "--pwd",
        "/home/u/proj",
        "--bind",
        "/home/u/proj:/home/u/proj",
        "--bind",
        "/home/u/out/7:/home/u/out/7",
        "--nv",
        "--network=none",
        "/srv/img.sif",
        "python",
        "train.py",
    ]);
    assert_eq!(argv, want);
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "2,3");
}

#[test]
fn no_gpu_means_no_gpu_flags_and_an_empty_device_list_inside() {
    let c = container("img", vec![]);
    let (argv, env) = build(Runtime::Podman, &c, &[]);
    assert!(
        !argv
            .iter()
            .any(|a| a.starts_with("--device") || a == "--gpus")
    );
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "");
}

#[test]
fn path_and_home_stay_the_images() {
    let c = container("img", vec![]);
    let (argv, _) = build(Runtime::Podman, &c, &[]);
    for k in ["PATH", "HOME"] {
        assert!(!argv.iter().any(|a| a == k), "{k} passed: {argv:?}");
    }
}

#[test]
fn a_hostile_image_or_mount_is_refused_before_any_command_line() {
    let env = env();
    let argv = vec!["x".to_string()];
    let try_with = |image: &str, workdir: &str, mounts: Vec<Mount>| {
        let c = container(image, mounts);
        command(&Wrap {
            container: &c,
            runtime: Runtime::Podman,
            args: (&[], &[]),
            name: "n",
            workdir: Path::new(workdir),
            output: None,
            gpus: &[],
            by_uuid: false,
            user: (0, 0),
            env: &env,
            argv: &argv,
        })
    };
    let err = try_with("--privileged", "/w", vec![]).unwrap_err();
    assert!(err.contains("starts with `-`"), "{err}");
    let err = try_with("img", "/w,type=bind,source=/", vec![]).unwrap_err();
    assert!(err.contains("contains `,`"), "{err}");
    let err = try_with("img", "/w:/etc", vec![]).unwrap_err();
    assert!(err.contains("contains `:`"), "{err}");
    let m = Mount {
        host: "/a\nb".into(),
        target: "/t".into(),
        read_only: false,
    };
    let err = try_with("img", "/w", vec![m]).unwrap_err();
    assert!(err.contains("line break"), "{err}");
}

#[test]
fn the_supervisor_kills_and_removes_by_name_with_the_global_flags() {
    let c = container("img", vec![]);
    let env = env();
    let global = vec!["--events-backend=file".to_string()];
    let w = Wrap {
        container: &c,
        runtime: Runtime::Podman,
        args: (&global, &[]),
        name: "nightjar-x-run-1",
        workdir: Path::new("/w"),
        output: None,
        gpus: &[],
        by_uuid: false,
        user: (0, 0),
        env: &env,
        argv: &[],
    };
    let ctl = Control::of(&w).unwrap();
    assert_eq!(
        ctl.kill_argv(15),
        words(&[
            "podman",
            "--events-backend=file",
            "kill",
            "--signal",
            "15",
            "nightjar-x-run-1"
        ])
    );
    assert_eq!(
        ctl.rm_argv(),
        words(&[
            "podman",
            "--events-backend=file",
            "rm",
            "-f",
            "nightjar-x-run-1"
        ])
    );
    let apptainer = Wrap {
        runtime: Runtime::Apptainer,
        ..w
    };
    assert_eq!(Control::of(&apptainer), None);
}

#[test]
fn names_differ_between_daemons_and_runs() {
    let a = name(Path::new("/var/lib/nightjar"), 1);
    assert!(a.starts_with("nightjar-") && a.ends_with("-run-1"), "{a}");
    assert_ne!(a, name(Path::new("/tmp/other"), 1));
    assert_ne!(a, name(Path::new("/var/lib/nightjar"), 2));
}
