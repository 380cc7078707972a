"""What a result is keyed on: every file whose edit could change one of its numbers, and no other.

A result is fresh while the files of its key hash as they did when it was measured (asv keys a
benchmark on its own source, Quarto's freeze re-runs a document when its source changes). Keys:

- **an experiment**: its declaration (``experiment.py``), each kernel's source, its phase
  program, the Python files of its folder that those import, the headers its kernels include
  (found, as nvcc finds them, beside the including file, in the experiment's folder or in
  ``labnotebook/run/include``), the engine modules its Python imports (within
  ``labnotebook/run/``, and theirs in turn: the elementwise reference, cuBLAS with its math mode,
  the random fills), ``run/phases.py`` where it declares a phase program, and the measurement
  protocol (``labnotebook/run/protocol/``, with what it imports);
- **the ceilings**: ``run/roofs.py``, ``run/fma_peak.cu`` and the protocol, with what they import;
- **a profile**: the record it belongs to, plus the profiler pass (``PROFILER``).

Everything else (the runner's bookkeeping in ``MECHANICS``, workers, scheduling, the store and
its format, the CLI, the site) is provenance: each record names its git commit, and editing it
stales nothing. Files are found from the declaration, never by listing a folder, so a scratch
file, a cache or a build product beside the kernels changes no key; paths are relative to the
project's root and contents are read with CRLF as LF, so a key is the same on every checkout.

A file is hashed by what it means (``RULE``), not by its bytes: a Python file by its syntax tree
without docstrings, with the engine's own imports reduced to the names they bind (comments,
docstrings, formatting and where an engine module lives change nothing); an engine file counts
in a key by its content alone, so moving or renaming one keeps every key. CUDA files are hashed
by their text, the fast first test: where only they changed, ``machine.py`` compares the machine
code they compile to. A record made under the older rule (``TEXT``: every file's bytes, by path)
is judged by that rule until ``build_results.py --rekey`` brings it up to date.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Literal, Mapping

from ..errors import NotebookError
from ..run.compile import included

PACKAGE = "labnotebook"
PROTOCOL = "run/protocol"  # under the package: every file in it is in every key
INCLUDE = "run/include"  # under the package: shared device headers, on every kernel's include path
# Engine modules that carry numbers without deciding them: never keyed, even where imported.
MECHANICS = frozenset({"run/__init__.py", "run/compile.py", "run/device.py", "run/execute.py", "run/worker.py",
                       "run/ncu_target.py", "run/forkserver.py", "run/runner.py", "run/measure.py", "run/launch.py",
                       "run/case_arrays.py", "run/reference.py", "run/host_code.py", "run/clock.py",
                       "run/needs.py"})
# Under the package: where the engine modules an experiment imports may be keyed (the
# declaration API, and the GPU side's helpers: draws, references, baselines).
KEYED = ("declare/experiment.py", "declare/typed_output.py", "run/")
PHASE_ENGINE = "run/phases.py"  # the phase-program engine, for experiments that declare one
CEILINGS = ("run/roofs.py", "run/fma_peak.cu")
PROFILER = ("build/ncu.py", "run/ncu_target.py")  # under the package
CUDA = (".cu", ".cuh", ".h")  # compiled by nvcc: judged by their machine code where they alone changed

Rule = Literal["text", "meaning"]
RULE: Rule = "meaning"  # what a key is made by now
TEXT: Rule = "text"  # records of format 6 and older: every file by its bytes, and by its path

def text_hash(path: Path) -> str:
    """A file's bytes, CRLF read as LF."""
    return _text(path.read_bytes())


def file_hash(path: Path) -> str:
    """A file by what it means: a Python file by ``meaning``, anything else by its text."""
    return meaning(path.read_bytes()) if path.suffix == ".py" else text_hash(path)


@lru_cache(maxsize=4096)  # by content: a process that keys many copies of one project parses each file once
def meaning(source: bytes) -> str:
    """A Python file's syntax tree, without docstrings, with imports from the engine reduced to
    the names they bind, dumped in a form that does not change between Python versions. Source
    that does not parse is hashed as text: it cannot run either, and the run will say so."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return _text(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:]
        # From the engine, only the names the code binds: where they come from is in the key
        # by content, so a module that moves or is renamed (imported ``as`` its old name) changes
        # nothing.
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == PACKAGE):
            node.module, node.level = PACKAGE, 0
            node.names = [ast.alias(a.asname or a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            node.names = [ast.alias(a.asname or PACKAGE) if a.name.split(".")[0] == PACKAGE else a
                          for a in node.names]
    return _short(_dump(tree).encode())


def _dump(node) -> str:
    """``ast.dump`` without positions, and without the empty fields new Python versions add."""
    if isinstance(node, ast.AST):
        fields = (f"{name}={_dump(value)}" for name, value in ast.iter_fields(node)
                  if value is not None and value != [] and name not in ("kind", "type_comment"))
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return f"[{','.join(map(_dump, node))}]"
    return repr(node)


def _text(data: bytes) -> str:
    return _short(data.replace(b"\r\n", b"\n"))


def _short(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _engine(path: str) -> bool:
    return path.startswith(f"{PACKAGE}/")


def digest(files: Mapping[str, str], rule: Rule = RULE) -> str:
    """One hash of a key's files. Under ``RULE`` an engine file counts by its content alone (it
    may move); every other file by its path and content. Under ``TEXT``, every file by both."""
    entries = sorted(f"{'' if rule == RULE and _engine(p) else p}\0{h}\0" for p, h in files.items())
    return _short("".join(entries).encode())


def changed(recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """The paths whose hash differs between two keys' files: edited, added or removed. An engine
    file that moved, its content the same, is not among them."""
    moved = {h for p, h in recorded.items() if _engine(p)} & {h for p, h in now.items() if _engine(p)}
    return sorted(p for p in set(recorded) | set(now) if recorded.get(p) != now.get(p)
                  and not (_engine(p) and (recorded.get(p) or now.get(p)) in moved))


@dataclass(frozen=True)
class Cubin:
    """A CUDA file that compiles to a cubin of its own, and the nvcc options it is compiled with."""

    source: str  # its path in the key
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Key:
    """The files a result was, or would now be, measured from: path under the root -> hash
    (``RULE``). ``error`` says why no key could be made (a declaration that does not load)."""

    files: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    # The declaration's cases of 2^31 elements and more, by name: they run in a pass of their
    # own (``format.PARTS``), keyed on the same files.
    large_cases: tuple[str, ...] = ()
    # The CUDA kernels it compiles, for judging it by machine code (``machine.py``).
    cubins: tuple[Cubin, ...] = ()
    # The same files by ``TEXT``, for judging records keyed by the older rule.
    text: dict[str, str] = field(default_factory=dict)

    @property
    def parts(self) -> tuple[str, ...]:
        """The passes its results come in."""
        return ("main", "large") if self.large_cases else ("main",)

    @property
    def digest(self) -> str | None:
        return None if self.error else digest(self.files)

    def digest_by(self, rule: Rule) -> str | None:
        """The digest a record keyed by ``rule`` is compared with."""
        return None if self.error else digest(self.text, TEXT) if rule == TEXT else self.digest

    def files_by(self, rule: Rule) -> dict[str, str]:
        return self.text if rule == TEXT else self.files


@lru_cache(maxsize=4096)  # by content, as ``meaning``
def _imported(source: bytes) -> tuple[tuple[str, tuple[str, ...], int], ...]:
    """Each import of a Python file, in the order its syntax tree is walked: ``(module, names,
    level)``, ``import a, b`` as one each without names; none where it does not parse (it cannot
    run either; the run will say so)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, (), 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.module or "", tuple(a.name for a in node.names), node.level))
    return tuple(out)


@lru_cache(maxsize=256)  # by content, as ``meaning``
def _imports_from(source: bytes) -> tuple[tuple[str, int, frozenset[str]], ...]:
    """A module's top-level ``from ... import``s: ``(module, level, the names they bind or
    import)``, in order."""
    return tuple((node.module or "", node.level, frozenset(n for a in node.names for n in (a.name, a.asname) if n))
                 for node in ast.parse(source).body if isinstance(node, ast.ImportFrom))


class Sources:
    """Finds the files of keys under one project root. The engine is read from the root's own
    ``labnotebook/`` where it has one (a copy of the project keys its own engine), else from the
    installed package."""

    def __init__(self, root: Path):
        self.root = root
        own = root / PACKAGE
        self.package = own if (own / "__init__.py").is_file() else Path(__file__).resolve().parent.parent
        self._package = self.package.resolve()
        self._in_package: dict[Path, Path | None] = {}

    def _under_package(self, path: Path) -> Path | None:
        """``path`` relative to the engine's folder, links followed; None where it is not in it.
        Asked of each file for every import that names it: resolved once per file."""
        if path not in self._in_package:
            try:
                self._in_package[path] = path.resolve().relative_to(self._package)
            except ValueError:
                self._in_package[path] = None
        return self._in_package[path]

    # -- paths -----------------------------------------------------------------------------------
    def name(self, path: Path) -> str:
        """A file's path in a key: relative to the root, with the engine always under ``labnotebook/``."""
        # Not resolved: a root whose folders are links (a test's copy of the project) names
        # its files as its own.
        plain = Path(os.path.normpath(path.absolute()))
        if plain.is_relative_to(self.root.absolute()):
            return plain.relative_to(self.root.absolute()).as_posix()
        return f"{PACKAGE}/{path.resolve().relative_to(self.package.resolve()).as_posix()}"

    def path(self, name: str) -> Path:
        """The file a key names (``name``'s inverse): the engine's from wherever it is read."""
        own = self.root / name
        if name.startswith(f"{PACKAGE}/") and not own.is_file():
            return self.engine(name.removeprefix(f"{PACKAGE}/"))
        return own

    def engine(self, relative: str) -> Path:
        return self.package / relative

    def key(self, paths: Iterable[Path], cubins: tuple[Cubin, ...] = ()) -> Key:
        paths = list(paths)
        return Key({self.name(p): file_hash(p) for p in paths}, cubins=cubins,
                   text={self.name(p): text_hash(p) for p in paths})

    # -- what each kind of result is keyed on ------------------------------------------------------
    def protocol(self) -> list[Path]:
        return sorted(p for p in self.engine(PROTOCOL).rglob("*.py") if "__pycache__" not in p.parts)

    def experiment(self, folder: Path) -> Key:
        """An experiment's key, from its declaration; a Key with ``error`` if it does not load."""
        from ..declare.discover import load

        try:
            exp = load(folder)
        except NotebookError as e:
            return Key(error=str(e))
        roots = [folder / "experiment.py", *(folder / k.source for k in exp.kernels)]
        if exp.phases:
            roots += [folder / exp.phases.source, self.engine(PHASE_ENGINE)]
        cubins = tuple(Cubin(self.name(folder / k.source), k.nvcc_options)
                       for k in exp.kernels if k.source.endswith(".cu"))
        key = self.key(self.closure(roots + self.protocol(), folder), cubins)
        return dataclasses.replace(key, large_cases=tuple(c.name for c in exp.large_cases))

    def ceilings(self) -> Key:
        roots = [self.engine(f) for f in CEILINGS]
        cubins = tuple(Cubin(self.name(p)) for p in roots if p.suffix == ".cu")
        return self.key(self.closure(roots + self.protocol(), None), cubins)

    def profiler(self) -> Key:
        return self.key(self.engine(f) for f in PROFILER)

    # -- following includes and imports --------------------------------------------------------
    def closure(self, roots: list[Path], folder: Path | None) -> set[Path]:
        """``roots`` and every file they include or import that is keyed, transitively."""
        seen: set[Path] = set()
        todo = [p for p in roots if p.is_file()]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            found = self.includes(path, folder) if path.suffix in CUDA else \
                self.imports(path, folder) if path.suffix == ".py" else []
            todo += [p for p in found if p not in seen]
        return seen

    def includes(self, path: Path, folder: Path | None) -> list[Path]:
        """The headers a CUDA file includes that are ours: beside it (quoted only), in the
        experiment's folder or in the shared include folder, in nvcc's order. System headers
        are not found there and are left out."""
        return included(path, ([folder] if folder else []) + [self.engine(INCLUDE)])

    def imports(self, path: Path, folder: Path | None) -> list[Path]:
        """The keyed Python files ``path`` imports: files of the experiment's folder, and engine
        modules in ``KEYED`` (not MECHANICS; re-exports followed to where a name
        is defined)."""
        return [p for p in self.python_imports(path.read_bytes(), self._package_of(path), folder) if self._keyed(p)]

    def python_imports(self, source: bytes, package: str | None, folder: Path | None = None) -> list[Path]:
        """The files of ours that ``source`` imports (``package``: its own, for relative
        imports; ``folder``: an experiment's, for its own modules), keyed or not."""
        out: list[Path] = []
        for module, names, level in _imported(source):
            out += self._module(module, list(names), package, level, folder)
        return out

    def engine_closure(self, source: bytes) -> set[Path]:
        """The engine modules ``source`` imports, and theirs, transitively, keyed or not."""
        seen: set[Path] = set()
        todo = self.python_imports(source, None)
        while todo:
            path = todo.pop()
            if path not in seen and path.is_file():
                seen.add(path)
                todo += self.python_imports(path.read_bytes(), self._package_of(path))
        return seen

    def _package_of(self, path: Path) -> str | None:
        """``labnotebook.run`` for an engine file, for resolving its relative imports."""
        relative = self._under_package(path)
        return None if relative is None else ".".join((PACKAGE, *relative.parts[:-1]))

    def _module(self, module: str, names: list[str], package: str | None, level: int,
                folder: Path | None) -> list[Path]:
        if level:  # relative: engine files import this way; an experiment's files are not a package
            if package is None:
                return []
            base = package.split(".")[:len(package.split(".")) - (level - 1)]
            module = ".".join(base + ([module] if module else []))
        if module.split(".")[0] != PACKAGE:
            local = folder / f"{module.split('.')[0]}.py" if folder and module else None
            return [local] if local and local.is_file() else []
        return self._engine_names(module, names)

    def _engine_names(self, module: str, names: list[str]) -> list[Path]:
        """The engine files that define ``names`` of ``module`` (or the module itself)."""
        base = self.package.joinpath(*module.split(".")[1:])
        if base.with_suffix(".py").is_file():
            return [base.with_suffix(".py")]
        init = base / "__init__.py"
        if not init.is_file():
            return []
        out = []
        for name in names or []:
            if (base / f"{name}.py").is_file():
                out.append(base / f"{name}.py")
            elif (base / name / "__init__.py").is_file():
                out.append(base / name / "__init__.py")
            else:
                out += self._reexported(init, module, name)
        return out

    def _reexported(self, init: Path, module: str, name: str) -> list[Path]:
        """Where a package's ``__init__`` gets ``name`` from; the ``__init__`` itself if it defines it."""
        for source, level, names in _imports_from(init.read_bytes()):
            if name in names:
                return self._module(source, [name], module, level, None)
        return [init]

    def _keyed(self, path: Path) -> bool:
        """Experiment files always; engine files in ``KEYED`` unless they are mechanics."""
        relative = self._under_package(path)
        if relative is None:
            return path.is_file()
        return relative.as_posix().startswith(KEYED) and relative.as_posix() not in MECHANICS and path.is_file()
