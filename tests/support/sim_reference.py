#!/usr/bin/env python3
"""A reference event simulator for `nightjar simulate`, written for the
tests apart from nightjar's Rust, from the rules the docs state
(docs/src/guide/simulate.md), and the baseline its benchmark is timed
against.

    sim_reference.py TRACE.csv GPUS ORDER > schedule.csv

ORDER is strict, first-fit, sjf (first fit by the estimate in whole
seconds) or easy. Whole GPUs only; columns id, arrival_s, gpus,
duration_s and optionally estimate_s and priority. Prints
`id,start_ms,end_ms,gpu_ids` sorted by id (times from second 0).

Rules: at each event time, runs that end end first, then arrivals join
the queue, then one pass. The queue's order is priority class (higher
first), then arrival, then id (sjf: the estimate first). A placement takes
the lowest-numbered free GPUs. strict: the first job that does not fit
reserves its start and nothing behind it starts. first-fit and sjf: a job
that does not fit is passed over. easy: the first job that does not fit
(the head) reserves the earliest time enough GPUs are free, freeing the
runs in order of their expected end (start + estimate, ties by id), and
the lowest-numbered GPUs free then; a later job starts if it fits now and
is expected to end by that time, or else if, placed now (preferring GPUs
the head will not take), it leaves the head enough GPUs at that time.
"""

import csv
import sys

RANK = {"low": 0, "normal": 1, "high": 2, "urgent": 3}


def read(path):
    jobs = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            ms = lambda k: int(round(float(row[k]) * 1000))
            duration = ms("duration_s")
            est = row.get("estimate_s") or ""
            jobs.append(
                {
                    "id": int(row["id"]),
                    "arrival": ms("arrival_s"),
                    "gpus": int(row["gpus"]),
                    "duration": duration,
                    "estimate": max(1, int(round(float(est) * 1000))) if est else duration,
                    "rank": RANK[(row.get("priority") or "normal").strip()],
                }
            )
    return jobs


def simulate(jobs, ngpus, order):
    free = [True] * ngpus
    pending = sorted(jobs, key=lambda j: (j["arrival"], j["id"]))
    pending.reverse()
    waiting = []
    running = []  # dicts: job, start, end, gpus
    out = {}
    if not pending:
        return out
    now = pending[-1]["arrival"]

    def place(n, avoid=()):
        got = [i for i in range(ngpus) if free[i] and i not in avoid][:n]
        return got if len(got) == n else None

    def start(j, gpus):
        for g in gpus:
            free[g] = False
        run = {"job": j, "start": now, "end": now + j["duration"], "gpus": gpus}
        running.append(run)
        out[j["id"]] = run

    while True:
        for r in [r for r in running if r["end"] <= now]:
            running.remove(r)
            for g in r["gpus"]:
                free[g] = True
        while pending and pending[-1]["arrival"] <= now:
            j = pending.pop()
            if j["gpus"] <= ngpus:
                waiting.append(j)
        if order == "sjf":
            key = lambda j: (j["estimate"] // 1000, -j["rank"], j["arrival"], j["id"])
        else:
            key = lambda j: (-j["rank"], j["arrival"], j["id"])
        waiting.sort(key=key)
        head = None  # (start time, gpus the head takes, free GPUs then, head's need)
        for j in list(waiting):
            n = j["gpus"]
            if head is None:
                p = place(n)
                if p is not None:
                    start(j, p)
                    waiting.remove(j)
                    continue
                if order in ("first-fit", "sjf"):
                    continue
                then = list(free)
                at = now
                runs = sorted(running, key=lambda r: (r["start"] + r["job"]["estimate"], r["job"]["id"]))
                for r in runs:
                    if sum(then) >= n:
                        break
                    for g in r["gpus"]:
                        then[g] = True
                    at = max(at, r["start"] + r["job"]["estimate"])
                takes = [i for i in range(ngpus) if then[i]][:n]
                head = [at, takes, then, n]
                continue
            if order == "strict":
                break
            at, takes, then, need = head
            if now + j["estimate"] <= at:
                p = place(n)
                if p is not None:
                    start(j, p)
                    waiting.remove(j)
                continue
            p = place(n, avoid=set(takes)) or place(n)
            if p is None:
                continue
            after = list(then)
            for g in p:
                after[g] = False
            if sum(after) >= need:
                head[2] = after
                start(j, p)
                waiting.remove(j)
        times = [r["end"] for r in running]
        if pending:
            times.append(pending[-1]["arrival"])
        if not times:
            break
        now = min(times)
    return out


def main():
    path, ngpus, order = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if order not in ("strict", "first-fit", "sjf", "easy"):
        sys.exit(f"order {order}: strict, first-fit, sjf or easy")
    out = simulate(read(path), ngpus, order)
    lines = ["id,start_ms,end_ms,gpu_ids"]
    for i in sorted(out):
        r = out[i]
        gpus = " ".join(str(g) for g in r["gpus"])
        lines.append(f"{i},{r['start']},{r['end']},{gpus}")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
