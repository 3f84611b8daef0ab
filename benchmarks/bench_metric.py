"""Speed of the universal metric: rows per second against the floor of its unavoidable work.

One row = one edit scored the way the dataset builder scores it (the render-compare scorer
plugin): frame A, the ideal edit (frame B's part on frame A, which instruction_following is
measured against) and the halfway edit prepared (rendered, LPIPS features), then the 5 rungs of
the frame-pair ladder scored on all three dimensions. Rungs 1 and 2 are the ideal and the halfway
edit vertex for vertex, as in every frame-pair row, so the scorer reuses those references'
renders and features (`render_compare._rendered_reference`) instead of making them again;
`reuse_speedup` times the same row with that turned off, interleaved, and checks the distances
are the same.
The floor is the same renders and the same AlexNet forwards without any comparison: they are
recorded while a full row runs (`_recorded_work`: every mesh the renderer is given, every image
batch AlexNet sees), then replayed with the scorer's threads, renders on this thread while
the forwards run on the scorer's pool, every forward submitted first (`_floor`). So the floor
follows the metric as it changes; the figures report how many renders and images a row takes.
full / floor says how much the rest of a row costs on top: the comparisons (L1, SSIM, LPIPS
distances, masks, head-motion fits) and the order a row's data imposes, a mesh's AlexNet forward
only after its render. The chained floor (`_floor(..., chained=True)`) keeps that order, so full / floor =
chained / floor (the order) x full / chained (the comparisons). `stage_cpu_s` splits
one row's process CPU time into renders, AlexNet and the rest, run one after another on one
torch thread: that split holds on a loaded machine, where wall times do not.
`page_faults_per_row` (rows as built, and the floor's) counts the buffers the kernel had to map
in afresh: freed memory given back to it and faulted in again costs the row system CPU
(`maskscore_core/allocator.py`).

A row is timed the way a build's worker scores its rows: the render-compare scorer lets the builder
score `rows_in_flight` rows at once (two on two threads: `dataset/rows_in_flight.py`), so each
row's ends (its first render, its last AlexNet forward) overlap its neighbours'; the figures time
batches of ROWS_AT_ONCE_BATCH rows that way (`rows_per_s`, `full_over_floor`), and one row at a
time beside them (`rows_per_s_one_at_a_time`).

Two rates: one stream (this process, torch on up to 2 threads), and the machine's: `--streams`
processes scoring at once, each on its share of the cores (MASKSCORE_THREADS), the way a
build's workers run. On a 2-core machine one stream leaves a core idle much of the time:
Mitsuba's render of one mesh, Embree's BVH build included, keeps about one core busy.

    .venv/bin/python benchmarks/bench_metric.py --out out/bench/bench_metric.json

Targets (issue 3): >= 1 row/s at the defaults (8 views, 256 px), full <= 1.25 x floor, peak
memory < 4 GB (for the machine rate: the streams' own peaks, `peak_mb`, summed, reported both as
summed RSS and with the libraries' shared pages counted once, `peak_mb_sum_shared_once`). This
process's peak is the rows' (`reset_peak` after the set-up); the set-up's is reported beside it.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import resource
import time
from pathlib import Path

import maskscore_core  # noqa: F401 - first: its malloc settings precede numpy's threads (allocator)

import click
import numpy as np


def _ladder_meshes():
    from maskscore_core.plugin.records import BodyState
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    body = reference.body

    def state(jaw=0.0, brow=0.0, head_yaw=0.0, phenotype=None):
        expression = np.zeros(52)
        expression[body.action_index("jawOpen")] = jaw
        expression[body.action_index("browInnerUp")] = brow
        pose = np.zeros((78, 3))
        pose[body.bone_index("Head"), 1] = head_yaw
        return BodyState(expression=expression, pose=pose, phenotype=phenotype or {})

    # A mouth edit as the builder scores it: the references are frame A, the ideal edit (rung 1:
    # frame B's mouth on frame A) and the halfway edit (rung 2), as `ladder` makes them.
    states = [
        state(),  # frame A
        state(jaw=0.8),  # rung 1: frame B's mouth on frame A (the ideal edit)
        state(jaw=0.4),  # rung 2: interpolation (the halfway edit)
        state(jaw=0.16),  # rung 3: partial edit
        state(brow=1.0),  # rung 4: wrong part
        state(jaw=0.8, phenotype={"gender": 0.9, "weight": 0.8, "age": 0.3}),  # rung 5: wrong subject
    ]
    vertices = reference.vertices(states)
    return vertices[0], list(vertices[1:])


def _warm_scorer(views: int, resolution: int, part: str):
    """(scorer, the row as a function, candidates) after one warm-up row (kernels, LPIPS weights)."""
    from maskscore_core.plugin.records import Decoded
    from maskscore_core.metric.framing import subject_framing
    from maskscore_core.metric.render_compare import RenderCompare
    from maskscore_core.metric.views import ViewConfig

    frame_a, candidates = _ladder_meshes()
    ref_a, ideal, halfway = Decoded(vertices=frame_a), Decoded(vertices=candidates[0]), Decoded(vertices=candidates[1])
    decoded = [Decoded(vertices=v) for v in candidates]
    compare = RenderCompare(ViewConfig(count=views, resolution=resolution))
    framing = subject_framing({}, part)  # as the builder frames the default subject's rows (cached per subject)
    row = functools.partial(_row, compare, ref_a, ideal, halfway, part, decoded, framing)
    row()
    return compare, row, decoded


# Rows scored at once in each timing of the builder's way: a build scores every row of a shard
# that way, so each row's ends overlap its neighbours'; a few rows make that the usual case.
ROWS_AT_ONCE_BATCH = 4


def builder_rows_in_flight() -> int:
    """How many rows a build's worker in this process scores at once with the render-compare
    scorer (`rows_in_flight.limit_for`)."""
    from maskscore_core.dataset.rows_in_flight import limit_for

    return limit_for("render-compare")


def _rows_as_built(row, count: int, limit: int) -> None:
    """`count` rows scored as a build's worker scores them: up to `limit` at once, on threads."""
    from maskscore_core.dataset.rows_in_flight import RowsInFlight

    with RowsInFlight(limit) as window:
        for i in range(count):
            window.put(i, row)
        window.drain()


def _row(compare, ref_a, ideal, halfway, part, decoded, framing):
    """One row: the references prepared, the candidates scored."""
    return compare.score(compare.prepare(ref_a, ideal, part, framing, halfway=halfway), decoded)


def peak_mb() -> float:
    """This process's peak resident memory in MB since it started or since `reset_peak`: Linux's
    VmHWM, which belongs to the process's own address space. Not `ru_maxrss`: a process started by
    fork and exec (multiprocessing's spawn) inherits its parent's RSS at the fork as its
    `ru_maxrss`, so each stream would report at least what the parent held (docs/metric.md,
    "Peak memory of a spawned stream")."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # not Linux: the portable bound


def reset_peak() -> bool:
    """Start `peak_mb` again from the current RSS (Linux: 5 written to clear_refs), so that the
    rows' peak is told apart from the set-up's (which, on a fresh machine, builds the body model's
    caches); False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def shared_file_mb() -> float | None:
    """MB of this process's resident pages that are clean pages of mapped files (Linux
    `smaps_rollup`: Rss minus Anonymous): the libraries' code and read-only data (torch's,
    Mitsuba's, Warp's), which every process mapping the same file shares in one copy. None where
    the kernel does not report it."""
    try:
        with open("/proc/self/smaps_rollup", encoding="ascii") as rollup:
            fields = dict(line.split()[:2] for line in rollup if line.startswith(("Rss:", "Anonymous:")))
        return (int(fields["Rss:"]) - int(fields["Anonymous:"])) / 1024.0
    except (OSError, KeyError, ValueError):
        return None


def _stream(rows: int, views: int, resolution: int, part: str, barrier, results) -> None:
    """One scoring stream in its own process, on its share of the cores (MASKSCORE_THREADS)."""
    _compare, row, _decoded = _warm_scorer(views, resolution, part)
    barrier.wait()
    start = time.time()
    _rows_as_built(row, rows, builder_rows_in_flight())
    end = time.time()
    results.put((start, end, peak_mb(), shared_file_mb()))


def machine_throughput(streams: int, rows: int, views: int, resolution: int, part: str) -> dict:
    """Rows per second of the whole machine: `streams` processes scoring at once, each on
    cores / streams threads, as a build's workers do (timed from a common start)."""
    import multiprocessing

    from maskscore_core import threads

    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(streams), context.Queue()
    previous = os.environ.get(threads.ENV)
    os.environ[threads.ENV] = str(threads.share(streams))  # inherited by the spawned streams
    try:
        workers = [context.Process(target=_stream, args=(rows, views, resolution, part, barrier, results))
                   for _ in range(streams)]  # fmt: skip
        for worker in workers:
            worker.start()
        found = [results.get(timeout=3600) for _ in workers]
        for worker in workers:
            worker.join()
    finally:
        if previous is None:
            os.environ.pop(threads.ENV, None)
        else:
            os.environ[threads.ENV] = previous
    wall = max(end for _s, end, *_m in found) - min(start for start, _e, *_m in found)
    return {
        "streams": streams,
        "threads_per_stream": threads.share(streams),
        "rows_per_s": round(streams * rows / wall, 3),
        "peak_rss_mb_sum": round(sum(m for _s, _e, m, _f in found), 1),
        # A library page the streams share is in each one's RSS: counted once, the summed peaks
        # bound the machine's memory for the streams from above (their peaks need not coincide).
        "peak_mb_sum_shared_once": None if any(f is None for *_r, f in found)
        else round(sum(m - f for _s, _e, m, f in found) + max(f for *_r, f in found), 1),
    }


def machine_speed() -> dict:
    """What this CPU does on one torch thread: its vector instruction set as torch sees it and a
    float32 matrix product's rate. Rows/s move with both from machine to machine (AlexNet is
    bound by the same arithmetic), so figures from two machines are compared through these."""
    import torch

    from maskscore_core import threads

    with threads.one_thread():
        a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
        for _ in range(3):
            a @ b
        spent = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(4):
                a @ b
            spent.append((time.perf_counter() - start) / 4)
    return {"cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "sgemm_gflops_one_thread": round(2 * 1024**3 / float(np.median(spent)) / 1e9, 1)}


def _recorded_work(compare, full_row) -> tuple[list, list]:
    """The meshes one full row renders and the image batches it runs through AlexNet, recorded
    while it runs (so the floor follows whatever the metric renders, with no list kept here)."""
    import torch

    meshes, batches = [], []
    render, features = compare.renderer.render, compare.lpips.features

    def record_render(vertices, *args, **kwargs):
        meshes.append(np.array(vertices, copy=True))
        return render(vertices, *args, **kwargs)

    def record_features(images):
        batches.append(torch.as_tensor(images).clone())
        return features(images)

    compare.renderer.render, compare.lpips.features = record_render, record_features  # shadow the methods
    try:
        full_row()
    finally:
        del compare.renderer.render, compare.lpips.features
    return meshes, batches


def _without_reuse(row):
    """`row()` with no candidate taking a reference's render (`render_compare._rendered_reference`
    finding none): what rungs 1 and 2 would cost if they were rendered and compared again."""
    from maskscore_core.metric import render_compare

    found = render_compare._rendered_reference
    render_compare._rendered_reference = lambda prepared, vertices: None
    try:
        return row()
    finally:
        render_compare._rendered_reference = found


def _floor(compare, meshes, batches, *, chained: bool = False):
    """The floor row: the recorded renders on this thread while the recorded AlexNet forwards run
    on the scorer's pool, one torch thread each, as the scorer runs them; no comparison. Every
    forward is submitted first, or, `chained`, each only once its mesh is rendered: the order a
    row's data allows, so that between the two floors is what that order costs, whatever the
    comparisons do. A chained floor is None where renders and batches do not pair one to one."""
    from maskscore_core import threads
    from maskscore_core.metric import render_compare

    if chained and len(meshes) != len(batches):
        return None

    def floor_row():
        pool = render_compare._comparison_pool()
        with threads.one_thread():
            futures = [] if chained else [pool.submit(compare.lpips.features, batch) for batch in batches]
            for k, vertices in enumerate(meshes):
                compare.renderer.render(vertices)
                if chained:
                    futures.append(pool.submit(compare.lpips.features, batches[k]))
            for future in futures:
                future.result()

    return floor_row


def _stage_cpu(compare, meshes, batches, full_row) -> dict:
    """Process CPU seconds of one row's stages run one after another on one torch thread: the
    renders, the AlexNet forwards, and the rest of a full row (the comparisons: depth, normals,
    SSIM, LPIPS distances, masks, head motion). Medians of three runs each."""
    from maskscore_core import threads

    def cpu(work) -> float:
        spent = []
        for _ in range(3):
            start = time.process_time()
            work()
            spent.append(time.process_time() - start)
        return float(np.median(spent))

    with threads.one_thread():
        renders = cpu(lambda: [compare.renderer.render(v) for v in meshes])
        alexnet = cpu(lambda: [compare.lpips.features(b) for b in batches])
    row = cpu(full_row)
    return {"renders": round(renders, 4), "alexnet": round(alexnet, 4), "full_row": round(row, 4),
            "comparisons": round(row - renders - alexnet, 4)}


@click.command()
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None, help="write the figures as JSON here")
@click.option("--rows", default=5, show_default=True, type=click.IntRange(min=1))
@click.option("--views", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--resolution", default=256, show_default=True, type=click.IntRange(min=16))
@click.option("--part", default="mouth", show_default=True)
@click.option("--streams", default=2, show_default=True, type=click.IntRange(min=0),
              help="also time this many scoring processes at once (0: skip)")
def main(out_path, rows, views, resolution, part, streams):
    import torch

    setup_start = time.perf_counter()
    compare, full_row, decoded = _warm_scorer(views, resolution, part)
    setup_s = time.perf_counter() - setup_start
    setup_peak_mb = peak_mb()
    peak_was_reset = reset_peak()

    meshes, batches = _recorded_work(compare, full_row)
    floor_row = _floor(compare, meshes, batches)
    chained_row = _floor(compare, meshes, batches, chained=True)
    stages = _stage_cpu(compare, meshes, batches, full_row)

    # Interleave full, floor and unreused rows so that load from other processes hits all alike.
    full_times, floor_times, full_cpu, floor_cpu, unreused_times, chained_times = [], [], [], [], [], []
    built_times, built_cpu, in_flight = [], [], builder_rows_in_flight()
    floor_faults, built_faults, built_system = [], [], []  # minor page faults and system CPU a row
    for _ in range(rows):
        start, cpu, usage = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
        floor_row()
        floor_times.append(time.perf_counter() - start)
        floor_cpu.append(time.process_time() - cpu)
        floor_faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - usage.ru_minflt)
        if chained_row is not None:
            start = time.perf_counter()
            chained_row()
            chained_times.append(time.perf_counter() - start)
        start, cpu = time.perf_counter(), time.process_time()
        scores = full_row()
        full_times.append(time.perf_counter() - start)
        full_cpu.append(time.process_time() - cpu)
        start, cpu, usage = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
        _rows_as_built(full_row, ROWS_AT_ONCE_BATCH, in_flight)
        built_times.append((time.perf_counter() - start) / ROWS_AT_ONCE_BATCH)
        built_cpu.append((time.process_time() - cpu) / ROWS_AT_ONCE_BATCH)
        after = resource.getrusage(resource.RUSAGE_SELF)
        built_faults.append((after.ru_minflt - usage.ru_minflt) / ROWS_AT_ONCE_BATCH)
        built_system.append((after.ru_stime - usage.ru_stime) / ROWS_AT_ONCE_BATCH)
        start = time.perf_counter()
        unreused = _without_reuse(full_row)
        unreused_times.append(time.perf_counter() - start)
        if [s.distances for s in unreused] != [s.distances for s in scores]:
            raise SystemExit("the reused references' distances differ from rendering the candidates again")
    alone_s, floor_s = float(np.median(full_times)), float(np.median(floor_times))
    full_s = float(np.median(built_times))  # a row as a build scores it: the headline figures
    # Each full row over the floor row timed just before it: how far the ratio moves within one
    # run (a shared host's speed drifts; a single median hides by how much).
    pair_ratios = np.array(built_times) / np.array(floor_times)
    full_cpu_s, floor_cpu_s = float(np.median(built_cpu)), float(np.median(floor_cpu))
    alone_cpu_s = float(np.median(full_cpu))
    chained_s = float(np.median(chained_times)) if chained_times else None
    rows_peak_mb = peak_mb()
    shared = shared_file_mb()

    machine = machine_throughput(streams, rows, views, resolution, part) if streams else None
    speed = machine_speed()
    figures = {
        "machine": machine,
        "machine_speed": speed,
        "config": {"views": views, "resolution": resolution, "part": part, "rows": rows,
                   "candidates_per_row": len(decoded), "variant": compare.renderer.variant,
                   "torch_threads": torch.get_num_threads(), "machine": platform.machine(),
                   "cpus": os.cpu_count()},
        "setup_s": round(setup_s, 3),
        "renders_per_row": len(meshes),
        "alexnet_images_per_row": int(sum(len(b) for b in batches)),
        "stage_cpu_s": stages,
        # rows as a build's worker scores them, `rows_in_flight` at once (a batch of
        # ROWS_AT_ONCE_BATCH timed together), and one at a time
        "rows_in_flight": in_flight,
        "row_s_median": round(full_s, 4),
        "rows_per_s_one_at_a_time": round(1.0 / alone_s, 3),
        "one_at_a_time_over_floor": round(alone_s / floor_s, 3),
        "one_at_a_time_over_floor_cpu": round(alone_cpu_s / floor_cpu_s, 3),
        "floor_row_s_median": round(floor_s, 4),
        "rows_per_s": round(1.0 / full_s, 3),
        "candidates_per_s": round(len(decoded) / full_s, 3),
        "floor_rows_per_s": round(1.0 / floor_s, 3),
        "full_over_floor": round(full_s / floor_s, 3),
        "full_over_floor_pairs_quartiles": [round(float(q), 3) for q in np.percentile(pair_ratios, [25, 50, 75])],
        "row_cpu_s_median": round(full_cpu_s, 4),
        "floor_row_cpu_s_median": round(floor_cpu_s, 4),
        "full_over_floor_cpu": round(full_cpu_s / floor_cpu_s, 3),
        # The kernel's share of a row: page faults of buffers given back and allocated again
        # (maskscore_core/allocator.py keeps them), medians a row.
        "page_faults_per_row": int(np.median(built_faults)),
        "floor_page_faults_per_row": int(np.median(floor_faults)),
        "row_system_cpu_s_median": round(float(np.median(built_system)), 4),
        # the floor with each AlexNet forward after its render, as a row's data allows
        "chained_floor_rows_per_s": None if chained_s is None else round(1.0 / chained_s, 3),
        "chained_floor_over_floor": None if chained_s is None else round(chained_s / floor_s, 3),
        "full_over_chained_floor": None if chained_s is None else round(alone_s / chained_s, 3),
        # the same row with every candidate rendered and compared, rungs 1 and 2 included
        "rows_per_s_without_reuse": round(1.0 / float(np.median(unreused_times)), 3),
        "reuse_speedup": round(float(np.median(unreused_times)) / alone_s, 3),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "peak_rss_mb": round(rows_peak_mb, 1),
        # the set-up's peak: loading the body model and LPIPS (building their caches on a fresh machine)
        "setup_peak_rss_mb": round(setup_peak_mb, 1),
        "peak_rss_mb_is_rows_only": peak_was_reset,
        "shared_file_mb": None if shared is None else round(shared, 1),
        "targets": {"rows_per_s": 1.0, "full_over_floor": 1.25, "peak_rss_mb": 4096},
        "overall_scores": [round(s.overall, 4) for s in scores],
    }  # fmt: skip
    rows_table = [
        ("rows/s", figures["rows_per_s"], f"one stream, {in_flight} rows at once as a build scores them"),
        ("  one at a time", figures["rows_per_s_one_at_a_time"], f"full / floor {figures['one_at_a_time_over_floor']}"),
        *([(f"rows/s x{machine['streams']}", machine["rows_per_s"], ">= 1 (the machine)"),
           ("RSS sum (MB)", machine["peak_rss_mb_sum"], "< 4096"),
           ("RSS sum, libs once", machine["peak_mb_sum_shared_once"], "< 4096")] if machine else []),
        ("candidates/s", figures["candidates_per_s"], ""),
        ("floor rows/s", figures["floor_rows_per_s"], ""),
        ("full / floor", figures["full_over_floor"], "<= 1.25"),
        ("  pairs' IQR", "-".join(f"{q:.3f}" for q in figures["full_over_floor_pairs_quartiles"][::2]),
         "row by row, each over the floor row before it"),
        ("row CPU s", figures["row_cpu_s_median"], ""),
        ("floor CPU s", figures["floor_row_cpu_s_median"], ""),
        ("full/floor CPU", figures["full_over_floor_cpu"], ""),
        ("page faults/row", figures["page_faults_per_row"], f"floor {figures['floor_page_faults_per_row']}; "
                                                             f"system CPU s {figures['row_system_cpu_s_median']}"),
        *([("chained/floor", figures["chained_floor_over_floor"], "each AlexNet after its render: the row's own order"),
           ("full/chained", figures["full_over_chained_floor"], "one row at a time: what the comparisons add to that")]
          if chained_s else []),
        ("rows/s no reuse", figures["rows_per_s_without_reuse"], "rungs 1 and 2 rendered again"),
        ("reuse speedup", figures["reuse_speedup"], "same distances (checked)"),
        *((f"CPU s {name}", value, "one row, one thread") for name, value in stages.items()),
        ("load avg 1 min", figures["load_average_1min"], ""),
        ("sgemm GFLOPS", speed["sgemm_gflops_one_thread"], f"one thread, {speed['cpu_capability']}"),
        ("peak RSS (MB)", figures["peak_rss_mb"], "< 4096" + (" (the rows)" if peak_was_reset else "")),
        ("set-up peak (MB)", figures["setup_peak_rss_mb"], "loading the models"),
    ]
    print(f"render-compare, {views} views x {resolution} px, {len(decoded)} candidates/row, {rows} rows")
    for name, value, target in rows_table:
        print(f"  {name:<15} {value:>10}   {target}")
    if out_path:
        path = Path(out_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
