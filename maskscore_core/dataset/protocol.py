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


def expected_levels(dimension: str, rungs: list[int]) -> list[int]:
    levels = EXPECTED_LEVEL[vocab.check_dimension(dimension)]
    unknown = [r for r in rungs if r not in levels]
    if unknown:
        raise ProtocolError(f"rungs {unknown} are not on the five-rung ladder; the bench grades ladders only")
    return [levels[r] for r in rungs]


def graded_pairs(dimension: str, rungs: list[int]) -> list[tuple[int, int]]:
    """(better, worse) candidate positions for every pair with a strict expected order."""
    levels = expected_levels(dimension, rungs)
    pairs = []
    for i in range(len(rungs)):
        for j in range(len(rungs)):
            if levels[i] < levels[j]:
                pairs.append((i, j))
    return sorted(pairs)
