// Status and Result<T>: how every sluice library call reports failure.
//
// Inside the library nothing throws: a call that can fail returns a Status
// (or a Result<T> holding either a T or a non-OK Status). An OK Status holds
// no allocation, so the success path costs a null pointer. Exceptions appear
// only at the edges (the CLI turns a Status into an exit code, the Python
// module into an exception).
//
// Messages a user can see name the file, the byte offset or sample, and the
// reason, e.g. "train-00003-of-00016.tfrecord: offset 1048576: data CRC
// mismatch". Build them with the Status constructors below; add context on
// the way up with Status::with_prefix.
//
// Thread safety: Status and Result are values; distinct objects may be used
// from distinct threads freely, one object needs external synchronisation.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace sluice {

// Canonical codes, a subset of absl/gRPC's with the same meaning.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kInvalidArgument = 3,  // the caller asked for something malformed
  kNotFound = 5,         // a file, key or class that does not exist
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,  // a limit (pixels, record length, memory budget)
  kFailedPrecondition = 9,
  kOutOfRange = 11,     // end of data: a normal end, not an error in itself
  kUnimplemented = 12,  // well-formed input we do not support
  kInternal = 13,
  kUnavailable = 14,  // an optional part (a GPU, a library) is not there
  kDataLoss = 15,     // corruption or truncation of stored bytes
  kUnknown = 2,
};

// Returns the canonical name, e.g. "DATA_LOSS".
std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // Empty for OK.
  std::string_view message() const;
  // "DATA_LOSS: a.tfrecord: offset 16: data CRC mismatch", or "OK".
  std::string to_string() const;

  // Returns a copy whose message is "prefix: message" (OK stays OK).
  Status with_prefix(std::string_view prefix) const;

  // Explicitly discards a status whose failure is acceptable here.
  void ignore() const {}

  friend bool operator==(const Status& a, const Status& b);

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

inline Status ok_status() {
  return Status();
}
Status cancelled_error(std::string message);
Status invalid_argument_error(std::string message);
Status not_found_error(std::string message);
Status already_exists_error(std::string message);
Status permission_denied_error(std::string message);
Status resource_exhausted_error(std::string message);
Status failed_precondition_error(std::string message);
Status out_of_range_error(std::string message);
Status unimplemented_error(std::string message);
Status internal_error(std::string message);
Status data_loss_error(std::string message);
Status unavailable_error(std::string message);

// A Status from errno after a failed system call on `path`:
// ENOENT -> kNotFound, EACCES -> kPermissionDenied, else kInternal.
Status errno_error(std::string_view path, std::string_view what, int err);

// Either a T or a non-OK Status. Accessing value() of an error aborts: check
// ok() first.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = internal_error("Result built from OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & { return *checked(); }
  const T& value() const& { return *checked(); }
  T&& value() && { return std::move(*checked()); }
  T* operator->() { return checked(); }
  const T* operator->() const { return checked(); }
  T& operator*() & { return *checked(); }
  const T& operator*() const& { return *checked(); }

 private:
  T* checked() const;

  Status status_;
  std::optional<T> value_;
};

[[noreturn]] void detail_abort_on_bad_result(const Status& status);

template <typename T>
T* Result<T>::checked() const {
  if (!value_) detail_abort_on_bad_result(status_);
  return const_cast<T*>(&*value_);
}

}  // namespace sluice

// Returns early from the enclosing function when `expr` is not OK.
#define SLUICE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::sluice::Status sluice_status_ = (expr);        \
    if (!sluice_status_.ok()) return sluice_status_; \
  } while (false)

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)

// `SLUICE_ASSIGN_OR_RETURN(auto x, make_x());` declares x from a Result, or
// returns its Status from the enclosing function.
#define SLUICE_ASSIGN_OR_RETURN(lhs, expr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(sluice_result_, __LINE__), lhs, expr)
#define SLUICE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
