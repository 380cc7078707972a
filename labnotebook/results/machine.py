"""Machine-code keys: what an experiment's CUDA kernels compile to, so that an edit which leaves
the machine code as it was (a comment, a renamed local, a helper moved into a header) leaves its
results fresh, and one that changes it (a tile size, launch bounds, a ``__constant__``
initialiser, a static shared array) stales them.

A cubin is not the same bytes from two checkouts: ``-lineinfo`` writes paths and file times into
the debug sections, the notes (the tool kit, the compile unit) and string tables name the machine, and internal symbols
carry a path-derived id (``_INTERNAL_xxxxxxxx``). ``normalised`` drops what only says where a
cubin was compiled and keeps everything that runs: the ELF header (the architecture), every other
section's attributes and bytes (the code, the constant banks, the attributes that carry launch
bounds and registers, the sizes of shared memory), every symbol and relocation, with section and
symbol indices replaced by names and the internal ids masked. The SASS text alone is not enough:
it misses constants, shared sizes and launch bounds.

The same nvcc build gives the same key on any machine and from any checkout path. Another build
may compile the same source otherwise, so a key is compared only with one made by the same build.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from io import BytesIO
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from ..errors import CompileError
from .keys import INCLUDE, Key, Sources
from .format import MachineKey
from ..run import needs
from ..run.compile import compile_cubin, nvcc_path

CACHE = ".cache/cubins"  # under the project's root: compiled once per source, flags and nvcc
_INTERNAL = re.compile(rb"_INTERNAL_[0-9a-f]{8}")
# Sections that say where and when a cubin was made, never what runs; relocations into them too.
_LOCAL = re.compile(r"^\.(debug|nv_debug|note\.|strtab|shstrtab)")


class Unjudged(Exception):
    """Machine code cannot be compared here: the reason, said where the source rule decides."""


@cache
def nvcc_build() -> str | None:
    """The nvcc at hand, as a key names it: its version and build, or None without one."""
    nvcc = nvcc_path()
    if nvcc is None:
        return None
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    version, build = re.search(r", V([\d.]+)", out), re.search(r"^Build (\S+)", out, re.MULTILINE)
    return f"{version[1]} {build[1]}" if version and build else None


def arch_of(compute_capability: str) -> str:
    """``"9.0"`` -> ``"sm_90"``: what the run compiles for."""
    return needs.arch_of(needs.parsed(compute_capability))


def _mask(name: bytes) -> bytes:
    """An internal symbol's path-derived id left out."""
    return _INTERNAL.sub(b"_INTERNAL_", name)


def normalised(cubin: bytes) -> str:
    """A hash of what in ``cubin`` runs (see the module's docstring)."""
    elf = ELFFile(BytesIO(cubin))
    sections = list(elf.iter_sections())

    def name(index) -> bytes:
        """A section by name (masked), or the special index (SHN_UNDEF, SHN_ABS) as it is."""
        if isinstance(index, int) and 0 < index < len(sections):
            return _mask(sections[index].name.encode())
        return str(index).encode()

    h = elf.header
    parts = [repr((h.e_ident["EI_OSABI"], h.e_ident["EI_ABIVERSION"], h.e_type, h.e_machine, h.e_flags)).encode()]
    for s in sections:
        if _LOCAL.match(s.name):
            continue
        if isinstance(s, SymbolTableSection):
            for sym in s.iter_symbols():
                parts.append(b"symbol " + _mask(sym.name.encode()) + repr(
                    (sym["st_info"], sym["st_other"], sym["st_value"], sym["st_size"])).encode()
                    + name(sym["st_shndx"]))
        elif isinstance(s, RelocationSection):
            if _LOCAL.match(sections[s["sh_info"]].name):
                continue
            symbols = elf.get_section(s["sh_link"])
            for r in s.iter_relocations():
                parts.append(b"relocation " + name(s["sh_info"]) + b" "
                             + _mask(symbols.get_symbol(r["r_info_sym"]).name.encode())
                             + repr((r["r_offset"], r["r_info_type"], r.entry.get("r_addend"))).encode())
        else:
            parts.append(b"section " + name(sections.index(s)) + repr(
                (s["sh_type"], s["sh_size"], s["sh_flags"], s["sh_addralign"], s["sh_entsize"])).encode()
                + b" " + name(s["sh_link"]) + b" " + name(s["sh_info"]) + b"\0" + _mask(s.data()))
    return hashlib.sha256(b"\n".join(parts)).hexdigest()[:16]


def machine_key(root: Path, key: Key, arch: str, cache_dir: Path | None = None) -> MachineKey:
    """Compile ``key``'s CUDA kernels for ``arch`` (each with its own options, as the run does)
    and hash each cubin. Raises Unjudged where that cannot be done here; a kernel that no longer
    compiles has no machine code, and its hash says so."""
    build = nvcc_build()
    if build is None:
        raise Unjudged("no nvcc here")
    sources = Sources(root)
    cache_dir, include = cache_dir or root / CACHE, sources.engine(INCLUDE)

    def one(source: str, options: tuple[str, ...]) -> str:
        with tempfile.TemporaryDirectory(prefix="notebook-machine-") as tmp:
            try:
                compiled = compile_cubin(sources.path(source), Path(tmp), arch, options, root, cache_dir, include,
                                         line_info=False)
                return normalised(compiled.cubin.read_bytes())
            except (CompileError, OSError, ELFError) as e:  # no code to compare: never equal to a record's
                return f"no machine code: {type(e).__name__}: {e}"

    with ThreadPoolExecutor(max(1, min(8, len(key.cubins)))) as pool:
        hashes = list(pool.map(lambda c: one(c.source, c.options), key.cubins))
    return MachineKey(build, arch, {c.source: h for c, h in zip(key.cubins, hashes)})


def differs(recorded: MachineKey, now: MachineKey) -> list[str]:
    """The kernel files whose machine code is not what the record's was (added or removed too)."""
    return sorted(p for p in set(recorded.cubins) | set(now.cubins) if recorded.cubins.get(p) != now.cubins.get(p))
