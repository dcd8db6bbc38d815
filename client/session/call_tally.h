// A diagnostic count of the calls this process sent its worker, by operation, waited for or not
// (untrusted side; nothing depends on it). Off unless AGILEOS_CALL_TALLY=1 is set when the first
// call is made; then the counts are printed on stderr at exit, one line per operation. It is how
// one finds which calls a library makes per operation and which of them wait for a reply (each
// waited call is a round trip to the worker).
#pragma once

#include "agileos/v1/client_api.pb.h"

namespace agileos::client {

void tallyCall(v1::CallRequest::OpCase op, bool waited);

}  // namespace agileos::client
