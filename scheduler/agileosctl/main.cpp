// agileosctl: the operator's command line over agileosd's admin API (docs/operations.md,
// "Administering a running daemon"). Tables for people; --json for scripts (the admin API's
// messages in protobuf's JSON mapping).
//
// Exit status: 0 done, 1 the daemon refused or failed the request, 2 usage error.
#include <google/protobuf/util/json_util.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "scheduler/agileosctl/admin_client.h"
#include "scheduler/agileosctl/tables.h"

namespace {

using agileos::ctl::AdminClient;
using agileos::ctl::RpcOutcome;

constexpr const char* kDefaultAdminSocket = "/run/agileos-admin/admin.sock";
constexpr const char* kDefaultClientSocket = "/run/agileos/agileosd.sock";

std::string toJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

int fail(const std::string& what, const RpcOutcome& outcome) {
  std::fprintf(stderr, "agileosctl: %s: %s\n", what.c_str(), outcome.error.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"agileosctl: look at and steer a running agileosd through its admin socket"};
  app.require_subcommand(1);
  const char* env_socket = std::getenv("AGILEOS_ADMIN_SOCKET");
  std::string socket = env_socket != nullptr ? env_socket : kDefaultAdminSocket;
  bool json = false;
  app.add_option(
      "--socket", socket,
      "the admin socket (default $AGILEOS_ADMIN_SOCKET or " + std::string(kDefaultAdminSocket) + ")");
  app.add_flag("--json", json, "print the admin API's answer as JSON");

  auto* status = app.add_subcommand("status", "summary, clients, workers, services and modules");
  auto* clients = app.add_subcommand("clients", "live sessions and the admission queue, with memory held");
  auto* workers = app.add_subcommand("workers", "worker processes");
  auto* services = app.add_subcommand("services", "supervised services");
  auto* modules = app.add_subcommand("modules", "the protected module pool");
  auto* metrics = app.add_subcommand("metrics", "the Prometheus metrics text");
  std::uint64_t id = 0;
  std::string reason;
  auto* drain = app.add_subcommand("drain", "drain a worker: no new clients, retire once idle");
  drain->add_option("worker", id, "worker id")->required();
  drain->add_option("--reason", reason, "recorded in the log and the audit trail");
  auto* end = app.add_subcommand("end", "end a client's session");
  end->add_option("client", id, "client id")->required();
  end->add_option("--reason", reason, "sent to the client and recorded");
  auto* reload = app.add_subcommand("reload-modules", "re-read the configuration file's modules section");
  std::string health_socket;
  auto* health = app.add_subcommand("health", "the standard gRPC health check of a daemon socket");
  health->add_option("--of", health_socket,
                     "the socket to check (default: the admin socket; the clients' is usually " +
                         std::string(kDefaultClientSocket) + ")");
  CLI11_PARSE(app, argc, argv);

  AdminClient client(socket);
  if (*health) {
    std::string serving;
    const std::string target = health_socket.empty() ? socket : health_socket;
    RpcOutcome outcome = agileos::ctl::checkHealth(target, &serving);
    if (!outcome.ok) return fail("health of " + target, outcome);
    std::printf("%s\n", serving.c_str());
    return serving == "SERVING" ? 0 : 1;
  }
  if (*metrics) {
    std::string text;
    RpcOutcome outcome = client.metrics(&text);
    if (!outcome.ok) return fail("metrics", outcome);
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  if (*drain || *end || *reload) {
    std::string message;
    RpcOutcome outcome = *drain ? client.drainWorker(id, reason, &message)
                         : *end ? client.endSession(id, reason, &message)
                                : client.reloadModules(&message);
    if (!outcome.ok) return fail(app.get_subcommands().front()->get_name(), outcome);
    std::printf("%s\n", message.c_str());
    return 0;
  }

  agileos::v1::admin::Status answer;
  RpcOutcome outcome = client.status(&answer);
  if (!outcome.ok) return fail("status", outcome);
  if (json) {
    // The part asked for, as the admin API's message (a Status with only that part filled).
    agileos::v1::admin::Status part = answer;
    if (!*status) {
      if (!*clients) part.clear_clients();
      if (!*workers) part.clear_workers();
      if (!*services) part.clear_services();
      if (!*modules) part.clear_modules();
    }
    std::printf("%s\n", toJson(part).c_str());
    return 0;
  }
  std::string text = *status     ? agileos::ctl::statusText(answer)
                     : *clients  ? agileos::ctl::clientsTable(answer)
                     : *workers  ? agileos::ctl::workersTable(answer)
                     : *services ? agileos::ctl::servicesTable(answer)
                                 : agileos::ctl::modulesTable(answer);
  std::fputs(text.c_str(), stdout);
  return 0;
}
