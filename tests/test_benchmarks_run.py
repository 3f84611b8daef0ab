"""The benchmark scripts run (at toy sizes): `make bench` must not break unnoticed when the code
they time changes (bench_metric once called a helper the metric had dropped). Figures are not
checked against targets here: speed is reported by the benchmarks, never asserted by tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _run(script: str, *arguments: str) -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *arguments], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{script} failed:\n{done.stderr[-3000:]}"


def test_bench_metric_runs_and_reports_its_split(tmp_path):
    out = tmp_path / "bench_metric.json"
    _run("bench_metric.py", "--rows", "1", "--views", "2", "--resolution", "32", "--streams", "1", "--out", str(out))
    figures = json.loads(out.read_text())
    # frame A, the ideal and the halfway edit, and rungs 3-5: rungs 1 and 2 are those references
    assert figures["renders_per_row"] == 6 and figures["alexnet_images_per_row"] == 12
    assert set(figures["stage_cpu_s"]) == {"renders", "alexnet", "full_row", "comparisons"}
    assert figures["full_over_floor_cpu"] > 0 and len(figures["overall_scores"]) == 5
    low, middle, high = figures["full_over_floor_pairs_quartiles"]  # row-by-row spread of the ratio
    assert 0 < low <= middle <= high
    # rows timed as a build scores them (up to two at once) and one at a time
    assert figures["rows_in_flight"] in (1, 2) and figures["rows_per_s_one_at_a_time"] > 0
    # the floor in the row's own order (each mesh's AlexNet after its render), and the split of
    # a row alone over the floor into that order's cost and the comparisons'
    assert figures["chained_floor_rows_per_s"] > 0
    split = figures["chained_floor_over_floor"] * figures["full_over_chained_floor"]
    assert abs(split - figures["one_at_a_time_over_floor"]) <= 0.01 * figures["one_at_a_time_over_floor"]
    assert figures["rows_per_s_without_reuse"] > 0 and figures["reuse_speedup"] > 0
    assert figures["machine_speed"]["sgemm_gflops_one_thread"] > 0 and figures["machine_speed"]["cpu_capability"]
    # The libraries' pages (torch, Mitsuba, Warp) that two streams share: hundreds of MB on Linux.
    assert figures["shared_file_mb"] is None or 0 < figures["shared_file_mb"] < figures["peak_rss_mb"]
    # The rows' peak is reported apart from the set-up's.
    assert figures["setup_peak_rss_mb"] > 0 and figures["peak_rss_mb"] > 0
    assert figures["peak_rss_mb_is_rows_only"] in (True, False)
    machine = figures["machine"]
    assert machine["streams"] == 1 and machine["rows_per_s"] > 0
    if machine["peak_mb_sum_shared_once"] is not None:  # one stream: its libraries counted once anyway
        assert abs(machine["peak_mb_sum_shared_once"] - machine["peak_rss_mb_sum"]) <= 0.11


def test_bench_foreign_mesh_runs_and_keeps_the_ladder(tmp_path):
    out = tmp_path / "bench_foreign_mesh.json"
    _run("bench_foreign_mesh.py", "--views", "4", "--resolution", "64", "--part", "neck", "--remeshing", "decimated 20%",
         "--out", str(out))  # fmt: skip
    report = json.loads(out.read_text())["neck"]
    assert set(report) == {"anny", "decimated 20%, rendered", "decimated 20%, fitted"}
    assert report["anny"]["in_order"] and report["decimated 20%, fitted"]["in_order"]


def test_bench_foreign_mesh_sets_an_edits_surface_change_against_a_remeshings(tmp_path):
    out = tmp_path / "surface_error.json"
    _run("bench_foreign_mesh.py", "--surface-error", "--part", "eyebrow", "--remeshing", "decimated 50%", "--out", str(out))
    rows = json.loads(out.read_text())["eyebrow"]
    assert set(rows) == {"the edit", "a fifth of the edit", "decimated 50%"}
    assert rows["the edit"]["mean_mm"] > rows["a fifth of the edit"]["mean_mm"] > 0
    assert rows["decimated 50%"]["mean_mm"] > 0


def _child_peak(results) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    import bench_metric

    results.put(bench_metric.peak_mb())


def test_a_spawned_streams_peak_is_its_own_not_its_parents():
    """`ru_maxrss` of a process started by fork and exec starts at its parent's RSS at the fork,
    so streams of a parent holding the body model each reported the parent's memory."""
    import multiprocessing

    import numpy as np

    sys.path.insert(0, str(BENCHMARKS))
    import bench_metric

    held = np.ones(64 * 2**20)  # 512 MB resident in this process
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_child_peak, args=(results,))
    child.start()
    child_peak = results.get(timeout=120)
    child.join()
    assert bench_metric.peak_mb() > 512 and held.sum() == held.size
    assert 0 < child_peak < bench_metric.peak_mb() - 400


def test_reset_peak_starts_the_peak_again_from_the_current_memory():
    """The rows' peak is told apart from the set-up's: memory held and freed before `reset_peak`
    is no longer in `peak_mb`."""
    import numpy as np
    import pytest

    sys.path.insert(0, str(BENCHMARKS))
    import bench_metric

    held = np.ones(48 * 2**20)  # 384 MB, freed below (a large array goes back to the system)
    assert held.sum() == held.size
    with_it = bench_metric.peak_mb()
    del held
    if not bench_metric.reset_peak():
        pytest.skip("this kernel does not let a process clear its own peak (/proc/self/clear_refs)")
    assert bench_metric.peak_mb() < with_it - 300


def test_bench_calibration_surveys_every_corner_of_the_phenotype_box():
    """Table 4 covers the 2^6 corners of the source's box plus seeded draws inside it, and reports
    per part the extremes of the framed coverage ratio and how many subjects leave +/- 20 %."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import bench_calibration
    finally:
        sys.path.pop(0)
    from maskscore_core.trials.subjects import PHENOTYPE_RANGES

    subjects = bench_calibration.box_subjects(3)
    corners = [ph for name, ph in subjects.items() if name.startswith("corner")]
    assert len(subjects) == 64 + 3 and len({tuple(sorted(ph.items())) for ph in corners}) == 64
    for phenotype in subjects.values():
        assert set(phenotype) == set(PHENOTYPE_RANGES)
        assert all(PHENOTYPE_RANGES[k][0] <= v <= PHENOTYPE_RANGES[k][1] for k, v in phenotype.items())
    assert bench_calibration.box_subjects(3) == subjects  # seeded

    box = bench_calibration.box_coverage(4, 48, 1, parts_list=("mouth", "neck"))
    assert box["subjects"] == 65 and set(box["parts"]) == {"mouth", "neck"}
    for row in box["parts"].values():
        assert 0 < row["lowest"] <= row["highest"] and 0 <= row["outside_20_percent"] <= 65


def test_bench_landmark_fit_summarises_the_ladders_it_prints():
    """One image ladder through pixels: the summary's count, mean gap to the exact rungs and
    smallest step are those of the printed row (the figures variants of the fit are compared on)."""
    import os
    import re

    env = dict(os.environ, MASKSCORE_LOAD_PLUGINS="maskscore-mesh,maskscore-image,maskscore-video,maskscore-face-landmarks")
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_landmark_fit.py"), "--ladders", "1", "--modalities", "image"],
                          capture_output=True, text=True, timeout=900, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("| image |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    pixels, exact = ([float(v) for v in cells[i].split("/")] for i in (3, 6))
    gap = sum(abs(p - e) for p, e in zip(pixels[1:4], exact[1:4])) / 3
    step = min(a - b for a, b in zip(pixels, pixels[1:]))
    summary = done.stdout.strip().splitlines()[-1]
    found = re.fullmatch(r"in order: (\d) of 1 ladders; rungs 2-4 through pixels lie (\S+) from the exact rungs on average;"
                         r" smallest step down a ladder (\S+)", summary)  # fmt: skip
    assert found, summary
    assert int(found[1]) == (cells[-1] == "yes") == (step > 0)
    assert abs(float(found[2]) - gap) <= 0.006 and abs(float(found[3]) - step) <= 0.006  # the row is rounded to 0.01
