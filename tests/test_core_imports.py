"""The core's import rule (docs/architecture.md): imports stand at module top and form no cycle.

An import may stand inside a function only when what it loads is heavy: a library in `HEAVY`
(slow to import or needing a native library: the command line, `list-plugins` and a plugin
installed alone start without it), or a maskscore_core module that imports one at its top; or
when it is listed in `LATE` with the reason it cannot be at the top.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import maskscore_core

ROOT = Path(maskscore_core.__file__).parent
HEAVY = frozenset({
    "torch", "torchvision", "mitsuba", "drjit", "anny", "warp", "trimesh", "lpips", "scipy", "PIL", "imageio",
    "imageio_ffmpeg", "pocketsphinx", "ray", "fastapi", "uvicorn", "safetensors", "matplotlib", "OpenEXR",
    "soundfile", "transformers", "tokenizers", "diffusers",
})  # fmt: skip
# (module, imported module) -> why the import cannot stand at the module's top.
LATE = {
    ("maskscore_core.vocab", "maskscore_core.plugin.manager"):
        "the registry imports vocab; check_modality asks the registry for the names plugins registered",
    ("maskscore_core.body.oral_cavity", "maskscore_core.metric.render"):
        "render draws the cavity dark, so it imports oral_cavity; only the rays that compute it again need its normals",
}  # fmt: skip


def _name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__")


MODULES = {_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _loads(node) -> tuple[list[str], str | None]:
    """(maskscore_core modules an import statement names, as `Python binds them; its library)."""
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
        names = subs if len(subs) == len(node.names) else [base, *subs]
    else:
        names = [a.name for a in node.names]
    library = None if names[0].startswith("maskscore_core") else names[0].split(".")[0]
    return [n for n in names if n in MODULES], library


def _packages(module: str) -> set[str]:
    """The packages Python imports before `module` (its __init__ files)."""
    return {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)} & set(MODULES)


def _top_level(tree) -> set[int]:
    """Imports that run when the module is imported (module body, and its if/try blocks)."""
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.If, ast.Try)):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            found |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return found


def _in_try(tree) -> set[int]:
    return {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try) for s in t.body for n in ast.walk(s)}


def _survey():
    graph: dict[str, set[str]] = {}
    heavy: set[str] = set()
    late: list[tuple[str, int, list[str], str | None, bool]] = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top, tried = _top_level(tree), _in_try(tree)
        graph[module] = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or getattr(node, "level", 0):
                continue
            ours, library = _loads(node)
            if id(node) in top:
                graph[module] |= set(ours) - {module}
                heavy |= {module} if library in HEAVY else set()
            else:
                late.append((module, node.lineno, ours, library, id(node) in tried))
    changed = True
    while changed:  # a module that imports a heavy module (or package) at its top is heavy too
        changed = False
        for module, deps in graph.items():
            if module not in heavy and (deps | {p for d in deps for p in _packages(d)} | _packages(module)) & heavy:
                heavy.add(module)
                changed = True
    return graph, heavy, late


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_module_top_imports_form_no_cycle():
    graph, _, _ = _survey()
    cycle = _cycle(graph)
    assert cycle is None, "module-top imports form a cycle: " + " -> ".join(cycle)


def test_imports_inside_functions_load_only_heavy_modules():
    _, heavy, late = _survey()
    wrong = []
    for module, line, ours, library, tried in late:
        if tried:  # an optional library: the function works without it
            continue
        light = [m for m in ours if m not in heavy and m != "maskscore_core" and (module, m) not in LATE]
        if light or (library is not None and library not in HEAVY and library != "__future__"):
            wrong.append(f"{MODULES[module].relative_to(ROOT.parent)}:{line} imports {light or library}")
    assert not wrong, "imports that belong at module top (or in LATE with a reason):\n" + "\n".join(wrong)


def test_the_survey_sees_what_it_checks():
    """The rule is only as good as the survey: it finds the heavy modules and the late imports."""
    graph, heavy, late = _survey()
    assert "maskscore_core.body.anny_model" in heavy and "maskscore_core.vocab" not in heavy
    assert "maskscore_core.plugin.manager" in graph["maskscore_core.dataset.schemas"]
    assert ("maskscore_core.vocab", "maskscore_core.plugin.manager") in {(m, o) for m, _, ours, _, _ in late for o in ours}
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert sys.version_info >= (3, 11)
