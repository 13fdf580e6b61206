//! Traces: what is read, and every bad row refused by file, line and column.

use super::*;

fn parse(csv: &str) -> Result<Trace, TraceError> {
    Trace::parse("t.csv", csv.as_bytes())
}

fn refused(csv: &str) -> String {
    parse(csv).unwrap_err().to_string()
}

#[test]
fn the_required_columns_are_read_and_the_optional_ones_default() {
    let t = parse("id,arrival_s,gpus,duration_s\n7,1.5,2,60\n").unwrap();
    let j = &t.jobs[0];
    assert_eq!((j.id, j.arrival, j.gpus, j.duration), (7, 1500, 2, 60_000));
    assert_eq!(j.estimate, 60_000, "the estimate defaults to the duration");
    assert_eq!(
        (&*j.name, &*j.project, &*j.user),
        ("job-7", "default", "trace")
    );
    assert_eq!(j.priority, Priority::Normal);
    assert_eq!(
        (j.gpu_mem, j.power_w, j.preemptible, j.checkpoint),
        (None, None, false, None)
    );
}

#[test]
fn every_optional_column_is_read() {
    let t = parse(
        "# a comment line\nid, arrival_s, gpus, duration_s, name, project, user, priority, gpu_mem, estimate_s, power_w, preemptible, checkpoint_s\n\
         1, 0, 1, 100,\"train, big\", vision, ana, high, 20GiB, 90, 250.5, yes, 30\n",
    )
    .unwrap();
    let j = &t.jobs[0];
    assert_eq!(
        (&*j.name, &*j.project, &*j.user),
        ("train, big", "vision", "ana")
    );
    assert_eq!(j.priority, Priority::High);
    assert_eq!(j.gpu_mem, Some(20 << 30));
    assert_eq!(
        (j.estimate, j.power_w, j.preemptible, j.checkpoint),
        (90_000, Some(250.5), true, Some(30_000))
    );
}

#[test]
fn a_bad_header_is_refused_naming_the_column() {
    assert_eq!(
        refused("id,arrival_s,gpus,duraton_s\n"),
        "trace t.csv, line 1, column duraton_s: unknown column; the columns are id, arrival_s, gpus, duration_s, name, project, user, priority, gpu_mem, estimate_s, power_w, preemptible, checkpoint_s, temp_c"
    );
    assert!(refused("id,arrival_s,gpus\n").contains("line 1: no `duration_s` column"));
    assert!(refused("id,id,arrival_s,gpus,duration_s\n").contains("column id: named twice"));
}

#[test]
fn bad_values_are_refused_by_line_and_column_with_what_to_write() {
    let head = "id,arrival_s,gpus,duration_s,priority,gpu_mem,power_w,preemptible\n";
    let cases = [
        (
            "1,0,1,60,,,,\n1,0,1,60,,,,\n",
            "line 3, column id: id 1 is used twice",
        ),
        ("x,0,1,60,,,,\n", "line 2, column id: `x` is not an id"),
        ("0,0,1,60,,,,\n", "line 2, column id: `0` is not an id"),
        (
            "1,-5,1,60,,,,\n",
            "line 2, column arrival_s: `-5` is not a time",
        ),
        (
            "1,NaN,1,60,,,,\n",
            "line 2, column arrival_s: `NaN` is not a time",
        ),
        (
            "1,inf,1,60,,,,\n",
            "line 2, column arrival_s: `inf` is not a time",
        ),
        (
            "1,1e15,1,60,,,,\n",
            "line 2, column arrival_s: 1e15 s is more than ten years",
        ),
        (
            "1,0,-1,60,,,,\n",
            "line 2, column gpus: `-1` is not a number of GPUs",
        ),
        (
            "1,0,100001,60,,,,\n",
            "line 2, column gpus: `100001` is not a number of GPUs",
        ),
        ("1,0,1,0,,,,\n", "line 2, column duration_s: is 0"),
        ("1,0,1,,,,,\n", "line 2, column duration_s: is empty"),
        (
            "1,0,1,60,top,,,\n",
            "line 2, column priority: `top` is not a priority",
        ),
        (
            "1,0,1,60,,lots,,\n",
            "line 2, column gpu_mem: `lots` is not a size",
        ),
        (
            "1,0,1,60,,,-3,\n",
            "line 2, column power_w: `-3` is not a draw",
        ),
        (
            "1,0,1,60,,,,maybe\n",
            "line 2, column preemptible: `maybe` is not true or false",
        ),
        (
            "1,0,1,60\n",
            "line 2: 4 values, but the header names 8 columns (id,arrival_s,gpus,duration_s,priority,gpu_mem,power_w,preemptible): give one value per column",
        ),
    ];
    for (rows, want) in cases {
        let got = refused(&format!("{head}{rows}"));
        assert!(
            got.starts_with(&format!("trace t.csv, {want}")),
            "{rows:?}: {got}"
        );
    }
}

#[test]
fn a_missing_file_is_named() {
    let e = Trace::read(Path::new("/no/such/trace.csv"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("trace /no/such/trace.csv: "), "{e}");
    assert!(e.contains("id,arrival_s,gpus,duration_s"), "{e}");
}

#[test]
fn an_empty_trace_is_no_jobs() {
    assert!(
        parse("id,arrival_s,gpus,duration_s\n")
            .unwrap()
            .jobs
            .is_empty()
    );
}

/// `rows` generated rows after a header, never held whole in memory, or
/// one line that never ends when `rows` is 0.
struct Endless {
    rows: u64,
    next: u64,
    pending: Vec<u8>,
}

impl std::io::Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            self.pending = if self.next == 0 {
                b"id,arrival_s,gpus,duration_s\n".to_vec()
            } else if self.rows == 0 {
                vec![b'7'; 1 << 16]
            } else if self.next <= self.rows {
                format!("{},{},1,60\n", self.next, self.next).into_bytes()
            } else {
                return Ok(0);
            };
            self.next += 1;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

#[test]
fn ten_million_rows_or_one_endless_line_are_refused_without_reading_them_all() {
    let rows = Endless {
        rows: 10_000_000,
        next: 0,
        pending: Vec::new(),
    };
    let err = Trace::parse("big.csv", rows).unwrap_err().to_string();
    assert_eq!(
        err,
        "trace big.csv, line 1000002: more than 1000000 jobs; split the trace into shorter periods"
    );
    let line = Endless {
        rows: 0,
        next: 0,
        pending: Vec::new(),
    };
    let err = Trace::parse("line.csv", line).unwrap_err().to_string();
    assert!(
        err.starts_with("trace line.csv, line 2: ")
            && err.contains("more than 128 MiB of text; split the trace"),
        "{err}"
    );
}

/// `text` handed over `step` bytes at a time (a pipe's short reads).
struct Trickle<'a> {
    text: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.text.len());
        buf[..n].copy_from_slice(&self.text[..n]);
        self.text = &self.text[n..];
        Ok(n)
    }
}

#[test]
fn a_refusal_names_the_true_line_past_comments_empty_lines_and_any_line_ends() {
    // The CSV reader's own line numbers skip comment and empty lines, and
    // count a CR LF file's lines as one.
    let cases = [
        ("# c\nid,arrival_s,gpus,duration_s\n1,NaN,1,10\n", 3),
        ("id,arrival_s,gpus,duration_s\n# c\n# d\n1,NaN,1,10\n", 4),
        ("id,arrival_s,gpus,duration_s\n\n\n1,NaN,1,10\n", 4),
        ("id,arrival_s,gpus,duration_s\r\n\r\n1,NaN,1,10\r\n", 3),
        (
            "id,arrival_s,gpus,duration_s\r\n1,0,1,1\r\n2,NaN,1,10\r\n",
            3,
        ),
        ("id,arrival_s,gpus,duration_s\r1,0,1,1\r2,NaN,1,10\r", 3),
        (
            "id,arrival_s,gpus,duration_s,name\n1,0,1,1,\"a\nb\nc\"\n2,NaN,1,1,x\n",
            5,
        ),
        ("id,arrival_s,gpus,duration_s,name\n1,NaN,1,1,\"a\nb\"\n", 2),
        ("\u{feff}id,arrival_s,gpus,duration_s\n1,NaN,1,10", 2),
        ("# a\n\n# b\nid,arrival_s,gpus,duration_sx\n", 4),
        ("id,arrival_s,gpus,duration_s\n\n1,0,1\n", 3),
    ];
    for (text, line) in cases {
        for step in [1, 2, 3, 1 << 16] {
            let trickle = Trickle {
                text: text.as_bytes(),
                step,
            };
            let e = Trace::parse("t.csv", trickle).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("trace t.csv, line {line}")),
                "{text:?} by {step}: {e}"
            );
        }
    }
}

#[test]
fn a_quoted_value_left_open_is_refused_not_read_as_the_rest_of_the_file() {
    let open = "id,arrival_s,gpus,duration_s,name\n1,0,1,10,x\n2,0,1,10,\"foo\n3,0,1,10,bar\n4,0,1,10,baz\n";
    assert!(
        refused(open).starts_with(
            "trace t.csv, line 3, column name: a quoted value opened here is never closed, so it holds every line after it; close it with `\"`"
        ),
        "{}",
        refused(open)
    );
    assert!(refused(open.trim_end()).starts_with("trace t.csv, line 3, column name: "));
    // Closed, a value may hold line ends, last on its line or not, with
    // comments and empty lines after it.
    for ok in [
        "id,arrival_s,gpus,duration_s,name\n1,0,1,10,\"a\nb\"\n",
        "id,arrival_s,gpus,duration_s,name\n1,0,1,10,\"a\nb\"",
        "id,arrival_s,gpus,duration_s,name\r\n1,0,1,10,\"a\r\nb\" \r\n\r\n",
        "id,arrival_s,gpus,duration_s,name\n1,0,1,10,\"a\nb\"\n# the end\n\n",
        "id,arrival_s,gpus,name,duration_s\n1,0,1,\"a\nb\",10\n",
    ] {
        let t = parse(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        assert_eq!(t.jobs.len(), 1, "{ok:?}");
        assert!(t.jobs[0].name.starts_with('a'), "{ok:?}");
    }
}

#[test]
fn a_row_of_the_wrong_width_or_not_utf8_names_the_column_and_what_to_do() {
    let bad = b"id,arrival_s,gpus,duration_s,name\n1,0,1,10,ab\xff\n";
    let e = Trace::parse("t.csv", &bad[..]).unwrap_err().to_string();
    assert_eq!(
        e,
        "trace t.csv, line 2, column name: is not UTF-8 text; save the trace as UTF-8"
    );
    let bad = b"id,arrival_s,gpus,duration_s,n\xffme\n";
    let e = Trace::parse("t.csv", &bad[..]).unwrap_err().to_string();
    assert_eq!(
        e,
        "trace t.csv, line 1: the header's value 5 is not UTF-8 text; save the trace as UTF-8"
    );
    assert!(
        refused("id,arrival_s,gpus,duration_s\n1,0,1,1,5\n").starts_with(
            "trace t.csv, line 2: 5 values, but the header names 4 columns (id,arrival_s,gpus,duration_s): give one value per column (empty for none), and quote a value that holds a comma"
        )
    );
    assert!(
        refused("ID,arrival_s,gpus,duration_s\n")
            .ends_with("; column names are lower case: write `id`")
    );
    assert!(
        refused("id,arrival_s,gpus,duration_s,id\n").ends_with("column id: named twice; keep one")
    );
}
