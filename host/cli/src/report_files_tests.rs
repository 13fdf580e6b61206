use super::*;

#[test]
fn html_is_written_whole_and_a_bad_folder_is_named() {
    let dir = std::env::temp_dir().join(unique("nightjar-html-test-"));
    fs::create_dir(&dir).unwrap();
    let p = dir.join("r.html");
    write_html(&p, "<p>one</p>").unwrap();
    write_html(&p, "<p>two</p>").unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "<p>two</p>");
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
    let bad = dir.join("missing/r.html");
    let err = write_html(&bad, "x").unwrap_err().to_string();
    assert!(err.contains(&bad.display().to_string()), "{err}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_a_browser_the_error_says_what_to_install() {
    let empty = std::env::temp_dir().join(unique("nightjar-nopath-"));
    fs::create_dir(&empty).unwrap();
    let err = pick(None, Some(empty.as_os_str())).unwrap_err().to_string();
    assert!(
        err.contains("apt-get install chromium") && err.contains("chromium-browser"),
        "{err}"
    );
    let err = pick(Some(OsStr::new("/no/such/chrome")), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("NIGHTJAR_CHROMIUM=/no/such/chrome"), "{err}");
    assert_eq!(
        pick(Some(OsStr::new("/bin/sh")), None).unwrap(),
        Path::new("/bin/sh")
    );
    fs::remove_dir(&empty).unwrap();
}

/// A stand-in browser: a shell script with `body`.
fn fake(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("chromium");
    fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn a_browser_that_hangs_is_killed_with_its_children_and_one_that_fails_is_quoted() {
    let dir = PrivateDir::new().unwrap();
    let pidfile = dir.0.join("child.pid");
    let hang = fake(
        &dir.0,
        &format!("sleep 30 & echo $! > {}; wait", pidfile.display()),
    );
    let out = dir.0.join("r.pdf");
    let t0 = Instant::now();
    let err = print(&hang, &out, "<p>x</p>", Duration::from_secs(1))
        .unwrap_err()
        .to_string();
    assert!(err.contains("within 1s; killed"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    let child: i32 = fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // Gone, or a zombie waiting for whoever adopted it to reap it.
    let stat = fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    assert!(
        stat.is_empty() || state.starts_with('Z'),
        "its child lives on: {stat}"
    );
    assert!(!out.exists());

    let bad = fake(
        &dir.0,
        "echo 'Running as root is not supported' >&2; exit 3",
    );
    let err = print(&bad, &out, "<p>x</p>", Duration::from_secs(10))
        .unwrap_err()
        .to_string();
    assert!(err.contains("Running as root is not supported"), "{err}");
    assert!(!out.exists());

    // A browser that prints: the PDF lands at the path, the page it read was ours.
    let ok = fake(
        &dir.0,
        "for a; do case $a in --print-to-pdf=*) o=${a#--print-to-pdf=};; file://*) f=${a#file://};; esac; done\n\
         { printf '%%PDF-1.4\\n'; cat \"$f\"; } > \"$o\"",
    );
    print(&ok, &out, "<p>page</p>", Duration::from_secs(10)).unwrap();
    assert_eq!(fs::read_to_string(&out).unwrap(), "%PDF-1.4\n<p>page</p>");
}

#[test]
fn private_dirs_are_the_users_only_and_go_away() {
    use std::os::unix::fs::PermissionsExt;
    let d = PrivateDir::new().unwrap();
    let p = d.0.clone();
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o700
    );
    drop(d);
    assert!(!p.exists());
}
