#!/usr/bin/env python3
"""Checks a library shim's dynamic section (readelf -d): its soname, that it needs the runtime
shim's soname (libcudart.so.13, which provides agileos_library_call), and that it needs none of
the libraries only the runtime shim may carry (protobuf, gRPC, abseil: two copies of the
generated descriptors in one process abort).

  check_shim_elf.py --library LIB --readelf READELF --soname S --needs N [--forbid REGEX]

Exit status 0 when the check holds; 1 with one line per problem otherwise.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

DEFAULT_FORBIDDEN = r"protobuf|grpc|absl|upb|agileos_client"


def dynamic_entries(readelf: str, library: str) -> tuple[list[str], list[str]]:
    result = subprocess.run([readelf, "-d", "-W", library], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{readelf} -d {library} failed: {result.stderr.strip()}")
    needed, sonames = [], []
    for line in result.stdout.splitlines():
        match = re.search(r"\((NEEDED|SONAME)\)\s+.*\[(.+)\]", line)
        if match:
            (needed if match.group(1) == "NEEDED" else sonames).append(match.group(2))
    return needed, sonames


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True)
    parser.add_argument("--readelf", default="readelf")
    parser.add_argument("--soname", required=True)
    parser.add_argument("--needs", action="append", default=[])
    parser.add_argument("--forbid", default=DEFAULT_FORBIDDEN)
    args = parser.parse_args(argv)

    needed, sonames = dynamic_entries(args.readelf, args.library)
    problems = []
    if sonames != [args.soname]:
        problems.append(f"soname is {sonames}, expected [{args.soname!r}]")
    for name in args.needs:
        if name not in needed:
            problems.append(f"does not need {name} (NEEDED: {', '.join(needed)})")
    for name in needed:
        if re.search(args.forbid, name):
            problems.append(f"needs {name}, which only the runtime shim may load")
    for problem in problems:
        print(f"{args.library}: {problem}")
    if not problems:
        print(f"{args.library}: soname {args.soname}; needs {', '.join(needed)}: OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
