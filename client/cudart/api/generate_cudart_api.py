#!/usr/bin/env python3
"""Generates the CUDA runtime API surface of libagileos_cudart.so from cudart_api.tsv.

The table (one row per function libcudart.so.13 exports: symbol, family, support, note) is the
single declaration of that surface. From it and the prototypes in the CUDA Toolkit headers this
script writes, each only when asked for:

  --stubs FILE            C++ definitions of every `unsupported` row: log the reason once and
                          fail closed (cudaErrorNotSupported / nullptr / nothing), plus the
                          reason lookup declared in unsupported_reason.h.
  --prototypes FILE       extern "C" prototypes of the exported functions that no includable
                          header declares: the _ptds/_ptsz entry points and the __cuda* entry
                          points of nvcc-generated code. Hand-written definitions include it so
                          that they are checked against the same prototypes.
  --version-script FILE   GNU ld version script: every row global as name@@libcudart.so.13,
                          everything else local.
  --coverage-doc FILE     Markdown coverage table (docs/api-coverage.md).
  --probe-definitions FILE
                          Test-only: a definition of every `implemented` row that aborts, so a
                          scratch library can be linked from the stubs before the shim exists.

Every run parses the whole table and finds a prototype for every row, whatever it writes, so a
table row with no prototype or a malformed row fails the build. Standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from collections import Counter, defaultdict

VERSION_NODE = "libcudart.so.13"

# Families in documentation order. A row with a family not listed here is an error.
FAMILIES = (
    "device", "error", "memory", "managed", "mempool", "array", "texture", "stream", "event",
    "launch", "registration", "module", "graph", "peer", "ipc", "interop", "driver", "misc",
)
SUPPORT_LEVELS = ("implemented", "partial", "refused", "unsupported")
# Levels whose function is written by hand in client/cudart/ (no generated stub).
HAND_WRITTEN = ("implemented", "partial", "refused")
# Levels a program may call and get the work done (possibly not all of it: `partial`).
WORKING = ("implemented", "partial")

# Headers whose declarations an #include in the stubs brings into scope (the interop ones
# through client/cudart/api/window_system_stand_ins). A stub of a function declared here is
# compiled against NVIDIA's declaration, so any prototype drift is a compile error.
INCLUDED_HEADERS = (
    "cuda_runtime_api.h",
    "cuda_profiler_api.h",
    "cuda_gl_interop.h",
    "cuda_egl_interop.h",
    "cuda_vdpau_interop.h",
)
# nvcc-internal headers: they declare the __cuda* entry points but cannot be included by a
# host compiler (they expect nvcc's generated context), so their prototypes are re-declared in
# the generated prototypes header.
COMPILER_HEADERS = (
    "crt/host_runtime.h",
    "crt/device_functions.h",
)

# Exported entry points that no CUDA 13.0 header declares. nvcc-generated code and NVIDIA's
# libraries call them; their prototypes are fixed here with the evidence for each.
UNDECLARED_PROTOTYPES = {
    # Host-side registration of a host variable; the prototype nvcc-era runtimes and
    # LLVM flang's CUDA Fortran runtime (CUFRegisterVariable) call it with.
    "__cudaRegisterHostVar": (
        "void", ["void **fatCubinHandle", "const char *deviceName", "char *hostVar", "size_t size"]),
    # libcudart.so.13 takes five register arguments and returns nothing: it resolves the handle
    # and stores the four values into it (disassembly of 13.0). Names as in the fat binary's
    # unified function/data table layout.
    "__cudaRegisterUnifiedTable": (
        "void", ["void **fatCubinHandle", "void *functionTable", "size_t functionWindowSize",
                 "void *dataTable", "size_t dataWindowSize"]),
    # libcudart.so.13's body is `xor eax, eax; ret`: it reads no argument and returns 0. With
    # no declared parameters and a pointer result, a definition returns the same 0 in rax
    # whatever its callers pass (x86-64 SysV: arguments in registers, caller cleans up).
    "__cudaGetProcAddress": ("void*", []),
}

PER_THREAD_SUFFIX = re.compile(r"_pt(?:ds|sz)$")

# Words of a declaration's return-type text that are attributes, not part of the type.
_DECLARATION_NOISE = {
    "extern", '"C"', "__host__", "__device__", "__cudart_builtin__", "CUDART_DEVICE",
    "__CUDA_DEPRECATED", "CUDARTAPI",
}
# Words that can start or continue a type but are never a parameter name.
_TYPE_WORDS = {
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool",
    "const", "volatile", "struct", "enum", "union", "restrict", "__restrict__",
}
_ELABORATION_WORDS = {"const", "volatile", "struct", "enum", "union", "restrict", "__restrict__"}


class TableError(Exception):
    pass


class PrototypeError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The table


@dataclasses.dataclass(frozen=True)
class Entry:
    symbol: str
    family: str
    support: str
    note: str
    line: int


def read_table(path: str) -> list[Entry]:
    """Parses cudart_api.tsv; raises TableError naming the line of the first malformed row."""
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    with open(path, encoding="ascii") as table:
        for number, raw in enumerate(table, start=1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            where = f"{path}:{number}"
            fields = line.split("\t")
            if len(fields) not in (3, 4):
                raise TableError(f"{where}: expected 3 or 4 TAB-separated fields, got {len(fields)}")
            symbol, family, support = fields[:3]
            note = fields[3] if len(fields) == 4 else ""
            if not re.fullmatch(r"_*cuda\w+", symbol):
                raise TableError(f"{where}: '{symbol}' is not a CUDA runtime symbol name")
            if symbol in seen:
                raise TableError(f"{where}: {symbol} is already declared on line {seen[symbol]}")
            if family not in FAMILIES:
                raise TableError(f"{where}: unknown family '{family}' (known: {', '.join(FAMILIES)})")
            if support not in SUPPORT_LEVELS:
                raise TableError(f"{where}: support must be one of {', '.join(SUPPORT_LEVELS)}, not '{support}'")
            if support in ("unsupported", "refused") and not note.strip():
                raise TableError(f"{where}: an {support} row must say why it fails closed")
            if support == "partial" and not note.strip():
                raise TableError(f"{where}: a partial row must say what is missing")
            # The note becomes a C string literal and a Markdown table cell: keep it to
            # characters that need no escaping in either.
            bad = sorted({c for c in note if not (" " <= c <= "~") or c in '"\\|<>'})
            if bad:
                raise TableError(f"{where}: note contains characters {bad!r}; use plain ASCII prose")
            seen[symbol] = number
            entries.append(Entry(symbol, family, support, note.strip(), number))
    if not entries:
        raise TableError(f"{path}: no rows")
    return entries


# ---------------------------------------------------------------------------------------------
# Prototypes


@dataclasses.dataclass(frozen=True)
class Parameter:
    text: str          # declaration text without any default argument, e.g. "const void *src"
    name: str | None   # the declared name, None for an unnamed parameter or `void`

    def unnamed_text(self) -> str:
        """The text with the name commented out, for definitions that ignore the argument."""
        if self.name is None:
            return self.text
        return re.sub(rf"\b{re.escape(self.name)}\b(?!.*\b{re.escape(self.name)}\b)",
                      f" /*{self.name}*/", self.text).replace("  ", " ")

    def type_only(self) -> str:
        if self.name is None:
            return _canonical(self.text)
        return _canonical(re.sub(rf"\b{re.escape(self.name)}\b(?!.*\b{re.escape(self.name)}\b)",
                                 "", self.text))


@dataclasses.dataclass(frozen=True)
class Prototype:
    name: str
    return_type: str
    parameters: tuple[Parameter, ...]
    source: str             # where it was read: a header path, or a note for derived ones
    declared_by_include: bool

    def signature(self) -> str:
        """Return and parameter types only: equal for compatible redeclarations."""
        return f"{self.return_type}({', '.join(p.type_only() for p in self.parameters)})"

    def declaration(self, limit: int = 110) -> str:
        """`return name(params)`, one parameter per line when one line would pass `limit`."""
        head = f"{self.return_type} {self.name}("
        texts = [p.text for p in self.parameters]
        one_line = head + ", ".join(texts) + ")"
        if len(one_line) + 1 <= limit or not texts:
            return one_line
        return head + "\n" + ",\n".join("    " + t for t in texts) + ")"

    def return_kind(self) -> str:
        if self.return_type == "cudaError_t":
            return "error"
        if self.return_type == "void":
            return "void"
        if self.return_type.endswith("*"):
            return "pointer"
        return "other"


def _canonical(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\s*\*\s*", "*", text)
    return text.strip()


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _matching_paren(text: str, open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    raise PrototypeError("unbalanced parentheses")


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def _strip_default(text: str) -> str:
    match = re.search(r"\b__dv\s*\(", text)
    if match:
        end = _matching_paren(text, match.end() - 1)
        text = text[:match.start()] + text[end + 1:]
    return text.split("=")[0]


def parse_parameter(raw: str) -> Parameter:
    text = " ".join(_strip_default(raw).split())
    if "(" in text:  # function-pointer declarator: ret (*name)(args)
        match = re.search(r"\(\s*\*\s*(\w+)\s*\)", text)
        return Parameter(text, match.group(1) if match else None)
    # Pointer style of the project (Google): `const char* name`, `void* const* dsts`.
    text = " ".join(re.sub(r"\s*((?:\*\s*)+)", lambda m: "".join(m.group(1).split()) + " ", text).split())
    words = re.findall(r"[A-Za-z_]\w*", text)
    if not words:
        raise PrototypeError(f"cannot parse parameter '{raw.strip()}'")
    last = words[-1]
    type_words = [w for w in words[:-1] if w not in _ELABORATION_WORDS]
    if last in _TYPE_WORDS or not type_words:
        return Parameter(text, None)
    return Parameter(text, last)


def parse_parameters(params: str) -> tuple[Parameter, ...]:
    params = " ".join(params.split())
    if not params:
        return ()
    return tuple(parse_parameter(p) for p in _split_top_level(params))


def _clean_return_type(text: str) -> str:
    words = [w for w in text.replace("*", " * ").split() if w not in _DECLARATION_NOISE]
    return _canonical(" ".join(words))


_DECLARATION_START = re.compile(
    r'\bextern\s+(?P<ret>[^;{}()#=]*?)\bCUDARTAPI\s+(?P<name>\w+)\s*\(')


def scan_declarations(text: str, source: str, declared_by_include: bool) -> list[Prototype]:
    """Every `extern ... CUDARTAPI name(...);` in a header, in order, across all #if branches."""
    text = _strip_comments(text)
    found = []
    for match in _DECLARATION_START.finditer(text):
        close = _matching_paren(text, match.end() - 1)
        if not text[close + 1:].lstrip().startswith(";"):
            continue  # a definition (static inline redirect), not a declaration
        try:
            parameters = parse_parameters(text[match.end():close])
        except PrototypeError as error:
            raise PrototypeError(f"{source}: {match.group('name')}: {error}") from None
        found.append(Prototype(match.group("name"), _clean_return_type(match.group("ret")),
                               parameters, source, declared_by_include))
    return found


def _find_header(include_dirs: list[str], relative: str) -> str:
    for directory in include_dirs:
        candidate = os.path.join(directory, relative)
        if os.path.isfile(candidate):
            return candidate
    raise PrototypeError(f"{relative} not found in {include_dirs}")


def load_prototypes(include_dirs: list[str]) -> dict[str, Prototype]:
    """One prototype per declared name. Redeclarations (headers repeat some declarations in
    per-thread-stream and version branches) must agree on every type, else PrototypeError."""
    by_name: dict[str, list[Prototype]] = defaultdict(list)
    for relative, included in ([(h, True) for h in INCLUDED_HEADERS] +
                               [(h, False) for h in COMPILER_HEADERS]):
        path = _find_header(include_dirs, relative)
        with open(path, encoding="utf-8", errors="replace") as header:
            for prototype in scan_declarations(header.read(), relative, included):
                by_name[prototype.name].append(prototype)
    chosen = {}
    for name, declarations in by_name.items():
        signatures = {d.signature() for d in declarations}
        if len(signatures) != 1:
            raise PrototypeError(f"{name} is declared with different types: {sorted(signatures)}")
        chosen[name] = declarations[0]
    for name, (return_type, parameters) in UNDECLARED_PROTOTYPES.items():
        if name in chosen:
            raise PrototypeError(f"{name} is now declared in {chosen[name].source}: "
                                 "remove it from UNDECLARED_PROTOTYPES")
        chosen[name] = Prototype(name, return_type, parse_parameters(", ".join(parameters)),
                                 "generate_cudart_api.py (no CUDA header declares it)", False)
    return chosen


def resolve_prototype(symbol: str, prototypes: dict[str, Prototype]) -> Prototype:
    """The prototype of an exported symbol. A _ptds/_ptsz entry point without a declaration of
    its own takes its base function's prototype: the headers only ever #define the base name
    to it (under CUDA_API_PER_THREAD_DEFAULT_STREAM), which is the same function type."""
    if symbol in prototypes:
        return prototypes[symbol]
    base = PER_THREAD_SUFFIX.sub("", symbol)
    if base != symbol and base in prototypes:
        return dataclasses.replace(prototypes[base], name=symbol,
                                   source=f"{prototypes[base].source} ({base})",
                                   declared_by_include=False)
    raise PrototypeError(f"no prototype for {symbol}: no CUDA header declares it; add it to "
                         "UNDECLARED_PROTOTYPES in generate_cudart_api.py")


# ---------------------------------------------------------------------------------------------
# Emitters

GENERATED_BANNER = """\
// Generated by client/cudart/api/generate_cudart_api.py from client/cudart/api/cudart_api.tsv.
// Do not edit: change the table (or the generator) and rebuild."""

# Defined in the prototypes header; the hand-written definitions use it too.
EXPORT = "AGILEOS_CUDART_EXPORT"


def _function_head(prototype: Prototype, parameter_texts: list[str], tail: str, limit: int = 110) -> str:
    """The definition's head; `tail` is what follows it on its last line (`{` or a body)."""
    head = f"{EXPORT} {prototype.return_type} {prototype.name}("
    one_line = head + ", ".join(parameter_texts) + ")"
    if len(one_line) + 1 + len(tail) <= limit or not parameter_texts:
        return one_line
    return head + "\n" + ",\n".join("    " + p for p in parameter_texts) + ")"


def emit_prototypes_header(rows: list[tuple[Entry, Prototype]]) -> str:
    lines = [GENERATED_BANNER, """\
//
// extern "C" prototypes of the libcudart.so.13 entry points that no includable CUDA header
// declares: the _ptds/_ptsz variants (cuda_runtime_api.h only #defines base names to them
// under CUDA_API_PER_THREAD_DEFAULT_STREAM) and the __cuda* entry points that nvcc-generated
// code calls (declared in nvcc-internal headers, or nowhere). Both the generated stubs and the
// hand-written implementations in client/cudart include this header, so every definition is
// checked against one prototype. Each line names where its prototype comes from.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>

// Per-thread-default-stream builds #define base names to their _ptds/_ptsz variants, which
// would give the shim's definitions the wrong symbol names.
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM) || defined(__CUDA_API_VERSION_INTERNAL)
#error "The cudart shim must be compiled without CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

// Marks a definition of an exported entry point. Default visibility keeps it exportable when
// the shim is compiled with -fvisibility=hidden; the version script (libcudart.map) then
// decides what is exported, so a helper that forgets `static` still stays local.
#define AGILEOS_CUDART_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
"""]
    for entry, prototype in rows:
        if prototype.declared_by_include:
            continue
        lines.append(f"// {entry.symbol}: from {prototype.source}")
        lines.append(f"{prototype.declaration()};")
    lines.append("\n}  // extern \"C\"\n")
    return "\n".join(lines)


def _stub_body(entry: Entry, prototype: Prototype) -> str:
    call = f'::agileos::client::reportUnsupported("{entry.symbol}")'
    kind = prototype.return_kind()
    if kind == "error":
        return f"  return {call};"
    if kind == "void":
        return f"  (void){call};"
    if kind == "pointer":
        return f"  (void){call};\n  return nullptr;"
    raise PrototypeError(
        f"{entry.symbol} returns {prototype.return_type}: a generated stub cannot fail closed "
        "with that type; implement it by hand and mark its row implemented")


def emit_stubs(rows: list[tuple[Entry, Prototype]], prototypes_header: str) -> str:
    unsupported = sorted([(e, p) for e, p in rows if e.support == "unsupported"],
                         key=lambda row: (FAMILIES.index(row[0].family), row[0].symbol.encode()))
    out = [GENERATED_BANNER, f"""\
//
// Fail-closed definitions of the {len(unsupported)} libcudart.so.13 entry points that AgileOS does not
// implement, and the table of why (see unsupported_reason.h). Each definition hands its name to
// reportUnsupported (client/cudart/error_state.h), which logs the reason once per symbol and
// records cudaErrorNotSupported as the thread's last error; entry points that return void or a
// pointer cannot return that error, so they return nothing or nullptr after reporting it.
//
// Each function's prototype is compiled against its declaration in the CUDA headers (or in
// {prototypes_header}): extern "C" functions cannot be overloaded, so a
// prototype that drifts from the toolkit's is a compile error.

#include <cuda_runtime_api.h>
#include <cuda_profiler_api.h>
// These three include GL, EGL and VDPAU headers: client/cudart/api/window_system_stand_ins
// stands in for them on this file's include path.
#include <cuda_egl_interop.h>
#include <cuda_gl_interop.h>
#include <cuda_vdpau_interop.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "client/cudart/api/unsupported_reason.h"
#include "client/cudart/error_state.h"
#include "{prototypes_header}"
"""]
    family = None
    for entry, prototype in unsupported:
        if entry.family != family:
            family = entry.family
            out.append(f"// --- {family} ---\n")
        head = _function_head(prototype, [p.unnamed_text() for p in prototype.parameters], "{")
        out.append(f"{head} {{\n{_stub_body(entry, prototype)}\n}}\n")

    by_symbol = sorted(unsupported, key=lambda row: row[0].symbol.encode())
    out.append("""\
namespace agileos::client {
namespace {

struct UnsupportedEntryPoint {
  const char* symbol;
  const char* reason;
};

// Sorted by symbol in strcmp order, for the binary search below.
constexpr UnsupportedEntryPoint kUnsupportedEntryPoints[] = {""")
    for entry, _ in by_symbol:
        out.append(f'    {{"{entry.symbol}", "{entry.note}"}},')
    out.append("""\
};

}  // namespace

const char* unsupportedReason(const char* symbol) {
  if (symbol == nullptr) return nullptr;
  const auto* end = std::end(kUnsupportedEntryPoints);
  const auto* found = std::lower_bound(std::begin(kUnsupportedEntryPoints), end, symbol,
                                       [](const UnsupportedEntryPoint& entry, const char* name) {
                                         return std::strcmp(entry.symbol, name) < 0;
                                       });
  if (found == end || std::strcmp(found->symbol, symbol) != 0) return nullptr;
  return found->reason;
}

}  // namespace agileos::client
""")
    return "\n".join(out)


def emit_probe_definitions(rows: list[tuple[Entry, Prototype]], prototypes_header: str) -> str:
    out = [GENERATED_BANNER, f"""\
//
// TEST ONLY (tests/cpu/cudart_exports): an aborting definition of every `implemented` entry
// point, so that a scratch library can be linked from the generated stubs and version script
// before the hand-written shim exists. Nothing here implements anything.

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "{prototypes_header}"
"""]
    for entry, prototype in rows:
        if entry.support not in HAND_WRITTEN:
            continue
        head = _function_head(prototype, [p.unnamed_text() for p in prototype.parameters],
                              "{ std::abort(); }")
        out.append(f"{head} {{ std::abort(); }}\n")
    return "\n".join(out)


def emit_version_script(entries: list[Entry]) -> str:
    names = "\n".join(f"    {e.symbol};" for e in sorted(entries, key=lambda e: e.symbol.encode()))
    return f"""\
/* Generated by client/cudart/api/generate_cudart_api.py from client/cudart/api/cudart_api.tsv.
   Exports exactly the functions of libcudart.so.13, each as name@@{VERSION_NODE}, so that a
   program linked against the real runtime binds to the shim; every other symbol is local. */
{VERSION_NODE} {{
  global:
{names}
  local:
    *;
}};
"""


def _failure_text(prototype: Prototype) -> str:
    return {
        "error": "`cudaErrorNotSupported`",
        "void": "nothing (returns void; logged)",
        "pointer": "`nullptr` (logged)",
    }[prototype.return_kind()]


def emit_coverage_doc(rows: list[tuple[Entry, Prototype]]) -> str:
    counts: dict[str, Counter] = {family: Counter() for family in FAMILIES}
    for entry, _ in rows:
        counts[entry.family][entry.support] += 1
    total = Counter()
    for counter in counts.values():
        total.update(counter)

    out = [f"""\
# CUDA runtime API coverage

<!-- Generated by client/cudart/api/generate_cudart_api.py from client/cudart/api/cudart_api.tsv.
     Do not edit: change the table, then `cmake --build <build dir> --target agileos_api_docs`.
     The CPU test cudart_exports.coverage_doc_is_current fails while this file is stale. -->

`libagileos_cudart.so` exports every function that `{VERSION_NODE}` exports, {len(rows)} in all,
each with the symbol version `{VERSION_NODE}`, so a program linked against the real CUDA
runtime binds to the shim and never finds a symbol missing.

- **implemented**: hand-written in `client/cudart/`, doing what the CUDA runtime does. A note
  says how, where that matters.
- **partial**: hand-written and working for part of what the CUDA runtime accepts; the note says
  what is missing, and the missing part fails closed (`cudaErrorNotSupported` unless the note
  says otherwise).
- **refused**: hand-written to fail closed (the call needs handling of its own, for example a
  registration that must not half-succeed); the note says why.
- **unsupported**: fails closed. The first call logs the function's name and the reason below;
  every call records `cudaErrorNotSupported` (801) as the calling thread's last error and
  returns it. The few entry points that return `void` or a pointer cannot carry the error and
  return nothing or `nullptr` instead.

## Summary

| family | implemented | partial | refused | unsupported | total |
| --- | ---: | ---: | ---: | ---: | ---: |"""]
    for family in FAMILIES:
        c = counts[family]
        if c:
            cells = " | ".join(str(c[level]) for level in SUPPORT_LEVELS)
            out.append(f"| {family} | {cells} | {sum(c[level] for level in SUPPORT_LEVELS)} |")
    cells = " | ".join(f"**{total[level]}**" for level in SUPPORT_LEVELS)
    out.append(f"| **all** | {cells} | **{sum(total[level] for level in SUPPORT_LEVELS)}** |")
    out.append("")
    out.append("## Functions by family")
    for family in FAMILIES:
        family_rows = [(e, p) for e, p in rows if e.family == family]
        if not family_rows:
            continue
        c = counts[family]
        out.append("")
        counted = ", ".join(f"{c[level]} {level}" for level in SUPPORT_LEVELS if c[level])
        out.append(f"### {family} ({counted})")
        out.append("")
        out.append("| function | support | fails with | reason or note |")
        out.append("| --- | --- | --- | --- |")
        for entry, prototype in sorted(family_rows, key=lambda row: row[0].symbol.encode()):
            fails = _failure_text(prototype) if entry.support == "unsupported" else ""
            if entry.support == "refused":
                fails = "an error (hand-written; see the note)"
            out.append(f"| `{entry.symbol}` | {entry.support} | {fails} | {entry.note} |")
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------


def emit_supported_list(entries) -> str:
    """The runtime entry points the GPU test programs may import: every implemented or partial row."""
    out = ["# Generated from client/cudart/api/cudart_api.tsv by generate_cudart_api.py; do not edit.",
           "# Every `implemented` and `partial` row: the CUDA runtime entry points the GPU test programs and",
           "# benchmarks may import (tests/gpu/check_program_imports.sh)."]
    out.extend(sorted(entry.symbol for entry in entries if entry.support in WORKING))
    return "\n".join(out) + "\n"


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
    parser.add_argument("--table", required=True, help="client/cudart/api/cudart_api.tsv")
    parser.add_argument("--cuda-include", action="append", required=True,
                        help="CUDA Toolkit include directory (repeatable)")
    parser.add_argument("--stubs")
    parser.add_argument("--prototypes")
    parser.add_argument("--version-script")
    parser.add_argument("--coverage-doc")
    parser.add_argument("--probe-definitions")
    parser.add_argument("--supported-list",
                        help="every implemented row, one per line: what test programs may import")
    args = parser.parse_args(argv)
    if (args.stubs or args.probe_definitions) and not args.prototypes:
        parser.error("--stubs and --probe-definitions include the --prototypes header")

    try:
        entries = read_table(args.table)
        prototypes = load_prototypes(args.cuda_include)
        rows = [(entry, resolve_prototype(entry.symbol, prototypes)) for entry in entries]
        header_name = os.path.basename(args.prototypes) if args.prototypes else ""
        outputs = []
        if args.prototypes:
            outputs.append((args.prototypes, emit_prototypes_header(rows)))
        if args.stubs:
            outputs.append((args.stubs, emit_stubs(rows, header_name)))
        if args.probe_definitions:
            outputs.append((args.probe_definitions, emit_probe_definitions(rows, header_name)))
        if args.version_script:
            outputs.append((args.version_script, emit_version_script(entries)))
        if args.coverage_doc:
            outputs.append((args.coverage_doc, emit_coverage_doc(rows)))
        if args.supported_list:
            outputs.append((args.supported_list, emit_supported_list(entries)))
    except (TableError, PrototypeError) as error:
        print(f"generate_cudart_api.py: error: {error}", file=sys.stderr)
        return 1
    for path, content in outputs:
        _write_if_changed(path, content)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
