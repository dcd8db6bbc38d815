#!/usr/bin/env python3
"""Generates the exported surface of an AgileOS library shim from its API table.

A library shim (client/cufft: libagileos_cufft.so, client/nvrtc: libagileos_nvrtc.so) stands in
for one NVIDIA library. Its table, <library>_api.tsv, is the single declaration of what the
shim exports: one row per function the real library exports (nm -D --defined-only), marked
`implemented` (forwarded to the worker's adapter), `partial` (forwarded, working for part of
what the library accepts; the rest fails closed) or `unsupported` (fails closed), and a few
`@` directives that describe the library. From one table this script writes, each only when
asked for:

  --version-script FILE   GNU ld version script: every row global as name@@<version node>,
                          everything else local.
  --unsupported-header FILE
  --unsupported-source FILE
                          C++ table of the unsupported rows (symbol, reason, failure code) and
                          the lookup the hand-written fail-closed definitions call:
                            int <namespace>::reportUnsupported(const char* symbol);
                          It logs the row's reason once per symbol and returns the row's code
                          (client/library_shim/unsupported.h). The reasons live only in the
                          table.
and from one or more tables:

  --coverage-doc FILE     Markdown coverage of every table given (docs/api-coverage-libraries.md).

Table format (TAB-separated; blank lines and lines starting with # are ignored):

  @library      display name, e.g. cuFFT
  @shim         the shim's file name, e.g. libagileos_cufft.so
  @version      the real library's soname, which is also its symbol version node
  @header       the header that declares the library's result codes (cufft.h)
  @namespace    C++ namespace of the generated lookup (agileos::client::cufft_shim)
  @unsupported  the result code an unsupported row returns unless it names its own
  @source       the shim's source directory, for the documentation (client/cufft)

  symbol <TAB> implemented [<TAB> note]
  symbol <TAB> partial <TAB> what is missing (the missing part fails closed)
  symbol <TAB> unsupported <TAB> reason [<TAB> result code]

Every run parses the whole table, so a malformed table fails the build whatever is written.
Standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys

SUPPORT_LEVELS = ("implemented", "partial", "unsupported")
DIRECTIVES = ("library", "shim", "version", "header", "namespace", "unsupported", "source")
GENERATOR = "cmake/library_shim/generate_library_shim.py"


class TableError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Entry:
    symbol: str
    support: str
    note: str
    result: str  # the failure code of an unsupported row ("" for the others)
    line: int


@dataclasses.dataclass(frozen=True)
class Table:
    path: str          # as given
    display_path: str  # relative to the source tree when it lies inside it
    library: str
    shim: str
    version: str
    header: str
    namespace: str
    unsupported: str
    source: str
    entries: tuple[Entry, ...]

    def implemented(self) -> list[Entry]:
        return [e for e in self.entries if e.support == "implemented"]

    def partial(self) -> list[Entry]:
        return [e for e in self.entries if e.support == "partial"]

    def unsupported_rows(self) -> list[Entry]:
        return [e for e in self.entries if e.support == "unsupported"]


def _plain_text(where: str, what: str, text: str) -> None:
    """The note becomes a C string literal and a Markdown table cell: no escaping needed."""
    bad = sorted({c for c in text if not (" " <= c <= "~") or c in '"\\|<>'})
    if bad:
        raise TableError(f"{where}: {what} contains characters {bad!r}; use plain ASCII prose")


def _display_path(path: str) -> str:
    """The table's path relative to the source tree (two levels above this script)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    absolute = os.path.abspath(path)
    if absolute.startswith(root + os.sep):
        return os.path.relpath(absolute, root)
    return path


def read_table(path: str) -> Table:
    """Parses one table; raises TableError naming the line of the first problem."""
    directives: dict[str, str] = {}
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    with open(path, encoding="ascii") as table:
        for number, raw in enumerate(table, start=1):
            line = raw.rstrip("\n")
            where = f"{path}:{number}"
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if line.startswith("@"):
                name = fields[0][1:]
                if name not in DIRECTIVES:
                    raise TableError(f"{where}: unknown directive @{name} (known: {', '.join(DIRECTIVES)})")
                if len(fields) != 2 or not fields[1].strip():
                    raise TableError(f"{where}: @{name} takes one TAB-separated value")
                if name in directives:
                    raise TableError(f"{where}: @{name} is given twice")
                _plain_text(where, f"@{name}", fields[1])
                directives[name] = fields[1].strip()
                continue
            if len(fields) < 2 or len(fields) > 4:
                raise TableError(f"{where}: expected 2 to 4 TAB-separated fields, got {len(fields)}")
            symbol, support = fields[0], fields[1]
            note = fields[2].strip() if len(fields) > 2 else ""
            result = fields[3].strip() if len(fields) > 3 else ""
            if not re.fullmatch(r"[A-Za-z_]\w*", symbol):
                raise TableError(f"{where}: '{symbol}' is not a C function name")
            if symbol in seen:
                raise TableError(f"{where}: {symbol} is already declared on line {seen[symbol]}")
            if support not in SUPPORT_LEVELS:
                raise TableError(f"{where}: support must be one of {', '.join(SUPPORT_LEVELS)}, not '{support}'")
            if support == "unsupported" and not note:
                raise TableError(f"{where}: an unsupported row must say why it fails closed")
            if support == "partial" and not note:
                raise TableError(f"{where}: a partial row must say what is missing")
            if support != "unsupported" and result:
                raise TableError(f"{where}: only an unsupported row names a failure code")
            if result and not re.fullmatch(r"[A-Z][A-Z0-9_]*", result):
                raise TableError(f"{where}: '{result}' is not a result code name")
            _plain_text(where, "the note", note)
            seen[symbol] = number
            entries.append(Entry(symbol, support, note, result, number))
    missing = [name for name in DIRECTIVES if name not in directives]
    if missing:
        raise TableError(f"{path}: missing directive(s) {', '.join('@' + m for m in missing)}")
    if not re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", directives["namespace"]):
        raise TableError(f"{path}: @namespace '{directives['namespace']}' is not a C++ namespace")
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", directives["unsupported"]):
        raise TableError(f"{path}: @unsupported '{directives['unsupported']}' is not a result code name")
    if not entries:
        raise TableError(f"{path}: no rows")
    entries = [dataclasses.replace(e, result=e.result or directives["unsupported"])
               if e.support == "unsupported" else e for e in entries]
    return Table(path=path, display_path=_display_path(path), entries=tuple(entries), **directives)


def _sorted(entries: list[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: e.symbol.encode())


# ---------------------------------------------------------------------------------------------
# Emitters


def emit_version_script(table: Table) -> str:
    names = "\n".join(f"    {e.symbol};" for e in _sorted(list(table.entries)))
    return f"""\
/* Generated by {GENERATOR} from {table.display_path}.
   Exports exactly the functions of {table.version}, each as name@@{table.version}, so that a
   program linked against the real {table.library} binds to {table.shim}; every other symbol
   is local. */
{table.version} {{
  global:
{names}
  local:
    *;
}};
"""


def _banner(table: Table) -> str:
    return (f"// Generated by {GENERATOR} from {table.display_path}.\n"
            "// Do not edit: change the table (or the generator) and rebuild.")


def emit_unsupported_header(table: Table) -> str:
    return f"""\
{_banner(table)}
//
// The unsupported rows of the {table.library} table and their lookup. The hand-written
// fail-closed definitions return reportUnsupported("<their name>"); the reason each logs and
// the code it returns come from the table only.
#pragma once

#include <span>

#include "client/library_shim/unsupported.h"

namespace {table.namespace} {{

// The unsupported rows, sorted by symbol in strcmp order.
std::span<const ::agileos::client::library_shim::UnsupportedEntry> unsupportedEntries();

// Logs the reason of `symbol`'s row the first time it is reported in this process and returns
// the row's failure code (client/library_shim/unsupported.h).
int reportUnsupported(const char* symbol);

}}  // namespace {table.namespace}
"""


def emit_unsupported_source(table: Table, header_name: str) -> str:
    rows = "\n".join(f'    {{"{e.symbol}", "{e.note}", {e.result}, "{e.result}"}},'
                     for e in _sorted(table.unsupported_rows()))
    return f"""\
{_banner(table)}

#include "{header_name}"

#include <{table.header}>

#include <iterator>

namespace {table.namespace} {{
namespace {{

constexpr ::agileos::client::library_shim::UnsupportedEntry kUnsupported[] = {{
{rows}
}};

}}  // namespace

std::span<const ::agileos::client::library_shim::UnsupportedEntry> unsupportedEntries() {{
  return {{std::begin(kUnsupported), std::end(kUnsupported)}};
}}

int reportUnsupported(const char* symbol) {{
  return ::agileos::client::library_shim::reportUnsupported(unsupportedEntries(), "{table.library}", symbol,
                                                            {table.unsupported});
}}

}}  // namespace {table.namespace}
"""


def emit_coverage_doc(tables: list[Table]) -> str:
    sources = "\n".join(f"       {t.display_path}" for t in tables)
    out = [f"""\
# Library shims: API coverage

<!-- Generated by {GENERATOR} from
{sources}
     Do not edit: change a table, then `cmake --build <build dir> --target agileos_library_shim_docs`.
     The CPU test library_shims.coverage_doc_is_current fails while this file is stale. -->

Each library shim stands in for one NVIDIA library: it has that library's soname and exports
every function the library exports, each with the library's symbol version, so a program linked
against the real library binds to the shim and never finds a symbol missing. The shims are
untrusted client code: they hold no GPU state and forward each implemented call, through
`agileos_library_call` of the runtime shim (`client/include/agileos/library_call.h`), to the
library's trusted adapter in the worker (`worker/adapters/`), which checks it before the real
library runs it.

- **implemented**: forwarded to the worker's adapter (or answered from client-side state that
  the note describes).
- **partial**: forwarded like an implemented function, for part of what the library accepts;
  the note says what is missing, and the missing part fails closed with the library's own error.
- **unsupported**: fails closed. The first call logs the function's name and the reason below
  on stderr; every call returns the code in the "fails with" column and touches none of its
  output arguments.

## Summary

| library | shim | soname | implemented | partial | unsupported | total |
| --- | --- | --- | ---: | ---: | ---: | ---: |"""]
    for table in tables:
        implemented, partial = len(table.implemented()), len(table.partial())
        unsupported = len(table.unsupported_rows())
        out.append(f"| {table.library} | `{table.shim}` | `{table.version}` | {implemented} | {partial} | "
                   f"{unsupported} | {len(table.entries)} |")
    for table in tables:
        implemented, partial = len(table.implemented()), len(table.partial())
        unsupported = len(table.unsupported_rows())
        out.append("")
        out.append(f"## {table.library} (`{table.shim}`)")
        out.append("")
        out.append(f"Declared in `{table.display_path}`; implemented in `{table.source}/`. "
                   f"{implemented} implemented, {partial} partial, {unsupported} unsupported, each exported as "
                   f"`name@@{table.version}`.")
        out.append("")
        out.append("| function | support | fails with | reason or note |")
        out.append("| --- | --- | --- | --- |")
        for entry in _sorted(list(table.entries)):
            fails = f"`{entry.result}`" if entry.support == "unsupported" else ""
            out.append(f"| `{entry.symbol}` | {entry.support} | {fails} | {entry.note} |")
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------


def _write_if_changed(path: str, content: str) -> None:
    """Leaves an unchanged file untouched so that dependents are not rebuilt."""
    try:
        with open(path, encoding="utf-8") as existing:
            if existing.read() == content:
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as output:
        output.write(content)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="append", required=True,
                        help="a library shim's <library>_api.tsv (repeatable for --coverage-doc)")
    parser.add_argument("--version-script")
    parser.add_argument("--unsupported-header")
    parser.add_argument("--unsupported-source")
    parser.add_argument("--coverage-doc")
    args = parser.parse_args(argv)
    per_table = (args.version_script, args.unsupported_header, args.unsupported_source)
    if any(per_table) and len(args.table) != 1:
        parser.error("--version-script and --unsupported-* take exactly one --table")
    if bool(args.unsupported_header) != bool(args.unsupported_source):
        parser.error("--unsupported-header and --unsupported-source go together")

    try:
        tables = [read_table(path) for path in args.table]
        names = [t.library for t in tables]
        if len(set(names)) != len(names):
            raise TableError(f"two tables declare the same @library: {names}")
        outputs = []
        if args.version_script:
            outputs.append((args.version_script, emit_version_script(tables[0])))
        if args.unsupported_header:
            outputs.append((args.unsupported_header, emit_unsupported_header(tables[0])))
            outputs.append((args.unsupported_source,
                            emit_unsupported_source(tables[0], os.path.basename(args.unsupported_header))))
        if args.coverage_doc:
            outputs.append((args.coverage_doc, emit_coverage_doc(tables)))
    except (OSError, TableError) as error:
        print(f"generate_library_shim.py: error: {error}", file=sys.stderr)
        return 1
    for path, content in outputs:
        _write_if_changed(path, content)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
