"""The plots of `evaluate`: predicted against measured times on the held-out pipelines
(one panel per model, log-log), and the learning curve."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the file backend

from halo.autoschedule.cost_model import CostModel  # noqa: E402
from halo.autoschedule.train.fit import Dataset  # noqa: E402


def draw(models: list[CostModel], held_out: Dataset, curve, folder: Path) -> list[Path]:
    """Write predicted_vs_measured.png and learning_curve.png to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4.5), squeeze=False)
    for ax, m in zip(axes[0], models, strict=True):
        predicted = m.predict(held_out.terms)
        ax.loglog(held_out.seconds, predicted, ".", alpha=0.4, markersize=4)
        lo = min(held_out.seconds.min(), predicted[predicted > 0].min(initial=1e-6))
        hi = max(held_out.seconds.max(), predicted.max())
        ax.plot([lo, hi], [lo, hi], "k--", linewidth=0.8)
        ax.set(title=m.name, xlabel="measured s", ylabel="predicted s")
    fig.tight_layout()
    scatter = folder / "predicted_vs_measured.png"
    fig.savefig(scatter, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    n = [c[0] for c in curve]
    ax.semilogx(n, [c[1].pairwise_accuracy for c in curve], "o-", label="pairwise accuracy")
    ax.semilogx(n, [c[1].spearman for c in curve], "s-", label="Spearman rho")
    ax.set(xlabel="training pipelines", ylabel="held-out score", ylim=(0, 1))
    ax2 = ax.twinx()
    ax2.semilogx(n, [c[1].median_regret for c in curve], "^-", color="tab:red",
                 label="median top-1 regret")
    ax2.set_ylabel("median top-1 regret (x)")
    fig.legend(loc="lower right")
    fig.tight_layout()
    learning = folder / "learning_curve.png"
    fig.savefig(learning, dpi=110)
    plt.close(fig)
    return [scatter, learning]
