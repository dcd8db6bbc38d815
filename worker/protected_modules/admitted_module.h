// A protected module the daemon admitted for a client (AttachClient.modules), as the worker
// keeps it: plain values, so the module code does not depend on the control channel's messages.
// The paths are trusted: they come from the daemon's module pool, never from the client.
#pragma once

#include <string>

namespace agileos::worker::protected_modules {

struct AdmittedModule {
  std::string name;
  std::string version;
  std::string ptxPath;          // the module's device code; may be empty
  std::string hostLibraryPath;  // the plugin (lib<name>.so); may be empty
  std::string service;          // the service it uses; empty: none
};

}  // namespace agileos::worker::protected_modules
