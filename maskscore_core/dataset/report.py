"""Eval reports as Markdown: one or several scorers side by side, figure by figure."""

from __future__ import annotations

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins


def _cell(figure: dict | None) -> str:
    if not figure or figure.get("value") is None:
        return "-"
    ci = figure.get("ci95")
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    return f"{figure['value']:.3f}{interval}"


def _number(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(reports: list[dict]) -> str:
    """A Markdown page comparing `reports` (from evaluate.evaluate), one column per scorer."""
    names = [f"{r['scorer']['name']} (Avg@{r['scorer']['num_pass']})" for r in reports]
    head = "| figure | " + " | ".join(names) + " |"
    rule = "| --- |" + " ---: |" * len(reports)
    lines = [
        "# Bench evaluation",
        "",
        f"Bench: `{reports[0]['bench']}`, {reports[0]['instances']} edit instances. Accuracy is pairwise"
        " (a tie counts wrong; pairs tied in expectation are left out); [low, high] is the 95% bootstrap"
        " interval; group and overall figures are unweighted means over task types.",
        "",
    ]
    for name, r in zip(names, reports):
        if r.get("scores_from") == "bench":
            lines.append(f"- {name}: the scores stored in the bench at build time (the bench was scored with this"
                         " exact scorer configuration; nothing was scored again; `--rescore` scores anew).")
        else:
            lines.append(f"- {name}: scored by the scorer plugin (or its cached results for this configuration).")
    lines.append("")
    for dimension in vocab.DIMENSIONS:
        if not any(dimension in r["dimensions"] for r in reports):
            continue
        dims = [r["dimensions"].get(dimension, {}) for r in reports]
        lines += [f"## {dimension}", "", head, rule]
        lines.append("| **overall accuracy** | " + " | ".join(_cell(d.get("accuracy")) for d in dims) + " |")
        for key, label in (("tie_rate", "tie rate"), ("tie_rate_all_pairs", "tie rate, all rung pairs"),
                           ("kendall_tau", "Kendall tau vs ladder"), ("best_of_n", "best-of-N (top = rung 1)")):
            lines.append(f"| {label} | " + " | ".join(_number(d.get(key)) for d in dims) + " |")
        lines.append("| failed rows | " + " | ".join(str(d.get("failed_rows", "-")) for d in dims) + " |")
        for group in vocab.TASK_GROUPS:
            lines.append(f"| group {group} | " + " | ".join(_cell(d.get("groups", {}).get(group)) for d in dims) + " |")
        for task in vocab.TASK_TYPES:
            if any(task in d.get("task_types", {}) for d in dims):
                lines.append(f"| {task} | " + " | ".join(_cell(d.get("task_types", {}).get(task)) for d in dims) + " |")
        for modality in plugins.modality_names():
            if any(modality in d.get("modalities", {}) for d in dims):
                lines.append(f"| modality {modality} | " + " | ".join(_cell(d.get("modalities", {}).get(modality)) for d in dims) + " |")
        lines.append("")
    lines.append("Mean accuracy over the three dimensions: " + ", ".join(
        f"{n}: {_number(r.get('mean_accuracy'))}" for n, r in zip(names, reports)))
    for name, report in zip(names, reports):
        if report["failures"]:
            lines += ["", f"Failures of {name} ({len(report['failures'])}):", *[f"- {f}" for f in report["failures"][:20]]]
    return "\n".join(lines) + "\n"
