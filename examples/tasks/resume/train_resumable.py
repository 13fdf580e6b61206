"""A stand-in for a long training run that checkpoints: fits y = 3x + 1 one
epoch at a time, saves every epoch atomically with a completion marker, saves
and exits on SIGUSR1 (nightjar's preemption signal for this task), and
resumes from --resume-from when nightjar passes a checkpoint."""

import argparse
import json
import os
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=10)
p.add_argument("--out", required=True)
p.add_argument("--resume-from")
a = p.parse_args()

os.makedirs(a.out, exist_ok=True)
state = {"epoch": 0, "w": 0.0, "b": 0.0}
if a.resume_from:
    with open(a.resume_from) as f:
        state = json.load(f)
print(f"starting from epoch {state['epoch']}", flush=True)


def save():
    path = os.path.join(a.out, f"epoch-{state['epoch']:04d}.json")
    tmp = os.path.join(a.out, ".saving.tmp")
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, path)  # atomic: a reader sees the old file or the new one
    open(path + ".done", "w").close()  # the marker: this checkpoint is complete


def preempted(signum, frame):
    save()
    print(f"preempted: saved epoch {state['epoch']}", flush=True)
    sys.exit(0)


signal.signal(signal.SIGUSR1, preempted)
data = [(x / 10, 3 * x / 10 + 1) for x in range(50)]
while state["epoch"] < a.epochs:
    w, b = state["w"], state["b"]
    gw = sum(2 * (w * x + b - y) * x for x, y in data) / len(data)
    gb = sum(2 * (w * x + b - y) for x, y in data) / len(data)
    state = {"epoch": state["epoch"] + 1, "w": w - 0.05 * gw, "b": b - 0.05 * gb}
    save()
    print(f"epoch {state['epoch']}: w {state['w']:.3f} b {state['b']:.3f}", flush=True)
    time.sleep(0.2)
print("done", flush=True)
