"""The run context handed to every hook: configuration, a work directory, shared heavy objects.

Heavy objects (the ANNY body model, the Mitsuba scene, LPIPS) are built once per run and
shared by every plugin through `ctx.shared(name, factory)`, so a plugin never pays for them twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import attrs


@attrs.define
class Context:
    workdir: Path = attrs.field(converter=Path, factory=lambda: Path.cwd() / "out")
    seed: int = 0
    config: dict[str, Any] = attrs.field(factory=dict)
    _shared: dict[str, Any] = attrs.field(factory=dict, repr=False)

    def shared(self, name: str, factory: Callable[[], Any]) -> Any:
        """The run-wide object `name`, made by `factory` on first use."""
        if name not in self._shared:
            self._shared[name] = factory()
        return self._shared[name]
