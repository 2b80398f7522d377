// RequestIds: the ids the service gives requests and responses, unique across processes.
//
// Every id is "<kind>-<instance>-<n>": instance is 12 random hex digits drawn when the service
// starts (so two replicas, or one restarted, never repeat each other's ids), n counts up from 1.
// A client's own X-Request-Id is kept when it is 1-128 characters of [A-Za-z0-9._:-] (what proxies
// and tracing headers use); anything else gets one of ours instead. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace folio {

class RequestIds {
 public:
  RequestIds();
  // "chatcmpl-3f9c0a1b2c4d-17" for kind "chatcmpl".
  std::string next(std::string_view kind);
  // The client's id if it is well formed, else next("req").
  std::string for_request(std::string_view client_id);

 private:
  std::string instance_;
  std::atomic<uint64_t> n_{0};
};

}  // namespace folio
