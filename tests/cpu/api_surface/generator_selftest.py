#!/usr/bin/env python3
"""Self-test of cmake/api_surface/generate_api_surface.py, the one generator of every shim.

  generator_selftest.py <generator.py> [--cuda-include DIR]... [--cpp COMPILER]

The table reader must refuse every malformed table (a wrong table would export the wrong
surface or log the wrong reason), and the header scanner must find each declaration however it
is laid out while never taking a call, a definition or a macro for one (a wrong prototype would
give an exported function the wrong type). With --cuda-include, every real table must also load
against the installed headers: a prototype for every row.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import textwrap
import unittest

GENERATOR_PATH = sys.argv[1] if len(sys.argv) > 1 else ""
CUDA_INCLUDES = [sys.argv[i + 1] for i in range(2, len(sys.argv) - 1) if sys.argv[i] == "--cuda-include"]
CPP = next((sys.argv[i + 1] for i in range(2, len(sys.argv) - 1) if sys.argv[i] == "--cpp"), "c++")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
REAL_TABLES = ("client/cudart/api/cudart_api.tsv", "client/cufft/cufft_api.tsv", "client/nvrtc/nvrtc_api.tsv",
               "client/cuda/cuda_api.tsv")


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_api_surface", GENERATOR_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_api_surface"] = module
    spec.loader.exec_module(module)
    return module


gen = load_generator()

DIRECTIVES = """\
@library\tExample
@shim\tlibagileos_example.so
@version\tlibexample.so.1
@source\tclient/example
@headers\texample.h
@result\texResult
@unsupported\tEX_NOT_SUPPORTED
@namespace\tagileos::client::example_shim
@families\tcore extra
"""


class Scratch:
    """A scratch directory with a table and headers."""

    def __init__(self):
        self.directory = tempfile.TemporaryDirectory()

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.directory.name, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="ascii") as out:
            out.write(text)
        return path

    def close(self):
        self.directory.cleanup()


class TableReaderTest(unittest.TestCase):
    def setUp(self):
        self.scratch = Scratch()

    def tearDown(self):
        self.scratch.close()

    def read(self, rows: str, directives: str = DIRECTIVES):
        return gen.read_table(self.scratch.write("t.tsv", directives + rows))

    def assertRefused(self, rows: str, message: str, directives: str = DIRECTIVES):
        with self.assertRaises(gen.TableError) as caught:
            self.read(rows, directives)
        self.assertIn(message, str(caught.exception))

    def test_a_good_table_is_read_with_its_defaults(self):
        table = self.read("exA\tcore\timplemented\n"
                          "exB\tcore\tpartial\tOnly small sizes.\n"
                          "exC\textra\trefused\tWould half-succeed.\n"
                          "exD\textra\tunsupported\tNot forwarded.\n"
                          "exE\textra\tunsupported\tNot forwarded.\tEX_OTHER\n")
        self.assertEqual(table.name, "example")
        self.assertEqual(table.reporter, "::agileos::client::example_shim::reportUnsupported")
        self.assertEqual([e.result for e in table.entries], ["", "", "EX_NOT_SUPPORTED", "EX_NOT_SUPPORTED",
                                                             "EX_OTHER"])
        self.assertEqual(table.export_macro(), "AGILEOS_EXAMPLE_EXPORT")

    def test_malformed_rows_are_refused(self):
        cases = {
            "exA\tcore\n": "expected 3 to 5",
            "exA\tnowhere\timplemented\n": "unknown family",
            "exA\tcore\tworks\n": "support must be one of",
            "exA\tcore\tpartial\n": "must say what is missing",
            "exA\tcore\tunsupported\n": "must say why",
            "exA\tcore\trefused\n": "must say why",
            "exA\tcore\timplemented\tfine\tEX_OTHER\n": "only a refused or unsupported row",
            "exA\tcore\tunsupported\twhy\tnot a code\n": "is not a result code name",
            "exA\tcore\tunsupported\tsays \"hi\"\n": "plain ASCII",
            "exA\tcore\tunsupported\ta | b\n": "plain ASCII",
            "ex-A\tcore\timplemented\n": "is not a C function name",
            "exA\tcore\timplemented\nexA\tcore\timplemented\n": "already declared on line",
            "": "no rows",
        }
        for rows, message in cases.items():
            with self.subTest(rows=rows):
                self.assertRefused(rows, message)

    def test_malformed_directives_are_refused(self):
        row = "exA\tcore\timplemented\n"
        self.assertRefused(row, "unknown directive @colour", DIRECTIVES + "@colour\tblue\n")
        self.assertRefused(row, "@library is given twice", DIRECTIVES + "@library\tAgain\n")
        self.assertRefused(row, "missing directive(s) @families",
                           DIRECTIVES.replace("@families\tcore extra\n", ""))
        self.assertRefused(row, "is not libagileos_<name>.so",
                           DIRECTIVES.replace("libagileos_example.so", "example.so"))
        self.assertRefused(row, "is not a C++ namespace", DIRECTIVES.replace("agileos::client::example_shim",
                                                                             "agileos::"))
        self.assertRefused(row, "takes one TAB-separated value", DIRECTIVES + "@reporter\n")


class HeaderScannerTest(unittest.TestCase):
    WANTED = {"exA", "exB", "exC", "exD"}

    def scan(self, text: str):
        return {p.name: p for p in gen.scan_declarations(textwrap.dedent(text), self.WANTED, "h", True)}

    def test_declarations_in_every_layout_are_found(self):
        found = self.scan("""\
            extern "C" {
            extern __host__ __cudart_builtin__ exResult CUDARTAPI exA(int *value, const char *name);
            exResult EXAPI
              exB(/* the plan */ exHandle plan,
                  size_t size __dv(0));
            const char *exC(exResult result);
            __attribute__((deprecated)) void exD(void);
            }
            """)
        self.assertEqual(found["exA"].signature(), "exResult(int*, const char*)")
        self.assertEqual(found["exB"].signature(), "exResult(exHandle, size_t)")
        self.assertEqual(found["exC"].signature(), "const char*(exResult)")
        self.assertEqual(found["exD"].signature(), "void()")

    def test_calls_definitions_and_macros_are_not_declarations(self):
        found = self.scan("""\
            static inline exResult wrapper(int v) { return exA(&v, "x"); }
            static inline exResult exB(exHandle plan) { return 0; }
            void user(void) { int r; r = exA(0, 0); (void)exA(0, 0); if (exA(0, 0)) ; }
            #define exC(result) \\
              exC_v2(result);
            #define exD exD_ptds
            """)
        self.assertEqual(found, {})

    def test_conflicting_redeclarations_are_an_error(self):
        scratch = Scratch()
        try:
            scratch.write("include/example.h", "#if V2\nexResult exA(int a);\n#else\nexResult exA(long a);\n#endif\n")
            table = gen.read_table(scratch.write("t.tsv", DIRECTIVES + "exA\tcore\timplemented\n"))
            with self.assertRaises(gen.PrototypeError) as caught:
                gen.load_prototypes(table, [os.path.join(scratch.directory.name, "include")])
            self.assertIn("declared with different types", str(caught.exception))
        finally:
            scratch.close()


class PrototypeResolutionTest(unittest.TestCase):
    def setUp(self):
        self.scratch = Scratch()
        self.include = os.path.join(self.scratch.directory.name, "include")
        self.scratch.write("include/example.h", "exResult exA(int *value);\nint exCount(void);\n")

    def tearDown(self):
        self.scratch.close()

    def load(self, rows: str, extra_directives: str = ""):
        path = self.scratch.write("t.tsv", DIRECTIVES + extra_directives + rows)
        return gen.load(path, [self.include])

    def test_per_thread_variant_takes_its_base_prototype(self):
        _, rows = self.load("exA\tcore\timplemented\nexA_ptds\tcore\tunsupported\tNot forwarded.\n")
        prototype = dict((e.symbol, p) for e, p in rows)["exA_ptds"]
        self.assertEqual(prototype.signature(), "exResult(int*)")
        self.assertFalse(prototype.declared_by_include, "the generated header must declare the variant")

    def test_undeclared_function_needs_a_prototype_directive(self):
        with self.assertRaises(gen.PrototypeError) as caught:
            self.load("exHidden\tcore\tunsupported\tNot forwarded.\n")
        self.assertIn("add a @prototype directive", str(caught.exception))
        _, rows = self.load("exHidden\tcore\tunsupported\tNot forwarded.\n",
                            "@prototype\texResult exHidden(void)\n")
        self.assertEqual(rows[0][1].signature(), "exResult()")

    def test_a_prototype_directive_for_a_declared_function_is_an_error(self):
        with self.assertRaises(gen.PrototypeError) as caught:
            self.load("exA\tcore\timplemented\n", "@prototype\texResult exA(int *value)\n")
        self.assertIn("is now declared in", str(caught.exception))

    def test_a_stub_must_be_able_to_fail_closed(self):
        with self.assertRaises(gen.PrototypeError) as caught:
            self.load("exCount\tcore\tunsupported\tNot forwarded.\n")
        self.assertIn("cannot fail closed", str(caught.exception))

    def test_stub_and_table_of_reasons(self):
        table, rows = self.load("exA\tcore\trefused\tWould half-succeed.\n"
                                "exHidden\textra\tunsupported\tNot forwarded.\tEX_OTHER\n",
                                "@prototype\tvoid* exHidden(const char *name)\n")
        stubs = gen.emit_stubs(table, rows, "example_api.gen.h")
        self.assertIn("AGILEOS_EXAMPLE_EXPORT void* exHidden(const char* /*name*/) {", stubs)
        self.assertIn('(void)::agileos::client::example_shim::reportUnsupported("exHidden");\n  return nullptr;',
                      stubs)
        self.assertNotIn("exResult exA(", stubs, "a refused row is written by hand")
        self.assertIn('{"exA", "Would half-succeed.", EX_NOT_SUPPORTED, "EX_NOT_SUPPORTED"},', stubs)
        self.assertIn('{"exHidden", "Not forwarded.", EX_OTHER, "EX_OTHER"},', stubs)
        header = gen.emit_header(table, rows)
        self.assertIn("void* exHidden(const char* name);", header)
        self.assertNotIn("exResult exA(", header, "an included header already declares it")


@unittest.skipUnless(CUDA_INCLUDES, "no --cuda-include given")
class RealTablesTest(unittest.TestCase):
    def test_every_real_table_has_a_prototype_for_every_row(self):
        for relative in REAL_TABLES:
            with self.subTest(table=relative):
                table, rows = gen.load(os.path.join(ROOT, relative), CUDA_INCLUDES, CPP)
                self.assertEqual(len(rows), len(table.entries))
                self.assertTrue(table.rows("unsupported"), "every real library has unsupported rows")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
