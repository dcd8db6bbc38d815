#!/usr/bin/env python3
"""Export checks of an API surface table: the cudart one (client/cudart/api/cudart_api.tsv) or a
library shim's (client/cufft/cufft_api.tsv, client/nvrtc/nvrtc_api.tsv).

  table-matches-library --table T --library libcudart.so.13 --nm NM [--version-node V]
      The table lists exactly the functions the real library exports, and the real library
      exports each as name@@V.
  library-exports --table T --library LIB --nm NM [--extension-map MAP] [--version-node V]
      LIB (the shim, or the scratch probe) exports exactly the table's functions, each as
      name@@V, and nothing else but the version node itself.
  doc-is-current --generator G --table T... [--cuda-include DIR...] [--cpp CXX] --doc DOC [--doc-target T]
      The committed coverage document equals what the generator writes from the table(s).
  selftest
      The comparison rejects each kind of wrong export it is meant to catch.

The version node V defaults to libcudart.so.13. Exit status 0 when the check holds; 1 with one
line per problem otherwise. The table is parsed here independently of the generator, so a
generator bug cannot hide a table mismatch.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
import unittest

VERSION_NODE = "libcudart.so.13"


def table_symbols(path: str) -> set[str]:
    """First field of every row that is neither blank, a # comment nor an @ directive (the
    library shims' tables describe their library with @name TAB value lines)."""
    symbols = set()
    with open(path, encoding="ascii") as table:
        for line in table:
            if line.strip() and not line.startswith(("#", "@")):
                symbols.add(line.split("\t")[0].strip())
    return symbols


def dynamic_symbols(nm: str, library: str) -> list[str]:
    result = subprocess.run([nm, "-D", "--defined-only", library], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{nm} -D --defined-only {library} failed: {result.stderr.strip()}")
    return result.stdout.splitlines()


def export_problems(expected: set[str], nm_lines: list[str],
                    version_node: str = VERSION_NODE) -> list[tuple[str, str]]:
    """Differences between `expected` and the defined dynamic symbols in `nm -D` output, as
    (kind, message) with kind one of missing, extra, version, type, duplicate, malformed; the
    message describes what the library does.

    Each expected name must be a function (T) with default version `version_node`
    (`name@@libcudart.so.13` by default), or without any version when `version_node` is "none"
    (libcuda.so.1 has none). The only other symbol allowed is the version node, which GNU ld
    defines as an absolute symbol named after it."""
    unversioned = version_node == "none"
    problems = []
    exported = set()
    for line in nm_lines:
        fields = line.split()
        if len(fields) != 3:
            problems.append(("malformed", f"unexpected nm line: {line!r}"))
            continue
        _, kind, versioned = fields
        if versioned == version_node and kind == "A":
            continue
        name, separator, version = versioned.partition("@")
        default_version = version.startswith("@")
        version = version.lstrip("@")
        if name not in expected:
            problems.append(("extra", f"exports {versioned}, which is not a {version_node} function"))
            continue
        if name in exported:
            problems.append(("duplicate", f"exports {name} more than once ({versioned})"))
        exported.add(name)
        if unversioned:
            if separator:
                problems.append(("version", f"exports {versioned}, expected {name} without a version"))
        elif not separator:
            problems.append(("version", f"exports {name} without a symbol version "
                                        f"(expected {name}@@{version_node})"))
        elif version != version_node or not default_version:
            problems.append(("version", f"exports {versioned}, expected {name}@@{version_node}"))
        if kind != "T":
            problems.append(("type", f"exports {name} as nm type {kind}, expected a function (T)"))
    for name in sorted(expected - exported):
        problems.append(("missing", f"does not export {name}" + ("" if unversioned else f"@@{version_node}")))
    return problems


def check_table_matches_library(args) -> list[str]:
    """Here the library is the reference: a difference is a wrong table."""
    library = os.path.basename(args.library)
    messages = []
    problems = export_problems(table_symbols(args.table), dynamic_symbols(args.nm, args.library),
                               args.version_node)
    for kind, message in problems:
        if kind == "missing":
            name = message.split()[-1].split("@")[0]
            messages.append(f"the table lists {name}, which {library} does not export: remove the row")
        elif kind == "extra":
            name = message.split()[1].split("@")[0]
            messages.append(f"{library} exports {name}, which the table lacks: add a row")
        else:
            messages.append(f"{library} {message}")
    return messages


def extension_symbols(path: str) -> tuple[str, set[str]]:
    """The node name and the global names of a one-node version script such as
    client/cudart/agileos_extensions.map (AgileOS's own API, beside libcudart.so.13's)."""
    with open(path, encoding="ascii") as script:
        text = re.sub(r"/\*.*?\*/", "", script.read(), flags=re.DOTALL)
    node, _, body = text.partition("{")
    names = set()
    for part in body.split("global:")[-1].split("}")[0].split(";"):
        if part.strip():
            names.add(part.strip())
    return node.strip(), names


def check_library_exports(args) -> list[str]:
    library = os.path.basename(args.library)
    lines = dynamic_symbols(args.nm, args.library)
    messages = []
    if args.extension_map:
        node, names = extension_symbols(args.extension_map)
        kept = []
        found = set()
        for line in lines:
            fields = line.split()
            if len(fields) == 3 and fields[2] == node and fields[1] == "A":
                continue
            if len(fields) == 3 and fields[2].endswith("@@" + node) and fields[1] == "T":
                name = fields[2].split("@")[0]
                if name in names:
                    found.add(name)
                    continue
            kept.append(line)
        lines = kept
        messages += [f"{library} does not export {name}@@{node}" for name in sorted(names - found)]
    return messages + [f"{library} {message}"
                       for _, message in export_problems(table_symbols(args.table), lines, args.version_node)]


def check_doc_is_current(args) -> list[str]:
    with tempfile.TemporaryDirectory() as scratch:
        fresh_path = os.path.join(scratch, "api-coverage.md")
        command = [sys.executable, args.generator]
        for table in args.table:
            command += ["--table", table]
        command += ["--coverage-doc", fresh_path]
        for directory in args.cuda_include:
            command += ["--cuda-include", directory]
        if args.cpp:
            command += ["--cpp", args.cpp]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            return [f"the generator failed: {result.stderr.strip()}"]
        with open(fresh_path, encoding="utf-8") as fresh:
            expected = fresh.read()
    try:
        with open(args.doc, encoding="utf-8") as committed:
            actual = committed.read()
    except FileNotFoundError:
        return [f"{args.doc} is missing: run `cmake --build <build dir> --target {args.doc_target}`"]
    if actual == expected:
        return []
    diff = difflib.unified_diff(actual.splitlines(), expected.splitlines(), args.doc,
                                "generated from the table", lineterm="", n=1)
    return [f"{args.doc} is stale: run `cmake --build <build dir> --target {args.doc_target}`",
            *list(diff)[:60]]


class ExportComparisonTest(unittest.TestCase):
    EXPECTED = {"cudaMalloc", "__cudaRegisterFatBinary"}
    GOOD = ["0000000000001000 T cudaMalloc@@libcudart.so.13",
            "0000000000002000 T __cudaRegisterFatBinary@@libcudart.so.13",
            "0000000000000000 A libcudart.so.13"]

    def problems_with(self, replace: str | None = None, by: str | None = None) -> list[str]:
        lines = [by if line == replace else line for line in self.GOOD]
        return export_problems(self.EXPECTED, [line for line in lines if line is not None])

    def test_exact_export_set_passes(self):
        self.assertEqual(export_problems(self.EXPECTED, self.GOOD), [])

    def test_missing_function_is_reported(self):
        problems = self.problems_with(self.GOOD[1], None)
        self.assertEqual(problems, [("missing", "does not export __cudaRegisterFatBinary@@libcudart.so.13")])

    def test_extra_function_is_reported(self):
        problems = export_problems(self.EXPECTED, self.GOOD + ["0000000000003000 T helper@@libcudart.so.13"])
        self.assertEqual(problems, [("extra", "exports helper@@libcudart.so.13, "
                                              "which is not a libcudart.so.13 function")])

    def test_unversioned_export_is_reported(self):
        problems = self.problems_with(self.GOOD[0], "0000000000001000 T cudaMalloc")
        self.assertEqual([kind for kind, _ in problems], ["version"])
        self.assertIn("without a symbol version", problems[0][1])

    def test_other_or_non_default_version_is_reported(self):
        for versioned in ("cudaMalloc@@libcudart.so.12", "cudaMalloc@libcudart.so.13"):
            problems = self.problems_with(self.GOOD[0], f"0000000000001000 T {versioned}")
            self.assertEqual(problems,
                             [("version", f"exports {versioned}, expected cudaMalloc@@libcudart.so.13")])

    def test_non_function_export_is_reported(self):
        problems = self.problems_with(self.GOOD[0], "0000000000001000 D cudaMalloc@@libcudart.so.13")
        self.assertEqual(problems, [("type", "exports cudaMalloc as nm type D, expected a function (T)")])

    def test_malformed_line_is_reported(self):
        self.assertEqual(export_problems(self.EXPECTED, self.GOOD + ["garbage"]),
                         [("malformed", "unexpected nm line: 'garbage'")])

    def test_other_version_node(self):
        lines = ["0000000000001000 T cufftPlan1d@@libcufft.so.12", "0000000000000000 A libcufft.so.12"]
        self.assertEqual(export_problems({"cufftPlan1d"}, lines, "libcufft.so.12"), [])
        problems = export_problems({"cufftPlan1d"}, ["0000000000001000 T cufftPlan1d@@libcudart.so.13"],
                                   "libcufft.so.12")
        self.assertEqual(problems, [("version", "exports cufftPlan1d@@libcudart.so.13, "
                                                "expected cufftPlan1d@@libcufft.so.12")])
        problems = export_problems({"cufftPlan1d"}, lines + ["0000000000002000 T helper@@libcufft.so.12"],
                                   "libcufft.so.12")
        self.assertEqual(problems, [("extra", "exports helper@@libcufft.so.12, "
                                              "which is not a libcufft.so.12 function")])

    def test_unversioned_library(self):
        lines = ["0000000000001000 T cuInit", "0000000000002000 T cuMemAlloc_v2"]
        self.assertEqual(export_problems({"cuInit", "cuMemAlloc_v2"}, lines, "none"), [])
        problems = export_problems({"cuInit", "cuMemAlloc_v2"},
                                   ["0000000000001000 T cuInit@@libcuda.so.1", lines[1]], "none")
        self.assertEqual(problems, [("version", "exports cuInit@@libcuda.so.1, expected cuInit without a version")])
        problems = export_problems({"cuInit", "cuMemAlloc_v2"}, lines[:1], "none")
        self.assertEqual(problems, [("missing", "does not export cuMemAlloc_v2")])

    def test_table_directives_are_not_symbols(self):
        with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as table:
            table.write("# comment\n@version\tlibcufft.so.12\n\ncufftPlan1d\timplemented\n")
        try:
            self.assertEqual(table_symbols(table.name), {"cufftPlan1d"})
        finally:
            os.unlink(table.name)

    def test_duplicate_export_is_reported(self):
        problems = export_problems(self.EXPECTED,
                                   self.GOOD + ["0000000000001000 T cudaMalloc@libcudart.so.13"])
        self.assertEqual([kind for kind, _ in problems], ["duplicate", "version"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("table-matches-library", "library-exports"):
        command = commands.add_parser(name)
        command.add_argument("--table", required=True)
        command.add_argument("--library", required=True)
        command.add_argument("--nm", default="nm")
        command.add_argument("--extension-map", help="a version script of AgileOS's own exports")
        command.add_argument("--version-node", default=VERSION_NODE,
                             help=f"the symbol version of every export (default {VERSION_NODE}; "
                                  "none: exported without a version)")
    doc = commands.add_parser("doc-is-current")
    doc.add_argument("--generator", required=True)
    doc.add_argument("--table", action="append", required=True, help="repeatable")
    doc.add_argument("--cuda-include", action="append", default=[])
    doc.add_argument("--cpp", help="the compiler whose preprocessor the generator uses")
    doc.add_argument("--doc", required=True)
    doc.add_argument("--doc-target", default="agileos_api_docs",
                     help="the build target that regenerates --doc, named in the message")
    commands.add_parser("selftest")
    args = parser.parse_args(argv)

    if args.command == "selftest":
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(ExportComparisonTest)
        return 0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1
    check = {
        "table-matches-library": check_table_matches_library,
        "library-exports": check_library_exports,
        "doc-is-current": check_doc_is_current,
    }[args.command]
    problems = check(args)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{args.command}: OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
