"""Which candidate pairs the bench grades, per dimension (the EditReward-Bench pair protocol).

The ladder's five rungs are 1 frame B, 2 interpolation A->B, 3 partial edit, 4 wrong part,
5 wrong subject. For each dimension every rung gets an expected level (0 best). A row yields every
pair of candidates whose levels differ; pairs with equal levels are ties in expectation and are
left out:
- instruction_following (the target part vs frame B): 1 > 2 > 3 > {4, 5}. Rungs 4 and 5 both
  miss the part (4 leaves it as in frame A, 5 shows another subject's), neither is known to be
  closer to frame B: 9 pairs.
- consistency (everything else vs frame A): {1, 2, 3} > 4 > 5. Rungs 1-3 only touch the target
  part, so they tie; the wrong part changes the rest; the wrong subject changes everything: 7 pairs.
- overall: the design's full order 1 > 2 > 3 > 4 > 5: 10 pairs.

A modality whose representation cannot carry what separates some rungs declares its own levels
(`levels_for`, the registered modality's `ladder_levels`). A modality that can carry no part but the one it
edits (speech and text move only the mouth) cannot make rung 4 ("another part edited": it
would be frame A's own words, a candidate that does nothing) and drops it: its table has a
`dropped` entry {rung: reason}, its rows hold the other rungs in order (`rungs_of`), and the
reason is recorded in the card with the levels. A pose carries no identity and a transcript no voice (both
are decoded on frame A's body), so their rung 5 would be only another pose or other words, moving
the asked part in no known direction: pose and text drop rung 5. On instruction_following and overall rung 1 is
alone at the top in every table (`check_levels`): frame B's part is the one best candidate. A
build records each modality's levels in its card (`config.ladder_levels`) and grading reads them
from there, so a bench is graded by the labels it was built with.
"""

from __future__ import annotations

from maskscore_core import vocab
from maskscore_core.plugin import manager as plugins

EXPECTED_LEVEL: dict[str, dict[int, int]] = {
    "instruction_following": {1: 0, 2: 1, 3: 2, 4: 3, 5: 3},
    "consistency": {1: 0, 2: 0, 3: 0, 4: 1, 5: 2},
    "overall": {1: 0, 2: 1, 3: 2, 4: 3, 5: 4},
}


class ProtocolError(ValueError):
    """Candidates the pair protocol cannot grade (no rung, or a rung outside the ladder)."""


RUNGS = (1, 2, 3, 4, 5)
DROPPED = "dropped"  # the optional entry of a levels table naming the rungs a modality cannot make
TOP_ALONE = ("instruction_following", "overall")  # where rung 1 must be the one best candidate


def _dropped(table, what: str) -> dict[int, str]:
    """The table's dropped rungs {rung: reason}, checked: rungs 2-5, each with a reason."""
    dropped = table.get(DROPPED) or {}
    try:
        dropped = {int(rung): reason for rung, reason in dropped.items()}
    except (AttributeError, TypeError, ValueError):
        raise ProtocolError(f"{what}: {DROPPED} must map rungs to reasons, got {dropped!r}") from None
    for rung, reason in dropped.items():
        if rung not in RUNGS[1:]:
            raise ProtocolError(f"{what}: only rungs 2-5 can be dropped (rung 1 is the edit itself), got rung {rung}")
        if not isinstance(reason, str) or not reason.strip():
            raise ProtocolError(f"{what}: dropped rung {rung} needs a reason, got {reason!r}")
    return dict(sorted(dropped.items()))


def check_levels(table, what: str) -> dict:
    """A {dimension: {rung: level}} table (rung keys may be strings, as JSON stores them), plus
    an optional `dropped` {rung: reason}, checked: every dimension, every rung not dropped,
    non-negative integer levels, rung 1 at level 0 and, on instruction_following and overall,
    alone there (on consistency every faithful edit ties with it)."""
    if not isinstance(table, dict) or set(table) - {DROPPED} != set(vocab.DIMENSIONS):
        raise ProtocolError(f"{what}: ladder levels must give exactly the dimensions {', '.join(vocab.DIMENSIONS)}"
                            f" (and optionally {DROPPED!r})")
    dropped = _dropped(table, what)
    rungs = [r for r in RUNGS if r not in dropped]
    checked: dict = {}
    for dimension in vocab.DIMENSIONS:
        levels = table[dimension]
        try:
            levels = {int(rung): level for rung, level in levels.items()}
        except (AttributeError, TypeError, ValueError):
            raise ProtocolError(f"{what}: {dimension} levels must map rungs to levels, got {levels!r}") from None
        if sorted(levels) != rungs or not all(isinstance(v, int) and v >= 0 for v in levels.values()):
            raise ProtocolError(f"{what}: {dimension} levels must map rungs {rungs} to integers >= 0, got {levels!r}")
        shares_the_top = [r for r in rungs[1:] if levels[r] <= levels[1]]
        if levels[1] != 0 or (dimension in TOP_ALONE and shares_the_top):
            raise ProtocolError(f"{what}: rung 1 must be alone at level 0 on {dimension}, got {levels!r}")
        checked[dimension] = dict(sorted(levels.items()))
    if dropped:
        checked[DROPPED] = dropped
    return checked


def rungs_of(table: dict | None) -> list[int]:
    """The rungs a modality's rows hold, in ladder order: every rung its table does not drop."""
    dropped = _dropped(table or {}, "ladder levels")
    return [r for r in RUNGS if r not in dropped]


def levels_for(modality: str) -> dict:
    """The levels `modality` declares (`Modality.ladder_levels`), else EXPECTED_LEVEL."""
    declared = plugins.modality(modality).ladder_levels
    return EXPECTED_LEVEL if declared is None else check_levels(declared, f"the {modality} plugin")


def expected_levels(dimension: str, rungs: list[int], table: dict | None = None) -> list[int]:
    """Each rung's expected level on `dimension`, from `table` (default: EXPECTED_LEVEL)."""
    levels = (EXPECTED_LEVEL if table is None else table)[vocab.check_dimension(dimension)]
    unknown = [r for r in rungs if r not in levels]
    if unknown:
        raise ProtocolError(f"rungs {unknown} are not on the ladder graded here (rungs {sorted(levels)}); the bench grades ladders only")
    return [levels[r] for r in rungs]


def graded_pairs(dimension: str, rungs: list[int], table: dict | None = None) -> list[tuple[int, int]]:
    """(better, worse) candidate positions for every pair with a strict expected order."""
    levels = expected_levels(dimension, rungs, table)
    pairs = []
    for i in range(len(rungs)):
        for j in range(len(rungs)):
            if levels[i] < levels[j]:
                pairs.append((i, j))
    return sorted(pairs)
