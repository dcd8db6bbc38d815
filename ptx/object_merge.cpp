#include "ptx/object_merge.h"

#include <map>
#include <optional>
#include <set>

#include "ptx/versions.h"

namespace agileos::ptx {
namespace {

enum class Linkage { kInternal, kExtern, kVisible, kWeak, kCommon };

const char* linkageName(Linkage linkage) {
  switch (linkage) {
    case Linkage::kExtern:
      return ".extern";
    case Linkage::kVisible:
      return ".visible";
    case Linkage::kWeak:
      return ".weak";
    case Linkage::kCommon:
      return ".common";
    case Linkage::kInternal:
      break;
  }
  return "";
}

// The linkage directive among tokens[0, end), if any.
Linkage linkageAmong(const std::vector<Token>& tokens, std::size_t end) {
  for (std::size_t k = 0; k < end && k < tokens.size(); ++k) {
    const Token& t = tokens[k];
    if (t.kind != TokenKind::kDirective) continue;
    if (t.text == ".extern") return Linkage::kExtern;
    if (t.text == ".visible") return Linkage::kVisible;
    if (t.text == ".weak") return Linkage::kWeak;
    if (t.text == ".common") return Linkage::kCommon;
  }
  return Linkage::kInternal;
}

// Where a function header's leading linkage directives end (.func or .entry).
std::size_t kindIndex(const Function& f) {
  std::size_t k = 0;
  while (k < f.header.size() && !f.header[k].is(TokenKind::kDirective, ".func") &&
         !f.header[k].is(TokenKind::kDirective, ".entry"))
    ++k;
  return k;
}

bool isVariableSpace(const std::string& directive) {
  return directive == ".global" || directive == ".const" || directive == ".shared" || directive == ".tex" ||
         directive == ".texref" || directive == ".surfref" || directive == ".samplerref";
}

struct Symbol {
  std::string name;
  bool function = false;
  Linkage linkage = Linkage::kInternal;
  bool defines = false;  // a function with a body, or a variable that is not .extern
};

// The variable a module-scope declaration names: the identifier before its initializer or ';'
// (an array's [..] skipped).
std::optional<std::string> variableName(const std::vector<Token>& tokens) {
  std::size_t end = 0;
  while (end < tokens.size() && !tokens[end].isPunct('=') && !tokens[end].isPunct(';')) ++end;
  while (end > 0) {
    --end;
    if (tokens[end].isPunct(']')) {
      while (end > 0 && !tokens[end].isPunct('[')) --end;
      continue;
    }
    if (tokens[end].kind == TokenKind::kIdentifier) return tokens[end].text;
    return std::nullopt;
  }
  return std::nullopt;
}

// The symbol an item declares or defines; nullopt for the header and other directives. *error
// is set for a declaration whose name cannot be read.
std::optional<Symbol> symbolOf(const TopLevel& item, std::string* error) {
  if (item.kind == TopLevel::Kind::kFunction) {
    const Function& f = item.function;
    return Symbol{f.name, true, linkageAmong(f.header, kindIndex(f)), f.hasBody};
  }
  const Directive& d = item.directive;
  bool variable = false;
  for (const Token& t : d.tokens)
    variable = variable || (t.kind == TokenKind::kDirective && isVariableSpace(t.text));
  if (!variable) return std::nullopt;
  std::optional<std::string> name = variableName(d.tokens);
  if (!name) {
    *error = "a module-scope variable declaration whose name cannot be read";
    return std::nullopt;
  }
  const Linkage linkage = linkageAmong(d.tokens, d.tokens.size());
  return Symbol{*name, false, linkage, linkage != Linkage::kExtern};
}

bool isHeader(const TopLevel& item) {
  return item.kind == TopLevel::Kind::kDirective &&
         (item.directive.name == ".version" || item.directive.name == ".target" ||
          item.directive.name == ".address_size");
}

bool isDebugDirective(const TopLevel& item) {
  return item.kind == TopLevel::Kind::kDirective &&
         (item.directive.name == ".file" || item.directive.name == ".section");
}

void dropLoc(std::vector<Statement>* statements) {
  std::vector<Statement> kept;
  for (Statement& s : *statements) {
    if (s.kind == Statement::Kind::kDirective && s.directive.name == ".loc") continue;
    if (s.kind == Statement::Kind::kBlock) dropLoc(&s.block);
    kept.push_back(std::move(s));
  }
  *statements = std::move(kept);
}

std::string headerText(const Directive& d) {
  std::string text;
  for (const Token& t : d.tokens) text += t.text + " ";
  return text;
}

struct Definition {
  std::size_t object = 0, item = 0;
  Linkage linkage = Linkage::kInternal;
  bool function = false;
};

MergeResult refuse(std::string error) {
  MergeResult result;
  result.error = std::move(error);
  return result;
}

}  // namespace

MergeResult mergeObjects(const std::vector<Module>& objects) {
  if (objects.empty()) return refuse("no objects to merge");
  if (objects.size() == 1) return MergeResult{true, "", objects[0]};

  // The header: one version (the highest), one target and address size (all alike).
  std::optional<Version> highest;
  std::string target, addressSize;
  std::size_t objectsWithDebug = 0;
  for (std::size_t o = 0; o < objects.size(); ++o) {
    std::optional<Version> version;
    std::string objectTarget, objectAddressSize;
    bool debug = false;
    for (const TopLevel& item : objects[o].items) {
      if (item.kind != TopLevel::Kind::kDirective) continue;
      if (item.directive.name == ".version") version = parseVersion(item.directive);
      if (item.directive.name == ".target") objectTarget = headerText(item.directive);
      if (item.directive.name == ".address_size") objectAddressSize = headerText(item.directive);
      debug = debug || item.directive.name == ".file";
    }
    if (!version || objectTarget.empty())
      return refuse("object " + std::to_string(o) + " has no .version or .target");
    if (!highest || *version > *highest) highest = version;
    if (o == 0) {
      target = objectTarget;
      addressSize = objectAddressSize;
    } else if (objectTarget != target || objectAddressSize != addressSize) {
      return refuse("object " + std::to_string(o) + "'s .target or .address_size (" + objectTarget +
                    objectAddressSize + ") differs from object 0's (" + target + addressSize + ")");
    }
    if (debug) ++objectsWithDebug;
  }
  const bool dropDebug = objectsWithDebug > 1;

  // Every definition, the first of each name; names used internally, by object.
  std::map<std::string, Definition> defined;
  std::map<std::string, std::set<std::size_t>> internalIn, externalIn;
  for (std::size_t o = 0; o < objects.size(); ++o) {
    for (std::size_t i = 0; i < objects[o].items.size(); ++i) {
      std::string error;
      const std::optional<Symbol> symbol = symbolOf(objects[o].items[i], &error);
      if (!error.empty()) return refuse("object " + std::to_string(o) + ": " + error);
      if (!symbol) continue;
      if (symbol->linkage == Linkage::kCommon)
        return refuse("object " + std::to_string(o) + ": '" + symbol->name + "' is .common");
      (symbol->linkage == Linkage::kInternal ? internalIn : externalIn)[symbol->name].insert(o);
      if (!symbol->defines) continue;
      auto [it, first] =
          defined.try_emplace(symbol->name, Definition{o, i, symbol->linkage, symbol->function});
      if (first) continue;
      const Definition& earlier = it->second;
      if (earlier.object != o && earlier.linkage == Linkage::kWeak && symbol->linkage == Linkage::kWeak &&
          earlier.function == symbol->function)
        continue;  // another object's copy of a .weak definition: the first one is kept
      return refuse("'" + symbol->name + "' is defined by object " + std::to_string(earlier.object) +
                    " and again by object " + std::to_string(o));
    }
  }
  for (const auto& [name, users] : internalIn) {
    if (users.size() > 1 || externalIn.count(name) != 0)
      return refuse("'" + name + "' is an internal name of object " + std::to_string(*users.begin()) +
                    " and is used by another object too");
  }

  MergeResult result;
  std::set<std::string> declared, definitionEmitted;
  auto emit = [&](TopLevel item) {
    if (dropDebug && item.kind == TopLevel::Kind::kFunction) dropLoc(&item.function.body);
    result.module.items.push_back(std::move(item));
  };
  for (std::size_t o = 0; o < objects.size(); ++o) {
    for (const TopLevel& item : objects[o].items) {
      if (o > 0 && isHeader(item)) continue;
      if (dropDebug && isDebugDirective(item)) continue;
      std::string error;
      const std::optional<Symbol> symbol = symbolOf(item, &error);
      if (!symbol) {
        emit(item);
        continue;
      }
      const std::string& name = symbol->name;
      if (symbol->defines) {
        if (!definitionEmitted.insert(name).second) continue;  // a later .weak copy, or moved up
        declared.insert(name);
        emit(item);
        continue;
      }
      // A declaration: only the first of a name is kept, and it carries the definition's linkage.
      if (!declared.insert(name).second) continue;
      const auto definition = defined.find(name);
      if (definition == defined.end()) {
        emit(item);  // defined by no object: the device runtime's, or the JIT's
        continue;
      }
      if (!symbol->function) {
        // An .extern variable another object defines: its definition, here.
        definitionEmitted.insert(name);
        emit(objects[definition->second.object].items[definition->second.item]);
        continue;
      }
      TopLevel prototype = item;
      Function& f = prototype.function;
      const std::size_t kind = kindIndex(f);
      std::vector<Token> header;
      if (const char* linkage = linkageName(definition->second.linkage); *linkage != '\0') {
        Token token = f.header.empty() ? Token{} : f.header.front();
        token.kind = TokenKind::kDirective;
        token.text = linkage;
        header.push_back(token);
      }
      for (std::size_t k = 0; k < f.header.size(); ++k) {
        const bool linkageToken =
            k < kind && f.header[k].kind == TokenKind::kDirective &&
            (f.header[k].text == ".extern" || f.header[k].text == ".visible" || f.header[k].text == ".weak");
        if (!linkageToken) header.push_back(f.header[k]);
      }
      f.header = std::move(header);
      emit(std::move(prototype));
    }
  }
  for (TopLevel& item : result.module.items) {
    if (item.kind == TopLevel::Kind::kDirective && item.directive.name == ".version")
      setVersion(&item.directive, *highest);
  }
  result.ok = true;
  return result;
}

}  // namespace agileos::ptx
