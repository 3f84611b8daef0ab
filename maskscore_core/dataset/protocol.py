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
(the `ladder_levels` hook, `levels_for`): speech leaves every part but the mouth as it is, so
its rung 4 (another part "edited") is frame A's own words and ties with rungs 1-3 on
consistency; text has no voice either, so its rung 5 is just other words, level with rung 4. A
build records each modality's levels in its card (`config.ladder_levels`) and grading reads them
from there, so a bench is graded by the labels it was built with.
"""

from __future__ import annotations

from .. import vocab

EXPECTED_LEVEL: dict[str, dict[int, int]] = {
    "instruction_following": {1: 0, 2: 1, 3: 2, 4: 3, 5: 3},
    "consistency": {1: 0, 2: 0, 3: 0, 4: 1, 5: 2},
    "overall": {1: 0, 2: 1, 3: 2, 4: 3, 5: 4},
}


class ProtocolError(ValueError):
    """Candidates the pair protocol cannot grade (no rung, or a rung outside the ladder)."""


RUNGS = (1, 2, 3, 4, 5)


def check_levels(table, what: str) -> dict[str, dict[int, int]]:
    """A {dimension: {rung: level}} table (rung keys may be strings, as JSON stores them),
    checked: every dimension, rungs 1-5, non-negative integer levels, rung 1 at level 0 and, but
    on consistency (where every faithful edit ties), alone there: frame B's part stays the one
    best candidate."""
    if not isinstance(table, dict) or set(table) != set(vocab.DIMENSIONS):
        raise ProtocolError(f"{what}: ladder levels must give exactly the dimensions {', '.join(vocab.DIMENSIONS)}")
    checked = {}
    for dimension in vocab.DIMENSIONS:
        levels = table[dimension]
        try:
            levels = {int(rung): level for rung, level in levels.items()}
        except (AttributeError, TypeError, ValueError):
            raise ProtocolError(f"{what}: {dimension} levels must map rungs 1-5 to levels, got {levels!r}") from None
        if sorted(levels) != list(RUNGS) or not all(isinstance(v, int) and v >= 0 for v in levels.values()):
            raise ProtocolError(f"{what}: {dimension} levels must map rungs 1-5 to integers >= 0, got {levels!r}")
        shares_the_top = [r for r in RUNGS[1:] if levels[r] <= levels[1]]
        if levels[1] != 0 or (dimension != "consistency" and shares_the_top):
            raise ProtocolError(f"{what}: rung 1 must be alone at level 0 on {dimension}, got {levels!r}")
        checked[dimension] = dict(sorted(levels.items()))
    return checked


def levels_for(modality: str) -> dict[str, dict[int, int]]:
    """The levels `modality` declares (`Modality.ladder_levels`), else EXPECTED_LEVEL."""
    from .. import plugins

    declared = plugins.modality(modality).ladder_levels
    return EXPECTED_LEVEL if declared is None else check_levels(declared, f"the {modality} plugin")


def expected_levels(dimension: str, rungs: list[int], table: dict | None = None) -> list[int]:
    """Each rung's expected level on `dimension`, from `table` (default: EXPECTED_LEVEL)."""
    levels = (EXPECTED_LEVEL if table is None else table)[vocab.check_dimension(dimension)]
    unknown = [r for r in rungs if r not in levels]
    if unknown:
        raise ProtocolError(f"rungs {unknown} are not on the five-rung ladder; the bench grades ladders only")
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
