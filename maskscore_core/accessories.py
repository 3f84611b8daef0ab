"""Procedural accessories (glasses, hat, earrings, scarf) for the Part group of task types.

ANNY has no accessories; the design's Part tasks (part_add/remove/replace on headwear, earwear,
eyewear, neckwear) need them. Each accessory is a small procedural mesh attached to a SOMA bone.
"""

from __future__ import annotations


def slots() -> list:
    """The accessory slots of the reference mesh, in a fixed order. (Geometry: see issue 4.)"""
    return []
