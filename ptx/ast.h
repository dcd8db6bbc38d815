// The PTX syntax tree (parser.h builds it, printer.h prints it).
//
// A module is a list of top-level items: directives (.version, .target,
// .address_size, .file, .section, variable declarations, ...) and functions
// (.entry kernels and .func device functions, with or without a body). A body is
// a block of statements: instructions, labels, directives (register and state
// space declarations, .loc, .pragma, ...) and nested blocks.
//
// Every node keeps its tokens (lexer.h), so printing reproduces the program; the
// structured fields (opcode, modifiers, operands, predicate, names) are what
// analyses and rewrites (the guard, in ptx/guard) read and build. Equality is
// structural, so "parse, print, parse" can be checked to give the same tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptx/lexer.h"

namespace agileos::ptx {

// `[base]`, `[base+imm]`, `[base+-imm]`, `[base-imm]` or `[imm]`; base is a register or a symbol.
struct AddressForm {
  std::string base;  // empty for an absolute `[imm]`
  std::int64_t offset = 0;
  bool operator==(const AddressForm&) const = default;
};

struct Operand {
  enum class Kind : std::uint8_t {
    kRegister,    // %r1, %tid.x
    kImmediate,   // 42, -1, 0f3F800000
    kSymbol,      // a variable, function or label name
    kAddress,     // [ ... ]
    kVector,      // { a, b, ... }
    kList,        // ( a, b, ... ), e.g. call arguments
    kSink,        // _
    kExpression,  // anything else (%p|%q, !%p, sym+4, ...), kept as tokens
  };
  Kind kind = Kind::kExpression;
  std::vector<Token> tokens;           // the operand exactly as written
  std::optional<AddressForm> address;  // kAddress of a simple form
  std::vector<Operand> elements;       // kVector, kList (and a kAddress with a comma)
  bool operator==(const Operand&) const = default;
};

struct Predicate {
  bool negated = false;
  std::string reg;  // e.g. "%p1"
  bool operator==(const Predicate&) const = default;
};

struct Instruction {
  std::optional<Predicate> predicate;
  std::string opcode;                  // "ld"
  std::vector<std::string> modifiers;  // {".global", ".v4", ".f32"} in order
  std::vector<Operand> operands;
  std::uint32_t line = 0;  // source line, for messages (not compared)

  bool hasModifier(const std::string& modifier) const;
  bool operator==(const Instruction& other) const {
    return predicate == other.predicate && opcode == other.opcode && modifiers == other.modifiers &&
           operands == other.operands;
  }
};

// A directive statement: its name (".reg", ".loc", ".version", ...) and every token of it,
// including the name and the terminating ';' when it has one.
struct Directive {
  std::string name;
  std::vector<Token> tokens;
  bool operator==(const Directive&) const = default;
};

struct Statement {
  enum class Kind : std::uint8_t { kInstruction, kLabel, kDirective, kBlock };
  Kind kind = Kind::kInstruction;
  Instruction instruction;       // kInstruction
  std::string label;             // kLabel
  Directive directive;           // kDirective
  std::vector<Statement> block;  // kBlock: the nested statements
  bool operator==(const Statement&) const = default;
};

struct Function {
  enum class Kind : std::uint8_t { kEntry, kFunc };
  Kind kind = Kind::kEntry;
  std::string name;
  std::vector<Token> header;  // everything before the body (or the ';' of a prototype)
  bool hasBody = false;
  std::vector<Statement> body;
  bool operator==(const Function&) const = default;
};

struct TopLevel {
  enum class Kind : std::uint8_t { kDirective, kFunction };
  Kind kind = Kind::kDirective;
  Directive directive;
  Function function;
  bool operator==(const TopLevel&) const = default;
};

struct Module {
  std::vector<TopLevel> items;
  bool operator==(const Module&) const = default;
};

}  // namespace agileos::ptx
