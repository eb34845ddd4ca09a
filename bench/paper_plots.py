"""The plots of the paper's Tables 2-4 (``python -m bench.paper --plots DIR``): per-job
completion times, cluster CPU use over time, offers declined, paired runs and the speed-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
import random
import statistics
from typing import Any

from bench.paper_records import PAPER
from bench.paper_records import cell_values
from bench.paper_records import ideal_speedups
from bench.paper_records import trimmed_mean


# -- plots --------------------------------------------------------------------------------------


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _jobs_of(records: Sequence[Mapping[str, Any]], jobs: int, parallelism: int,
             policy: str) -> list[Mapping[str, Any]]:
    """Every job record of the runs of one cell (jobs, parallelism, policy)."""
    return [job for record in records
            if (record["jobs"], record["parallelism"], record["policy"])
            == (jobs, parallelism, policy)
            for job in record["job_records"]]


def plot_all(records: Sequence[Mapping[str, Any]], policies: Sequence[str],
             out_dir: Path) -> list[Path]:
    """Per-job completion times, cluster CPU use over time, offers declined; the PNG paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"fifo": "tab:blue", "dynamic": "tab:orange", "dynamic-plus": "tab:green"}
    written: list[Path] = []
    out_dir.mkdir(parents=True, exist_ok=True)

    # 1. Per-job completion times, Tables 2 and 4 (every job of every run, one dot each).
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=False)
    for ax, parallelism, title in ((axes[0], 1, "parallelism 1 (Table 2)"),
                                   (axes[1], 4, "parallelism 4 (Table 4)")):
        width = 0.8 / max(1, len(policies))
        for index, policy in enumerate(policies):
            for jobs in (1, 2, 3, 4):
                times = [j["seconds"] for j in _jobs_of(records, jobs, parallelism, policy)]
                if not times:
                    continue
                x = jobs + (index - (len(policies) - 1) / 2) * width
                jitter = random.Random(jobs * 7 + index)
                ax.scatter([x + jitter.uniform(-width / 4, width / 4) for _ in times], times,
                           s=10, alpha=0.6, color=colors.get(policy, "gray"),
                           label=policy if jobs == 1 else None)
                ax.hlines(statistics.fmean(times), x - width / 2, x + width / 2,
                          color=colors.get(policy, "gray"), linewidth=2)
        ax.set_title(f"Per-job completion time, {title}")
        ax.set_xlabel("jobs on the cluster")
        ax.set_ylabel("job time (s): start to 95 % accuracy")
        ax.set_xticks([1, 2, 3, 4])
        ax.legend(title="offer policy (bar: mean)")
        ax.grid(alpha=0.3)
    written.append(_save(fig, out_dir / "bench-paper-job-times.png"))

    # 2. Cluster CPU use over time: 4 jobs at parallelism 4, run 0 of each policy.
    fig, axes = plt.subplots(len(policies), 1, figsize=(11, 2.6 * len(policies)), sharex=True,
                             squeeze=False)
    for ax, policy in zip(axes[:, 0], policies, strict=True):
        chosen = [r for r in records if r["jobs"] == 4 and r["parallelism"] == 4
                  and r["policy"] == policy]
        if not chosen:
            ax.set_visible(False)
            continue
        record = min(chosen, key=lambda r: r["run"])
        samples = record["samples"]
        ax.plot([s["t"] for s in samples], [100 * s["cpus_percent"] for s in samples],
                color=colors.get(policy, "gray"), label="CPUs allocated to tasks")
        for job in record["job_records"]:
            end = job["relative_start"] + job["seconds"]
            ax.axvline(end, color="black", linestyle=":", linewidth=1)
        ax.set_ylim(0, 105)
        ax.set_ylabel("% of 36 CPUs")
        ax.set_title(f"{policy}: 4 jobs x parallelism 4, run {record['run']} "
                     f"(dotted: a job ends)")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since the jobs were submitted")
    written.append(_save(fig, out_dir / "bench-paper-utilisation.png"))

    # 3. Offers declined per job (mean over runs): all declines vs declines for priority.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, parallelism, title in ((axes[0], 1, "parallelism 1 (Table 2)"),
                                   (axes[1], 4, "parallelism 4 (Table 4)")):
        width = 0.8 / max(1, len(policies))
        for index, policy in enumerate(policies):
            xs, total, priority, packing = [], [], [], []
            for jobs in (1, 2, 3, 4):
                counts = [j["offer_counts"]
                          for j in _jobs_of(records, jobs, parallelism, policy)]
                if not counts:
                    continue
                xs.append(jobs + (index - (len(policies) - 1) / 2) * width)
                total.append(statistics.fmean(c.get("offers_declined", 0) for c in counts))
                priority.append(statistics.fmean(c.get("priority_declines", 0) for c in counts))
                packing.append(statistics.fmean(c.get("pack_declines", 0) for c in counts))
            color = colors.get(policy, "gray")
            ax.bar(xs, total, width, color=color, alpha=0.35,
                   label=f"{policy}: all declines")
            ax.bar(xs, priority, width, color=color, hatch="//", edgecolor="black",
                   label=f"{policy}: for priority" if any(priority) else None)
            if any(packing):
                ax.bar(xs, packing, width, bottom=priority, color="white", hatch="..",
                       edgecolor=color, label=f"{policy}: placing AppCore")
        ax.set_title(f"Offers declined per job, {title}")
        ax.set_xlabel("jobs on the cluster")
        ax.set_ylabel("offers declined (mean per job)")
        ax.set_xticks([1, 2, 3, 4])
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    written.append(_save(fig, out_dir / "bench-paper-declines.png"))

    # 4. The same job (seed) under each dynamic policy and under FIFO: paired ratios.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    by_key = {(r["jobs"], r["parallelism"], r["policy"], r["run"]): r for r in records}
    for ax, parallelism, title in ((axes[0], 1, "parallelism 1 (Table 2)"),
                                   (axes[1], 4, "parallelism 4 (Table 4)")):
        others = [p for p in policies if p != "fifo"]
        width = 0.8 / max(1, len(others))
        for index, policy in enumerate(others):
            data, xs = [], []
            for jobs in (1, 2, 3, 4):
                ratios = []
                for (j, par, pol, run), record in by_key.items():
                    base = by_key.get((j, par, "fifo", run))
                    if (j, par, pol) != (jobs, parallelism, policy) or base is None:
                        continue
                    fifo_times = {x["seed"]: x["seconds"] for x in base["job_records"]}
                    ratios += [x["seconds"] / fifo_times[x["seed"]]
                               for x in record["job_records"] if x["seed"] in fifo_times]
                if ratios:
                    data.append(ratios)
                    xs.append(jobs + (index - (len(others) - 1) / 2) * width)
            if data:
                parts = ax.boxplot(data, positions=xs, widths=width * 0.9, patch_artist=True,
                                   showfliers=True)
                for box in parts["boxes"]:
                    box.set_facecolor(colors.get(policy, "gray"))
                    box.set_alpha(0.6)
                ax.plot([], [], color=colors.get(policy, "gray"), linewidth=8, alpha=0.6,
                        label=policy)
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_title(f"Each job's time / the same job under FIFO, {title}")
        ax.set_xlabel("jobs on the cluster")
        ax.set_ylabel("job time ratio (same seed, same run)")
        ax.set_xticks([1, 2, 3, 4])
        ax.set_xticklabels(["1", "2", "3", "4"])
        ax.legend()
        ax.grid(alpha=0.3, axis="y")
    written.append(_save(fig, out_dir / "bench-paper-paired.png"))

    # 5. Table 3 as a speed-up curve.
    values = cell_values(records)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.plot([1, 8], [1, 8], color="gray", linestyle="--", label="linear")
    paper = PAPER["3"]["fifo"]
    ax.plot([1, 2, 4, 8], [paper[1] / paper[p] for p in (1, 2, 4, 8)], marker="s",
            color="black", label="paper, FIFO")
    bound = ideal_speedups(records)
    if bound:
        ax.plot(list(bound), list(bound.values()), marker="^", color="gray",
                label="no overhead at all (bound)")
    for policy in policies:
        one = values.get((1, 1, policy), {})
        points = []
        for p in (1, 2, 4, 8):
            cell = values.get((1, p, policy), {})
            common = sorted(set(one) & set(cell))  # the same seeds
            if common:
                points.append((p, trimmed_mean([one[r] for r in common])
                               / trimmed_mean([cell[r] for r in common])))
        if points:
            ax.plot([p for p, _ in points], [s for _, s in points], marker="o",
                    color=colors.get(policy, "gray"), label=f"ours, {policy}")
    ax.set_xlabel("parallelism")
    ax.set_ylabel("speed-up of the job time over parallelism 1")
    ax.set_title("Table 3: one job, speed-up")
    ax.set_xticks([1, 2, 4, 8])
    ax.legend()
    ax.grid(alpha=0.3)
    written.append(_save(fig, out_dir / "bench-paper-speedup.png"))
    return written


