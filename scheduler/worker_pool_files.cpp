// WorkerPool, file side: each worker's socket directory, its uid, and who owns its sockets
// (scheduler/endpoint_owner.h). Every function here runs with the pool's lock held.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proto/shm/handshake.h"
#include "scheduler/worker_pool.h"

namespace agileos::scheduler {
namespace {

// The worker's sockets inside its directory (the shared-memory one is derived by
// shmSocketPathFor, on both sides).
constexpr const char* kCallSocketName = "/call.sock";

// A worker's directory: root's (the daemon's), group = the worker's own gid, mode 0731: the worker
// may create and remove its sockets there but not list or re-mode the directory; every uid may
// pass through it to a socket whose own owner and mode then decide who connects. Without a uid
// of its own the worker is the daemon's user, and 0711 does the same.
bool makeSocketDirectory(const std::string& dir, std::optional<uid_t> worker_uid, std::string* error) {
  // Left over by an earlier daemon that used the same id: its sockets, then the directory.
  ::unlink((dir + kCallSocketName).c_str());
  if (auto shm = shm::shmSocketPathFor("unix:" + dir + kCallSocketName)) ::unlink(shm->c_str());
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    *error = "cannot clear " + dir + ": " + std::strerror(errno);
    return false;
  }
  if (::mkdir(dir.c_str(), 0700) != 0) {
    *error = "cannot make " + dir + ": " + std::strerror(errno);
    return false;
  }
  const mode_t mode = worker_uid ? 0731 : 0711;
  if ((worker_uid && ::chown(dir.c_str(), ::geteuid(), *worker_uid) != 0) ||
      ::chmod(dir.c_str(), mode) != 0) {
    *error = "cannot prepare " + dir + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool WorkerPool::prepareWorkerFiles(Worker& worker, WorkerLaunchSpec* spec, std::string* error) {
  if (worker_uids_) {
    const std::optional<uid_t> uid = worker_uids_->acquire();
    if (!uid) {
      *error = "every worker uid of privileges.worker_uid_base/worker_uid_count is in use";
      return false;
    }
    worker.uid = uid;
    // Leased, so no one else uses it now; whatever still runs as it (left by a daemon that
    // crashed) is killed before a new worker takes it.
    if (!killProcessesOf(*uid, error)) return false;
    ProcessCredentials credentials;
    credentials.uid = *uid;
    credentials.gid = static_cast<gid_t>(*uid);
    credentials.groups = options_.identities->groups;
    spec->credentials = std::move(credentials);
  }
  worker.socket_dir = options_.runtime_dir + "/worker-" + std::to_string(worker.id);
  if (!makeSocketDirectory(worker.socket_dir, worker.uid, error)) {
    worker.socket_dir.clear();  // not ours to remove
    return false;
  }
  worker.socket_path = worker.socket_dir + kCallSocketName;
  spec->endpoint = "unix:" + worker.socket_path;
  return true;
}

std::string WorkerPool::recordEndpoints(Worker& worker) {
  const uid_t owner = worker.runsAs();
  worker.endpoint_files.clear();
  std::string error;
  for (const std::string& path : {worker.socket_path, worker.shm_endpoint}) {
    if (path.empty()) continue;
    EndpointFile file;
    if (!recordEndpoint(path, owner, &file, &error)) return "its endpoint " + error;
    worker.endpoint_files.push_back(std::move(file));
  }
  return "";
}

std::string WorkerPool::giveEndpoints(const Worker& worker, uid_t uid) {
  std::string error;
  for (const EndpointFile& file : worker.endpoint_files) {
    if (!giveEndpoint(file, uid, &error)) return error;
  }
  return "";
}

void WorkerPool::releaseWorkerFiles(Worker& worker) {
  if (!worker.socket_dir.empty()) {
    // Only the names the daemon chose: whatever the worker made there, the rmdir then fails and
    // the directory stays (logged), never followed.
    ::unlink(worker.socket_path.c_str());
    if (auto shm = shm::shmSocketPathFor("unix:" + worker.socket_path)) ::unlink(shm->c_str());
    if (::rmdir(worker.socket_dir.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("worker {}: cannot remove {}: {}", worker.id, worker.socket_dir, std::strerror(errno));
    }
    worker.socket_dir.clear();
  }
  if (worker.uid && worker_uids_) {
    std::string error;
    if (killProcessesOf(*worker.uid, &error)) {
      worker_uids_->release(*worker.uid);
    } else {
      // Kept out of the range for good: a uid that may still run something is never handed out.
      spdlog::error("worker {}: uid {} is not handed out again: {}", worker.id, *worker.uid, error);
    }
    worker.uid.reset();
  }
}

}  // namespace agileos::scheduler
