#!/usr/bin/env python3
"""Generates the exported surface of an AgileOS shim library from its API table.

Every shimmed library (libcudart.so.13, libcufft.so.12, libnvrtc.so.13; libcuda.so.1 and the
math libraries next) is declared once, in a table `<name>_api.tsv` of one format: `@`
directives that describe the library, then one row per function the real library exports
(nm -D --defined-only) with its support level. From a table and the prototypes in the CUDA
Toolkit headers this script writes, each only when asked for:

  --header FILE           <name>_api.gen.h: extern "C" prototypes of the exported functions no
                          includable header declares (internal, per-thread-stream and
                          undocumented entry points, so every definition is checked against one
                          prototype), the export macro AGILEOS_<NAME>_EXPORT, and the
                          declarations of the fail-closed rows' table and reporter.
  --stubs FILE            <name>_api.gen.cpp: a fail-closed definition of every `unsupported`
                          row, the table of the rows that fail closed (refused and unsupported:
                          symbol, reason, failure code) and
                          <namespace>::reportUnsupported(symbol), which logs the row's reason
                          once and returns its code (client/library_shim/unsupported.h).
  --version-script FILE   GNU ld version script: every row global as name@@<soname>,
                          everything else local.
  --probe-definitions FILE
                          Test only: an aborting definition of every hand-written row, so a
                          scratch library can be linked from the stubs alone.
  --supported-list FILE   Every implemented and partial row, one per line: what the GPU test
                          programs may import.
and from one or more tables:
  --coverage-doc FILE     Markdown coverage of every table given (docs/api-coverage.md).

Table format (one TAB between fields; blank lines and lines starting with # are ignored):

  @library      display name, e.g. cuFFT
  @shim         the shim's file name, libagileos_<name>.so; <name> names the generated files
  @version      the real library's soname, which is also its symbol version node
  @source       the directory of the hand-written definitions, for the documentation
  @headers      the includable headers that declare the library (space-separated); the
                first is included by <name>_api.gen.h, all of them by the stubs
  @internal_headers
                headers that declare exported functions but cannot be included (optional)
  @result       the result type the library's functions return (cudaError_t, cufftResult)
  @unsupported  the code an unsupported row returns unless the row names its own
  @namespace    C++ namespace of the generated table and reporter
  @reporter     the function a stub calls, `<result> f(const char* symbol)` (optional;
                default <namespace>::reportUnsupported). The CUDA runtime's also records
                the thread's last error.
  @families     the families rows belong to, in documentation order (space-separated)
  @preprocess   macros (space-separated) with which the headers are read through the C
                preprocessor (--cpp) instead of as text (optional). For headers that rename
                functions with macros (cuda.h: cuMemAlloc -> cuMemAlloc_v2): the prototypes are
                then those a compiler sees, and every file of the shim must be compiled with the
                same macros defined (the generated header refuses to compile otherwise).
  @symbol_versions
                `yes` (default): every row is exported as name@@<soname>, as the real library
                does; `no`: exported without a version, for a library that has none (libcuda)
  @prototype    `<return type> <name>(<parameters>)` of an exported function that no header
                declares (repeatable); the comment above it gives the evidence

  symbol <TAB> family <TAB> implemented [<TAB> note]
  symbol <TAB> family <TAB> partial <TAB> what is missing (the missing part fails closed)
  symbol <TAB> family <TAB> refused <TAB> why [<TAB> failure code] (hand-written to fail closed)
  symbol <TAB> family <TAB> unsupported <TAB> why [<TAB> failure code]

implemented, partial and refused rows are written by hand in @source; unsupported rows are
generated here. Every run parses the whole table and finds a prototype for every row, whatever
it writes, so a malformed row or a row without a prototype fails the build. Standard library
only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict

GENERATOR = "cmake/api_surface/generate_api_surface.py"

SUPPORT_LEVELS = ("implemented", "partial", "refused", "unsupported")
# Levels whose function is written by hand in the shim's sources (no generated stub).
HAND_WRITTEN = ("implemented", "partial", "refused")
# Levels a program may call and get the work done (possibly not all of it: `partial`).
WORKING = ("implemented", "partial")
# Levels that always fail closed: their rows are in the generated table of reasons and codes,
# which the generated stubs (unsupported) and the hand-written definitions (refused) report from.
FAILS_CLOSED = ("refused", "unsupported")

REQUIRED_DIRECTIVES = ("library", "shim", "version", "source", "headers", "result", "unsupported",
                       "namespace", "families")
OPTIONAL_DIRECTIVES = ("internal_headers", "reporter", "preprocess", "symbol_versions")
REPEATED_DIRECTIVES = ("prototype",)

PER_THREAD_SUFFIX = re.compile(r"_pt(?:ds|sz)$")

# Words of a declaration's return-type text that are attributes or calling conventions, not
# part of the type. Any all-capitals word ending in API (CUDARTAPI, CUFFTAPI) is one too.
_DECLARATION_NOISE = {
    "extern", '"C"', "__host__", "__device__", "__cudart_builtin__", "CUDART_DEVICE",
    "__CUDA_DEPRECATED", "static", "inline", "__inline__",
}
_CALLING_CONVENTION = re.compile(r"^[A-Z_]+API$")
# Words that can start or continue a type but are never a parameter name.
_TYPE_WORDS = {
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool",
    "const", "volatile", "struct", "enum", "union", "restrict", "__restrict__",
}
_ELABORATION_WORDS = {"const", "volatile", "struct", "enum", "union", "restrict", "__restrict__"}
# Words that show a statement, not a declaration, precedes a name and its parentheses.
_STATEMENT_WORDS = {"return", "if", "else", "case", "goto", "throw", "delete", "new", "sizeof",
                    "while", "do", "for", "switch", "typedef", "using", "define"}


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
    result: str  # the failure code of a refused or unsupported row ("" for the others)
    line: int


@dataclasses.dataclass(frozen=True)
class Table:
    path: str          # as given
    display_path: str  # relative to the source tree when it lies inside it
    library: str
    shim: str
    name: str          # from @shim: libagileos_<name>.so
    version: str
    source: str
    headers: tuple[str, ...]
    internal_headers: tuple[str, ...]
    preprocess: tuple[str, ...]  # macros to define when the headers are preprocessed
    symbol_versions: bool
    result: str
    unsupported: str
    namespace: str
    reporter: str
    families: tuple[str, ...]
    prototypes: tuple[str, ...]
    entries: tuple[Entry, ...]

    def rows(self, *levels: str) -> list[Entry]:
        return [e for e in self.entries if e.support in levels]

    def export_macro(self) -> str:
        return f"AGILEOS_{self.name.upper()}_EXPORT"

    def has_per_thread_variants(self) -> bool:
        return any(PER_THREAD_SUFFIX.search(e.symbol) for e in self.entries)


def _plain_text(where: str, what: str, text: str) -> None:
    """Notes become C string literals and Markdown table cells: no escaping needed in either."""
    bad = sorted({c for c in text if not (" " <= c <= "~") or c in '"\\|<>'})
    if bad:
        raise TableError(f"{where}: {what} contains characters {bad!r}; use plain ASCII prose")


def _display_path(path: str) -> str:
    """The path relative to the source tree (two levels above this script) when inside it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    absolute = os.path.abspath(path)
    if absolute.startswith(root + os.sep):
        return os.path.relpath(absolute, root)
    return path


def _read_directive(where: str, fields: list[str], directives: dict[str, str],
                    repeated: dict[str, list[str]]) -> None:
    name = fields[0][1:]
    known = REQUIRED_DIRECTIVES + OPTIONAL_DIRECTIVES + REPEATED_DIRECTIVES
    if name not in known:
        raise TableError(f"{where}: unknown directive @{name} (known: {', '.join(known)})")
    if len(fields) != 2 or not fields[1].strip():
        raise TableError(f"{where}: @{name} takes one TAB-separated value")
    value = fields[1].strip()
    if name in REPEATED_DIRECTIVES:
        repeated[name].append(value)
        return
    if name in directives:
        raise TableError(f"{where}: @{name} is given twice")
    _plain_text(where, f"@{name}", value)
    directives[name] = value


def _read_row(where: str, number: int, fields: list[str], families: tuple[str, ...]) -> Entry:
    if not 3 <= len(fields) <= 5:
        raise TableError(f"{where}: expected 3 to 5 TAB-separated fields, got {len(fields)}")
    symbol, family, support = fields[:3]
    note = fields[3].strip() if len(fields) > 3 else ""
    result = fields[4].strip() if len(fields) > 4 else ""
    if not re.fullmatch(r"[A-Za-z_]\w*", symbol):
        raise TableError(f"{where}: '{symbol}' is not a C function name")
    if family not in families:
        raise TableError(f"{where}: unknown family '{family}' (@families: {', '.join(families)})")
    if support not in SUPPORT_LEVELS:
        raise TableError(f"{where}: support must be one of {', '.join(SUPPORT_LEVELS)}, not '{support}'")
    if support in ("unsupported", "refused") and not note:
        raise TableError(f"{where}: an {support} row must say why it fails closed")
    if support == "partial" and not note:
        raise TableError(f"{where}: a partial row must say what is missing")
    if support not in FAILS_CLOSED and result:
        raise TableError(f"{where}: only a refused or unsupported row names a failure code")
    if result and not re.fullmatch(r"[A-Za-z_]\w*", result):
        raise TableError(f"{where}: '{result}' is not a result code name")
    _plain_text(where, "the note", note)
    return Entry(symbol, family, support, note, result, number)


def read_table(path: str) -> Table:
    """Parses one table; raises TableError naming the line of the first problem."""
    directives: dict[str, str] = {}
    repeated: dict[str, list[str]] = defaultdict(list)
    raw_rows: list[tuple[str, int, list[str]]] = []
    with open(path, encoding="ascii") as table:
        for number, raw in enumerate(table, start=1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            where = f"{path}:{number}"
            fields = line.split("\t")
            if line.startswith("@"):
                _read_directive(where, fields, directives, repeated)
            else:
                raw_rows.append((where, number, fields))
    missing = [name for name in REQUIRED_DIRECTIVES if name not in directives]
    if missing:
        raise TableError(f"{path}: missing directive(s) {', '.join('@' + m for m in missing)}")
    shim = re.fullmatch(r"libagileos_(\w+)\.so", directives["shim"])
    if not shim:
        raise TableError(f"{path}: @shim '{directives['shim']}' is not libagileos_<name>.so")
    namespace = directives["namespace"]
    if not re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", namespace):
        raise TableError(f"{path}: @namespace '{namespace}' is not a C++ namespace")
    reporter = directives.get("reporter", f"::{namespace}::reportUnsupported")
    if not re.fullmatch(r"(::)?[A-Za-z_]\w*(::[A-Za-z_]\w*)*", reporter):
        raise TableError(f"{path}: @reporter '{reporter}' is not a qualified function name")
    for name in ("result", "unsupported"):
        if not re.fullmatch(r"[A-Za-z_]\w*", directives[name]):
            raise TableError(f"{path}: @{name} '{directives[name]}' is not a C identifier")
    families = tuple(directives["families"].split())
    preprocess = tuple(directives.get("preprocess", "").split())
    for macro in preprocess:
        if not re.fullmatch(r"[A-Za-z_]\w*", macro):
            raise TableError(f"{path}: @preprocess '{macro}' is not a macro name")
    if directives.get("symbol_versions", "yes") not in ("yes", "no"):
        raise TableError(f"{path}: @symbol_versions must be yes or no")

    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for where, number, fields in raw_rows:
        entry = _read_row(where, number, fields, families)
        if entry.symbol in seen:
            raise TableError(f"{where}: {entry.symbol} is already declared on line {seen[entry.symbol]}")
        seen[entry.symbol] = number
        if entry.support in FAILS_CLOSED and not entry.result:
            entry = dataclasses.replace(entry, result=directives["unsupported"])
        entries.append(entry)
    if not entries:
        raise TableError(f"{path}: no rows")
    return Table(
        path=path, display_path=_display_path(path), library=directives["library"],
        shim=directives["shim"], name=shim.group(1), version=directives["version"],
        source=directives["source"], headers=tuple(directives["headers"].split()),
        internal_headers=tuple(directives.get("internal_headers", "").split()),
        preprocess=preprocess, symbol_versions=directives.get("symbol_versions", "yes") == "yes",
        result=directives["result"], unsupported=directives["unsupported"], namespace=namespace,
        reporter=reporter, families=families, prototypes=tuple(repeated["prototype"]),
        entries=tuple(entries))


def _sorted(entries) -> list[Entry]:
    return sorted(entries, key=lambda e: e.symbol.encode())


# ---------------------------------------------------------------------------------------------
# Prototypes


@dataclasses.dataclass(frozen=True)
class Parameter:
    text: str          # declaration text without any default argument, e.g. "const void *src"
    name: str | None   # the declared name, None for an unnamed parameter or `void`

    def _without_name(self, replacement: str) -> str:
        return re.sub(rf"\b{re.escape(self.name)}\b(?!.*\b{re.escape(self.name)}\b)", replacement, self.text)

    def unnamed_text(self) -> str:
        """The text with the name commented out, for definitions that ignore the argument."""
        if self.name is None:
            return self.text
        return self._without_name(f" /*{self.name}*/").replace("  ", " ")

    def type_only(self) -> str:
        return _canonical(self.text if self.name is None else self._without_name(""))


@dataclasses.dataclass(frozen=True)
class Prototype:
    name: str
    return_type: str
    parameters: tuple[Parameter, ...]
    source: str               # where it was read: a header path, or a note for derived ones
    declared_by_include: bool  # an included header declares it (else <name>_api.gen.h does)

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

    def return_kind(self, result_type: str) -> str:
        if self.return_type == result_type:
            return "result"
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


def _strip_preprocessor(text: str) -> str:
    """Blanks every preprocessor directive (with its continuation lines). The code of every
    #if branch stays: a function declared differently in two branches is caught below."""
    out, continued = [], False
    for line in text.split("\n"):
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        out.append("" if directive else line)
    return "\n".join(out)


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
    if not params or params == "void":
        return ()
    return tuple(parse_parameter(p) for p in _split_top_level(params))


def _return_type(head: str) -> str | None:
    """The return type in the text before a declared name, or None when that text is not the
    start of a declaration (a statement, an expression, a macro's arguments)."""
    head = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", head)
    words = [w for w in head.replace("*", " * ").split()
             if w not in _DECLARATION_NOISE and not _CALLING_CONVENTION.match(w)]
    if not words or any(w in _STATEMENT_WORDS for w in words):
        return None
    if not all(w == "*" or re.fullmatch(r"[A-Za-z_]\w*", w) for w in words) or words[0] == "*":
        return None
    return _canonical(" ".join(words))


def scan_declarations(text: str, wanted: set[str], source: str,
                      declared_by_include: bool) -> list[Prototype]:
    """Every declaration `<return type> name(<parameters>);` of a wanted name in a header's
    text, in order, across all #if branches. Calls, definitions and macros are not
    declarations and are skipped."""
    text = _strip_preprocessor(_strip_comments(text))
    found = []
    for match in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", text):
        name = match.group(1)
        if name not in wanted:
            continue
        close = _matching_paren(text, match.end() - 1)
        if not text[close + 1:].lstrip().startswith(";"):
            continue  # a definition or a call inside an expression
        start = max(text.rfind(c, 0, match.start()) for c in ";{}") + 1
        return_type = _return_type(text[start:match.start()])
        if return_type is None:
            continue
        try:
            parameters = parse_parameters(text[match.end():close])
        except PrototypeError as error:
            raise PrototypeError(f"{source}: {name}: {error}") from None
        found.append(Prototype(name, return_type, parameters, source, declared_by_include))
    return found


def parse_prototype_directive(text: str, source: str) -> Prototype:
    """`<return type> <name>(<parameters>)` of a @prototype directive."""
    match = re.fullmatch(r"\s*(?P<head>[^()]*?)\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)\s*;?\s*", text)
    return_type = _return_type(match.group("head")) if match else None
    if match is None or return_type is None:
        raise PrototypeError(f"{source}: cannot read the prototype '{text}'")
    return Prototype(match.group("name"), return_type, parse_parameters(match.group("params")),
                     source, False)


def _find_header(include_dirs: list[str], relative: str) -> str:
    for directory in include_dirs:
        candidate = os.path.join(directory, relative)
        if os.path.isfile(candidate):
            return candidate
    raise PrototypeError(f"{relative} not found in {include_dirs}")


def _preprocessed(table: Table, relative: str, include_dirs: list[str], cpp: str) -> str:
    """The header as the compiler sees it with the table's @preprocess macros defined."""
    command = [cpp, "-E", "-P", "-x", "c++", "-std=c++20"]
    command += [f"-D{macro}" for macro in table.preprocess]
    command += [f"-I{directory}" for directory in include_dirs] + ["-"]
    result = subprocess.run(command, input=f"#include <{relative}>\n", capture_output=True, text=True)
    if result.returncode != 0:
        raise PrototypeError(f"{' '.join(command)} failed on {relative}: {result.stderr.strip()[:2000]}")
    return result.stdout


def load_prototypes(table: Table, include_dirs: list[str], cpp: str = "c++") -> dict[str, Prototype]:
    """One prototype per declared row. Redeclarations (headers repeat some declarations in
    per-thread-stream and version branches) must agree on every type, else PrototypeError."""
    wanted = {e.symbol for e in table.entries}
    wanted |= {PER_THREAD_SUFFIX.sub("", s) for s in wanted}
    by_name: dict[str, list[Prototype]] = defaultdict(list)
    for relative, included in ([(h, True) for h in table.headers] +
                               [(h, False) for h in table.internal_headers]):
        if table.preprocess:
            text = _preprocessed(table, relative, include_dirs, cpp)
        else:
            with open(_find_header(include_dirs, relative), encoding="utf-8", errors="replace") as header:
                text = header.read()
        for prototype in scan_declarations(text, wanted, relative, included):
            by_name[prototype.name].append(prototype)
    chosen = {}
    for name, declarations in by_name.items():
        signatures = {d.signature() for d in declarations}
        if len(signatures) != 1:
            raise PrototypeError(f"{name} is declared with different types: {sorted(signatures)}")
        # An includable declaration wins: then the stubs compile against NVIDIA's own.
        chosen[name] = sorted(declarations, key=lambda d: not d.declared_by_include)[0]
    for text in table.prototypes:
        prototype = parse_prototype_directive(text, f"{table.display_path} (no CUDA header declares it)")
        if prototype.name in chosen:
            raise PrototypeError(f"{prototype.name} is now declared in {chosen[prototype.name].source}: "
                                 f"remove its @prototype from {table.display_path}")
        chosen[prototype.name] = prototype
    return chosen


def resolve_prototype(symbol: str, prototypes: dict[str, Prototype], table: Table) -> Prototype:
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
    raise PrototypeError(f"no prototype for {symbol}: no header of {table.display_path} declares it; "
                         "add a @prototype directive with the evidence for it")


# ---------------------------------------------------------------------------------------------
# Emitters


def _banner(table: Table) -> str:
    return (f"// Generated by {GENERATOR} from {table.display_path}.\n"
            "// Do not edit: change the table (or the generator) and rebuild.")


def _function_head(table: Table, prototype: Prototype, parameter_texts: list[str], tail: str,
                   limit: int = 110) -> str:
    """The definition's head; `tail` is what follows it on its last line (`{` or a body)."""
    head = f"{table.export_macro()} {prototype.return_type} {prototype.name}("
    one_line = head + ", ".join(parameter_texts) + ")"
    if len(one_line) + 1 + len(tail) <= limit or not parameter_texts:
        return one_line
    return head + "\n" + ",\n".join("    " + p for p in parameter_texts) + ")"


def emit_header(table: Table, rows: list[tuple[Entry, Prototype]]) -> str:
    macro = table.export_macro()
    per_thread_guard = ""
    if table.has_per_thread_variants():
        renaming = [m for m in ("CUDA_API_PER_THREAD_DEFAULT_STREAM", "__CUDA_API_VERSION_INTERNAL")
                    if m not in table.preprocess]
        per_thread_guard = f"""
// Per-thread-default-stream builds #define base names to their _ptds/_ptsz variants, which
// would give the shim's definitions the wrong symbol names.
#if {" || ".join(f"defined({m})" for m in renaming)}
#error "The {table.name} shim must be compiled without CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif
"""
    preprocess_guard = ""
    if table.preprocess:
        defined = " && ".join(f"defined({macro})" for macro in table.preprocess)
        preprocess_guard = f"""
// The prototypes were read from the headers with {' '.join(table.preprocess)} defined: every file
// of the shim must see the same declarations.
#if !({defined})
#error "compile the {table.name} shim with {' '.join('-D' + m for m in table.preprocess)}"
#endif
"""
    out = [_banner(table), f"""\
//
// The {table.library} surface of {table.shim}: the extern "C" prototypes of the {table.version}
// functions that no includable header declares, the macro that marks an exported definition,
// and the table of the rows that fail closed. The generated stubs and the hand-written definitions
// in {table.source} include this header, so every definition is checked against one prototype.
#pragma once
{preprocess_guard}
#include <{table.headers[0]}>
#include <stddef.h>

#include <span>

#include "client/library_shim/unsupported.h"
{per_thread_guard}
// Marks a definition of an exported entry point. Default visibility keeps it exportable when
// the shim is compiled with -fvisibility=hidden; the version script then decides what is
// exported, so a helper that forgets `static` still stays local.
#define {macro} extern "C" __attribute__((visibility("default")))

extern "C" {{
"""]
    for entry, prototype in rows:
        if prototype.declared_by_include:
            continue
        out.append(f"// {entry.symbol}: from {prototype.source}")
        out.append(f"{prototype.declaration()};")
    out.append("\n}  // extern \"C\"")
    if table.reporter != f"::{table.namespace}::reportUnsupported":
        namespace, _, function = table.reporter.lstrip(":").rpartition("::")
        out.append(f"""
// The table's @reporter, which the stubs call: written by hand in {table.source}.
namespace {namespace} {{
{table.result} {function}(const char* symbol);
}}  // namespace {namespace}""")
    out.append(f"""
namespace {table.namespace} {{

// The rows of {table.display_path} that fail closed (refused and unsupported), sorted by symbol
// in strcmp order.
std::span<const ::agileos::client::library_shim::UnsupportedEntry> failClosedEntries();

// Logs the reason of `symbol`'s row the first time it is reported in this process and returns
// the row's failure code (client/library_shim/unsupported.h); a symbol without such a row is
// logged as one and gets {table.unsupported}.
int reportUnsupported(const char* symbol);

}}  // namespace {table.namespace}
""")
    return "\n".join(out)


def _stub_body(table: Table, entry: Entry, prototype: Prototype) -> str:
    call = f'{table.reporter}("{entry.symbol}")'
    kind = prototype.return_kind(table.result)
    if kind == "result":
        return f"  return static_cast<{table.result}>({call});"
    if kind == "void":
        return f"  (void){call};"
    if kind == "pointer":
        return f"  (void){call};\n  return nullptr;"
    raise PrototypeError(
        f"{entry.symbol} returns {prototype.return_type}: a generated stub cannot fail closed "
        "with that type; write it by hand and mark its row refused")


def emit_stubs(table: Table, rows: list[tuple[Entry, Prototype]], header_name: str) -> str:
    unsupported = sorted([(e, p) for e, p in rows if e.support == "unsupported"],
                         key=lambda row: (table.families.index(row[0].family), row[0].symbol.encode()))
    includes = "\n".join(f"#include <{h}>" for h in table.headers)
    out = [_banner(table), f"""\
//
// Fail-closed definitions of the {len(unsupported)} {table.version} functions that AgileOS does not
// implement, and the table of why each row that fails closed does (refused rows are written by
// hand and report from it too). Each definition hands its name to {table.reporter},
// which logs the row's reason once per symbol and returns the row's code; functions that
// return void or a pointer cannot return a code, so they return nothing or nullptr.
//
// Each function's prototype is compiled against its declaration in the library's headers (or
// in {header_name}): extern "C" functions cannot be overloaded, so a prototype that drifts
// from the toolkit's is a compile error.

{includes}

#include <iterator>

#include "{header_name}"
"""]
    family = None
    for entry, prototype in unsupported:
        if entry.family != family:
            family = entry.family
            out.append(f"// --- {family} ---\n")
        head = _function_head(table, prototype, [p.unnamed_text() for p in prototype.parameters], "{")
        out.append(f"{head} {{\n{_stub_body(table, entry, prototype)}\n}}\n")

    table_rows = "\n".join(f'    {{"{e.symbol}", "{e.note}", {e.result}, "{e.result}"}},'
                           for e in _sorted(table.rows(*FAILS_CLOSED)))
    out.append(f"""\
namespace {table.namespace} {{
namespace {{

// The refused and unsupported rows, sorted by symbol in strcmp order.
constexpr ::agileos::client::library_shim::UnsupportedEntry kFailClosed[] = {{
{table_rows}
}};

}}  // namespace

std::span<const ::agileos::client::library_shim::UnsupportedEntry> failClosedEntries() {{
  return {{std::begin(kFailClosed), std::end(kFailClosed)}};
}}

int reportUnsupported(const char* symbol) {{
  return ::agileos::client::library_shim::reportUnsupported(failClosedEntries(), "{table.library}", symbol,
                                                            {table.unsupported});
}}

}}  // namespace {table.namespace}
""")
    return "\n".join(out)


def emit_probe_definitions(table: Table, rows: list[tuple[Entry, Prototype]], header_name: str) -> str:
    out = [_banner(table), f"""\
//
// TEST ONLY: an aborting definition of every hand-written row, so that a scratch library can be
// linked from the generated stubs and version script before the hand-written shim exists.
// Nothing here implements anything.

#include <{table.headers[0]}>

#include <cstdlib>

#include "{header_name}"
"""]
    for entry, prototype in rows:
        if entry.support not in HAND_WRITTEN:
            continue
        head = _function_head(table, prototype, [p.unnamed_text() for p in prototype.parameters],
                              "{ std::abort(); }")
        out.append(f"{head} {{ std::abort(); }}\n")
    return "\n".join(out)


def emit_version_script(table: Table) -> str:
    names = "\n".join(f"    {e.symbol};" for e in _sorted(table.entries))
    if not table.symbol_versions:
        return f"""\
/* Generated by {GENERATOR} from {table.display_path}.
   Exports exactly the functions of {table.version}, without a symbol version as the real
   library does, so that a program linked against the real {table.library} binds to
   {table.shim}; every other symbol is local. */
{{
  global:
{names}
  local:
    *;
}};
"""
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


def emit_supported_list(table: Table) -> str:
    out = [f"# Generated from {table.display_path} by {GENERATOR}; do not edit.",
           "# Every `implemented` and `partial` row: the entry points the GPU test programs and",
           "# benchmarks may import (tests/gpu/check_program_imports.sh)."]
    out.extend(e.symbol for e in _sorted(table.rows(*WORKING)))
    return "\n".join(out) + "\n"


def _fails_with(table: Table, entry: Entry, prototype: Prototype) -> str:
    if entry.support == "refused":
        return "an error (hand-written; see the note)"
    if entry.support != "unsupported":
        return ""
    return {
        "result": f"`{entry.result}`",
        "void": "nothing (returns void; logged)",
        "pointer": "`nullptr` (logged)",
    }[prototype.return_kind(table.result)]


def _count_cells(counter: Counter) -> str:
    cells = " | ".join(str(counter[level]) for level in SUPPORT_LEVELS)
    return f"{cells} | {sum(counter[level] for level in SUPPORT_LEVELS)}"


def _emit_library_section(table: Table, rows: list[tuple[Entry, Prototype]]) -> list[str]:
    counts = {family: Counter() for family in table.families}
    for entry, _ in rows:
        counts[entry.family][entry.support] += 1
    total = Counter(entry.support for entry, _ in rows)
    counted = ", ".join(f"{total[level]} {level}" for level in SUPPORT_LEVELS if total[level])
    exported = (f"as `name@@{table.version}`" if table.symbol_versions
                else "without a symbol version, as the real library does")
    out = ["", f"## {table.library} (`{table.shim}`)", "",
           f"Declared in `{table.display_path}`; hand-written definitions in `{table.source}/`. "
           f"{len(rows)} functions ({counted}), each exported {exported}. "
           f"An unsupported function returns `{table.unsupported}` unless its row says otherwise.",
           "", "| family | implemented | partial | refused | unsupported | total |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for family in table.families:
        if counts[family]:
            out.append(f"| {family} | {_count_cells(counts[family])} |")
    out.append(f"| **all** | {_count_cells(total)} |")
    for family in table.families:
        family_rows = [(e, p) for e, p in rows if e.family == family]
        if not family_rows:
            continue
        c = counts[family]
        counted = ", ".join(f"{c[level]} {level}" for level in SUPPORT_LEVELS if c[level])
        out += ["", f"### {table.library}: {family} ({counted})", "",
                "| function | support | fails with | reason or note |", "| --- | --- | --- | --- |"]
        for entry, prototype in sorted(family_rows, key=lambda row: row[0].symbol.encode()):
            out.append(f"| `{entry.symbol}` | {entry.support} | {_fails_with(table, entry, prototype)} | "
                       f"{entry.note} |")
    return out


def emit_coverage_doc(tables: list[tuple[Table, list[tuple[Entry, Prototype]]]]) -> str:
    sources = "\n".join(f"       {table.display_path}" for table, _ in tables)
    out = [f"""\
# API coverage of the shimmed libraries

<!-- Generated by {GENERATOR} from
{sources}
     Do not edit: change a table, then `cmake --build <build dir> --target agileos_api_docs`.
     The CPU test api_surface.coverage_doc_is_current fails while this file is stale. -->

Each shim stands in for one NVIDIA library: it has that library's soname and exports every
function the library exports, each with the library's symbol version, so a program linked
against the real library binds to the shim and never finds a symbol missing. The shims are
untrusted client code: they hold no GPU state and forward each call they implement to the
worker (the runtime shim over its connection; the other shims through the runtime shim's
`agileos_library_call` to the library's trusted adapter in `worker/adapters/`), which checks it
before the real library runs it. Every function has one of four support levels:

- **implemented**: hand-written, doing what the real library does. A note says how, where
  that matters.
- **partial**: hand-written and working for part of what the real library accepts; the note
  says what is missing, and the missing part fails closed with the library's own error.
- **refused**: hand-written to fail closed (the call needs handling of its own, for example a
  registration that must not half-succeed); the note says why.
- **unsupported**: fails closed. The first call logs the function's name and the reason below;
  every call returns the code in the "fails with" column (the CUDA runtime also records it as
  the thread's last error) and touches none of its output arguments. The few functions that
  return `void` or a pointer cannot carry a code and return nothing or `nullptr` instead.

## Summary

| library | shim | soname | implemented | partial | refused | unsupported | total |
| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"""]
    for table, rows in tables:
        counter = Counter(entry.support for entry, _ in rows)
        out.append(f"| {table.library} | `{table.shim}` | `{table.version}` | {_count_cells(counter)} |")
    for table, rows in tables:
        out += _emit_library_section(table, rows)
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


def load(path: str, include_dirs: list[str], cpp: str = "c++") -> tuple[Table, list[tuple[Entry, Prototype]]]:
    """A table and the prototype of every row."""
    table = read_table(path)
    prototypes = load_prototypes(table, include_dirs, cpp)
    rows = [(entry, resolve_prototype(entry.symbol, prototypes, table)) for entry in table.entries]
    for entry, prototype in rows:
        if entry.support == "unsupported":
            _stub_body(table, entry, prototype)  # raises for a return type a stub cannot fail with
    return table, rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="append", required=True,
                        help="<name>_api.tsv (repeatable for --coverage-doc)")
    parser.add_argument("--cuda-include", action="append", required=True,
                        help="CUDA Toolkit include directory (repeatable)")
    parser.add_argument("--cpp", default="c++",
                        help="C++ compiler whose preprocessor reads the headers of @preprocess tables")
    parser.add_argument("--header")
    parser.add_argument("--stubs")
    parser.add_argument("--version-script")
    parser.add_argument("--probe-definitions")
    parser.add_argument("--supported-list")
    parser.add_argument("--coverage-doc")
    args = parser.parse_args(argv)
    per_table = (args.header, args.stubs, args.version_script, args.probe_definitions, args.supported_list)
    if any(per_table) and len(args.table) != 1:
        parser.error("every output but --coverage-doc takes exactly one --table")
    if (args.stubs or args.probe_definitions) and not args.header:
        parser.error("--stubs and --probe-definitions include the --header file")

    try:
        loaded = [load(path, args.cuda_include, args.cpp) for path in args.table]
        libraries = [table.library for table, _ in loaded]
        if len(set(libraries)) != len(libraries):
            raise TableError(f"two tables declare the same @library: {libraries}")
        table, rows = loaded[0]
        header_name = os.path.basename(args.header) if args.header else ""
        outputs = []
        if args.header:
            outputs.append((args.header, emit_header(table, rows)))
        if args.stubs:
            outputs.append((args.stubs, emit_stubs(table, rows, header_name)))
        if args.probe_definitions:
            outputs.append((args.probe_definitions, emit_probe_definitions(table, rows, header_name)))
        if args.version_script:
            outputs.append((args.version_script, emit_version_script(table)))
        if args.supported_list:
            outputs.append((args.supported_list, emit_supported_list(table)))
        if args.coverage_doc:
            outputs.append((args.coverage_doc, emit_coverage_doc(loaded)))
    except (OSError, TableError, PrototypeError) as error:
        print(f"generate_api_surface.py: error: {error}", file=sys.stderr)
        return 1
    for path, content in outputs:
        _write_if_changed(path, content)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
