"""The benchmark's printed tables and its report folder (README.md with the tables, bench.json, figures)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from fedbench.bench.machine import seconds, si


def to_json(result: dict[str, Any]) -> str:
    """The results as JSON (numpy scalars as plain numbers)."""
    return json.dumps(result, indent=2, default=lambda o: o.item() if hasattr(o, "item") else str(o)) + "\n"


def rate(x: float) -> str:
    """samples/s as 1.2k, 3.4M."""
    return si(x).strip()


def throughput_table(cases: list[dict[str, Any]]) -> list[str]:
    lines = [("| model | params | cohort | local work | chosen kernel | chosen samples/s | other kernels samples/s | "
             "centralized samples/s | chosen / centralized | chosen / loop | floor samples/s (bound) | "
             "chosen / floor | scheduling share of the chosen round |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        chosen = c["chosen_kernel"]
        others = ", ".join(f"{k} {rate(v['samples_per_s'])}" for k, v in c["kernels"].items() if k != chosen) or "-"
        cen = c["centralized"][c["centralized_impl"]]["samples_per_s"]
        lines.append(
            f"| {c['model']} | {c['num_params']:,} | {c['cohort']} | {c['local_work']} | {chosen} | "
            f"{rate(c['kernels'][chosen]['samples_per_s'])} | {others} | {rate(cen)} ({c['centralized_impl']}, batch "
            f"{c['centralized_batch']}) | {c['chosen_over_centralized']:.2f} | {c['chosen_over_loop']:.2f}x | "
            f"{rate(c['floor_samples_per_s'])} ({c['floor']['bound']}) | {c['chosen_share_of_floor']:.3f} | "
            f"{c['chosen_schedule_share']:.0%} |")
    return lines


def kernel_choice(cases: list[dict[str, Any]]) -> str:
    """Where a kernel other than the chosen one was measured faster (the table fedbench.engine.kernels.DEFAULTS
    chooses from)."""
    off = [f"{c['model']} at cohort {c['cohort']}: {c['fastest_kernel']} "
           f"{c['kernels'][c['fastest_kernel']]['samples_per_s'] / c['kernels'][c['chosen_kernel']]['samples_per_s']:.2f}x "
           f"the chosen {c['chosen_kernel']}" for c in cases if c["fastest_kernel"] != c["chosen_kernel"]]
    if not off:
        return "Kernel choice: in every case the chosen kernel was the fastest measured."
    return "Kernel choice: another kernel was measured faster for " + "; ".join(off) + "."


def floor_table(cases: list[dict[str, Any]]) -> list[str]:
    lines = [("| model | cohort | samples / round | FLOPs / sample | local steps x clients | floor of the round: FLOPs / "
             "peak; weights moved / bandwidth | centralized round's floor |"), "|---|---|---|---|---|---|---|"]
    for c in cases:
        lines.append(f"| {c['model']} | {c['cohort']} | {c['samples_per_round']:,} | {si(c['flops_per_sample'])}FLOP | "
                     f"{c['row_steps_per_round']:,} | {c['floor']['arithmetic']} | "
                     f"{c['centralized_floor']['arithmetic']} |")
    return lines


def targets_table(targets: list[dict[str, Any]], first: str) -> list[str]:
    lines = [f"| {first} | target | measured | met |", "|---|---|---|---|"]
    for t in targets:
        name = t.get("study") or f"{t['model']}, cohort {t['cohort']}, {t['device']}"
        lines.append(f"| {name} | {t['target']} | {t['measured']} | {'yes' if t['met'] else 'no'} |")
    return lines


def workload_table(w: dict[str, Any]) -> list[str]:
    has_numpy = any("numpy_loop" in s for s in w["subsets"].values())
    head = ("| runs | stacks (runs each) | stacked | one by one | stacked: training only | "
            + ("numpy loop (training only) | " if has_numpy else "")
            + "floor | stacked / floor | one by one / stacked | on 2 workers: stacked, one by one | "
              "measured rounds' work / average round |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for s in w["subsets"].values():
        st, one = s["stacked"], s["one_by_one"]
        cells = [f"{s['label']} ({s['runs']})", " + ".join(map(str, s["stacks"])), seconds(st["projected_s"]),
                 seconds(one["projected_s"]), seconds(st["projected_train_s"])]
        if has_numpy:
            cells.append(seconds(s["numpy_loop"]["projected_s"]) if "numpy_loop" in s else "-")
        cells += [seconds(s["floor_s"]), f"{st['projected_s'] / s['floor_s']:.1f}x",
                  f"{one['projected_s'] / st['projected_s']:.1f}x",
                  f"{seconds(s['stacked_two_workers_s'])}, {seconds(s['one_by_one_two_workers_s'])}",
                  f"{s['measured_work_vs_average']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def print_summary(result: dict[str, Any]) -> str:
    out = []
    tp = result.get("throughput")
    if tp:
        out += ["Kernel throughput (samples/s; ratios are medians of per-round ratios):", *throughput_table(tp["cases"]),
                kernel_choice(tp["cases"])]
        out += [f"skipped: {s['model']}" + (f" cohort {s['cohort']}" if "cohort" in s else "") + f": {s['reason']}"
                for s in tp["skipped"]]
        out += [f"target {t['model']} cohort {t['cohort']} ({t['device']}): {t['target']}: {t['measured']} "
                f"{'met' if t['met'] else 'NOT met'}" for t in tp["targets"]]
    for w in result.get("workloads", []):
        out += ["", f"{w['about']}: projected to {w['rounds']} rounds from {w['rounds_measured']} measured per run:",
                *workload_table(w)]
    for t in result.get("workload_targets", []):
        out.append(f"target {t['study']}: {t['target']}: {t['measured']} {'met' if t['met'] else 'NOT met'}")
    for s in result.get("workloads_skipped", []):
        out.append(f"skipped: {s['name']}: {s['reason']}")
    if result.get("steps"):
        from fedbench.bench.step_parts import steps_table

        out += ["", "A client step taken apart (ms per client step, share of the FLOP floor):", *steps_table(result["steps"])]
    if result.get("executors"):
        from fedbench.bench.executors import table

        out += ["", "Executors, ray against local (issue 13):", *table(result["executors"])]
    if result.get("proxies"):
        from fedbench.bench.proxies import table as proxies_table

        out += ["", "The GPU targets as CPU counts (issue 49; on this CPU, exact):", *proxies_table(result["proxies"])]
    return "\n".join(out)


STALE = ("cohort_scaling.png", "federation_scaling.png")  # figures of the earlier bench, no longer written


def write_report(result: dict[str, Any], out_dir: Path, command: str) -> None:
    """README.md, bench.json and the figures, each written atomically into ``out_dir``; other files there (such
    as a GPU test log) are kept."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".bench.") as tmp:
        tmp = Path(tmp)
        (tmp / "bench.json").write_text(to_json(result))
        figures = plot(result, tmp)
        (tmp / "README.md").write_text(readme(result, command, figures))
        for f in tmp.iterdir():
            os.replace(f, out_dir / f.name)
    for name in STALE:
        (out_dir / name).unlink(missing_ok=True)


def readme(result: dict[str, Any], command: str, figures: dict[str, str]) -> str:
    env, mach = result["environment"], result["machine"]
    load = env.get("load_average")
    lines = [
        ("# Simulator speed: execution kernels against the per-client loop, centralized training and the floor; the "
        "papers' workload stacked, one by one and as a numpy loop"), "",
        f"Generated by `{command}` (do not edit by hand; rerun the command). Device: {result['device']}"
        + (f" ({env['gpu']})" if "gpu" in env else "") + f"; torch {env['torch']}, numpy {env['numpy']}, "
        f"{env['torch_threads']} torch thread(s) of {env['cpu_cores']} cores"
        + (f"; load average at the start {', '.join(map(str, load))}" if load else "")
        + f". {'Quick mode. ' if result['quick'] else ''}Total {seconds(result['elapsed_s'])}.", "",
        (f"Measured in the same run: peak float32 matmul {si(mach['peak_flops'])}FLOP/s ({mach['matmul_size']}^3 "
        f"product, best of a few), memory bandwidth {si(mach['bandwidth'])}B/s (copy of "
        f"{mach['copy_bytes'] / 2**20:.0f} MiB, bytes read + written), with {mach['threads']} thread(s)."
        + (" On CUDA the matmul peak is full float32 (torch's default precision), while cuDNN convolutions use "
           "TF32 by default: a CNN may beat its 'floor'." if result["device"].startswith("cuda") else "")), ""]
    tp = result.get("throughput")
    if tp:
        lines += [
            "## Kernel throughput per model (issue 9)", "",
            ("Samples per second of one federated round through each execution kernel that can run the model: the "
            "engine's own `schedule_round` + `run_round` (scheduling included, evaluation not), FedAvg, every "
            "client of a synthetic federation of the model's input shape training one local epoch (quick mode: a "
            "few steps) at client batch 10; clients hold 20 + int(LogNormal(3, 0.5)) samples. Centralized: one "
            "model, minibatch SGD at batch = cohort x 10 on as many samples, the fastest of the module with "
            "`torch.optim.SGD`, theta through the functional forward with `torch.optim.SGD`, and the chosen "
            "kernel with one row. Floor: max(FLOPs / peak, bytes / bandwidth), FLOPs counted by "
            "`torch.utils.flop_counter` (recurrent layers analytically), bytes = each active client's weights "
            "read and written once per local step. Paths are timed in turn, round by round; ratios are medians "
            "of per-round ratios. The last column is the median share of the chosen kernel's round spent in "
            "`schedule_round` (drawing the cohort and every client's minibatch order)."), "", *throughput_table(tp["cases"]), "", "The floors' arithmetic:", "",
            *floor_table(tp["cases"]), "", kernel_choice(tp["cases"]), ""]
        if tp["skipped"]:
            lines += ["Not measured: " + "; ".join(f"{s['model']}" + (f" at cohort {s['cohort']}" if s.get("cohort")
                                                                      else "") + f" ({s['reason']})"
                                                   for s in tp["skipped"]) + ".", ""]
        if tp["targets"]:
            lines += ["Targets (issue 9; reported, not asserted):", "", *targets_table(tp["targets"], "case"), ""]
        if "throughput" in figures:
            lines += [f"![samples/s against cohort size]({figures['throughput']})", ""]
    for w in result.get("workloads", []):
        cost = w["cost_model"]
        lines += [
            f"## The papers' workload: {w['about']} (issue 10)", "",
            (f"Model {w['model']} ({w['num_params']:,} parameters, {si(w['flops_per_sample'])}FLOP per training "
            f"sample), {w['runs']} runs. Each run's first {w['rounds_measured']} rounds are timed and projected to "
            f"{w['rounds']} rounds: setup once, evaluation (every round, as the pipeline runs it) in proportion to "
            "rounds, training (with scheduling) in proportion to a cost model a x (dependent local steps) + b x "
            "(client steps), counted exactly for every round from the runs' round plans, with a and b fitted on "
            f"the one-by-one runs: a = {seconds(cost['per_chain_step_s'])} per dependent step (the longest "
            f"client's chain, paid once by a stack), b = {seconds(cost['per_row_step_s'])} per client step. "
            "Stacked: the runs grouped as the engine allows (one algorithm class per stack), each stack through "
            "`simulate_stack`; one by one: each run through `simulate`; numpy loop: fedbench/bench/numpy_loop.py, "
            "written independently of the engine (training only, projected by its local steps); floor: the FLOPs "
            "of every local step over the measured matmul rate. 'On 2 workers' spreads the stacks (or runs) over "
            "two processes, longest first. The last column is the measured rounds' modelled cost against an "
            "average round's (the projection corrects for it). The four ways are measured one after the other, not "
            "interleaved: on a shared machine, load that changes between them shows in their ratios."), "",
            *workload_table(w), ""]
        for s in w["subsets"].values():
            lines.append(f"- {s['label']}: floor {s['floor_arithmetic']} (weights moved at the measured bandwidth: "
                         f"{seconds(s['weights_moved_s'])}, not counted). Dependent local steps per round of the "
                         f"stacks: {s['chain_steps_per_round']:,.0f}; stacked training time per dependent step "
                         f"{seconds(s['stacked_s_per_chain_step'])}.")
        lines.append("")
    if result.get("workload_targets"):
        lines += ["Targets (issue 10; reported, not asserted):", "",
                  *targets_table(result["workload_targets"], "study"), ""]
    if "workload" in figures:
        lines += [f"![projected wall time of the workloads]({figures['workload']})", ""]
    for s in result.get("workloads_skipped", []):
        lines += [f"Not measured: {s['name']} ({s['reason']}).", ""]
    if result.get("steps"):
        from fedbench.bench.step_parts import steps_table

        lines += ["## A client step taken apart (issue 20)", "",
                  ("The per-client loop's step at client batch 10 (fedbench.bench.step_parts): gradients alone, "
                   "placed into the cohort's rows (the kernel), with FedAvg's update (the engine's step), the engine "
                   "round with one step per client, and an in-place update (headroom, not the engine's rounding). "
                   "ms per client step (share of the FLOP floor)."), "", *steps_table(result["steps"]), ""]
    if result.get("executors"):
        from fedbench.bench.executors import table

        lines += ["## Executors: ray against local (issue 13)", "", *table(result["executors"]), "",
                  "Not measured: GPU fractions per Ray task (no GPU on this machine).", ""]
    return "\n".join(lines)


def kernel_colours(cases: list[dict[str, Any]]) -> dict[str, str]:
    """One colour per execution kernel over every panel (a model runs only some kernels: colours by position
    would give one kernel a different colour in each panel); centralized and the floor have their own."""
    kernels = sorted({k for c in cases for k in c["kernels"]})
    return {k: f"C{i % 10}" for i, k in enumerate(kernels)}


def plot(result: dict[str, Any], out_dir: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = {}
    cases = (result.get("throughput") or {}).get("cases") or []
    models = list(dict.fromkeys(c["model"] for c in cases))
    colours = kernel_colours(cases)
    if models:
        fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4), squeeze=False)
        for ax, model in zip(axes[0], models):
            rows = sorted((c for c in cases if c["model"] == model), key=lambda c: c["cohort"])
            k = [c["cohort"] for c in rows]
            for kernel in rows[0]["kernels"]:
                ax.plot(k, [c["kernels"][kernel]["samples_per_s"] for c in rows], marker="o", color=colours[kernel],
                        label=f"kernel {kernel}" + (" (chosen)" if kernel == rows[0]["chosen_kernel"] else ""))
            ax.plot(k, [c["centralized"][c["centralized_impl"]]["samples_per_s"] for c in rows], marker="s",
                    color="black", label="centralized (batch = cohort x 10)")
            ax.plot(k, [c["floor_samples_per_s"] for c in rows], ls="--", color="grey", label="floor of the round")
            ax.set(xscale="log", yscale="log", xlabel="cohort (clients per round)", ylabel="samples / s",
                   title=f"{model} on {result['device']}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
        fig.tight_layout()
        fig.savefig(out_dir / "throughput.png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        names["throughput"] = "throughput.png"
    workloads = result.get("workloads") or []
    if workloads:
        fig, axes = plt.subplots(1, len(workloads), figsize=(6 * len(workloads), 4), squeeze=False)
        for ax, w in zip(axes[0], workloads):
            subsets = list(w["subsets"].values())
            bars = [("stacked", lambda s: s["stacked"]["projected_s"]),
                    ("one by one", lambda s: s["one_by_one"]["projected_s"])]
            if any("numpy_loop" in s for s in subsets):
                bars.append(("numpy loop", lambda s: s.get("numpy_loop", {}).get("projected_s", float("nan"))))
            bars.append(("floor", lambda s: s["floor_s"]))
            width = 0.8 / len(bars)
            for j, (label, get) in enumerate(bars):
                ax.bar([i + j * width for i in range(len(subsets))], [get(s) for s in subsets], width, label=label)
            ax.set_xticks([i + 0.4 - width / 2 for i in range(len(subsets))],
                          [f"{s['label']}\n({s['runs']} run{'s' if s['runs'] != 1 else ''})" for s in subsets])
            ax.set(yscale="log", ylabel=f"seconds for {w['rounds']} rounds (projected)", title=w["name"])
            ax.grid(True, axis="y", which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out_dir / "workload.png", dpi=110)
        plt.close(fig)
        names["workload"] = "workload.png"
    return names
