"""A stand-in for an HPC simulation: explicit 1-D heat diffusion, writes the
final field as CSV. Insulated ends, so the total heat is conserved."""

import os
import sys

out = sys.argv[1]
n, steps, alpha = 200, 1000, 0.25
u = [0.0] * n
u[n // 2] = 100.0
for _ in range(steps):
    u = (
        [u[0] + alpha * (u[1] - u[0])]
        + [u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1]) for i in range(1, n - 1)]
        + [u[-1] + alpha * (u[-2] - u[-1])]
    )
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "field.csv"), "w") as f:
    f.write("x,u\n")
    for i, v in enumerate(u):
        f.write(f"{i},{v:.6f}\n")
print(f"simulated {steps} steps on {n} cells")
