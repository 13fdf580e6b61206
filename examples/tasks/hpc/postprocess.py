"""Post-processing of the simulation: total heat (conserved) and peak."""

import json
import os
import sys

out = sys.argv[1]
rows = [line.split(",") for line in open(os.path.join(out, "field.csv")).read().splitlines()[1:]]
u = [float(v) for _, v in rows]
summary = {"cells": len(u), "total_heat": round(sum(u), 6), "peak": max(u)}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
print(json.dumps(summary))
