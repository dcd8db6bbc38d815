// agileosctl's tables for people: one row per client, worker, service or module of a Status,
// columns padded to the widest cell. Pure functions of the Status (tests/cpu/scheduler).
#pragma once

#include <string>
#include <vector>

#include "agileos/v1/admin.pb.h"

namespace agileos::ctl {

// Rows of cells (the first row is the header) as aligned text, one line per row.
std::string renderTable(const std::vector<std::vector<std::string>>& rows);

// 1536 -> "1.5 KiB", 0 -> "0 B".
std::string humanBytes(std::uint64_t bytes);

std::string clientsTable(const v1::admin::Status& status);
std::string workersTable(const v1::admin::Status& status);
std::string servicesTable(const v1::admin::Status& status);
std::string modulesTable(const v1::admin::Status& status);
// A one-paragraph summary and every table.
std::string statusText(const v1::admin::Status& status);

}  // namespace agileos::ctl
