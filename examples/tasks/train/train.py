"""A stand-in for a training run: fits y = 3x + 1 by gradient descent on a
tiny synthetic set, writes a checkpoint per epoch and a metrics JSON."""

import argparse
import json
import os
import random
import time

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, required=True)
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--out", required=True)
a = p.parse_args()

random.seed(0)
data = [(x / 10, 3 * x / 10 + 1 + random.gauss(0, 0.05)) for x in range(50)]
w, b = 0.0, 0.0
history = []
for epoch in range(1, a.epochs + 1):
    gw = sum(2 * (w * x + b - y) * x for x, y in data) / len(data)
    gb = sum(2 * (w * x + b - y) for x, y in data) / len(data)
    w, b = w - a.lr * gw, b - a.lr * gb
    loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
    history.append({"epoch": epoch, "loss": loss})
    with open(os.path.join(a.out, f"ckpt-epoch{epoch}.json"), "w") as f:
        json.dump({"epoch": epoch, "w": w, "b": b}, f)
    print(f"epoch {epoch}: loss {loss:.4f}", flush=True)
    time.sleep(0.2)

with open(os.path.join(a.out, "metrics.json"), "w") as f:
    json.dump({"lr": a.lr, "final_loss": history[-1]["loss"], "history": history}, f, indent=2)
print("done", flush=True)
