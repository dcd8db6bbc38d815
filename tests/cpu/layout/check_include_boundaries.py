#!/usr/bin/env python3
"""The tree is the trust boundary (docs/architecture.md), checked on the includes.

Every `#include "..."` (and every `#include <...>` that names a file of this repository) of a
source or header file is resolved the way the build resolves it: next to the including file, then
from the repository root, then from the project's public include directories (every `include/`
folder under client/ and modules/), and `agileos/v1/*.pb.h` to proto/ (protoc's output for
proto/agileos/v1/*.proto). Then:

  - a file under client/ (untrusted) may include only files under client/ and proto/;
  - a file under proto/ (the shared contracts, which client/ includes) may include only proto/,
    so nothing trusted reaches client/ through it;
  - a file under a trusted directory (worker/, scheduler/, memmgr/, ptx/, adapters/, modules/,
    services/, docker/) may not include anything under client/.

A quoted include that names no file of the tree must be a header generated next to its user
(`*.gen.h`, `*.gen.inc`); any other is reported, so the check cannot be passed by a path it fails
to see.

Usage: check_include_boundaries.py --root REPO       (exit 1 and a file:line list on a violation)
       check_include_boundaries.py selftest          (the checker on a scratch tree)
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

UNTRUSTED = "client"
SHARED = "proto"
TRUSTED = ("worker", "scheduler", "memmgr", "ptx", "adapters", "modules", "services", "proto", "docker")
# Where the build finds `#include "agileos/..."` besides the repository root: the public headers.
INCLUDE_ROOT_PARENTS = ("client", "modules")
SOURCE_SUFFIXES = {".h", ".hh", ".hpp", ".hxx", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".inc", ".inl"}
GENERATED_LOCAL = re.compile(r"(^|/)[^/]+\.gen\.(h|inc)$")
GENERATED_PROTO = re.compile(r"^agileos/v1/([a-z_]+)\.(pb|grpc\.pb)\.h$")
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')


@dataclass(frozen=True)
class Violation:
    source: str  # repository-relative path of the including file
    line: int
    spelled: str  # the include as written
    target: str  # what it resolves to, or "" when it names nothing
    why: str

    def __str__(self) -> str:
        resolved = f" -> {self.target}" if self.target and self.target != self.spelled else ""
        return f"{self.source}:{self.line}: #include {self.spelled}{resolved}: {self.why}"


def top_directory(relative: str) -> str:
    return relative.split("/", 1)[0]


def source_files(root: Path, top: str):
    base = root / top
    if not base.is_dir():
        return
    for directory, subdirs, files in os.walk(base):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(directory) / name
            if path.suffix in SOURCE_SUFFIXES:
                yield path


def include_roots(root: Path) -> list[Path]:
    roots = []
    for parent in INCLUDE_ROOT_PARENTS:
        base = root / parent
        if not base.is_dir():
            continue
        for directory, subdirs, _ in os.walk(base):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
            if Path(directory).name == "include":
                roots.append(Path(directory))
    return roots


def inside(root: Path, path: Path) -> str | None:
    """The repository-relative spelling of `path`, or None if it lies outside the repository."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def resolve(root: Path, roots: list[Path], including: Path, name: str, quoted: bool) -> list[str]:
    """Every repository file `name` may stand for, best first; [] if none."""
    generated = GENERATED_PROTO.match(name)
    if generated:
        return [f"{SHARED}/agileos/v1/{generated.group(1)}.proto"]
    candidates = []
    if quoted:
        candidates.append(including.parent / name)
    candidates.append(root / name)
    candidates.extend(r / name for r in roots)
    found = []
    for candidate in candidates:
        if candidate.is_file():
            relative = inside(root, candidate)
            if relative is not None and relative not in found:
                found.append(relative)
    if quoted and found and found[0] == inside(root, including.parent / name):
        return found[:1]  # the including file's own directory wins, as in the preprocessor
    return found


def check(root: Path) -> tuple[list[Violation], int]:
    roots = include_roots(root)
    violations: list[Violation] = []
    scanned = 0
    for top in sorted({UNTRUSTED, *TRUSTED}):
        for path in source_files(root, top):
            scanned += 1
            source = inside(root, path)
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError as error:
                violations.append(Violation(source, 0, "", "", f"cannot read: {error}"))
                continue
            for number, text in enumerate(lines, start=1):
                match = INCLUDE.match(text)
                if not match:
                    continue
                quoted = match.group(1) is not None
                name = match.group(1) if quoted else match.group(2)
                spelled = f'"{name}"' if quoted else f"<{name}>"
                targets = resolve(root, roots, path, name, quoted)
                if not targets:
                    if quoted and not GENERATED_LOCAL.search(name):
                        violations.append(Violation(source, number, spelled, "",
                                                    "names no file of the tree and is not a generated header"))
                    continue  # a system header, or one generated beside its user
                for target in targets:
                    destination = top_directory(target)
                    if top == UNTRUSTED and destination not in (UNTRUSTED, SHARED):
                        violations.append(Violation(source, number, spelled, target,
                                                    "client/ may include only client/ and proto/"))
                    elif top == SHARED and destination != SHARED:
                        violations.append(Violation(source, number, spelled, target,
                                                    "proto/ is shared with client/ and may include only proto/"))
                    elif top != UNTRUSTED and destination == UNTRUSTED:
                        violations.append(Violation(source, number, spelled, target,
                                                    f"{top}/ is trusted and may not include client/"))
    return violations, scanned


def report(root: Path) -> int:
    violations, scanned = check(root)
    if scanned == 0:
        print(f"no source files under {root}: wrong --root?", file=sys.stderr)
        return 2
    if violations:
        print(f"{len(violations)} include(s) cross the trust boundary ({scanned} files scanned):")
        for violation in violations:
            print(f"  {violation}")
        return 1
    print(f"include boundaries hold ({scanned} files scanned)")
    return 0


def selftest() -> int:
    files = {
        "client/include/agileos/public.h": "",
        "client/shim/a.cpp": '#include "client/shim/a.h"\n#include "agileos/public.h"\n'
                             '#include "proto/contract.h"\n#include "agileos/v1/client_api.pb.h"\n'
                             '#include "local.gen.h"\n#include <vector>\n#include "a.h"\n',
        "client/shim/a.h": "",
        "client/shim/bad.cpp": '#include "worker/x.h"\n  #  include <services/s.h>\n'
                               '#include "agileos/module_abi.h"\n#include "missing.h"\n',
        "proto/contract.h": "",
        "worker/x.h": '#include "proto/contract.h"\n',
        "worker/bad.cpp": '#include "agileos/public.h"\n',
        "services/s.h": "",
        "services/bad.cpp": '#include "client/shim/a.h"\n',
        "proto/bad.h": '#include <client/shim/a.h>\n#include "services/s.h"\n#include "contract.h"\n',
        "modules/sdk/include/agileos/module_abi.h": "",
    }
    expected = {
        ("client/shim/bad.cpp", 1), ("client/shim/bad.cpp", 2), ("client/shim/bad.cpp", 3),
        ("client/shim/bad.cpp", 4), ("worker/bad.cpp", 1), ("services/bad.cpp", 1), ("proto/bad.h", 1),
        ("proto/bad.h", 2),
    }
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for relative, text in files.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text)
        violations, _ = check(root)
    found = {(v.source, v.line) for v in violations}
    if found != expected:
        print(f"selftest: expected {sorted(expected)}, found {sorted(found)}", file=sys.stderr)
        for violation in violations:
            print(f"  {violation}", file=sys.stderr)
        return 1
    print("selftest: every planted crossing reported, nothing else")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", choices=("check", "selftest"), default="check")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[3])
    arguments = parser.parse_args()
    if arguments.mode == "selftest":
        return selftest()
    return report(arguments.root)


if __name__ == "__main__":
    sys.exit(main())
