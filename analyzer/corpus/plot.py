"""`postmortem eval --plot FILE`: the confusion matrix and the reliability curve as one PNG."""

from __future__ import annotations

from pathlib import Path

from analyzer.corpus.evaluate import EvalResult


def write_plot(result: EvalResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = result.to_dict()
    cats = sorted(data["per_category"])
    matrix = [[data["confusion"].get(e, {}).get(p, 0) for p in cats] for e in cats]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 6.5), gridspec_kw={"width_ratios": [1.4, 1]})
    ax1.imshow(matrix, cmap="Blues")
    ax1.set_xticks(range(len(cats)), cats, rotation=45, ha="right")
    ax1.set_yticks(range(len(cats)), cats)
    ax1.set_xlabel("predicted")
    ax1.set_ylabel("expected")
    top = max((max(r) for r in matrix), default=1) or 1
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            if v:
                ax1.text(j, i, str(v), ha="center", va="center", color="white" if v > top / 2 else "black", fontsize=9)
    ax1.set_title(f"confusion ({data['cases']} cases, accuracy {data['accuracy']:.1%}, macro-F1 {data['macro_f1']:.3f})")
    rel = data["reliability"]
    ax2.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfect calibration")
    ax2.plot([r["mean_confidence"] for r in rel], [r["accuracy"] for r in rel], marker="o", label="verdicts")
    for r in rel:
        ax2.annotate(str(r["n"]), (r["mean_confidence"], r["accuracy"]), textcoords="offset points", xytext=(4, -12), fontsize=8)
    ax2.set_xlim(0, 1)
    ax2.set_ylim(0, 1.05)
    ax2.set_xlabel("mean confidence (per tenth)")
    ax2.set_ylabel("accuracy")
    ax2.set_title("reliability (numbers: verdicts per bin)")
    ax2.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
