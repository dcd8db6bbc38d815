#include "ptx/module_link.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <utility>

#include "ptx/parser.h"
#include "ptx/versions.h"

namespace agileos::ptx {
namespace {

constexpr char kReserved[] = "__agileos_";

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// ---------------------------------------------------------------- names in a syntax tree

// f(name, line) for every identifier: of tokens, operands (their address base and
// elements too, which repeat tokens), predicates, labels. Works on const and mutable trees.
template <typename Tokens, typename F>
void eachTokenName(Tokens& tokens, F& f) {
  for (auto& t : tokens) {
    if (t.kind == TokenKind::kIdentifier) f(t.text, t.line);
  }
}

template <typename O, typename F>
void eachOperandName(O& operand, std::uint32_t line, F& f) {
  eachTokenName(operand.tokens, f);
  if (operand.address && !operand.address->base.empty()) f(operand.address->base, line);
  for (auto& element : operand.elements) eachOperandName(element, line, f);
}

template <typename Statements, typename F>
void eachStatementName(Statements& statements, F& f) {
  for (auto& s : statements) {
    switch (s.kind) {
      case Statement::Kind::kInstruction:
        if (s.instruction.predicate) f(s.instruction.predicate->reg, s.instruction.line);
        for (auto& operand : s.instruction.operands) eachOperandName(operand, s.instruction.line, f);
        break;
      case Statement::Kind::kLabel:
        f(s.label, 0u);
        break;
      case Statement::Kind::kDirective:
        eachTokenName(s.directive.tokens, f);
        break;
      case Statement::Kind::kBlock:
        eachStatementName(s.block, f);
        break;
    }
  }
}

using Renames = std::map<std::string, std::string>;

void rename(std::vector<Token>* header, std::vector<Statement>* body, const Renames& renames) {
  auto f = [&](std::string& name, std::uint32_t) {
    const auto it = renames.find(name);
    if (it != renames.end()) name = it->second;
  };
  if (header != nullptr) eachTokenName(*header, f);
  if (body != nullptr) eachStatementName(*body, f);
}

// Drops `.loc` (its `.file` is dropped with the module's debug items).
void dropLineInfo(std::vector<Statement>* statements) {
  std::erase_if(*statements, [](const Statement& s) {
    return s.kind == Statement::Kind::kDirective && s.directive.name == ".loc";
  });
  for (Statement& s : *statements) {
    if (s.kind == Statement::Kind::kBlock) dropLineInfo(&s.block);
  }
}

// ---------------------------------------------------------------- function headers

struct Param {
  std::vector<Token> type;    // every token, the name replaced by `_`
  std::string name;           // the parameter's name
  std::size_t nameIndex = 0;  // of the name in Function::header
};

// `[linkage] .func [(returns)] name [(params)] [trailing] [;]`
struct Header {
  std::vector<std::string> linkage;  // .visible, .extern, .weak, ...
  std::vector<Param> returns, params;
  std::vector<Token> trailing;  // after the parameter list (.noreturn, ...), without ';'

  bool has(const char* directive) const {
    return std::find(linkage.begin(), linkage.end(), directive) != linkage.end();
  }
};

// The parameters of header[begin, end) (inside a list's parentheses), split at commas.
bool parseParams(const std::vector<Token>& header, std::size_t begin, std::size_t end,
                 std::vector<Param>* out) {
  Param current;
  bool named = false;
  int depth = 0;
  for (std::size_t k = begin; k <= end; ++k) {
    if (k == end || (depth == 0 && header[k].isPunct(','))) {
      if (k == end && current.type.empty() && out->empty()) return true;  // ()
      if (!named) return false;
      out->push_back(std::move(current));
      current = {};
      named = false;
      continue;
    }
    const Token& t = header[k];
    if (t.isPunct('[') || t.isPunct('(')) ++depth;
    if (t.isPunct(']') || t.isPunct(')')) --depth;
    if (t.kind == TokenKind::kIdentifier) {
      if (named) return false;
      named = true;
      current.name = t.text;
      current.nameIndex = k;
      current.type.push_back(Token{TokenKind::kIdentifier, "_", t.line, t.spaceBefore, false});
    } else {
      current.type.push_back(t);
    }
  }
  return true;
}

std::optional<Header> parseHeader(const Function& function) {
  Header h;
  const std::vector<Token>& t = function.header;
  std::size_t k = 0;
  for (;
       k < t.size() && !t[k].is(TokenKind::kDirective, ".func") && !t[k].is(TokenKind::kDirective, ".entry");
       ++k) {
    if (t[k].kind != TokenKind::kDirective) return std::nullopt;
    h.linkage.push_back(t[k].text);
  }
  if (k == t.size()) return std::nullopt;
  ++k;
  // A parenthesised list from t[k] = '(' to its ')', which k passes.
  auto list = [&](std::vector<Param>* out) {
    const std::size_t open = k;
    for (int depth = 0; k < t.size(); ++k) {
      if (t[k].isPunct('(')) ++depth;
      if (t[k].isPunct(')') && --depth == 0) break;
    }
    if (k == t.size()) return false;
    return parseParams(t, open + 1, k++, out);
  };
  if (k < t.size() && t[k].isPunct('(') && !list(&h.returns)) return std::nullopt;
  if (k == t.size() || t[k].kind != TokenKind::kIdentifier || t[k].text != function.name) return std::nullopt;
  ++k;
  if (k < t.size() && t[k].isPunct('(') && !list(&h.params)) return std::nullopt;
  for (; k < t.size() && !t[k].isPunct(';'); ++k) h.trailing.push_back(t[k]);
  return h;
}

// Count, state space, type, alignment and array size; not the names.
bool sameSignature(const Header& a, const Header& b) {
  auto types = [](const std::vector<Param>& params) {
    std::vector<std::vector<Token>> out;
    for (const Param& p : params) out.push_back(p.type);
    return out;
  };
  return types(a.returns) == types(b.returns) && types(a.params) == types(b.params) &&
         a.trailing == b.trailing;
}

std::string text(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) {
    if (!out.empty() && !t.isPunct('[') && !t.isPunct(']') && out.back() != '[') out += ' ';
    out += t.text;
  }
  return out;
}

// "(.param .b32 _) name(.param .b64 _, .param .b64 _)" for messages.
std::string signatureText(const Header& h, const std::string& name) {
  auto list = [](const std::vector<Param>& params) {
    std::string out = "(";
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (i > 0) out += ", ";
      out += text(params[i].type);
    }
    return out + ")";
  };
  std::string out = list(h.returns) + " " + name + list(h.params);
  if (!h.trailing.empty()) {
    out += ' ';
    out += text(h.trailing);
  }
  return out;
}

// ---------------------------------------------------------------- .version, .target

struct Target {
  int sm = 0;
  std::string suffix;  // "a" of sm_90a, "f" of sm_100f: code for that architecture only
  std::string text;
};

std::optional<Target> parseTarget(const Directive& d) {
  for (const Token& t : d.tokens) {
    if (t.kind != TokenKind::kIdentifier || !startsWith(t.text, "sm_")) continue;
    Target target;
    target.text = t.text;
    std::size_t k = 3;
    while (k < t.text.size() && k < 7 && std::isdigit(static_cast<unsigned char>(t.text[k]))) ++k;
    if (k == 3) return std::nullopt;
    target.sm = std::atoi(t.text.substr(3, k - 3).c_str());
    target.suffix = t.text.substr(k);
    return target;
  }
  return std::nullopt;
}

// Code for `module` runs on `application`'s target.
bool runsOn(const Target& module, const Target& application) {
  if (!module.suffix.empty()) return module.sm == application.sm && module.suffix == application.suffix;
  return module.sm <= application.sm;
}

// ---------------------------------------------------------------- one module, prepared

struct Export {
  Header header;                // as the module declares it (its parameter names)
  std::vector<Statement> body;  // renamed (helpers and exports under their local names)
  std::string local;            // the local copy's name, __agileos_<module>_l_<export>
};

struct PreparedItem {
  Function function;     // renamed
  std::string exported;  // for the local copy of an export: the export's name
};

// A module's code once checked: what the link inserts and what later modules may use.
struct Prepared {
  std::string name;
  Version version;
  Target target;
  std::vector<PreparedItem> items;        // declaration order; .extern declarations removed
  std::map<std::string, Export> exports;  // agileos_<module>_<fn> -> its code
  std::map<std::string, Header> defines;  // visible __agileos_<module>_<fn> definitions
  std::set<std::string> constants;        // c of each __agileos_<module>_const_<c> declared
  std::set<std::size_t> dependencies;     // indices of the earlier modules it calls
};

bool validModuleName(const std::string& name) {
  if (name.empty() || name.size() > 64 || !std::islower(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
           c == '_';
  });
}

// A PTX identifier's characters after the first: anything else becomes '_'.
std::string sanitize(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '$') c = '_';
  }
  return out;
}

bool isStateSpace(const std::string& directive) {
  for (const char* space : {".global", ".const", ".shared", ".local", ".param", ".tex", ".texref", ".surfref",
                            ".samplerref", ".extern", ".visible", ".weak", ".common"}) {
    if (directive == space) return true;
  }
  return false;
}

// The names a module may use, from its name: agileos_<m>_* for applications, __agileos_<m>_* for
// modules, __agileos_<m>_const_* for its constants, __agileos_<m>_l_* for local copies.
struct ModuleNames {
  explicit ModuleNames(const std::string& name)
      : exportPrefix("agileos_" + name + "_"),
        modulePrefix(kReserved + name + "_"),
        constPrefix(modulePrefix + "const_"),
        localPrefix(modulePrefix + "l_") {}
  std::string exportPrefix, modulePrefix, constPrefix, localPrefix;
};

// What one pass over a module's top-level items learns; prepare() then checks it is complete.
struct ModuleScan {
  bool version = false, target = false, addressSize = false;
  std::vector<std::string> helpers;         // non-visible functions, first appearance order
  std::set<std::string> declared, defined;  // every non-.extern function
  std::set<std::string> externs;
};

// The name is well-formed and its namespace nests with no earlier module's (agileos_kv_store_put
// would belong to both kv and kv_store).
std::string checkModuleName(const DeviceModule& m, const std::vector<Prepared>& earlier) {
  if (!validModuleName(m.name)) return "a module name is [a-z][a-z0-9_]* (at most 64 characters)";
  for (const Prepared& e : earlier) {
    if (e.name == m.name) return "a module of that name is loaded already";
    if (startsWith(m.name, e.name + "_") || startsWith(e.name, m.name + "_")) {
      return "its names would overlap those of module '" + e.name + "'";
    }
  }
  return {};
}

// A module-level directive: .version, .target, .address_size 64 and debug information only.
std::string readModuleDirective(const Directive& d, ModuleScan* scan, Prepared* out) {
  const std::string line = d.tokens.empty() ? "?" : std::to_string(d.tokens[0].line);
  if (d.name == ".version") {
    const auto v = parseVersion(d);
    if (!v) return "unreadable .version (line " + line + ")";
    out->version = *v;
    scan->version = true;
  } else if (d.name == ".target") {
    const auto t = parseTarget(d);
    if (!t) return "unreadable .target (line " + line + ")";
    out->target = *t;
    scan->target = true;
  } else if (d.name == ".address_size") {
    if (d.tokens.size() != 2 || d.tokens[1].text != "64") return ".address_size must be 64";
    scan->addressSize = true;
  } else if (d.name == ".file" || d.name == ".section") {
    // Debug information: dropped.
  } else if (isStateSpace(d.name)) {
    const std::size_t shown = std::min<std::size_t>(d.tokens.size(), 8);
    const std::vector<Token> start(d.tokens.begin(), d.tokens.begin() + static_cast<std::ptrdiff_t>(shown));
    return "a variable at module scope (line " + line + ": " + text(start) +
           (shown < d.tokens.size() ? " ..." : "") + "): module variables would live in user-writable memory";
  } else {
    return "unsupported module-level directive " + d.name + " (line " + line + ")";
  }
  return {};
}

// An .extern declaration: one of the module's constants, or a function an earlier module defines
// with exactly this signature (which makes that module a dependency).
std::string resolveExtern(const DeviceModule& m, const Function& f, const Header& h, const ModuleNames& names,
                          const std::vector<Prepared>& earlier, ModuleScan* scan, Prepared* out) {
  if (f.hasBody || h.has(".visible") || h.has(".weak"))
    return "'" + f.name + "': .extern with a body or another linkage";
  if (scan->declared.count(f.name) != 0) return "'" + f.name + "' is both defined and .extern";
  scan->externs.insert(f.name);
  if (startsWith(f.name, names.constPrefix)) {
    const std::string constant = f.name.substr(names.constPrefix.size());
    if (m.constants.count(constant) == 0) {
      return "needs constant '" + constant + "' (" + f.name + "), which its constants do not define";
    }
    if (h.returns.size() != 1 || text(h.returns[0].type) != ".param .b64 _" || !h.params.empty() ||
        !h.trailing.empty()) {
      return "declares constant " + f.name + " as " + signatureText(h, f.name) + "; a constant is " +
             "(.param .b64 _) " + f.name + "()";
    }
    out->constants.insert(constant);
    return {};
  }
  for (std::size_t index = 0; index < earlier.size(); ++index) {
    const auto it = earlier[index].defines.find(f.name);
    if (it == earlier[index].defines.end()) continue;
    if (!sameSignature(h, it->second)) {
      return "declares " + signatureText(h, f.name) + " but module '" + earlier[index].name + "' defines " +
             signatureText(it->second, f.name);
    }
    out->dependencies.insert(index);
    return {};
  }
  return "needs " + f.name + ", which no module loaded before it defines";
}

// A function the module declares or defines itself: a visible one is named for applications (an
// export) or for modules; any other is a helper.
std::string readOwnFunction(const Function& f, const Header& h, const ModuleNames& names, ModuleScan* scan,
                            Prepared* out) {
  const bool visible = h.has(".visible") || h.has(".weak");
  if (visible) {
    const bool exported = startsWith(f.name, names.exportPrefix) && f.name.size() > names.exportPrefix.size();
    const bool forModules = startsWith(f.name, names.modulePrefix) &&
                            f.name.size() > names.modulePrefix.size() &&
                            !startsWith(f.name, names.constPrefix) && !startsWith(f.name, names.localPrefix);
    if (!exported && !forModules) {
      return "visible function '" + f.name + "' must be named " + names.exportPrefix +
             "* (for applications) or " + names.modulePrefix + "* (for modules; not " + names.constPrefix +
             "* or " + names.localPrefix + "*)";
    }
  } else if (std::find(scan->helpers.begin(), scan->helpers.end(), f.name) == scan->helpers.end()) {
    scan->helpers.push_back(f.name);
  }
  if (scan->externs.count(f.name) != 0) return "'" + f.name + "' is both defined and .extern";
  scan->declared.insert(f.name);
  if (f.hasBody) {
    if (!scan->defined.insert(f.name).second) return "'" + f.name + "' is defined twice";
    if (visible && startsWith(f.name, names.exportPrefix)) out->exports[f.name].header = h;
    if (visible && startsWith(f.name, names.modulePrefix)) out->defines[f.name] = h;
  }
  return {};
}

// One function item of the module.
std::string readFunction(const DeviceModule& m, const Function& f, const ModuleNames& names,
                         const std::vector<Prepared>& earlier, ModuleScan* scan, Prepared* out) {
  if (f.kind == Function::Kind::kEntry)
    return "'.entry " + f.name + "': a module holds device functions only, no kernels";
  const auto h = parseHeader(f);
  if (!h) return "cannot read the declaration of '" + f.name + "'";
  for (const std::string& linkage : h->linkage) {
    if (linkage != ".visible" && linkage != ".extern" && linkage != ".weak") {
      return "'" + f.name + "' has linkage " + linkage;
    }
  }
  if (h->has(".extern")) return resolveExtern(m, f, *h, names, earlier, scan, out);
  return readOwnFunction(f, *h, names, scan, out);
}

// Local names for the helpers and the local copies of exports, so no application name can
// capture a call inside the module. Unique: deduplicated in declaration order.
Renames localNames(const ModuleScan& scan, const ModuleNames& names, const Prepared& module) {
  Renames renames;
  std::set<std::string> taken;
  for (const auto& [name, header] : module.defines) taken.insert(name);
  auto assign = [&](const std::string& name) {
    std::string candidate = names.localPrefix + sanitize(name);
    for (int k = 2; taken.count(candidate) != 0; ++k) {
      candidate = names.localPrefix + sanitize(name) + "_" + std::to_string(k);
    }
    taken.insert(candidate);
    renames[name] = candidate;
  };
  for (const std::string& name : scan.helpers) assign(name);
  for (const auto& [name, code] : module.exports) assign(name);
  return renames;
}

// The module's functions as the link inserts them: renamed, without line information, local
// copies of exports without linkage; each export's code is recorded for its callers.
void renameItems(const DeviceModule& m, Renames& renames, Prepared* out) {
  for (const TopLevel& item : m.code.items) {
    if (item.kind != TopLevel::Kind::kFunction) continue;
    const auto h = parseHeader(item.function);
    if (h->has(".extern")) continue;  // resolved: the definition comes before it
    PreparedItem prepared{item.function, {}};
    const auto e = out->exports.find(item.function.name);
    if (e != out->exports.end()) {
      prepared.exported = e->first;
      // The local copy is internal to the application: no linkage.
      std::erase_if(prepared.function.header, [](const Token& t) {
        return t.is(TokenKind::kDirective, ".visible") || t.is(TokenKind::kDirective, ".weak");
      });
    }
    rename(&prepared.function.header, &prepared.function.body, renames);
    if (const auto r = renames.find(prepared.function.name); r != renames.end())
      prepared.function.name = r->second;
    dropLineInfo(&prepared.function.body);
    if (e != out->exports.end() && item.function.hasBody) {
      e->second.body = prepared.function.body;
      e->second.local = renames[e->first];
    }
    out->items.push_back(std::move(prepared));
  }
}

// Checks `m` (loaded after `earlier`) and prepares its code; "" or why it is refused.
std::string prepare(const DeviceModule& m, const std::vector<Prepared>& earlier, Prepared* out) {
  const std::string who = "module '" + m.name + "': ";
  if (std::string problem = checkModuleName(m, earlier); !problem.empty()) return who + problem;
  out->name = m.name;
  const ModuleNames names(m.name);
  ModuleScan scan;
  for (const TopLevel& item : m.code.items) {
    std::string problem = item.kind == TopLevel::Kind::kDirective
                              ? readModuleDirective(item.directive, &scan, out)
                              : readFunction(m, item.function, names, earlier, &scan, out);
    if (!problem.empty()) return who + problem;
  }
  if (!scan.version || !scan.target) return who + "no .version or .target";
  if (!scan.addressSize) return who + ".address_size must be 64";
  for (const std::string& name : scan.declared) {
    if (scan.defined.count(name) == 0) return who + "declares '" + name + "' but does not define it";
  }
  Renames renames = localNames(scan, names, *out);
  renameItems(m, renames, out);
  return {};
}

std::string prepareAll(const std::vector<DeviceModule>& modules, std::vector<Prepared>* out) {
  for (const DeviceModule& m : modules) {
    Prepared p;
    if (std::string error = prepare(m, *out, &p); !error.empty()) return error;
    out->push_back(std::move(p));
  }
  return {};
}

// ---------------------------------------------------------------- the application

// Why the application writes a name reserved for modules, or "".
std::string reservedNameIn(const Module& application) {
  std::string found;
  std::uint32_t where = 0;
  auto f = [&](const std::string& name, std::uint32_t line) {
    if (found.empty() && startsWith(name, kReserved)) {
      found = name;
      where = line;
    }
  };
  for (const TopLevel& item : application.items) {
    if (item.kind == TopLevel::Kind::kDirective) eachTokenName(item.directive.tokens, f);
    if (item.kind == TopLevel::Kind::kFunction) {
      eachTokenName(item.function.header, f);
      eachStatementName(item.function.body, f);
    }
    if (!found.empty()) break;
  }
  if (found.empty()) return {};
  const std::string line = where == 0 ? "a label" : "line " + std::to_string(where);
  return "application: '" + found + "' (" + line +
         ") is reserved for protected modules (names starting with " + kReserved + ")";
}

Function constantFunction(const std::string& name, std::uint64_t value) {
  std::ostringstream text;
  text << ".func (.param .b64 func_retval0) " << name << "()\n{\n.reg .b64 %c;\nmov.b64 %c, 0x" << std::hex
       << value << ";\nst.param.b64 [func_retval0], %c;\nret;\n}\n";
  return parse(text.str()).module.items.at(0).function;
}

}  // namespace

std::string checkDeviceModule(const DeviceModule& module, const std::vector<DeviceModule>& earlier) {
  std::vector<Prepared> prepared;
  if (std::string error = prepareAll(earlier, &prepared); !error.empty()) return "an earlier " + error;
  Prepared p;
  return prepare(module, prepared, &p);
}

namespace {

// An application definition of an export (its placeholder), to be given the module's code.
struct Placeholder {
  Header header;       // the application's
  const Export* code;  // the module's
};

// What linking needs from the application: its leading directives' values and the placeholders
// it defines, by item index, with the modules they come from.
struct ApplicationScan {
  std::optional<Version> version;
  std::optional<Target> target;
  bool addressSize64 = false;
  std::map<std::size_t, Placeholder> placeholders;  // by application item
  std::set<std::size_t> used;                       // modules whose exports it defines
};

// Reads the application's directives and checks every function named like an export: a .func
// definition with exactly the export's signature (compiled from the module's public header).
std::string scanApplication(const Module& application, const std::vector<Prepared>& prepared,
                            ApplicationScan* scan) {
  std::map<std::string, std::size_t> exports;  // export name -> module
  for (std::size_t m = 0; m < prepared.size(); ++m) {
    for (const auto& [name, e] : prepared[m].exports) exports[name] = m;
  }
  for (std::size_t i = 0; i < application.items.size(); ++i) {
    const TopLevel& item = application.items[i];
    if (item.kind == TopLevel::Kind::kDirective) {
      if (item.directive.name == ".version" && !scan->version) scan->version = parseVersion(item.directive);
      if (item.directive.name == ".target" && !scan->target) scan->target = parseTarget(item.directive);
      if (item.directive.name == ".address_size") {
        scan->addressSize64 = item.directive.tokens.size() == 2 && item.directive.tokens[1].text == "64";
      }
      continue;
    }
    const Function& f = item.function;
    const auto it = exports.find(f.name);
    if (it == exports.end()) continue;
    const Prepared& module = prepared[it->second];
    const Export& e = module.exports.at(f.name);
    const std::string who = "application: '" + f.name + "' (exported by module '" + module.name + "')";
    if (f.kind == Function::Kind::kEntry) return who + " is a .entry; a placeholder is a .func";
    const auto h = parseHeader(f);
    if (!h) return who + ": cannot read its declaration";
    if (h->has(".extern")) {
      return who +
             " is declared .extern: compile the application with the module's public header, "
             "which defines its placeholder";
    }
    if (!sameSignature(*h, e.header)) {
      return who + " is " + signatureText(*h, f.name) + " but the module's is " +
             signatureText(e.header, f.name);
    }
    if (f.hasBody) {
      scan->placeholders[i] = Placeholder{*h, &e};
      scan->used.insert(it->second);
    }
  }
  return {};
}

// Adds to `used` what the used modules call (modules loaded before them), checks that each runs
// on the application's target, and gives the PTX version the linked module needs.
std::string closeOverDependencies(const std::vector<Prepared>& prepared, const ApplicationScan& app,
                                  std::set<std::size_t>* used, Version* linked) {
  for (std::size_t m = prepared.size(); m-- > 0;) {
    if (used->count(m) != 0) used->insert(prepared[m].dependencies.begin(), prepared[m].dependencies.end());
  }
  if (!app.version || !app.target) return "application: no readable .version or .target";
  if (!app.addressSize64) return "application: .address_size must be 64 to link module functions";
  *linked = *app.version;
  for (std::size_t m : *used) {
    if (!runsOn(prepared[m].target, *app.target)) {
      return "module '" + prepared[m].name + "' targets " + prepared[m].target.text +
             ", newer than the application's " + app.target->text;
    }
    *linked = std::max(*linked, prepared[m].version);
  }
  return {};
}

// The local copies of exports that the inserted code calls or takes the address of, found by
// following names from the used modules' own functions and the placeholders' new bodies.
std::set<std::string> neededLocalCopies(const std::vector<Prepared>& prepared,
                                        const std::set<std::size_t>& used,
                                        const std::map<std::size_t, Placeholder>& placeholders) {
  std::map<std::string, const Export*> byLocal;
  for (std::size_t m : used) {
    for (const auto& [name, e] : prepared[m].exports) byLocal[e.local] = &e;
  }
  std::set<std::string> needed;
  std::vector<const std::vector<Statement>*> pending;
  for (std::size_t m : used) {
    for (const PreparedItem& item : prepared[m].items) {
      if (item.exported.empty()) pending.push_back(&item.function.body);
    }
  }
  for (const auto& entry : placeholders) pending.push_back(&entry.second.code->body);
  auto need = [&](const std::string& name, std::uint32_t) {
    const auto it = byLocal.find(name);
    if (it != byLocal.end() && needed.insert(name).second) pending.push_back(&it->second->body);
  };
  while (!pending.empty()) {
    const std::vector<Statement>* body = pending.back();
    pending.pop_back();
    eachStatementName(*body, need);
  }
  return needed;
}

// The placeholder at `f` gets the module's body under its own header, whose parameters take the
// module's names: the trusted body reads exactly what it was written to (an application name,
// say `%rd1`, could otherwise capture one of its own).
void fillPlaceholder(const Placeholder& placeholder, Function* f) {
  const Export& e = *placeholder.code;
  const Header& h = placeholder.header;
  for (std::size_t k = 0; k < h.returns.size(); ++k)
    f->header[h.returns[k].nameIndex].text = e.header.returns[k].name;
  for (std::size_t k = 0; k < h.params.size(); ++k)
    f->header[h.params[k].nameIndex].text = e.header.params[k].name;
  f->body = e.body;
}

}  // namespace

LinkResult linkModuleFunctions(const Module& application, const std::vector<DeviceModule>& modules) {
  LinkResult result;
  auto refuse = [&](std::string error) {
    result.error = std::move(error);
    return result;
  };
  std::vector<Prepared> prepared;
  if (std::string error = prepareAll(modules, &prepared); !error.empty()) return refuse(error);
  if (std::string error = reservedNameIn(application); !error.empty()) return refuse(error);
  ApplicationScan app;
  if (std::string error = scanApplication(application, prepared, &app); !error.empty()) return refuse(error);
  if (app.placeholders.empty()) {  // no module used: the application as it is
    result.ok = true;
    result.module = application;
    return result;
  }
  std::set<std::size_t> used = app.used;
  Version linked;
  if (std::string error = closeOverDependencies(prepared, app, &used, &linked); !error.empty())
    return refuse(error);
  const std::set<std::string> neededLocals = neededLocalCopies(prepared, used, app.placeholders);

  // The leading .version/.target/.address_size, then the modules' code, then the rest.
  Module& out = result.module;
  std::size_t lead = 0;
  while (lead < application.items.size() && application.items[lead].kind == TopLevel::Kind::kDirective) {
    const std::string& name = application.items[lead].directive.name;
    if (name != ".version" && name != ".target" && name != ".address_size") break;
    out.items.push_back(application.items[lead]);
    if (name == ".version" && linked != *app.version) setVersion(&out.items.back().directive, linked);
    ++lead;
  }
  auto insert = [&](Function function) {
    if (function.hasBody) result.trustedFunctions.insert(function.name);
    TopLevel item;
    item.kind = TopLevel::Kind::kFunction;
    item.function = std::move(function);
    out.items.push_back(std::move(item));
  };
  for (std::size_t m : used) {
    for (const std::string& c : prepared[m].constants) {
      insert(constantFunction(kReserved + prepared[m].name + "_const_" + c, modules[m].constants.at(c)));
    }
  }
  for (std::size_t m : used) {
    for (const PreparedItem& item : prepared[m].items) {
      if (item.exported.empty() || neededLocals.count(item.function.name) != 0) insert(item.function);
    }
  }
  for (std::size_t i = lead; i < application.items.size(); ++i) {
    out.items.push_back(application.items[i]);
    const auto p = app.placeholders.find(i);
    if (p == app.placeholders.end()) continue;
    Function& f = out.items.back().function;
    fillPlaceholder(p->second, &f);
    result.trustedFunctions.insert(f.name);
    ++result.replacedPlaceholders;
  }
  result.ok = true;
  return result;
}

}  // namespace agileos::ptx
