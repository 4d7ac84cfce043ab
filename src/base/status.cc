#include "sluice/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sluice {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  // An OK code never carries a message: OK stays allocation-free.
  if (code != StatusCode::kOk) rep_ = std::make_unique<Rep>(Rep{code, std::move(message)});
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

std::string_view Status::message() const {
  return rep_ ? std::string_view(rep_->message) : std::string_view();
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  std::string s(status_code_name(code()));
  s += ": ";
  s += rep_->message;
  return s;
}

Status Status::with_prefix(std::string_view prefix) const {
  if (ok()) return Status();
  std::string m(prefix);
  m += ": ";
  m += rep_->message;
  return Status(rep_->code, std::move(m));
}

bool operator==(const Status& a, const Status& b) {
  return a.code() == b.code() && a.message() == b.message();
}

Status cancelled_error(std::string m) {
  return Status(StatusCode::kCancelled, std::move(m));
}
Status invalid_argument_error(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
Status not_found_error(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
Status already_exists_error(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}
Status permission_denied_error(std::string m) {
  return Status(StatusCode::kPermissionDenied, std::move(m));
}
Status resource_exhausted_error(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
Status failed_precondition_error(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
Status out_of_range_error(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
Status unimplemented_error(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
Status internal_error(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}
Status data_loss_error(std::string m) {
  return Status(StatusCode::kDataLoss, std::move(m));
}

Status unavailable_error(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}

Status errno_error(std::string_view path, std::string_view what, int err) {
  std::string m(path);
  m += ": ";
  m += what;
  m += ": ";
  m += std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR: return Status(StatusCode::kNotFound, std::move(m));
    case EACCES:
    case EPERM: return Status(StatusCode::kPermissionDenied, std::move(m));
    case ENOSPC:
    case ENOMEM:
    case EMFILE: return Status(StatusCode::kResourceExhausted, std::move(m));
    case EISDIR:
    case EINVAL: return Status(StatusCode::kInvalidArgument, std::move(m));
    default: return Status(StatusCode::kInternal, std::move(m));
  }
}

void detail_abort_on_bad_result(const Status& status) {
  std::fprintf(stderr, "sluice: value() of a failed Result: %s\n", status.to_string().c_str());
  std::abort();
}

}  // namespace sluice
