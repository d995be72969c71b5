"""The guides' plots, drawn by every docs build from real data.

- `mnist_curve.png`: a real training run of the MNIST job's model (`fluxion.examples.mnist.MLP`, Adam 1e-3, batch
  32, one epoch on the 60,000 shipped images), its loss every step and its test accuracy five times an epoch;
- `benchmark_ratios.png`: the "best peer / fluxion" column of the benchmark table that `python -m benchmarks`
  writes into the README's Performance section (the checked-in result of the last full benchmark run).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent
README = DOCS.parent / "README.md"


def mnist_history(epochs: int = 1, batch_size: int = 32, evals_per_epoch: int = 5, seed: int = 42) -> dict:
    """Trains the MNIST job's MLP and returns {"step": [...], "loss": [...], "eval_step": [...], "test_acc": [...]}
    (per-step training loss; test accuracy on the 10,000 test images at evenly spaced steps)."""
    import numpy as np

    from fluxion import optax, random
    from fluxion.datasets import mnist
    from fluxion.examples.mnist import MLP, accuracy, make_predict, make_train_step
    from fluxion.flax.training.train_state import TrainState

    (x_train, y_train), (x_test, y_test) = mnist.load_all(None)
    model = MLP()
    key, init_key = random.split(random.PRNGKey(seed))
    state = TrainState.create(apply_fn=model.apply, params=model.init(init_key, x_train[:1]),
                              tx=optax.adam(learning_rate=1e-3))
    train_step, predict = make_train_step(), make_predict(model)
    eye = np.eye(10, dtype=np.float32)
    steps = len(x_train) // batch_size
    every = steps // evals_per_epoch
    hist: dict = {"step": [], "loss": [], "eval_step": [0], "test_acc": [accuracy(predict, state.params, x_test,
                                                                                  y_test)]}
    for epoch in range(epochs):
        idxs = np.asarray(random.permutation(random.fold_in(key, epoch), len(x_train)))
        for i in range(steps):
            b = idxs[i * batch_size:(i + 1) * batch_size]
            state, loss = train_step(state, x_train[b], eye[y_train[b]])
            step = epoch * steps + i + 1
            hist["step"].append(step)
            hist["loss"].append(float(loss))
            if step % every == 0:
                hist["eval_step"].append(step)
                hist["test_acc"].append(accuracy(predict, state.params, x_test, y_test))
    return hist


def draw_mnist(out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    h = mnist_history()
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "loss"])
        w.writerows(zip(h["step"], h["loss"]))
    loss = np.asarray(h["loss"])
    window = 50
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    ax.plot(h["step"], loss, color="#9ecae1", lw=0.6, label="loss (each step)")
    ax.plot(h["step"][window - 1:], smooth, color="#08519c", lw=1.6, label=f"loss ({window}-step mean)")
    ax.set_xlabel("training step (batch 32)")
    ax.set_ylabel("softmax cross-entropy")
    ax.set_yscale("log")
    ax2 = ax.twinx()
    ax2.plot(h["eval_step"], h["test_acc"], "o-", color="#d95f0e", label="test accuracy")
    ax2.set_ylabel("test accuracy")
    ax2.set_ylim(0, 1)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper center", bbox_to_anchor=(0.5, -0.18),
              ncol=3, fontsize=8)
    ax.set_title(f"MNIST MLP, one epoch: final test accuracy {h['test_acc'][-1]:.4f}")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def benchmark_rows(readme: Path = README) -> list[tuple[str, float]]:
    """(workload, best peer's time / fluxion's time) of every row of the README's benchmark table."""
    rows = []
    in_table = False
    for line in readme.read_text().split("\n"):
        if line.startswith("| workload | unit | fluxion"):
            in_table = True
            continue
        if in_table:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            m = re.fullmatch(r"([0-9.]+)x", cells[-1])
            if m:
                rows.append((cells[0].replace("`", ""), float(m.group(1))))
    if not rows:
        raise ValueError(f"no benchmark table found in {readme}")
    return rows


def draw_benchmarks(out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = benchmark_rows()
    labels = [r[0] if len(r[0]) < 48 else r[0][:45] + "..." for r in rows]
    ratios = [r[1] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.2), dpi=110)
    colors = ["#31a354" if r >= 1 else "#de2d26" for r in ratios]
    ax.barh(range(len(rows)), ratios, color=colors)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xscale("log")
    ticks = [0.1, 0.2, 0.5, 1, 2, 5]
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.minorticks_off()
    for i, r in enumerate(ratios):
        ax.text(r, i, f" {r:.2f}x", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("best peer's time / fluxion's time (above 1: fluxion is fastest)")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def draw_all(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    draw_benchmarks(outdir / "benchmark_ratios.png")
    draw_mnist(outdir / "mnist_curve.png")
